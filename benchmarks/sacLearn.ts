// Benchmark: how far SAC-Discrete (rl/sacDiscrete.ts) learns the two-head contextual bandit of
// benchmarks/sacBandit.ts, and how long it takes: greedy accuracy (right on both heads; chance 1/12)
// after each checkpoint of updates, per seed, one JSON line per seed. The unit test runs a short
// prefix of this; the long run is here so that no test depends on the machine's speed.
//
//   npm run build && node dist/benchmarks/sacLearn.js [--updates 5000 --every 1000 --seeds 1,2,3 --quick]
// --quick: the unit test's smaller, faster-learning settings instead of the long run's.
import { parseArgs } from 'node:util';
import { initTf } from '../rl/backend.js';
import { SacDiscrete } from '../rl/sacDiscrete.js';
import {
  BANDIT_HEADS,
  BANDIT_SETTINGS,
  BANDIT_SETTINGS_QUICK,
  BANDIT_STATE_DIM,
  greedyAccuracy,
  trainOnBandit,
} from './sacBandit.js';

const { values } = parseArgs({
  options: {
    updates: { type: 'string', default: '5000' },
    every: { type: 'string', default: '1000' },
    seeds: { type: 'string', default: '1,2,3' },
    quick: { type: 'boolean', default: false },
  },
});
const positiveInt = (name: string, v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new RangeError(`--${name}: expected a positive integer, got '${v}'`);
  return n;
};
const updates = positiveInt('updates', values.updates);
const every = positiveInt('every', values.every);
const seeds = values.seeds.split(',').map((s) => positiveInt('seeds', s));
const settings = values.quick ? BANDIT_SETTINGS_QUICK : BANDIT_SETTINGS;
await initTf('wasm');
for (const seed of seeds) {
  const agent = await SacDiscrete.create(BANDIT_STATE_DIM, [...BANDIT_HEADS], { ...settings, seed });
  const t0 = performance.now();
  const checkpoints: { updates: number; accuracy: number; seconds: number }[] = [];
  for (let u = Math.min(every, updates); ; u = Math.min(u + every, updates)) {
    trainOnBandit(agent, u);
    checkpoints.push({
      updates: u,
      accuracy: greedyAccuracy(agent, 1000, 7),
      seconds: Number(((performance.now() - t0) / 1000).toFixed(2)),
    });
    if (u === updates) break;
  }
  console.log(JSON.stringify({ seed, settings, checkpoints }));
  agent.dispose();
}

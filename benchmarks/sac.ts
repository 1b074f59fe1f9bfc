// Benchmark: one SAC-Discrete update at the paper's sizes (Table 1 and section 6.1: stateDim 40,
// hidden 512/256, minibatch 100, Adam) with a factorised action of 6 heads x 64 options (384
// outputs per network), and one greedy action from the tf-free ActorForward. Median of rounds,
// one JSON line. Runs on one core (Node's main thread; the wasm backend is single-threaded).
//
//   npm run build && node dist/benchmarks/sac.js [--rounds 5 --updates 10 --acts 2000 --backend wasm]
import { parseArgs } from 'node:util';
import { ActorForward } from '../rl/actorForward.js';
import { initTf, type BackendName } from '../rl/backend.js';
import { Rng } from '../rl/replay.js';
import { SacDiscrete } from '../rl/sacDiscrete.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    updates: { type: 'string', default: '10' },
    acts: { type: 'string', default: '2000' },
    backend: { type: 'string', default: 'wasm' },
  },
});
const rounds = Number(values.rounds);
const updatesPerRound = Number(values.updates);
const actsPerRound = Number(values.acts);
const { backend } = await initTf(values.backend as BackendName);

const STATE_DIM = 40;
const HEADS = [64, 64, 64, 64, 64, 64];
const agent = await SacDiscrete.create(STATE_DIM, HEADS, { seed: 1 });
const rng = new Rng(7);
const randomState = () => Float32Array.from({ length: STATE_DIM }, () => 2 * rng.next() - 1);
for (let k = 0; k < 500; k++) {
  const state = randomState();
  agent.observe({
    state,
    action: agent.act(state),
    reward: rng.next(),
    nextState: randomState(),
    done: k % 200 === 199,
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const time = (f: () => void, n: number): number => {
  const start = process.hrtime.bigint();
  for (let k = 0; k < n; k++) f();
  return Number(process.hrtime.bigint() - start) / 1e6 / n; // ms per call
};

time(() => agent.update(), 3); // warm-up: wasm kernels, JIT
const updateMs: number[] = [];
for (let r = 0; r < rounds; r++) updateMs.push(time(() => agent.update(), updatesPerRound));

const states = Array.from({ length: 256 }, randomState);
let i = 0;
const tfActMs: number[] = [];
time(() => agent.act(states[i++ & 255]!, { greedy: true }), 200);
for (let r = 0; r < rounds; r++) tfActMs.push(time(() => agent.act(states[i++ & 255]!, { greedy: true }), 500));

const forward = ActorForward.fromSerialized(agent.save());
time(() => forward.act(states[i++ & 255]!), 2000);
const forwardUs: number[] = [];
for (let r = 0; r < rounds; r++) forwardUs.push(1000 * time(() => forward.act(states[i++ & 255]!), actsPerRound));
agent.dispose();

const round2 = (x: number) => Math.round(x * 100) / 100;
console.log(
  JSON.stringify({
    benchmark: 'sac',
    backend,
    stateDim: STATE_DIM,
    hidden: [512, 256],
    heads: HEADS,
    batchSize: 100,
    updateMs: round2(median(updateMs)),
    updateMsRounds: updateMs.map(round2),
    tfActMs: round2(median(tfActMs)),
    actorForwardUs: round2(median(forwardUs)),
    actorForwardUsRounds: forwardUs.map(round2),
    node: process.version,
  }),
);

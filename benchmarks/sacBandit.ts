// A two-head contextual bandit that SAC-Discrete (rl/sacDiscrete.ts) must learn, shared by the unit
// test (test/unit/rl-sac.test.ts, a short run that must clearly learn) and `npm run bench:sac-learn`
// (the long run to near-optimal accuracy, with its time recorded in docs/benchmarks.md).
// Two heads (3 and 4 options), state in [-1, 1]^4. Head 0 is right when it picks the third of
// [-1, 1] that s0 falls in; head 1 is right when it picks (a0 + [s1 > 0] + 2 [s2 > 0]) mod 4, so
// its best option depends on the state and on head 0's choice. Reward = number of right heads.
import { Rng } from '../rl/replay.js';
import type { SacDiscrete, UpdateMetrics } from '../rl/sacDiscrete.js';
import type { SacSettingsInput } from '../rl/settings.js';

export const BANDIT_HEADS = [3, 4] as const;
export const BANDIT_STATE_DIM = 4;

function best0(s: Float32Array): number {
  return s[0]! < -1 / 3 ? 0 : s[0]! < 1 / 3 ? 1 : 2;
}
function best1(s: Float32Array, a0: number): number {
  return (a0 + (s[1]! > 0 ? 1 : 0) + (s[2]! > 0 ? 2 : 0)) % 4;
}
export function banditReward(s: Float32Array, a: Int32Array): number {
  return (a[0] === best0(s) ? 1 : 0) + (a[1] === best1(s, a[0]!) ? 1 : 0);
}
export function banditState(rng: Rng): Float32Array {
  return Float32Array.from({ length: BANDIT_STATE_DIM }, () => 2 * rng.next() - 1);
}

/** The bandit's settings for the long run: [64, 64], minibatch 64, learning rates 3e-3. */
export const BANDIT_SETTINGS: SacSettingsInput = {
  hidden: [64, 64],
  batchSize: 64,
  replaySize: 2000,
  learningStarts: 256,
  lrQ: 3e-3,
  lrActor: 3e-3,
  lrAlpha: 3e-3,
  initialTemperature: 1.0,
};

/** Quicker settings for the unit test: [32, 32], minibatch 32, learning rates 1e-2 (learns sooner, plateaus lower). */
export const BANDIT_SETTINGS_QUICK: SacSettingsInput = {
  ...BANDIT_SETTINGS,
  hidden: [32, 32],
  batchSize: 32,
  learningStarts: 64,
  lrQ: 1e-2,
  lrActor: 1e-2,
  lrAlpha: 1e-2,
};

/** Share of `n` random states on which the greedy action is right on both heads (chance: 1/12). */
export function greedyAccuracy(
  agent: { act(s: Float32Array, o: { greedy: boolean }): Int32Array },
  n: number,
  seed: number,
): number {
  const rng = new Rng(seed);
  let right = 0;
  for (let k = 0; k < n; k++) {
    const s = banditState(rng);
    if (banditReward(s, agent.act(s, { greedy: true })) === 2) right += 1;
  }
  return right / n;
}

/** Acts and learns on the bandit until `updates` gradient updates have run; returns the last metrics. */
export function trainOnBandit(agent: SacDiscrete, updates: number, envSeed = 99): UpdateMetrics | null {
  const env = new Rng(envSeed);
  let last: UpdateMetrics | null = null;
  while (agent.updateCount < updates) {
    const state = banditState(env);
    const action = agent.act(state);
    last = agent.step({ state, action, reward: banditReward(state, action), nextState: state, done: true }) ?? last;
  }
  return last;
}

// SAC-Discrete agent (rl/sacDiscrete.ts): learns a two-head contextual bandit (benchmarks/sacBandit.ts);
// masks, seeding, save/load, the tf-free ActorForward, tensor hygiene. Small networks keep it fast.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ActorForward } from '../../rl/actorForward.js';
import { initTf } from '../../rl/backend.js';
import { Rng } from '../../rl/replay.js';
import { SacDiscrete, type UpdateMetrics } from '../../rl/sacDiscrete.js';
import {
  BANDIT_HEADS,
  BANDIT_SETTINGS,
  BANDIT_SETTINGS_QUICK,
  BANDIT_STATE_DIM,
  banditReward,
  banditState,
  greedyAccuracy,
  trainOnBandit,
} from '../../benchmarks/sacBandit.js';

beforeAll(async () => {
  await initTf('wasm');
});

const HEADS = BANDIT_HEADS;
const STATE_DIM = BANDIT_STATE_DIM;
const reward = banditReward;
const randomState = banditState;

const SMALL = BANDIT_SETTINGS;

describe('SacDiscrete', () => {
  // The long run (near-optimal accuracy within 5000 updates) is `npm run bench:sac-learn`; this
  // prefix must already have learned far past chance (1/12), and the temperature must anneal.
  it('learns the two-head contextual bandit far past chance within 1500 updates', async () => {
    const agent = await SacDiscrete.create(STATE_DIM, [...HEADS], {
      ...BANDIT_SETTINGS_QUICK,
      seed: Number(process.env.RL_TEST_SEED ?? 1),
    });
    const before = greedyAccuracy(agent, 1000, 7);
    const last = trainOnBandit(agent, 1500);
    expect(agent.updateCount).toBe(1500);
    const after = greedyAccuracy(agent, 1000, 7);
    if (process.env.RL_TEST_VERBOSE) console.log({ before, after, last });
    expect(before).toBeLessThan(0.3); // a random greedy policy is right on both heads 1/12 of the time
    expect(after).toBeGreaterThan(0.45);
    // 'paper' target entropy is negative: the temperature only anneals.
    expect(last!['charts/alpha']).toBeLessThan(0.1);
    expect(last!['charts/targetEntropy']).toBeCloseTo(-Math.log(1 + 7), 5);
    agent.dispose();
  });

  it('never picks a masked option, gives it probability 0, and trains on masked transitions', async () => {
    const agent = await SacDiscrete.create(STATE_DIM, [...HEADS], {
      ...SMALL,
      seed: 3,
      learningStarts: 64,
      targetEntropy: 'christodoulou',
    });
    const env = new Rng(5);
    const masksFor = (s: Float32Array) => [
      Uint8Array.from([1, s[0]! > 0 ? 0 : 1, 1]),
      Uint8Array.from([0, 1, 0, s[1]! > 0 ? 1 : 0]),
    ];
    let last: UpdateMetrics | null = null;
    for (let step = 0; step < 300; step++) {
      const state = randomState(env);
      const masks = masksFor(state);
      const action = agent.act(state, { masks });
      if (state[0]! > 0) expect(action[0]).not.toBe(1);
      expect([1, 3]).toContain(action[1]);
      if (!(state[1]! > 0)) expect(action[1]).toBe(1);
      const nextState = randomState(env);
      last =
        agent.step({
          state,
          action,
          reward: reward(state, action),
          nextState,
          done: step % 10 === 9,
          masks,
          nextMasks: masksFor(nextState),
        }) ?? last;
    }
    for (const v of Object.values(last!)) expect(Number.isFinite(v)).toBe(true);
    // 'christodoulou' counts the allowed options: 0.98 (log 2 or log 3) + 0.98 (log 1 or log 2).
    expect(last!['charts/targetEntropy']).toBeGreaterThan(0.98 * Math.log(2) - 1e-6);
    expect(last!['charts/targetEntropy']).toBeLessThan(0.98 * (Math.log(3) + Math.log(2)) + 1e-6);
    const state = Float32Array.from([0.5, -0.5, 0, 0]);
    const masks = masksFor(state);
    const probs = agent.probabilities(state, masks);
    expect(probs[0]![1]).toBe(0);
    expect([probs[1]![0], probs[1]![2], probs[1]![3]]).toEqual([0, 0, 0]);
    expect(probs[1]![1]).toBeCloseTo(1, 6);
    for (let k = 0; k < 200; k++) expect(agent.act(state, { masks, greedy: k % 2 === 0 })[0]).not.toBe(1);
    const forward = ActorForward.fromSerialized(agent.save());
    expect(forward.probabilities(state, masks)[0]![1]).toBe(0);
    for (let k = 0; k < 200; k++) expect(forward.act(state, { masks, greedy: k % 2 === 0 })[0]).not.toBe(1);
    expect(() => agent.act(state, { masks: [Uint8Array.from([0, 0, 0]), masks[1]!] })).toThrow(
      /masks\[0\]: every option is masked/,
    );
    expect(() =>
      agent.observe({ state, action: Int32Array.from([1, 1]), reward: 0, nextState: state, done: true, masks }),
    ).toThrow(/action\[0\]: option 1 is masked/);
    agent.dispose();
  });

  it('leaks no tensors over 200 updates, acting and saving, and dispose frees everything', async () => {
    const baseline = tf.memory().numTensors;
    const agent = await SacDiscrete.create(STATE_DIM, [4, 4], { ...SMALL, seed: 4, learningStarts: 64, batchSize: 32 });
    const env = new Rng(8);
    const masks = [Uint8Array.from([1, 1, 0, 1]), Uint8Array.from([1, 1, 1, 1])];
    for (let step = 0; step < 64; step++) {
      const state = randomState(env);
      agent.observe({
        state,
        action: agent.act(state, { masks }),
        reward: env.next(),
        nextState: randomState(env),
        done: false,
        masks,
        nextMasks: masks,
      });
    }
    agent.update();
    const held = tf.memory().numTensors;
    for (let k = 0; k < 200; k++) {
      agent.update();
      agent.act(randomState(env), { masks });
      agent.probabilities(randomState(env));
    }
    agent.save();
    expect(tf.memory().numTensors).toBe(held);
    agent.dispose();
    expect(tf.memory().numTensors).toBe(baseline);
  });
});

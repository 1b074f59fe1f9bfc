// SAC-Discrete seeding, save/load, the tf-free ActorForward and settings validation.
import { beforeAll, describe, expect, it } from 'vitest';
import { ActorForward } from '../../rl/actorForward.js';
import { initTf } from '../../rl/backend.js';
import { Rng } from '../../rl/replay.js';
import { SacDiscrete } from '../../rl/sacDiscrete.js';
import { parseSacSettings, targetEntropyFor, type SacSettingsInput, type SerializedAgent } from '../../rl/settings.js';

beforeAll(async () => {
  await initTf('wasm');
});

const SMALL: SacSettingsInput = {
  hidden: [64, 64],
  batchSize: 32,
  replaySize: 500,
  learningStarts: 32,
  lrQ: 1e-3,
  lrActor: 1e-3,
  lrAlpha: 1e-3,
};
const STATE_DIM = 6;

function randomState(rng: Rng): Float32Array {
  return Float32Array.from({ length: STATE_DIM }, (_, i) => (2 * rng.next() - 1) * (i + 1) + i); // unnormalised scales
}

/** Drives `agent` through `steps` steps of a fixed synthetic environment (seeded by envSeed). */
function train(agent: SacDiscrete, steps: number, envSeed: number): void {
  const env = new Rng(envSeed);
  let state = randomState(env);
  for (let k = 0; k < steps; k++) {
    const action = agent.act(state);
    const nextState = randomState(env);
    const reward = action.reduce((a, x, i) => a + (x === i % 3 ? 1 : 0), 0) + state[0]!;
    agent.step({ state, action, reward, nextState, done: k % 20 === 19 });
    state = nextState;
  }
}

describe('SacDiscrete seeding and persistence', () => {
  it('same settings, seed and data give identical weights; another seed does not', async () => {
    const heads = [5, 3, 4];
    const a = await SacDiscrete.create(STATE_DIM, heads, { ...SMALL, seed: 11 });
    const b = await SacDiscrete.create(STATE_DIM, heads, { ...SMALL, seed: 11 });
    const c = await SacDiscrete.create(STATE_DIM, heads, { ...SMALL, seed: 12 });
    for (const agent of [a, b, c]) train(agent, 80, 1);
    const [sa, sb, sc] = [a.save(), b.save(), c.save()];
    expect(sa.updates).toBe(49);
    expect(sb).toEqual(sa);
    expect(sc.networks.actor[0]!.w).not.toEqual(sa.networks.actor[0]!.w);
    expect(sc.networks.qf1[2]!.w).not.toEqual(sa.networks.qf1[2]!.w);
    for (const agent of [a, b, c]) agent.dispose();
  });

  it('save -> JSON -> load gives the same actions, the same state, and continues identically', async () => {
    const heads = [4, 4, 4];
    const a = await SacDiscrete.create(STATE_DIM, heads, { ...SMALL, seed: 21, gradClipNorm: 5 });
    train(a, 60, 2);
    const saved = a.save();
    const b = await SacDiscrete.load(JSON.parse(JSON.stringify(saved)));
    expect(b.save()).toEqual(saved);
    const env = new Rng(3);
    for (let k = 0; k < 100; k++) {
      const s = randomState(env);
      expect(b.act(s, { greedy: true })).toEqual(a.act(s, { greedy: true }));
      expect(b.act(s)).toEqual(a.act(s)); // sampled: the action RNG state was saved too
    }
    // Two resumed copies (replay empty, optimiser moments restored) continue identically.
    const c = await SacDiscrete.load(saved);
    const d = await SacDiscrete.load(saved);
    train(c, 40, 4);
    train(d, 40, 4);
    expect(c.updateCount).toBe(saved.updates + 9);
    expect(d.save()).toEqual(c.save());
    for (const agent of [a, b, c, d]) agent.dispose();
  });

  it('ActorForward matches the TF actor: probabilities to 1e-5, greedy actions exactly', async () => {
    for (const heads of [
      [6, 6, 6, 6],
      [3, 7, 2],
    ]) {
      const agent = await SacDiscrete.create(STATE_DIM, heads, { ...SMALL, seed: 31 });
      train(agent, 120, 5);
      const fwd = ActorForward.fromSerialized(JSON.parse(JSON.stringify(agent.save())));
      const env = new Rng(6);
      for (let k = 0; k < 200; k++) {
        const s = randomState(env);
        const masks =
          k % 2 === 0
            ? undefined
            : heads.map((n, i) => Uint8Array.from({ length: n }, (_, a) => ((a + k + i) % 3 === 0 ? 0 : 1)));
        const pTf = agent.probabilities(s, masks);
        const pJs = fwd.probabilities(s, masks);
        pTf.forEach((p, i) => p.forEach((v, a) => expect(Math.abs(v - pJs[i]![a]!)).toBeLessThan(1e-5)));
        expect(fwd.act(s, masks ? { masks } : {})).toEqual(
          agent.act(s, masks ? { greedy: true, masks } : { greedy: true }),
        );
      }
      agent.dispose();
    }
  });

  it('load and ActorForward reject a malformed SerializedAgent, naming the field', async () => {
    const agent = await SacDiscrete.create(STATE_DIM, [3, 3], { ...SMALL, seed: 1 });
    const good = agent.save();
    agent.dispose();
    const bad: SerializedAgent = {
      ...good,
      networks: {
        ...good.networks,
        actor: [
          good.networks.actor[0]!,
          { w: good.networks.actor[1]!.w.slice(0, 8), b: good.networks.actor[1]!.b },
          good.networks.actor[2]!,
        ],
      },
    };
    expect(() => ActorForward.fromSerialized(bad)).toThrow(
      /networks\.actor\.1\.w: expected 64x64 = 4096 float32 \(16384 bytes\), got 6 bytes/,
    );
    await expect(SacDiscrete.load({ ...good, format: 'other' })).rejects.toThrow(/format/);
    await expect(SacDiscrete.load({ ...good, settings: { ...good.settings, batchSize: 0 } })).rejects.toThrow(
      /settings\.batchSize/,
    );
    expect(() => ActorForward.fromSerialized({ ...good, stateNormalizer: null })).toThrow(
      /stateNormalizer: must be present/,
    );
  });
});

describe('SacSettings', () => {
  it('applies Table 1 defaults', () => {
    expect(parseSacSettings({})).toMatchObject({
      replaySize: 10_000,
      batchSize: 100,
      lrQ: 1e-4,
      lrActor: 1e-4,
      lrAlpha: 1e-4,
      gamma: 0.99,
      tau: 0.01,
      initialTemperature: 1,
      hidden: [512, 256],
      targetEntropy: 'paper',
    });
  });

  it.each<[SacSettingsInput | Record<string, unknown>, RegExp]>([
    [{ batchSize: 200, replaySize: 100 }, /batchSize: must be <= replaySize \(100\)/],
    [{ learningStarts: 10, batchSize: 32 }, /learningStarts: must be >= batchSize \(32\)/],
    [{ hidden: [64, 0] }, /hidden\.1:/],
    [{ hidden: [] }, /hidden:/],
    [{ gamma: 1.5 }, /gamma:/],
    [{ tau: 0 }, /tau:/],
    [{ targetEntropy: 'max' }, /targetEntropy:/],
    [{ gradClipNorm: -1 }, /gradClipNorm:/],
    [{ rewardNormalization: 'z' }, /rewardNormalization:/],
    [{ learningRate: 1e-3 }, /learningRate/],
  ])('rejects %j', (input, message) => {
    expect(() => parseSacSettings(input)).toThrow(message);
  });

  it('computes the target entropy options', () => {
    expect(targetEntropyFor('paper', [64, 64], 128)).toBeCloseTo(-Math.log(129), 12);
    expect(targetEntropyFor('christodoulou', [64, 2, 1], 128)).toBeCloseTo(0.98 * (Math.log(64) + Math.log(2)), 12);
    expect(targetEntropyFor(-3, [64], 64)).toBe(-3);
  });
});

// Online profiling (docs/online-profiling.md): AIMD, the fit on telemetry drawn from a known profile,
// and the decorator's index mapping and promotion.
import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import { aimdEpoch, aimdTargetMs } from '../../src/policy/online/aimd.js';
import { addSample, emptyFitState, fitModel, heldOutCheck } from '../../src/policy/online/fit.js';
import { withOnlineProfiling } from '../../src/policy/online/policy.js';
import { LatencyModel } from '../../src/model/predictor.js';
import type { Profile } from '../../src/profile/schema.js';
import type { BatchRecord, ClusterInfo, Deployment, PolicyFactory } from '../../src/policy/types.js';
import {
  full,
  known,
  models,
  noisy,
  observation,
  prior0,
  recordingFactory,
  solo,
  trueMs,
  truth,
  withoutNew,
} from '../support/onlineFixtures.js';

describe('AIMD', () => {
  const target = aimdTargetMs(60);
  it('targets half the SLO', () => expect(target).toBe(30));
  it('adds one per full batch under the target, at most doubling, up to the maximum', () => {
    expect(aimdEpoch(4, [{ ran: 4, execMs: 10 }], target)).toBe(5);
    expect(
      aimdEpoch(
        4,
        Array.from({ length: 9 }, () => ({ ran: 4, execMs: 10 })),
        target,
      ),
    ).toBe(8);
    expect(aimdEpoch(32, [{ ran: 32, execMs: 10 }], target)).toBe(32);
  });
  it('does not grow on batches that were not full', () => {
    expect(aimdEpoch(8, [{ ran: 3, execMs: 10 }], target)).toBe(8);
  });
  it('backs off by 10%, at least one, never under 1, when a batch is over the target', () => {
    expect(
      aimdEpoch(
        20,
        [
          { ran: 20, execMs: 10 },
          { ran: 20, execMs: 31 },
        ],
        target,
      ),
    ).toBe(18);
    expect(aimdEpoch(5, [{ ran: 5, execMs: 31 }], target)).toBe(4);
    expect(aimdEpoch(1, [{ ran: 1, execMs: 99 }], target)).toBe(1);
  });
});

describe('the online fit', () => {
  const prior = prior0;

  it('recovers a profile from solo batches within the threshold, and passes its held-out test', () => {
    const st = emptyFitState();
    for (let i = 0; i < 150; i++) addSample(st, solo(1 + (i % 12)));
    const fit = fitModel(st, prior, full.gpu, full.lwr)!;
    const check = heldOutCheck(st, fit, full.gpu, full.lwr);
    expect(check.heldOut).toBe(30);
    expect(check.pass).toBe(true);
    expect(check.meanRelErr).toBeLessThan(0.05);
    const fitted = LatencyModel.compile({ ...withoutNew, models: { ...known, new: fit.profile } });
    for (let b = 1; b <= 12; b++) {
      const got = fitted.predict([{ model: 'new', batch: b, pct: 100 }]).latencyMs[0]!;
      expect(Math.abs(got / trueMs(b, 100) - 1)).toBeLessThan(0.1);
    }
  });

  it('does not pass on too few held-out batches', () => {
    const st = emptyFitState();
    for (let i = 0; i < 50; i++) addSample(st, solo(2));
    const c = heldOutCheck(st, fitModel(st, prior, full.gpu, full.lwr), full.gpu, full.lwr);
    expect(c.heldOut).toBe(10);
    expect(c.pass).toBe(false);
  });

  it('fits the share shape once batches were seen at two shares, and alpha_cache from co-located ones', () => {
    const st = emptyFitState();
    for (let i = 0; i < 200; i++) addSample(st, solo(1 + (i % 8), i % 2 === 0 ? 100 : 40));
    // Beside model a at 50%: its L2 utilisation from its profile, the batch's time from the true model.
    const a = full.models.a!;
    const othersL2 = a.l2.alphaU * 0.5 + a.l2.betaU;
    for (let i = 0; i < 40; i++) {
      const batch = 1 + (i % 8);
      const execMs = truth.predict([
        { model: 'new', batch, pct: 50 },
        { model: 'a', batch: 4, pct: 50 },
      ]).latencyMs[0]!;
      addSample(st, { batch, pct: 50, execMs: noisy(execMs), models: 2, othersL2 });
    }
    const fit = fitModel(st, prior, full.gpu, full.lwr)!;
    expect(fit.alphaCacheFitted).toBe(true);
    expect(fit.profile.alphaCache).toBeGreaterThan(0.4);
    expect(fit.profile.alphaCache).toBeLessThan(0.6);
    const fitted = LatencyModel.compile({ ...withoutNew, models: { ...known, new: fit.profile } });
    const got = fitted.predict([{ model: 'new', batch: 4, pct: 40 }]).latencyMs[0]!;
    expect(Math.abs(got / trueMs(4, 40) - 1)).toBeLessThan(0.1);
  });
});

// A GPU type where every model runs twice as long.
const slow: Profile = {
  ...full,
  id: 'slow',
  models: Object.fromEntries(
    Object.entries(full.models).map(([n, m]) => [
      n,
      { ...m, runSamples: m.runSamples.map((x) => ({ ...x, runMs: 2 * x.runMs })) },
    ]),
  ),
};

describe('the online-profiling decorator', () => {
  it('maps the profiled models in and out, keeps a GPU for the unprofiled one, and promotes its fit', () => {
    const cluster = buildCluster([full, full], models);
    const { factory, created, seen } = recordingFactory();
    const promoted: string[] = [];
    // The share probe before promotion has a test of its own (below).
    const policy = withOnlineProfiling(factory, {
      unprofiled: ['new'],
      probe: null,
      onPromote: (l) => promoted.push(l.model),
    }).create(cluster, {});
    // The inner policy sees a and b only, renumbered, on the first GPU (the second is kept for 'new').
    expect(created[0]!.models.map((m) => [m.index, m.name])).toEqual([
      [0, 'a'],
      [1, 'b'],
    ]);
    expect(created[0]!.gpus).toHaveLength(1);
    const d0 = policy.decide(observation(3, [], 0));
    expect(seen[0]!.ratePerS).toEqual([10, 30]);
    expect(d0.placements).toEqual([
      { model: 0, gpu: 0, pct: 50, batch: 4 },
      { model: 2, gpu: 0, pct: 50, batch: 4 },
      { model: 1, gpu: 1, pct: 100, batch: 1, timeoutMs: 0, padBatch: true },
    ]);
    // Epochs of full batches alone on GPU 1: AIMD grows the batch, the fit passes, the model is promoted.
    let batch = 1;
    let inForce = d0;
    for (let e = 1; e <= 8 && promoted.length === 0; e++) {
      const recs: BatchRecord[] = Array.from({ length: 32 }, () => ({
        model: 1,
        gpu: 1,
        batch,
        pct: 100,
        execMs: noisy(trueMs(batch, 100)),
        pooled: false,
        beside: [],
      }));
      const d = policy.decide({ ...observation(3, recs, e * 1000), current: inForce });
      inForce = d;
      const mine = d.placements.find((p) => p.model === 1)!;
      if (promoted.length === 0) {
        expect(mine.batch).toBe(Math.min(32, batch * 2));
        batch = mine.batch;
      }
    }
    expect(promoted).toEqual(['new']);
    // The policy made anew plans from nothing in force: not from the AIMD placement it did not plan.
    expect(seen[seen.length - 1]!.current).toEqual({ placements: [] });
    // Re-created on the larger cluster: every GPU, 'new' among its models at its own index.
    const last = created[created.length - 1]!;
    expect(last.models.map((m) => m.name)).toEqual(['a', 'new', 'b']);
    expect(last.gpus).toHaveLength(2);
    expect(last.gpus.every((g) => g.profileIndex[1]! >= 0)).toBe(true);
    const d = policy.decide(observation(3, [], 9000));
    // Placed like any profiled model, its fitted profile carried for the serving side's predictions.
    const p = d.placements.find((x) => x.model === 1)!;
    expect(p.gpu).toBe(0);
    expect(p.timeoutMs).toBeUndefined();
    expect(d.learned?.synthetic?.new?.notes[0]).toMatch(/fitted online/);
    expect(policy.note).toMatch(/new on synthetic: profiled online after \d+ batches/);
  });

  it('carries a fit over to another GPU type by the ratio of the other models there', () => {
    const cluster = buildCluster([slow, full], models);
    const { factory, created } = recordingFactory();
    const policy = withOnlineProfiling(factory, { unprofiled: ['new'], probe: null }).create(cluster, {});
    let inForce = 1;
    for (let e = 1; e <= 8; e++) {
      // Every other batch padded to AIMD's batch in force, the others at what the load fills.
      const recs: BatchRecord[] = Array.from({ length: 32 }, (_, i) => ({
        model: 1,
        gpu: 1,
        batch: i % 2 === 0 ? inForce : 1 + (i % 4),
        pct: 100,
        execMs: noisy(trueMs(i % 2 === 0 ? inForce : 1 + (i % 4), 100)),
        pooled: false,
        beside: [],
      }));
      inForce = policy.decide(observation(3, recs, e * 1000)).placements.find((p) => p.model === 1)!.batch;
    }
    const last = created[created.length - 1]!;
    expect(last.gpus.map((g) => g.profileIndex[1]! >= 0)).toEqual([true, true]);
    const onSlow = last.gpus[0]!.model.predict([{ model: 'new', batch: 2, pct: 100 }]).latencyMs[0]!;
    const onFull = last.gpus[1]!.model.predict([{ model: 'new', batch: 2, pct: 100 }]).latencyMs[0]!;
    expect(onSlow / onFull).toBeGreaterThan(1.8);
    expect(onSlow / onFull).toBeLessThan(2.05);
    expect(policy.note).toMatch(/new on slow: profile carried over from synthetic/);
  });

  it('keeps the fastest GPU for the unprofiled model, wherever it is, and maps GPUs in and out', () => {
    const cluster = buildCluster([full, slow, slow], models);
    const { factory, created, seen } = recordingFactory();
    const policy = withOnlineProfiling(factory, { unprofiled: ['new'] }).create(cluster, {});
    // The inner policy gets the two slow GPUs as 0 and 1; the fast GPU 0 is kept for 'new'.
    const inner = created[created.length - 1]!;
    expect(inner.gpus.map((g) => [g.index, g.profileId])).toEqual([
      [0, 'slow'],
      [1, 'slow'],
    ]);
    const recs: BatchRecord[] = [
      { model: 0, gpu: 2, batch: 3, pct: 50, execMs: 5, pooled: false, beside: [{ model: 2, batch: 1, pct: 50 }] },
      { model: 1, gpu: 0, batch: 1, pct: 100, execMs: 5, pooled: false, beside: [] },
    ];
    const d = policy.decide(observation(3, recs, 0));
    // The inner policy saw only its own model's batch, on its GPU 1 (the cluster's GPU 2).
    expect(seen[seen.length - 1]!.lastEpoch.batches).toEqual([
      { model: 0, gpu: 1, batch: 3, pct: 50, execMs: 5, pooled: false, beside: [{ model: 1, batch: 1, pct: 50 }] },
    ]);
    expect(d.placements.filter((p) => p.model !== 1).every((p) => p.gpu === 1)).toBe(true);
    expect(d.placements.find((p) => p.model === 1)).toMatchObject({ model: 1, gpu: 0, pct: 100 });
    expect(d.gpuModes ?? []).not.toContain('timeshare');
  });

  it('time-shares the least loaded GPU when the cluster has one GPU', () => {
    const cluster = buildCluster([full], models);
    const { factory } = recordingFactory();
    const d = withOnlineProfiling(factory, { unprofiled: ['new'] })
      .create(cluster, {})
      .decide(observation(3, [], 0));
    expect(d.gpuModes).toEqual(['timeshare']);
    expect(d.placements.find((p) => p.model === 1)).toEqual({ model: 1, gpu: 0, pct: 100, batch: 1, timeoutMs: 0 });
  });

  it("gives the inner policy the cluster's pipelines and shared tiers, and carries its split and lanes out", () => {
    // a and its bulk tier (one network), the unprofiled 'new', and b; pipelines a -> b and new -> b.
    const served = [
      { name: 'a', sloMs: 50 },
      { name: 'new', sloMs: 100 },
      { name: 'a-bulk', sloMs: 400, profileModel: 'a' },
      { name: 'b', sloMs: 100 },
    ];
    const step = (model: string) => ({ model, inputMap: {}, outputMap: {} });
    const cluster: ClusterInfo = {
      ...buildCluster([full, full], served),
      shareTiers: true,
      pipelines: [
        { name: 'ab', sloMs: 200, steps: [step('a'), step('b')], stepModels: [0, 3] },
        { name: 'nb', sloMs: 200, steps: [step('new'), step('b')], stepModels: [1, 3] },
      ],
    };
    const created: ClusterInfo[] = [];
    const inner: PolicyFactory = {
      name: 'tiers',
      description: 'a-bulk in the lane of a, the pipeline split 60/140',
      supports: () => null,
      create: (c) => (
        created.push(c),
        {
          name: 'tiers',
          decide: (): Deployment => ({
            placements: [
              { model: 0, gpu: 0, pct: 50, batch: 4 },
              { model: 2, gpu: 0, pct: 50, batch: 4 },
            ],
            sharedBy: [0, 0, 2],
            pipelineBudgetsMs: { ab: [60, 140] },
          }),
        }
      ),
    };
    const policy = withOnlineProfiling(inner, { unprofiled: ['new'] }).create(cluster, {});
    // Inner: a, a-bulk, b; the pipeline of profiled steps only, renumbered; tiers shared.
    expect(created[0]!.models.map((m) => m.name)).toEqual(['a', 'a-bulk', 'b']);
    expect(created[0]!.shareTiers).toBe(true);
    expect(created[0]!.pipelines!.map((p) => [p.name, p.stepModels])).toEqual([['ab', [0, 2]]]);
    const d = policy.decide(observation(4, [], 0));
    // Out: a-bulk in a's lane, 'new' and b in their own; the split as the inner policy made it.
    expect(d.sharedBy).toEqual([0, 1, 0, 3]);
    expect(d.pipelineBudgetsMs).toEqual({ ab: [60, 140] });
    expect(d.placements.find((p) => p.model === 1)).toMatchObject({ gpu: 1, pct: 100 });
  });
});

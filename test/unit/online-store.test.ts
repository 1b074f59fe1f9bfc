// The online-profiling state survives a scheduler restart: saved in SQLite each epoch, restored at the
// decorator's creation, and its promoted profiles merged into the scheduler's profiles.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clusterView } from '../../scheduler/clusterView.js';
import { LearnedCluster, withLearned, withLearnedProfiles } from '../../src/policy/online/clusterMap.js';
import { Store } from '../../scheduler/store.js';
import { buildCluster } from '../../src/policy/cluster.js';
import { withOnlineProfiling } from '../../src/policy/online/policy.js';
import { learnerFromJson, learnerToJson, type LearnerState } from '../../src/policy/online/state.js';
import { ProfileSchema } from '../../src/profile/schema.js';
import type { BatchRecord, Deployment, Observation, PolicyFactory } from '../../src/policy/types.js';
import { ProfileBuilder } from '../support/builders.js';

const profile = ProfileSchema.parse(
  new ProfileBuilder()
    .model('a', { runAtB1Full: 2, batchExp: 0.9, pctExp: 1 })
    .model('b', { runAtB1Full: 1, batchExp: 0.7, pctExp: 1 })
    .build(),
);
const models = [
  { name: 'a', sloMs: 100 },
  { name: 'mine', sloMs: 100 },
];
const inner: PolicyFactory = {
  name: 'even',
  description: 'each model at 100% on GPU 0',
  supports: () => null,
  create: (c) => ({
    name: 'even',
    decide: (): Deployment => ({ placements: c.models.map((m) => ({ model: m.index, gpu: 0, pct: 50, batch: 2 })) }),
  }),
};

function obs(records: BatchRecord[], nowMs: number): Observation {
  const z = [0, 0];
  return {
    nowMs,
    ratePerS: [10, 10],
    queued: z,
    lastEpoch: { served: z, violated: z, dropped: z, meanExecMs: z, meanLatencyMs: z, batches: records },
    current: { placements: [] },
  };
}

/**
 * Epochs of batches of 'mine' alone on GPU 1 at the share it is placed at (its share probe: probe.ts), every other
 * one padded, 4 ms plus 0.1 ms per task at 100% (a model that batches well: worth a probe), slower by the
 * square root of the share, until it is promoted.
 */
function serveUntilPromoted(store: Store): LearnerState[] {
  const promoted: LearnerState[] = [];
  const cluster = buildCluster([profile, profile], models);
  const policy = withOnlineProfiling(inner, {
    store: store.onlineStatePort(() => '2026-01-01T00:00:00.000Z'),
    onPromote: (l) => promoted.push(l),
  }).create(cluster, {});
  let placed = { pct: 100, batch: 1 };
  for (let e = 0; e < 16 && promoted.length === 0; e++) {
    const { pct } = placed;
    const recs = Array.from({ length: 32 }, (_, i): BatchRecord => {
      // Every other batch padded to the batch in force (Placement.padBatch).
      const batch = i % 2 === 0 ? placed.batch : 1 + (i % 6);
      return {
        model: 1,
        gpu: 1,
        batch,
        pct,
        execMs: (4 + 0.1 * batch) * (1 + 0.01 * ((i % 3) - 1)) * Math.sqrt(100 / pct),
        pooled: false,
        beside: [],
      };
    });
    placed = policy.decide(obs(recs, e * 1000)).placements.find((p) => p.model === 1)!;
  }
  return promoted;
}

describe('online-profiling state in the store', () => {
  it('round-trips a learner state through JSON and SQLite, across reopenings of the file', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'inss-online-')), 'inss.db');
    const a = new Store(path);
    const promoted = serveUntilPromoted(a);
    expect(promoted).toHaveLength(1);
    // It probed a smaller share before promotion; that too is kept.
    expect(promoted[0]!.probePct).toBeLessThan(100);
    a.close();
    const b = new Store(path);
    const raw = b.onlineState('mine', 'synthetic');
    const back = learnerFromJson(raw, 'test');
    expect(learnerToJson(back)).toEqual(learnerToJson(promoted[0]!));
    expect(back.profile).not.toBeNull();
    // Restored: the model is profiled from the start (the inner policy gets it at once, on every GPU).
    const created: string[][] = [];
    const spy: PolicyFactory = {
      ...inner,
      create: (c, o) => (created.push(c.models.map((m) => m.name)), inner.create(c, o)),
    };
    const policy = withOnlineProfiling(spy, { store: b.onlineStatePort(() => 'now') }).create(
      buildCluster([profile, profile], models),
      {},
    );
    expect(created).toEqual([['a', 'mine']]);
    expect(policy.note).toMatch(/mine on synthetic: profiled online after \d+ batches/);
    // The scheduler's profiles gain the fitted model: the cluster view has it, for dispatch predictions too.
    const learned = b.learnedProfiles();
    expect(Object.keys(learned.get('synthetic') ?? {})).toEqual(['mine']);
    const merged = withLearnedProfiles(new Map([['synthetic', profile]]), Object.fromEntries(learned));
    const gpu = { index: 0, uuid: 'u', name: 'g', profile: 'synthetic', memMb: 8000, simulated: true };
    const gpus = [{ ...gpu, pooled: 'overlap' as const }];
    const view = clusterView([{ agentId: 'x', gpus }], merged, models);
    expect(view.missingModels).toEqual([]);
    expect(view.cluster!.gpus[0]!.profileIndex[1]).toBeGreaterThanOrEqual(0);
    // And its deployments carry the fitted profile from the first, for the dispatch rule (Deployment.learned).
    expect(Object.keys(policy.decide(obs([], 0)).learned?.synthetic ?? {})).toEqual(['mine']);
    b.close();
  });

  it("adds a deployment's learned profiles to the cluster the dispatch rule predicts with, replacing old ones", () => {
    const given = buildCluster([profile, profile], models);
    const dispatch = new LearnedCluster();
    dispatch.setGiven(given);
    expect(dispatch.learn(undefined)).toBe(false);
    expect(dispatch.cluster).toBe(given);
    const fitted = (ms: number) => ({ ...profile.models.b!, runSamples: [{ batch: 1, pct: 100, runMs: ms }] });
    const first = { synthetic: { mine: fitted(3) }, other: { mine: fitted(9) } };
    expect(dispatch.learn(first)).toBe(true);
    expect(dispatch.learn(first)).toBe(false);
    const predict = () =>
      dispatch.cluster!.gpus[1]!.model.predict([{ model: 'mine', batch: 1, pct: 100 }]).latencyMs[0]!;
    expect(dispatch.cluster!.gpus.map((g) => g.profileIndex[1]! >= 0)).toEqual([true, true]);
    const at3 = predict();
    // A refreshed profile replaces the one learned before, and the one a restarted scheduler began with.
    expect(dispatch.learn({ synthetic: { mine: fitted(6) } })).toBe(true);
    expect(predict()).toBeCloseTo(at3 + 3, 1);
    const restarted = buildCluster([{ ...profile, models: { ...profile.models, mine: fitted(3) } }], models);
    expect(withLearned(restarted, { synthetic: { mine: fitted(6) } }).gpus[0]!.model.profile.models.mine).toEqual(
      fitted(6),
    );
    // A new given cluster (the agents' GPUs changed) gets the learned profiles too.
    dispatch.setGiven(buildCluster([profile], models));
    expect(dispatch.cluster!.gpus[0]!.profileIndex[1]).toBeGreaterThanOrEqual(0);
    // Nothing learned for the cluster's profiles: the given cluster itself.
    expect(withLearned(given, { other: { mine: fitted(1) } })).toBe(given);
  });

  it('starts afresh, saying why, on stored state that does not validate', () => {
    const s = new Store(':memory:');
    s.saveOnlineState('mine', 'synthetic', { model: 'mine', batch: 0 }, 'now');
    const policy = withOnlineProfiling(inner, { store: s.onlineStatePort(() => 'now') }).create(
      buildCluster([profile, profile], models),
      {},
    );
    expect(policy.note).toMatch(/invalid online-profiling state: .*batch/);
    expect(policy.note).toMatch(/mine on synthetic: unprofiled, AIMD batch 1/);
    s.close();
  });
});

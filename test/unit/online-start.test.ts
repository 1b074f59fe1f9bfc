// Online profiling before the fit (docs/online-profiling.md, "The batch before the fit"): the rate's floor
// under AIMD's batch, the fit's bound above the batches seen, and the prior's memory.
import { describe, expect, it } from 'vitest';
import { LatencyModel } from '../../src/model/predictor.js';
import { addSample, emptyFitState, type FitState, fittedMemory, takeRecord } from '../../src/policy/online/fit.js';
import { runAtFull } from '../../src/policy/online/shapes.js';
import { learnerFromJson, learnerToJson, newLearner } from '../../src/policy/online/state.js';
import { gpuPrior, median } from '../../src/policy/online/prior.js';
import { withOnlineProfiling } from '../../src/policy/online/policy.js';
import { estimatedMs, flooredBatch, rateBatch } from '../../src/policy/online/startBatch.js';
import { buildCluster } from '../../src/policy/cluster.js';
import type { BatchRecord, Observation, PolicyFactory } from '../../src/policy/types.js';
import { type Profile, ProfileSchema } from '../../src/profile/schema.js';
import { ProfileBuilder } from '../support/builders.js';

// The profiled models batch well (small exponents); the new one batches almost in proportion.
const built: Profile = ProfileSchema.parse(
  new ProfileBuilder()
    .model('a', { runAtB1Full: 1, batchExp: 0.4, pctExp: 1 })
    .model('b', { runAtB1Full: 1.5, batchExp: 0.5, pctExp: 1 })
    .model('c', { runAtB1Full: 2, batchExp: 0.45, pctExp: 1 })
    .model('new', { runAtB1Full: 4, batchExp: 0.9, pctExp: 1 })
    .build(),
);
const memory = { a: [500, 5], b: [1000, 10], c: [4000, 40], new: [1500, 10] } as const;
const full: Profile = {
  ...built,
  models: Object.fromEntries(
    Object.entries(built.models).map(([n, m]) => {
      const [baseMb, perBatchMb] = memory[n as keyof typeof memory];
      return [n, { ...m, memory: { baseMb, perBatchMb } }];
    }),
  ),
};
const { new: _hidden, ...known } = full.models;
const prior = gpuPrior(LatencyModel.compile({ ...full, models: known }));
const truth = LatencyModel.compile(full);
const trueMs = (batch: number) => truth.predict([{ model: 'new', batch, pct: 100 }]).latencyMs[0]!;

function seenAt(batches: readonly number[]): FitState {
  const st = emptyFitState();
  for (const batch of batches)
    for (let i = 0; i < 4; i++) addSample(st, { batch, pct: 100, execMs: trueMs(batch), models: 1, othersL2: 0 });
  return st;
}

describe('the batch before the fit', () => {
  it("guesses from the prior's median model before any batch, and from the model's own batches after", () => {
    const none = emptyFitState();
    expect(estimatedMs(none, prior, 4)).toBeCloseTo(prior.typicalMs(4), 9);
    const st = seenAt([4]);
    expect(estimatedMs(st, prior, 4)).toBeCloseTo(trueMs(4), 9);
    // One batch size seen: above it in proportion to the batch (the upper bound).
    expect(estimatedMs(st, prior, 8)).toBeCloseTo(2 * trueMs(4), 9);
  });

  it('takes the smallest batch that covers the rate with headroom, within half the SLO', () => {
    const st = seenAt([1, 8]);
    const target = 200;
    const b = rateBatch(st, prior, 200, target, { headroom: 1.5, maxBatch: 32 })!;
    expect(b).toBeGreaterThan(1);
    expect((1000 * b) / estimatedMs(st, prior, b)).toBeGreaterThanOrEqual(300);
    expect((1000 * (b - 1)) / estimatedMs(st, prior, b - 1)).toBeLessThan(300);
    expect(estimatedMs(st, prior, b)).toBeLessThanOrEqual(target);
  });

  it('gives the largest batch within the target when no batch covers the rate, and 1 at the least', () => {
    const st = seenAt([1, 8]);
    const target = estimatedMs(st, prior, 6) + 1e-9;
    expect(rateBatch(st, prior, 1e6, target)).toBe(6);
    expect(rateBatch(st, prior, 1e6, estimatedMs(st, prior, 1) / 2)).toBe(1);
  });

  it('goes over the target to the smallest batch that serves the rate where no batch within it does', () => {
    const st = seenAt([1, 8, 16]);
    // The target sits at batch 6's time; the rate is just over what batch 6 serves alone, under batch 8's.
    const target = estimatedMs(st, prior, 6) + 1e-9;
    const rate = (1000 * 6) / estimatedMs(st, prior, 6) + 1;
    const b = rateBatch(st, prior, rate, target)!;
    expect(b).toBeGreaterThan(6);
    expect((1000 * b) / estimatedMs(st, prior, b)).toBeGreaterThanOrEqual(rate);
    expect((1000 * (b - 1)) / estimatedMs(st, prior, b - 1)).toBeLessThan(rate);
    expect(estimatedMs(st, prior, b)).toBeLessThanOrEqual(2 * target);
    // Not where that batch would take more than the SLO (twice the target): then the largest within the target.
    expect(rateBatch(st, prior, rate, estimatedMs(st, prior, b) / 2.01)).toBeLessThan(b);
    // After a batch over the target AIMD lowers to a floor within it, but not under a floor over it.
    const within = rateBatch(st, prior, 10, target)!;
    expect(flooredBatch(12, true, st, prior, 10, target)).toBe(within);
    expect(flooredBatch(12, false, st, prior, 10, target)).toBe(12);
    expect(flooredBatch(b - 1, true, st, prior, rate, target)).toBe(b);
  });

  it('says nothing without a profiled model and no batch of its own', () => {
    const empty = gpuPrior(LatencyModel.compile({ ...full, models: {} }));
    expect(rateBatch(emptyFitState(), empty, 100, 50)).toBeNull();
  });
});

describe("the fit's running time above the batches seen", () => {
  it("is at least the model's own slope from the largest seen batch, where the prior's shape is under it", () => {
    const seen = new Map([
      [1, trueMs(1)],
      [8, trueMs(8)],
    ]);
    const slope = Math.log(trueMs(8) / trueMs(1)) / Math.log(8);
    expect(runAtFull(seen, prior, 32)).toBeCloseTo(trueMs(8) * 4 ** slope, 9);
    expect(runAtFull(seen, prior, 32)).toBeGreaterThan(trueMs(8) * prior.batchRatio(32, 8));
    // Between seen batches and below them: unchanged (log-log, the prior's shape).
    expect(runAtFull(seen, prior, 1)).toBe(trueMs(1));
    const near = new Map([[8, trueMs(8)]]);
    expect(runAtFull(near, prior, 2)).toBeCloseTo(trueMs(8) * prior.batchRatio(2, 8), 9);
  });
});

describe("the prior's memory", () => {
  it("is the profiled models' median, not their largest", () => {
    const ms = Object.values(known);
    expect(prior.memory).toEqual({ baseMb: 1000, perBatchMb: 10 });
    expect(prior.memory.baseMb).toBe(median(ms.map((m) => m.memory.baseMb)));
  });
});

describe('the decorator with the floor', () => {
  // The inner policy places its models on GPU 0; 'new' is kept on GPU 1.
  const inner: PolicyFactory = {
    name: 'one',
    description: 'every model on GPU 0',
    supports: () => null,
    create: (cluster) => ({
      name: 'one',
      decide: () => ({ placements: cluster.models.map((m) => ({ model: m.index, gpu: 0, pct: 50, batch: 4 })) }),
    }),
  };
  const obs = (ratePerS: number, batches: BatchRecord[]): Observation => ({
    nowMs: 0,
    ratePerS: [10, ratePerS, 10],
    queued: [0, 0, 0],
    lastEpoch: {
      served: [0, 0, 0],
      violated: [0, 0, 0],
      dropped: [0, 0, 0],
      meanExecMs: [],
      meanLatencyMs: [],
      batches,
    },
    current: { placements: [] },
  });
  const models = [
    { name: 'a', sloMs: 100 },
    { name: 'new', sloMs: 100 },
    { name: 'b', sloMs: 100 },
  ];
  const batchOf = (d: { placements: readonly { model: number; batch: number }[] }) =>
    d.placements.find((p) => p.model === 1)!.batch;

  it("starts at the rate's batch, and after batches over the target comes down to the measured one", () => {
    const policy = withOnlineProfiling(inner, { unprofiled: ['new'] }).create(buildCluster([full, full], models), {});
    const rate = 1500;
    const first = batchOf(policy.decide(obs(rate, [])));
    expect(first).toBe(rateBatch(emptyFitState(), prior, rate, 50));
    expect(first).toBeGreaterThan(1);
    // The model is slower than the guess: every batch at that size is over 50 ms.
    const slow = Array.from({ length: 10 }, () => ({
      model: 1,
      gpu: 1,
      batch: first,
      pct: 100,
      execMs: 80,
      pooled: false,
      beside: [],
    }));
    const next = batchOf(policy.decide(obs(rate, slow)));
    const st = emptyFitState();
    for (let i = 0; i < slow.length; i++) addSample(st, { batch: first, pct: 100, execMs: 80, models: 1, othersL2: 0 });
    expect(next).toBe(Math.min(Math.floor(first * 0.9), rateBatch(st, prior, rate, 50)!));
    expect(next).toBeLessThan(first);
  });

  it('leaves AIMD alone with the floor turned off', () => {
    const policy = withOnlineProfiling(inner, { unprofiled: ['new'], start: null }).create(
      buildCluster([full, full], models),
      {},
    );
    expect(batchOf(policy.decide(obs(1500, [])))).toBe(1);
  });
});

describe('the memory its workers measured', () => {
  const gpu = buildCluster([full], [{ name: 'new', sloMs: 100 }]).gpus[0]!;
  const record = (batch: number, memoryMb?: number): BatchRecord => ({
    model: 0,
    gpu: 0,
    batch,
    pct: 100,
    execMs: trueMs(batch),
    pooled: false,
    beside: [],
    ...(memoryMb !== undefined ? { memoryMb } : {}),
  });

  it('replaces the prior: a line through the batch sizes read, the prior per batch where one size was read', () => {
    const st = emptyFitState();
    takeRecord(st, record(4), gpu);
    expect(fittedMemory(st, prior)).toEqual(prior.memory);
    for (const b of [2, 8, 8, 16]) takeRecord(st, record(b, 3000 + 40 * b), gpu);
    const fit = fittedMemory(st, prior);
    expect(fit.baseMb).toBeCloseTo(3000, 6);
    expect(fit.perBatchMb).toBeCloseTo(40, 6);
    const one = emptyFitState();
    takeRecord(one, record(8, 3400), gpu);
    expect(fittedMemory(one, prior)).toEqual({ baseMb: 3400 - 8 * prior.memory.perBatchMb, perBatchMb: 10 });
    // Readings that are no memory are not taken; the batch's time still is.
    const bad = emptyFitState();
    takeRecord(bad, record(8, Number.NaN), gpu);
    expect([bad.memory, bad.seen]).toEqual([[], 1]);
  });

  it('is kept with the learner state, and state saved without it reads back with none', () => {
    const st = emptyFitState();
    takeRecord(st, record(8, 3400), gpu);
    const state = { ...newLearner('new', full.id), batch: 8, fit: st };
    expect(learnerFromJson(JSON.parse(JSON.stringify(learnerToJson(state))), 'test').fit.memory).toEqual(st.memory);
    const old = JSON.parse(JSON.stringify(learnerToJson(state))) as { fit: Record<string, unknown> };
    delete old.fit.memory;
    expect(learnerFromJson(old, 'test').fit.memory).toEqual([]);
  });
});

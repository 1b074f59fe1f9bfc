// The share probe before promotion and the fit's shapes in batch and share (docs/online-profiling.md, "A second
// share before promotion"): per-batch exponents of the share shape, refits with a model's own shapes, and the
// decorator's probe.
import { describe, expect, it } from 'vitest';
import { loadProfile } from '../../cli/profiles.js';
import { LatencyModel } from '../../src/model/predictor.js';
import { buildCluster } from '../../src/policy/cluster.js';
import { addSample, emptyFitState, fitModel } from '../../src/policy/online/fit.js';
import { withOnlineProfiling } from '../../src/policy/online/policy.js';
import { gpuPrior, ownShapes } from '../../src/policy/online/prior.js';
import { batchesBetter, climbing, DEFAULT_PROBE, probeShare, probing } from '../../src/policy/online/probe.js';
import { type LearnerState, newLearner } from '../../src/policy/online/state.js';
import type { ModelProfile, Profile } from '../../src/profile/schema.js';
import type { BatchRecord } from '../../src/policy/types.js';
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

describe('the fit in batch and share', () => {
  const prior = prior0;

  it('fits an exponent of the share shape per batch size where batches ran at 100% and at a smaller share', () => {
    // mnasnet on the RTX 2060 Super slows on a quarter of the GPU by 1.7x at batch 8 and 2.5x at batch 32; the
    // median of the other models by 3.4x at both. One exponent for all batches fits neither end.
    const rtx = loadProfile('rtx2060s');
    const lm = LatencyModel.compile(rtx);
    const { mnasnet: _own, ...others } = rtx.models;
    const rest: Profile = { ...rtx, models: others };
    const p = gpuPrior(LatencyModel.compile(rest));
    const t = (batch: number, pct: number) => lm.predict([{ model: 'mnasnet', batch, pct }]).latencyMs[0]!;
    const st = emptyFitState();
    for (let i = 0; i < 240; i++) {
      const batch = [1, 2, 4, 8, 16, 32][i % 6]!;
      const pct = i % 12 < 6 ? 100 : 25;
      addSample(st, { batch, pct, execMs: t(batch, pct), models: 1, othersL2: 0 });
    }
    const fit = fitModel(st, p, rtx.gpu, rtx.lwr)!;
    expect(fit.profile.notes[0]).toMatch(/share exponents [\d.]+ to [\d.]+ by batch/);
    const got = LatencyModel.compile({ ...rest, models: { ...others, mnasnet: fit.profile } });
    const at = (batch: number, pct: number) => got.predict([{ model: 'mnasnet', batch, pct }]).latencyMs[0]!;
    // At the shares it ran at, within 5%; between them the prior's shape with that batch's exponent, within 20%
    // and on the safe side (over, or at most 5% under).
    for (const b of [8, 32]) {
      expect(Math.abs(at(b, 25) / t(b, 25) - 1)).toBeLessThan(0.05);
      expect(Math.abs(at(b, 100) / t(b, 100) - 1)).toBeLessThan(0.05);
      expect(at(b, 50) / t(b, 50)).toBeGreaterThan(0.95);
      expect(at(b, 50) / t(b, 50)).toBeLessThan(1.2);
    }
    // The median model's shape alone is 2x over at a quarter of the GPU at batch 8.
    expect(p.shareRatio(8, 25) / (t(8, 25) / t(8, 100))).toBeGreaterThan(1.8);
  });

  it('refits a profiled model with its own shapes: batches at one size refine it instead of going proportional', () => {
    // Seen at batch 2 only (a model placed at one batch): with the median prior, above batch 2 the bound is
    // proportional to the batch; with the model's own profile's shapes (ownShapes) it follows its own curve.
    const st = emptyFitState();
    for (let i = 0; i < 150; i++) addSample(st, solo(2));
    const median = fitModel(st, prior, full.gpu, full.lwr)!;
    const own = fitModel(st, ownShapes(prior, truth, 'new'), full.gpu, full.lwr)!;
    const at = (p: ModelProfile, batch: number, pct: number) =>
      LatencyModel.compile({ ...withoutNew, models: { ...known, new: p } }).predict([{ model: 'new', batch, pct }])
        .latencyMs[0]!;
    const err = (p: ModelProfile, b: number, pct: number) => Math.abs(at(p, b, pct) / trueMs(b, pct) - 1);
    expect(err(median.profile, 32, 100)).toBeGreaterThan(0.3);
    for (const [b, pct] of [
      [1, 100],
      [16, 100],
      [32, 100],
      [16, 50],
    ] as const)
      expect(err(own.profile, b, pct)).toBeLessThan(0.1);
    // Without the model in the latency model, the prior itself.
    expect(ownShapes(prior, LatencyModel.compile(withoutNew), 'new')).toBe(prior);
  });
});

describe('promotion while AIMD climbs', () => {
  it('waits until the fit has seen, alone at 100%, the batch AIMD stops at: its top, or where it backs off', () => {
    const seen = (batches: readonly number[], ms: (b: number) => number, pct = 100) => {
      const st = emptyFitState();
      for (let i = 0; i < 40; i++) {
        const batch = batches[i % batches.length]!;
        addSample(st, { batch, pct, execMs: ms(batch), models: 1, othersL2: 0 });
      }
      return st;
    };
    const ms = (b: number) => 5 + 2 * b;
    // Nothing at 100% yet, or AIMD's batch in force (16) not yet run, or run and under the target: it climbs.
    expect(climbing(seen([1, 2, 4], ms, 50), 16, 50, 32)).toBe(true);
    expect(climbing(seen([1, 2, 4, 8], ms), 16, 50, 32)).toBe(true);
    expect(climbing(seen([1, 4, 16], ms), 16, 50, 32)).toBe(true);
    // At the maximum; backed off below a larger batch it ran; or its largest batch already over the target.
    expect(climbing(seen([1, 4, 32], ms), 32, 50, 32)).toBe(false);
    expect(climbing(seen([1, 4, 20], ms), 18, 50, 32)).toBe(false);
    expect(climbing(seen([1, 4, 24], ms), 24, 50, 32)).toBe(false);
    expect(
      climbing(
        seen([1], () => 80),
        1,
        50,
        32,
      ),
    ).toBe(false);
  });
});

describe('the share probe', () => {
  it('is worth it for the models whose time grows more slowly with their batch than the median model', () => {
    // On the RTX 2060 Super: the prior's share shape is 52-114% over for mnasnet, mobilenet and efficientnet,
    // within 11% for the others; alexnet also grows slowly and is probed (its shape is near the prior's).
    const rtx = loadProfile('rtx2060s');
    const lm = LatencyModel.compile(rtx);
    const worth = lm.modelNames.filter((name) => {
      const { [name]: _own, ...others } = rtx.models;
      const p = gpuPrior(LatencyModel.compile({ ...rtx, models: others }));
      const st = emptyFitState();
      const t = (batch: number) => lm.predict([{ model: name, batch, pct: 100 }]).latencyMs[0]!;
      for (let i = 0; i < 60; i++) {
        const batch = [1, 4, 16, 32][i % 4]!;
        addSample(st, { batch, pct: 100, execMs: t(batch), models: 1, othersL2: 0 });
      }
      return batchesBetter(st, p);
    });
    expect(worth.sort()).toEqual(['alexnet', 'efficientnet', 'mnasnet', 'mobilenet']);
    // One batch size, or less than a doubling apart: nothing to compare.
    const st = emptyFitState();
    for (let i = 0; i < 10; i++) addSample(st, { batch: 3 + (i % 2), pct: 100, execMs: 5, models: 1, othersL2: 0 });
    expect(batchesBetter(st, prior0)).toBe(false);
  });

  it('probes a smaller share of its GPU once its fit passes at 100%, and promotes with the share shape fitted', () => {
    const cluster = buildCluster([full, full], models);
    const { factory } = recordingFactory();
    const promoted: LearnerState[] = [];
    const policy = withOnlineProfiling(factory, {
      unprofiled: ['new'],
      probe: { shares: [25, 50], minBatches: 20 },
      onPromote: (l) => promoted.push(structuredClone(l)),
    }).create(cluster, {});
    let inForce = policy.decide(observation(3, [], 0));
    const pcts: number[] = [];
    // Each epoch, 32 batches of 'new' at the placement in force, timed by its true profile.
    for (let e = 1; e <= 12 && promoted.length === 0; e++) {
      const mine = inForce.placements.find((p) => p.model === 1)!;
      pcts.push(mine.pct);
      const recs: BatchRecord[] = Array.from({ length: 32 }, (_, i) => {
        // Every other batch padded to the batch in force (Placement.padBatch), the others what the load fills.
        const batch = mine.padBatch && i % 2 === 0 ? mine.batch : 1 + (i % Math.max(1, mine.batch));
        return {
          model: 1,
          gpu: mine.gpu,
          batch,
          pct: mine.pct,
          execMs: noisy(trueMs(batch, mine.pct)),
          pooled: false,
          beside: [],
        };
      });
      inForce = policy.decide({ ...observation(3, recs, e * 1000), current: inForce });
    }
    // At 100% until the fit passes, then at the smaller share, then promoted.
    expect(pcts[0]).toBe(100);
    const probe = pcts.find((p) => p < 100);
    expect(probe === 25 || probe === 50).toBe(true);
    expect(promoted).toHaveLength(1);
    expect(promoted[0]!.probePct).toBe(probe);
    // 'new' slows on a smaller share more than the median model (pctExp 1.3 against 1): the probe fitted it.
    const fitted = LatencyModel.compile({ ...withoutNew, models: { ...known, new: promoted[0]!.profile! } });
    const at = (pct: number) => fitted.predict([{ model: 'new', batch: 4, pct }]).latencyMs[0]!;
    expect(Math.abs(at(probe!) / trueMs(4, probe!) - 1)).toBeLessThan(0.1);
    // Without a probe, the prior's shape: further from the truth at that share.
    const st = promoted[0]!;
    const noProbe = fitModel(
      { ...st.fit, solo: st.fit.solo.filter((c) => c.pct === 100) },
      prior0,
      full.gpu,
      full.lwr,
    )!;
    const plain = LatencyModel.compile({ ...withoutNew, models: { ...known, new: noProbe.profile } });
    const plainAt = plain.predict([{ model: 'new', batch: 4, pct: probe! }]).latencyMs[0]!;
    expect(Math.abs(plainAt / trueMs(4, probe!) - 1)).toBeGreaterThan(Math.abs(at(probe!) / trueMs(4, probe!) - 1));
  });

  it('does not probe a model whose rate needs most of its GPU, nor one not alone on its GPU', () => {
    const known0 = LatencyModel.compile(withoutNew);
    const p = gpuPrior(known0);
    const st = emptyFitState();
    for (let i = 0; i < 100; i++)
      addSample(st, { batch: 1 + (i % 8), pct: 100, execMs: trueMs(1 + (i % 8), 100), models: 1, othersL2: 0 });
    // At 20 tasks/s any share serves; at a rate batch 8 barely carries at 100%, none.
    expect(probeShare(st, p, 20, 50)).toBe(25);
    const full8 = (1000 * 8) / trueMs(8, 100);
    expect(probeShare(st, p, full8 / 1.6, 50)).toBeNull();
    const l = { ...newLearner('new', 'synthetic'), fit: st };
    expect(probing(l, false, false, 20, 50, p, DEFAULT_PROBE)).toBe(false);
    expect(l.probePct).toBe(100);
    expect(probing(l, true, false, 20, 50, p, DEFAULT_PROBE)).toBe(false);
    const l2 = { ...newLearner('new', 'synthetic'), fit: st };
    expect(probing(l2, true, false, 20, 50, p, DEFAULT_PROBE)).toBe(true);
    expect(l2.probePct).toBe(25);
    // No longer alone: the probe ends.
    expect(probing(l2, false, false, 20, 50, p, DEFAULT_PROBE)).toBe(false);
    expect(probing(l2, true, false, 20, 50, p, null)).toBe(false);
    // Padded, it first waits for AIMD's batch in force to have run at 100% (8 seen, 16 in force).
    const l3 = { ...newLearner('new', 'synthetic'), fit: st, batch: 16 };
    expect(probing(l3, true, true, 20, 50, p, DEFAULT_PROBE)).toBe(true);
    expect(l3.probePct).toBeNaN();
    l3.batch = 8;
    expect(probing(l3, true, true, 20, 50, p, DEFAULT_PROBE)).toBe(true);
    expect(l3.probePct).toBe(25);
  });
});

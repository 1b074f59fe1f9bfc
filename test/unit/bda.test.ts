// BDA (Algorithm 1) against hand-worked cases on a profile whose latency is known in closed form.
import { describe, expect, it } from 'vitest';
import { bda, worstTaskLatencyMs } from '../../src/policy/bda.js';
import { buildCluster } from '../../src/policy/cluster.js';
import { ProfileSchema } from '../../src/profile/schema.js';
import { makeProfile } from '../support/builders.js';

// o_r = 1 ms * b at any share (pctExp 0), no scheduling, no interference: t_inf = b * (1 + 0.0606) ms
// (transfer of 606112 B per task at 1e7 B/ms).
const profile = ProfileSchema.parse(
  makeProfile()
    .model('lin', { runAtB1Full: 1, batchExp: 1, pctExp: 0, schedPerKernelMs: 0, alphaCache: 0, alphaU: 0, betaU: 0 })
    .schedInterference(0, 0)
    .build(),
);
const perTaskMs = 1 + 606112 / 1e7;
const cluster = buildCluster([profile], [{ name: 'lin', sloMs: 100 }]);
const one = (sloMs: number, ratePerS: number, options = {}) =>
  bda(cluster.gpus, [{ placement: { model: 0, gpu: 0, pct: 100 }, sloMs, ratePerS }], options);

describe('worst-case task latency, eq. (2)', () => {
  it('is the fill time or one batch, whichever is longer, plus the batch', () => {
    expect(worstTaskLatencyMs(8, 10, 1000)).toBeCloseTo(10 + 10, 9); // fill 7 ms < one batch 10 ms
    expect(worstTaskLatencyMs(8, 10, 100)).toBeCloseTo(70 + 10, 9); // fill 70 ms
    expect(worstTaskLatencyMs(1, 10, 100)).toBeCloseTo(20, 9);
  });
});

describe('BDA', () => {
  it('picks the largest batch whose worst task meets the SLO when throughput allows', () => {
    // rate 500/s: T(b) = max(b*t, (b-1)*2 ms) + b*t with t = 1.0606 ms. The fill term dominates:
    // T(b) = 2(b-1) + 1.0606 b <= 40 -> b <= 13.72 -> 13. Throughput 13/13.79 ms = 943/s >= 500.
    const r = one(40, 500);
    expect(r.ok).toBe(true);
    expect(r.batches[0]).toBe(13);
    expect(worstTaskLatencyMs(13, 13 * perTaskMs, 500)).toBeLessThanOrEqual(40);
    expect(worstTaskLatencyMs(14, 14 * perTaskMs, 500)).toBeGreaterThan(40);
    expect(r.tInfMs[0]).toBeCloseTo(13 * perTaskMs, 9); // t_inf at the batch returned
  });

  it('caps the batch at 32', () => {
    expect(one(10_000, 500).batches[0]).toBe(32);
  });

  it('reports infeasible when no batch carries the rate within the SLO', () => {
    // capacity at any batch is < 1/1.0606 ms = 943/s
    const r = one(1000, 5000);
    expect(r.ok).toBe(false);
    expect(r.feasible[0]).toBe(false);
  });

  it('reports infeasible when even batch 1 misses the SLO', () => {
    const r = one(1, 10);
    expect(r.ok).toBe(false);
  });

  it('the literal algorithm stops where throughput falls short; search-up finds the larger feasible batch', () => {
    // SLO 60 ms, rate 900/s: feasible batches need b*1000/(b*1.0606) >= 900 (always: 943/s) and
    // T(b) = max(b t, (b-1)/0.9) + b t <= 60. With these numbers every batch meeting latency also
    // meets throughput, so both modes agree.
    expect(one(60, 900).batches[0]).toBe(one(60, 900, { onThroughputShort: 'break' }).batches[0]);
    // A profile where throughput rises steeply with batch: o_r = 5 ms flat (b^0) -> throughput b/5.06.
    const flat = ProfileSchema.parse(
      makeProfile()
        .model('flat', { runAtB1Full: 5, batchExp: 0, pctExp: 0, schedPerKernelMs: 0, alphaCache: 0 })
        .schedInterference(0, 0)
        .build(),
    );
    const c = buildCluster([flat], [{ name: 'flat', sloMs: 100 }]);
    // rate 3000/s, SLO 30 ms: mid 16: t = 5 + 16*0.0606 = 5.97 ms, fill 5 ms -> T = 11.9 <= 30;
    // throughput 2680/s < 3000.
    const literal = bda(c.gpus, [{ placement: { model: 0, gpu: 0, pct: 100 }, sloMs: 30, ratePerS: 3000 }], {
      onThroughputShort: 'break',
    });
    const searchUp = bda(c.gpus, [{ placement: { model: 0, gpu: 0, pct: 100 }, sloMs: 30, ratePerS: 3000 }]);
    expect(literal.ok).toBe(false);
    expect(searchUp.ok).toBe(true);
    expect(searchUp.batches[0]).toBeGreaterThan(16);
  });

  it('respects GPU memory (4a)', () => {
    // baseMb 1000 + 10 MB per task; a GPU of 8000 MB with two copies on one GPU leaves room for b <= 32 each;
    // shrink the GPU to 1200 MB: b <= 20.
    const small = ProfileSchema.parse({
      ...makeProfile()
        .model('lin', { runAtB1Full: 1, batchExp: 1, pctExp: 0, alphaCache: 0 })
        .schedInterference(0, 0)
        .build(),
      gpu: { ...makeProfile().build().gpu, memMb: 1200 },
    });
    const c = buildCluster([small], [{ name: 'lin', sloMs: 10_000 }]);
    const r = bda(c.gpus, [{ placement: { model: 0, gpu: 0, pct: 100 }, sloMs: 10_000, ratePerS: 100 }]);
    expect(r.batches[0]).toBe(20);
  });
});

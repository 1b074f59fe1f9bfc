// Input-dependent cost (src/model/costDistribution.ts): the batch cost's quantile and mean against sampling,
// BDA and the dispatch rule's prediction table planning against the tail, and the scenario field's validation.
import { describe, expect, it } from 'vitest';
import {
  costDistribution,
  costPlan,
  drawBatchCost,
  maxCostMean,
  maxCostQuantile,
  servedCost,
} from '../../src/model/costDistribution.js';
import { bda, bdaInput, worstTaskLatencyMs } from '../../src/policy/bda.js';
import { buildCluster } from '../../src/policy/cluster.js';
import { ProfileSchema } from '../../src/profile/schema.js';
import { ScenarioSchema } from '../../src/scenario/schema.js';
import { MAX_PRED_BATCH, predictionTable } from '../../src/serving/dispatch.js';
import { DEFAULT_SIM_SETTINGS, simulate } from '../../src/sim/simulator.js';
import { rateFunction, RenewalStream } from '../../src/workload/arrivals.js';
import { mixSeed, Rng } from '../../src/workload/random.js';
import { makeProfile } from '../support/builders.js';
import { FixedPolicy } from '../support/fakes.js';

// Sequence-length buckets 16..512 tokens, cost linear in the padded length, weights long-tailed.
const classes = [
  { relative: 16, weight: 30 },
  { relative: 32, weight: 35 },
  { relative: 64, weight: 20 },
  { relative: 128, weight: 10 },
  { relative: 256, weight: 4 },
  { relative: 512, weight: 1 },
];
const d = costDistribution(classes);

/** `n` batches of `b` sampled with the ground truth's rule, sorted. */
function sampled(b: number, n: number, seed: number): Float64Array {
  const rng = new Rng(seed);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = drawBatchCost(d, b, () => rng.next());
  return out.sort();
}

describe('cost distribution', () => {
  it('normalises to mean 1 and merges equal costs', () => {
    const mean = d.costs.reduce((s, c, k) => s + c * (d.cdf[k]! - (k > 0 ? d.cdf[k - 1]! : 0)), 0);
    expect(mean).toBeCloseTo(1, 12);
    expect(d.cdf[d.cdf.length - 1]).toBe(1);
    const m = costDistribution([
      { relative: 2, weight: 1 },
      { relative: 2, weight: 1 },
      { relative: 6, weight: 2 },
    ]);
    expect([...m.costs]).toEqual([0.5, 1.5]);
    expect([...m.cdf]).toEqual([0.5, 1]);
  });

  it('names the class whose cost or weight is bad', () => {
    expect(() => costDistribution([])).toThrow(/at least one class/);
    expect(() =>
      costDistribution([
        { relative: 1, weight: 1 },
        { relative: -1, weight: 1 },
      ]),
    ).toThrow(/classes\[1\]\.relative/);
    expect(() => costDistribution([{ relative: 1, weight: Number.NaN }])).toThrow(/classes\[0\]\.weight/);
  });

  it("the max of b draws: mean and quantiles agree with the ground truth's sampling", () => {
    for (const b of [1, 4, 8, 16]) {
      const s = sampled(b, 200_000, 7 + b);
      const mean = s.reduce((x, y) => x + y, 0) / s.length;
      expect(mean).toBeCloseTo(maxCostMean(d, b), 1);
      expect(Math.abs(mean / maxCostMean(d, b) - 1)).toBeLessThan(0.01);
      // A discrete distribution: the sampled frequency of max <= c is F(c)^b at every class.
      for (let k = 0; k < d.costs.length; k++) {
        const below = s.filter((x) => x <= d.costs[k]! + 1e-12).length / s.length;
        expect(Math.abs(below - d.cdf[k]! ** b)).toBeLessThan(0.005);
      }
      // The sampled quantile is the predicted class wherever no class's F(c)^b lies within sampling
      // error of q (there a draw decides which side it falls).
      for (const q of [0.5, 0.9, 0.95, 0.99]) {
        if (d.cdf.some((f) => Math.abs(f ** b - q) < 0.002)) continue;
        const at = s[Math.ceil(q * s.length) - 1]!;
        expect(at).toBe(maxCostQuantile(d, b, q));
      }
    }
  });

  it('grows with the batch: the tail of a larger batch is never cheaper', () => {
    const plan = costPlan(d, 0.99);
    for (let b = 2; b < MAX_PRED_BATCH; b++) {
      expect(plan.latency[b]!).toBeGreaterThanOrEqual(plan.latency[b - 1]!);
      expect(plan.throughput[b]!).toBeGreaterThanOrEqual(plan.throughput[b - 1]!);
    }
    expect(plan.throughput[1]).toBeCloseTo(1, 12); // one sample costs the mean on average
    expect(plan.latency[1]).toBe(maxCostQuantile(d, 1, 0.99));
  });

  it('mean-cost batching carries the distribution and no plan', () => {
    expect(servedCost(classes, 'mean', 0.99).plan).toBeUndefined();
    expect(servedCost(classes, 'tail', 0.95).plan?.quantile).toBe(0.95);
  });
});

// o_r = 1 ms * b at any share, no scheduling, no interference: t_inf = b * perTaskMs.
const profile = ProfileSchema.parse(
  makeProfile()
    .model('lin', { runAtB1Full: 1, batchExp: 1, pctExp: 0, schedPerKernelMs: 0, alphaCache: 0, alphaU: 0, betaU: 0 })
    .schedInterference(0, 0)
    .build(),
);
const perTaskMs = 1 + 606112 / 1e7;

describe('planning against the tail', () => {
  const tail = buildCluster([profile], [{ name: 'lin', sloMs: 100, cost: servedCost(classes, 'tail', 0.99) }]);
  const mean = buildCluster([profile], [{ name: 'lin', sloMs: 100, cost: servedCost(classes, 'mean', 0.99) }]);
  const placement = { model: 0, gpu: 0, pct: 100 };

  it("BDA checks (4b) with the batch time's quantile and (4c) with its mean", () => {
    const plan = tail.models[0]!.cost!.plan!;
    const r = bda(tail.gpus, [bdaInput(tail, placement, 300)], { sloFraction: 0.5 });
    const b = r.batches[0]!;
    expect(r.ok).toBe(true);
    const tailAt = (x: number) => x * perTaskMs * plan.latency[x]!;
    expect(worstTaskLatencyMs(b, tailAt(b), 300)).toBeLessThanOrEqual(50);
    expect(worstTaskLatencyMs(b + 1, tailAt(b + 1), 300)).toBeGreaterThan(50);
    expect(r.tInfMs[0]).toBeCloseTo(b * perTaskMs * plan.throughput[b]!, 9);
    // The mean-cost rule is the paper's BDA: a larger batch, its time the profile's.
    const m = bda(mean.gpus, [bdaInput(mean, placement, 300)], { sloFraction: 0.5 });
    expect(m.batches[0]!).toBeGreaterThan(b);
    expect(m.tInfMs[0]).toBeCloseTo(m.batches[0]! * perTaskMs, 9);
  });

  it("the dispatch rule's table is the profile's times the plan's quantile", () => {
    const plain = new Float64Array(MAX_PRED_BATCH);
    const planned = new Float64Array(MAX_PRED_BATCH);
    const peers = [{ model: 0, batch: 8, pct: 100 }];
    predictionTable(mean.gpus[0]!, peers, 0, false, plain);
    predictionTable(tail.gpus[0]!, peers, 0, false, planned, tail.models[0]!.cost!.plan);
    for (const b of [1, 2, 8, 32, MAX_PRED_BATCH - 1])
      expect(planned[b]).toBeCloseTo(plain[b]! * tail.models[0]!.cost!.plan!.latency[b]!, 9);
    expect(plain[4]).toBeCloseTo(4 * perTaskMs, 9);
  });
});

describe('scenario field', () => {
  const base = {
    name: 'x',
    gpus: [{ profile: 'p', count: 1 }],
    models: [{ name: 'm', sloMs: 50, rate: { kind: 'constant', ratePerS: 10 } }],
    durationS: 10,
  };
  it('defaults to tail batching and validates each class', () => {
    expect(ScenarioSchema.parse(base).costBatching).toBe('tail');
    const bad = ScenarioSchema.safeParse({
      ...base,
      models: [{ ...base.models[0], cost: { classes: [{ relative: 1, weight: 0 }] } }],
    });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues[0]?.path)).toBe('["models",0,"cost","classes",0,"weight"]');
    expect(ScenarioSchema.safeParse({ ...base, costBatching: 'median' }).success).toBe(false);
  });
});

describe('the simulator with a cost distribution', () => {
  // o_r = 2 ms * b at any share; no truth error, so a batch's time is exactly its profile time times its cost.
  const netProfile = ProfileSchema.parse(
    makeProfile()
      .model('net', { runAtB1Full: 2, batchExp: 1, pctExp: 0, schedPerKernelMs: 0, alphaCache: 0, alphaU: 0, betaU: 0 })
      .schedInterference(0, 0)
      .build(),
  );
  // 90% of samples cost 0.5, 10% cost 5.5 (mean 1): a batch of 8 draws a long one 57% of the time.
  const twoClasses = [
    { relative: 0.5, weight: 9 },
    { relative: 5.5, weight: 1 },
  ];
  const runWith = (batching: 'tail' | 'mean', onBatch?: (size: number, ms: number, predictedMs: number) => void) => {
    const cluster = buildCluster(
      [netProfile],
      [{ name: 'net', sloMs: 40, cost: servedCost(twoClasses, batching, 0.99) }],
    );
    const r = simulate({
      cluster,
      streams: [new RenewalStream(rateFunction({ kind: 'constant', ratePerS: 150 }), new Rng(mixSeed(5)))],
      initialRatePerS: [150],
      policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 8 }] }),
      settings: {
        ...DEFAULT_SIM_SETTINGS,
        durationMs: 60_000,
        groundTruth: { systematicErrorPct: 0, noisePct: 0, dramAlpha: 0, seed: 1 },
      },
      trace: { batchStart: (_t, _m, _g, size, ms, predictedMs) => onBatch?.(size, ms, predictedMs) },
    });
    return { r, cluster };
  };

  it('times each batch at its profile time times the max of its samples’ drawn costs', () => {
    const byClass = new Map<number, number>();
    let batches = 0;
    const { cluster } = runWith('mean', (size, ms, predictedMs) => {
      if (size !== 4) return;
      const c = Math.round((ms / predictedMs) * 1e6) / 1e6; // mean-cost table: the profile's time
      byClass.set(c, (byClass.get(c) ?? 0) + 1);
      batches++;
    });
    const d = cluster.models[0]!.cost!.distribution;
    expect([...byClass.keys()].every((c) => [...d.costs].some((x) => Math.abs(x - c) < 1e-6))).toBe(true);
    expect(batches).toBeGreaterThan(300);
    // P(max of 4 is the long class) = 1 - 0.9^4 = 0.344.
    const long = (byClass.get(Math.round(d.costs[1]! * 1e6) / 1e6) ?? 0) / batches;
    expect(Math.abs(long - (1 - 0.9 ** 4))).toBeLessThan(0.06);
  });

  it('tail batching finishes more tasks within SLO than mean-cost batching on the same draws', () => {
    const tail = runWith('tail').r;
    const mean = runWith('mean').r;
    const finish = (r: typeof tail) => r.good / r.arrivals;
    // The mean-cost rule starts a batch by its mean-cost time and runs late whenever it draws a long
    // sample; the tail rule starts smaller batches early enough for the long class.
    expect(finish(tail)).toBeGreaterThan(0.95);
    expect(finish(mean)).toBeLessThan(0.6);
  });
});

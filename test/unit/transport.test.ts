// The path in the twin (src/serving/transport.ts): the per-host transport model the scheduler fits and
// the simulator runs with.
import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import {
  dispatchBudgetMs,
  SPREAD_QUANTILES,
  spreadFactor,
  type TransportModel,
  TransportFit,
  transportFields,
  TransportModelSchema,
  transportMsFor,
  wayInMsFor,
} from '../../src/serving/transport.js';
import { DEFAULT_SIM_SETTINGS, simulate } from '../../src/sim/simulator.js';
import { rateFunction, RenewalStream } from '../../src/workload/arrivals.js';
import { mixSeed, Rng } from '../../src/workload/random.js';
import { loadProfileFile } from '../support/clusters.js';
import { FixedPolicy } from '../support/fakes.js';

describe('TransportFit', () => {
  it.each([
    {
      name: 'fixed + per-MB, exact',
      samples: [
        [602112, 3 + 0.602112 * 2],
        [6021120, 3 + 6.02112 * 2],
        [18063360, 3 + 18.06336 * 2],
      ],
      want: { fixedMs: 3, perMbMs: 2 },
    },
    {
      name: 'one size only: all of it fixed',
      samples: [
        [602112, 4],
        [602112, 6],
      ],
      want: { fixedMs: 5, perMbMs: 0 },
    },
    {
      name: 'time falling with size (noise): its mean, fixed',
      samples: [
        [1e6, 9],
        [2e6, 5],
      ],
      want: { fixedMs: 7, perMbMs: 0 },
    },
    {
      name: 'a negative intercept: through the origin',
      samples: [
        [1e6, 1],
        [2e6, 4],
      ],
      want: { fixedMs: 0, perMbMs: 1.8 },
    },
  ])('$name', ({ samples, want }) => {
    const f = new TransportFit();
    for (const [bytes, ms] of samples) f.add(bytes!, ms!);
    expect(f.samples).toBe(samples.length);
    const m = f.model()!;
    expect(m.fixedMs).toBeCloseTo(want.fixedMs, 3);
    expect(m.perMbMs).toBeCloseTo(want.perMbMs, 3);
    expect(TransportModelSchema.safeParse(m).success).toBe(true);
  });

  it('has no model before a sample, and ignores samples that are not measurements', () => {
    const f = new TransportFit();
    expect(f.model()).toBeNull();
    f.add(Number.NaN, 3);
    f.add(100, -1);
    expect(f.samples).toBe(0);
  });

  it('transportMsFor: fixed plus per megabyte', () => {
    expect(transportMsFor({ fixedMs: 2, perMbMs: 1.5 }, 4e6)).toBe(8);
  });

  it('measures how batches spread around the fit: quantiles of measured / fitted, scaled to a mean of 1', () => {
    const even = new TransportFit();
    for (let i = 0; i < 40; i++) even.add(602112, 4);
    expect(even.spread()).toEqual(new Array<number>(SPREAD_QUANTILES).fill(1));
    const f = new TransportFit();
    for (let i = 0; i < 16; i++) f.add(602112, 4); // the fit: 4 ms
    expect(f.spread()).toBeNull();
    for (let i = 0; i < 500; i++) f.add(602112, i % 4 === 0 ? 40 : 4); // one batch in four 10x slower
    const q = f.spread()!;
    expect(q.length).toBe(SPREAD_QUANTILES);
    expect(TransportModelSchema.safeParse({ fixedMs: 1, perMbMs: 0, spread: q }).success).toBe(true);
    expect(q[0]).toBeLessThan(1); // most batches are faster than the (raised) fit
    expect(q.at(-1)! / q[0]!).toBeGreaterThan(5);
    let mean = 0;
    for (let k = 1; k < q.length; k++) mean += (q[k - 1]! + q[k]!) / 2 / (q.length - 1);
    expect(mean).toBeCloseTo(1, 2);
  });

  it("names each model's own factor on the host's fit, and measures the spread around each model's own", () => {
    const f = new TransportFit();
    // Model b's batches pay 1.5 x model a's, every one alike: its factor, not a spread.
    const add = (i: number) => f.add(602112, i % 2 === 0 ? 4 : 6, i % 2 === 0 ? 'a' : 'b');
    for (let i = 0; i < 16; i++) add(i);
    expect(f.modelFactors()).toBeNull(); // no ratios yet
    for (let i = 0; i < 400; i++) add(i);
    const factors = f.modelFactors()!;
    expect(factors.b! / factors.a!).toBeCloseTo(1.5, 2);
    expect((factors.a! + factors.b!) / 2).toBeCloseTo(1, 3); // the batches' mean factor is 1
    const q = f.spread()!;
    expect(q.at(-1)! / q[0]!).toBeLessThan(1.05); // what is left: the fit settling as it learns
    // Without models named, the same batches spread: the two costs are the spread's two ends.
    const plain = new TransportFit();
    for (let i = 0; i < 416; i++) plain.add(602112, i % 2 === 0 ? 4 : 6);
    expect(plain.modelFactors()).toBeNull();
    expect(plain.spread()!.at(-1)! / plain.spread()![0]!).toBeGreaterThan(1.4);
    // A model with fewer than 16 batches among the kept ones gets no factor of its own.
    const few = new TransportFit();
    for (let i = 0; i < 200; i++) few.add(602112, 4, i < 190 ? 'a' : 'c');
    expect(Object.keys(few.modelFactors()!)).toEqual(['a']);
    expect(TransportModelSchema.safeParse({ fixedMs: 1, perMbMs: 0, modelFactors: factors }).success).toBe(true);
    expect(TransportModelSchema.safeParse({ fixedMs: 1, perMbMs: 0, modelFactors: { a: 0 } }).success).toBe(false);
  });

  it('spreadFactor: the inverse of the quantiles, linear between them; 1 without a spread', () => {
    expect(spreadFactor([0.5, 1, 1.5], 0)).toBe(0.5);
    expect(spreadFactor([0.5, 1, 1.5], 0.25)).toBe(0.75);
    expect(spreadFactor([0.5, 1, 1.5], 0.999999)).toBeCloseTo(1.5, 4);
    expect(spreadFactor(undefined, 0.3)).toBe(1);
    expect(TransportModelSchema.safeParse({ fixedMs: 1, perMbMs: 0, spread: [2, 1] }).success).toBe(false);
  });

  it(
    'way in per megabyte (none without the term); the dispatch budget is the SLO less the way out, ' + 'never below 0',
    () => {
      expect(wayInMsFor({ fixedMs: 9, perMbMs: 9, wayIn: { fixedMs: 1, perMbMs: 2 } }, 5e5)).toBe(2);
      expect(wayInMsFor({ fixedMs: 9, perMbMs: 9 }, 5e5)).toBe(0);
      expect(dispatchBudgetMs(25, 1.5)).toBe(23.5);
      expect(dispatchBudgetMs(25, 0)).toBe(25);
      expect(dispatchBudgetMs(1, 3)).toBe(0);
    },
  );

  it("a host's entry at GET /v2/inss/cluster reads as a transport model; a bad one is named", () => {
    const entry = {
      fixedMs: 1,
      perMbMs: 2,
      batches: 9,
      wayIn: { fixedMs: 0.5, perMbMs: 0 },
      requests: 30,
      wayOutMs: 0.4,
      answers: 30,
    };
    expect(TransportModelSchema.parse(transportFields(entry))).toEqual({
      fixedMs: 1,
      perMbMs: 2,
      wayIn: { fixedMs: 0.5, perMbMs: 0 },
      wayOutMs: 0.4,
    });
    const bad = TransportModelSchema.safeParse(
      transportFields({ fixedMs: 1, perMbMs: 2, wayIn: { fixedMs: -1, perMbMs: 0 } }),
    );
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]!.path).toEqual(['wayIn', 'fixedMs']);
  });
});

describe('the simulator with a host transport model', () => {
  const rtx = loadProfileFile('rtx2060s');
  const run = (transport: TransportModel | undefined, transportMs = 0, sloMs = 1e9) =>
    simulate({
      cluster: buildCluster([rtx], [{ name: 'resnet50', sloMs }]),
      streams: [new RenewalStream(rateFunction({ kind: 'constant', ratePerS: 20 }), new Rng(mixSeed(5)))],
      initialRatePerS: [20],
      policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 1 }] }),
      settings: {
        ...DEFAULT_SIM_SETTINGS,
        durationMs: 30_000,
        groundTruth: { systematicErrorPct: 0, noisePct: 0, dramAlpha: 0, seed: 1 },
        transportMs,
        ...(transport ? { transport } : {}),
      },
    });

  it(
    'a batch pays fixed + per-MB of its inputs: with batch 1 of a 602 KB image, the same as that ' + 'fixed transport',
    () => {
      const perMb = run({ fixedMs: 1, perMbMs: 5 });
      const fixed = run(undefined, 1 + 5 * 0.602112);
      expect(perMb.latencyMs.mean).toBeCloseTo(fixed.latencyMs.mean, 6);
      expect(perMb.latencyMs.mean - run(undefined).latencyMs.mean).toBeGreaterThan(1 + 5 * 0.602112 - 1e-6);
    },
  );

  it('a zero model is no transport: the results without one', () => {
    expect(run({ fixedMs: 0, perMbMs: 0 })).toEqual(run(undefined));
    expect(run({ fixedMs: 0, perMbMs: 0, wayIn: { fixedMs: 0, perMbMs: 0 }, wayOutMs: 0 })).toEqual(run(undefined));
  });

  it(
    "a task is queued its request's way in after it arrives and answered the way out after its " +
      'batch: its latency grows by both',
    () => {
      const base = run({ fixedMs: 0, perMbMs: 0 });
      const ways = run({ fixedMs: 0, perMbMs: 0, wayIn: { fixedMs: 1, perMbMs: 2 }, wayOutMs: 1.5 });
      expect(ways.served).toBe(base.served);
      expect(ways.latencyMs.mean - base.latencyMs.mean).toBeCloseTo(1 + 2 * 0.602112 + 1.5, 3);
    },
  );

  it("a model's own factor scales its batches' transport; another model's factor leaves it alone", () => {
    const base = run({ fixedMs: 4, perMbMs: 0 });
    const own = run({ fixedMs: 4, perMbMs: 0, modelFactors: { resnet50: 1.5 } });
    const other = run({ fixedMs: 4, perMbMs: 0, modelFactors: { alexnet: 1.5 } });
    expect(other).toEqual(base);
    // Each batch pays 2 ms more; a task that queued behind a slower batch pays a little more again.
    expect(own.latencyMs.mean - base.latencyMs.mean).toBeGreaterThan(2 - 1e-6);
    expect(own.latencyMs.mean - base.latencyMs.mean).toBeLessThan(2.2);
  });

  it(
    "with a spread, batches' transport varies around the fit: the mean holds, and a tight SLO is " +
      'missed as often as the spread says',
    () => {
      const gpuMs = run(undefined).latencyMs.mean;
      const T = 10;
      const slo = gpuMs + 1.25 * T; // a batch whose transport is over 1.25 x the fit is late
      const missedOf = (r: ReturnType<typeof run>) => (r.late + r.dropped) / r.arrivals;
      const exact = run({ fixedMs: T, perMbMs: 0 }, 0, slo);
      expect(missedOf(exact)).toBeLessThan(0.05); // a task that queued behind another
      const spread = run({ fixedMs: T, perMbMs: 0, spread: [0.5, 1, 1.5] }, 0, slo);
      expect(Math.abs(spread.latencyMs.mean - exact.latencyMs.mean)).toBeLessThan(0.1 * exact.latencyMs.mean);
      // Uniform 0.5-1.5 x the fit: about a quarter of the batches over 1.25 x.
      expect(missedOf(spread) - missedOf(exact)).toBeGreaterThan(0.12);
      expect(missedOf(spread)).toBeLessThan(0.4);
    },
  );

  it("with a way-in spread, each request's way in varies around its fit, and the queue stays in arrival order", () => {
    const gpuMs = run(undefined).latencyMs.mean;
    const slo = gpuMs + 12.5; // a request whose way in is over 12.5 ms is late
    const missedOf = (r: ReturnType<typeof run>) => (r.late + r.dropped) / r.arrivals;
    const exact = run({ fixedMs: 0, perMbMs: 0, wayIn: { fixedMs: 10, perMbMs: 0 } }, 0, slo);
    expect(missedOf(exact)).toBeLessThan(0.05);
    const spread = run({ fixedMs: 0, perMbMs: 0, wayIn: { fixedMs: 10, perMbMs: 0 }, wayInSpread: [0, 1, 2] }, 0, slo);
    expect(spread.served + spread.dropped + spread.models[0]!.unfinished).toBe(spread.arrivals);
    // Uniform 0-20 ms: over a third of the requests take more than 12.5 ms (more behind a slow one).
    expect(missedOf(spread) - missedOf(exact)).toBeGreaterThan(0.25);
  });

  it(
    'the dispatch rule budgets each task its SLO less the way out: a batch that fits the SLO but not ' +
      'the budget is not started',
    () => {
      const gpuMs = run(undefined).latencyMs.mean; // batch 1 alone, no queueing: the batch time
      const slo = gpuMs * 3;
      expect(run({ fixedMs: 0, perMbMs: 0 }, 0, slo).good).toBeGreaterThan(0.95 * run(undefined).arrivals);
      const tight = run({ fixedMs: 0, perMbMs: 0, wayOutMs: gpuMs * 2.5 }, 0, slo);
      // No task can be answered within the budget: each times out on arrival and, under the default
      // delay policy, is served late from the delayed lane.
      expect(tight.good).toBe(0);
      expect(tight.models[0]!.delayed).toBeGreaterThan(0.99 * tight.arrivals);
    },
  );

  it(
    "the client's own leg adds to each task's latency and can make it late, but moves no dispatch " +
      'decision (the scheduler cannot see it)',
    () => {
      const gpuMs = run(undefined).latencyMs.mean;
      const slo = gpuMs * 3;
      const base = run({ fixedMs: 0, perMbMs: 0, wayOutMs: 0.5 }, 0, slo);
      const client = run({ fixedMs: 0, perMbMs: 0, wayOutMs: 0.5, clientMs: gpuMs * 2.5 }, 0, slo);
      expect(client.served).toBe(base.served);
      expect(client.dropped).toBe(base.dropped);
      expect(client.latencyMs.mean - base.latencyMs.mean).toBeCloseTo(gpuMs * 2.5, 3);
      // Within the SLO without the leg; with it, most tasks reach their client late.
      expect(base.good).toBeGreaterThan(0.95 * base.arrivals);
      expect(client.good).toBeLessThan(0.5 * client.arrivals);
      expect(
        TransportModelSchema.parse(transportFields({ fixedMs: 1, perMbMs: 0, clientMs: 1.1, batches: 3 })),
      ).toEqual({
        fixedMs: 1,
        perMbMs: 0,
        clientMs: 1.1,
      });
    },
  );
});

// The path in the twin (src/serving/transport.ts): the per-host transport model the scheduler fits and
// the simulator runs with.
import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import { TransportFit, TransportModelSchema, transportMsFor } from '../../src/serving/transport.js';
import { DEFAULT_SIM_SETTINGS, simulate } from '../../src/sim/simulator.js';
import { rateFunction, RenewalStream } from '../../src/workload/arrivals.js';
import { mixSeed, Rng } from '../../src/workload/random.js';
import { loadProfileFile } from '../support/clusters.js';
import { FixedPolicy } from '../support/fakes.js';

describe('TransportFit', () => {
  it.each([
    { name: 'fixed + per-MB, exact', samples: [[602112, 3 + 0.602112 * 2], [6021120, 3 + 6.02112 * 2], [18063360, 3 + 18.06336 * 2]], want: { fixedMs: 3, perMbMs: 2 } },
    { name: 'one size only: all of it fixed', samples: [[602112, 4], [602112, 6]], want: { fixedMs: 5, perMbMs: 0 } },
    { name: 'time falling with size (noise): its mean, fixed', samples: [[1e6, 9], [2e6, 5]], want: { fixedMs: 7, perMbMs: 0 } },
    { name: 'a negative intercept: through the origin', samples: [[1e6, 1], [2e6, 4]], want: { fixedMs: 0, perMbMs: 1.8 } },
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
});

describe('the simulator with a host transport model', () => {
  const rtx = loadProfileFile('rtx2060s');
  const cluster = buildCluster([rtx], [{ name: 'resnet50', sloMs: 1e9 }]);
  const run = (transport: { fixedMs: number; perMbMs: number } | undefined, transportMs = 0) =>
    simulate({
      cluster,
      streams: [new RenewalStream(rateFunction({ kind: 'constant', ratePerS: 20 }), new Rng(mixSeed(5)))],
      initialRatePerS: [20],
      policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 1 }] }),
      settings: { ...DEFAULT_SIM_SETTINGS, durationMs: 30_000, groundTruth: { systematicErrorPct: 0, noisePct: 0, dramAlpha: 0, seed: 1 }, transportMs, ...(transport ? { transport } : {}) },
    });

  it('a batch pays fixed + per-MB of its inputs: with batch 1 of a 602 KB image, the same as that fixed transport', () => {
    const perMb = run({ fixedMs: 1, perMbMs: 5 });
    const fixed = run(undefined, 1 + 5 * 0.602112);
    expect(perMb.latencyMs.mean).toBeCloseTo(fixed.latencyMs.mean, 6);
    expect(perMb.latencyMs.mean - run(undefined).latencyMs.mean).toBeGreaterThan(1 + 5 * 0.602112 - 1e-6);
  });

  it('a zero model is no transport: the results without one', () => {
    expect(run({ fixedMs: 0, perMbMs: 0 })).toEqual(run(undefined));
  });
});

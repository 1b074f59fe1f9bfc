import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import { ProfileSchema } from '../../src/profile/schema.js';
import { DEFAULT_SIM_SETTINGS, simulate, type SimSettings } from '../../src/sim/simulator.js';
import { overlapBatchMs, timeshareConcurrency, timeshareSharePct } from '../../src/sim/timeshareGpu.js';
import { rateFunction, RenewalStream } from '../../src/workload/arrivals.js';
import { mixSeed, Rng } from '../../src/workload/random.js';
import { FixedPolicy } from '../support/fakes.js';
import { makeProfile } from '../support/builders.js';

// Two models whose batch time does not depend on their share (pctExp 0) and which do not interfere:
// overlapping their batches costs nothing, so a GPU that overlaps serves twice what a serial one does.
// Two more whose time is inversely proportional to their share (pctExp 1): overlapping gains nothing.
const flat = { runAtB1Full: 2, batchExp: 1, pctExp: 0, schedPerKernelMs: 0, alphaCache: 0, alphaU: 0, betaU: 0 };
const linear = { ...flat, pctExp: 1 };
const profile = ProfileSchema.parse(makeProfile().model('a', flat).model('b', flat).model('c', linear).model('d', linear).schedInterference(0, 0).build());
const noTruthError = { systematicErrorPct: 0, noisePct: 0, dramAlpha: 0, seed: 1 };
const settings = (over: Partial<SimSettings>): SimSettings => ({ ...DEFAULT_SIM_SETTINGS, durationMs: 30_000, groundTruth: noTruthError, ...over });

function run(models: [string, string], ratePerS: number, timeshareGpu: 'overlap' | 'serial', over: Partial<SimSettings> = {}) {
  const cluster = buildCluster([profile], models.map((name) => ({ name, sloMs: 1000 })));
  const dep = { placements: [0, 1].map((model) => ({ model, gpu: 0, pct: 100, batch: 1 })), gpuModes: ['timeshare' as const] };
  const streams = [0, 1].map((i) => new RenewalStream(rateFunction({ kind: 'constant', ratePerS }), new Rng(mixSeed(5, i))));
  return simulate({ cluster, streams, initialRatePerS: [ratePerS, ratePerS], policy: new FixedPolicy(dep), settings: settings({ timeshareGpu, ...over }) });
}

describe('time-shared GPU model', () => {
  it('serial runs one batch at a time; overlap one per worker; overlapping batches split the GPU evenly', () => {
    expect(timeshareConcurrency('serial', false)).toBe(1);
    expect(timeshareConcurrency('overlap', false)).toBe(Infinity);
    // Where batches pay transport (the live scheduler, and its twin), one at a time whatever the GPU model.
    expect(timeshareConcurrency('serial', true)).toBe(1);
    expect(timeshareConcurrency('overlap', true)).toBe(1);
    expect(timeshareSharePct(1)).toBe(100);
    expect(timeshareSharePct(4)).toBe(25);
    expect(() => timeshareSharePct(0)).toThrow(RangeError);
    // Overlap is never slower than running in series.
    expect(overlapBatchMs(9, 4, [3])).toBe(7);
    expect(overlapBatchMs(5, 4, [3])).toBe(5);
  });

  it('overlapping batches of share-insensitive models double what the GPU serves', () => {
    // Each model alone needs 2 ms x 300/s = 60% of the GPU: 120% in all, too much when serial.
    const serial = run(['a', 'b'], 300, 'serial');
    const overlap = run(['a', 'b'], 300, 'overlap');
    expect(serial.sloViolationPct).toBeGreaterThan(10);
    expect(overlap.throughputPerS / serial.throughputPerS).toBeGreaterThan(1.15);
    expect(overlap.sloViolationPct).toBeLessThan(1);
    expect(overlap.gpuSharePct[0]!).toBeLessThanOrEqual(100 + 1e-9);
  });

  it('given a transport, the twin runs a time-shared GPU one batch at a time as the live scheduler does, whatever the GPU model', () => {
    const transport = { fixedMs: 0.001, perMbMs: 0 };
    const twinOverlap = run(['a', 'b'], 300, 'overlap', { transport });
    const twinSerial = run(['a', 'b'], 300, 'serial', { transport });
    expect(twinOverlap).toEqual(twinSerial);
    expect(twinOverlap.sloViolationPct).toBeGreaterThan(10); // as serial above: 120% of the GPU asked for
  });

  it('overlapping batches of models whose time scales with 1/share take longer each and gain nothing', () => {
    const serial = run(['c', 'd'], 200, 'serial');
    const overlap = run(['c', 'd'], 200, 'overlap');
    // Alone a batch takes its full-GPU time; overlapped with the other model's it is timed at 50%,
    // twice as long: the mean lies between, and overlap serves no more than serial.
    const alone = serial.models[0]!.execMs.mean;
    expect(overlap.models[0]!.execMs.mean).toBeGreaterThan(1.1 * alone);
    expect(overlap.models[0]!.execMs.mean).toBeLessThanOrEqual(2 * alone + 1e-9);
    expect(overlap.throughputPerS).toBeLessThanOrEqual(serial.throughputPerS * 1.01);
  });
});

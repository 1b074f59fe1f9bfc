import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import { ProfileSchema } from '../../src/profile/schema.js';
import { DEFAULT_SIM_SETTINGS, simulate, type SimSettings } from '../../src/sim/simulator.js';
import type { SimTrace } from '../../src/sim/types.js';
import { predictionTable, RunningBatches, WorkerTimes } from '../../src/serving/dispatch.js';
import { LatencyModel } from '../../src/model/predictor.js';
import {
  parsePooledGpuMode,
  pooledBatchMs,
  pooledConcurrency,
  pooledMs,
  pooledSharePct,
  soloBatchMs,
} from '../../src/model/pooledGpu.js';
import { rateFunction, RenewalStream } from '../../src/workload/arrivals.js';
import { mixSeed, Rng } from '../../src/workload/random.js';
import { FixedPolicy } from '../support/fakes.js';
import { makeProfile } from '../support/builders.js';

// Two models whose batch time does not depend on their share (pctExp 0) and which do not interfere:
// overlapping their batches costs nothing, so a GPU that overlaps serves twice what a serial one does.
// Two more whose time is inversely proportional to their share (pctExp 1): overlapping gains nothing.
const flat = { runAtB1Full: 2, batchExp: 1, pctExp: 0, schedPerKernelMs: 0, alphaCache: 0, alphaU: 0, betaU: 0 };
const linear = { ...flat, pctExp: 1 };
const profile = ProfileSchema.parse(
  makeProfile().model('a', flat).model('b', flat).model('c', linear).model('d', linear).schedInterference(0, 0).build(),
);
const noTruthError = { systematicErrorPct: 0, noisePct: 0, dramAlpha: 0, seed: 1 };
const settings = (over: Partial<SimSettings>): SimSettings => ({
  ...DEFAULT_SIM_SETTINGS,
  durationMs: 30_000,
  groundTruth: noTruthError,
  ...over,
});

function run(
  models: [string, string],
  ratePerS: number,
  pooled: 'overlap' | 'serial',
  over: Partial<SimSettings> = {},
  trace?: SimTrace,
) {
  const cluster = buildCluster(
    [profile],
    models.map((name) => ({ name, sloMs: 1000 })),
    pooled,
  );
  const dep = {
    placements: [0, 1].map((model) => ({ model, gpu: 0, pct: 100, batch: 1 })),
    gpuModes: ['timeshare' as const],
  };
  const streams = [0, 1].map(
    (i) => new RenewalStream(rateFunction({ kind: 'constant', ratePerS }), new Rng(mixSeed(5, i))),
  );
  return simulate({
    cluster,
    streams,
    initialRatePerS: [ratePerS, ratePerS],
    policy: new FixedPolicy(dep),
    settings: settings(over),
    ...(trace ? { trace } : {}),
  });
}

describe('pooled GPU model', () => {
  it('serial runs one batch at a time; overlap one per worker; overlapping batches split the GPU evenly', () => {
    expect(pooledConcurrency('serial')).toBe(1);
    expect(pooledConcurrency('overlap')).toBe(Infinity);
    expect(pooledSharePct(1)).toBe(100);
    expect(pooledSharePct(4)).toBe(25);
    expect(() => pooledSharePct(0)).toThrow(RangeError);
    // Overlapping is never slower than fair turns (n x solo) nor than in series; serial waits for the rest of the
    // others (half their time in the mean).
    expect(pooledMs('overlap', 9, 4, 2, 7)).toBe(7);
    expect(pooledMs('overlap', 9, 4, 2, 12)).toBe(8);
    expect(pooledMs('overlap', 5, 4, 2, 7)).toBe(5);
    expect(pooledMs('overlap', 13, 4, 3, 20)).toBe(12);
    expect(pooledMs('serial', 5, 4, 2, 7)).toBe(5.5);
    expect(parsePooledGpuMode('serial', '--x')).toBe('serial');
    expect(() => parsePooledGpuMode('mps', '--pooled')).toThrow(/--pooled: must be overlap or serial, got 'mps'/);
  });

  it('times a pooled batch from the latency model: alone its solo time, beside others by the mode', () => {
    const lm = LatencyModel.compile(profile);
    const [a, c] = [lm.modelIndex('a'), lm.modelIndex('c')];
    const pcts: number[] = [];
    const out: number[] = [];
    expect(pooledBatchMs(lm, 'overlap', [c], [4], 1, pcts, out)).toBeCloseTo(soloBatchMs(lm, c, 4), 9);
    expect(pcts[0]).toBe(100);
    // c's run time scales with 1/share: at an even split it takes nearly twice its solo time, never more than fair
    // turns give it.
    const series = soloBatchMs(lm, c, 4) + soloBatchMs(lm, a, 2);
    const even = [0, 0];
    lm.predictGpu([c, a], [4, 2], [50, 50], 2, even);
    expect(even[0]).toBeGreaterThan(1.5 * soloBatchMs(lm, c, 4));
    expect(pooledBatchMs(lm, 'overlap', [c, a], [4, 2], 2, pcts, out)).toBeCloseTo(
      Math.min(even[0]!, 2 * soloBatchMs(lm, c, 4), series),
      9,
    );
    expect(pooledBatchMs(lm, 'overlap', [c, a], [4, 2], 2, pcts, out)).toBeLessThanOrEqual(2 * soloBatchMs(lm, c, 4));
    expect(pcts.slice(0, 2)).toEqual([50, 50]);
    expect(pooledBatchMs(lm, 'serial', [c, a], [4, 2], 2, pcts, out)).toBeCloseTo(
      soloBatchMs(lm, c, 4) + (series - soloBatchMs(lm, c, 4)) / 2,
      9,
    );
    // a's time does not depend on its share: overlapped, it takes its solo time.
    expect(pooledBatchMs(lm, 'overlap', [a, c], [2, 4], 2, pcts, out)).toBeCloseTo(soloBatchMs(lm, a, 2), 9);
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

  it('given a transport (the twin), a pooled GPU follows its mode as the live scheduler does', () => {
    const transport = { fixedMs: 0.001, perMbMs: 0 };
    const twinOverlap = run(['a', 'b'], 300, 'overlap', { transport });
    const twinSerial = run(['a', 'b'], 300, 'serial', { transport });
    expect(twinSerial.sloViolationPct).toBeGreaterThan(10); // 120% of the GPU asked for, one batch at a time
    expect(twinOverlap.sloViolationPct).toBeLessThan(1);
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

  it('the dispatch rule predicts a batch by what runs beside it, as the GPU times it', () => {
    // c and d slow each other down when overlapped: each batch's time is fixed by the batches running when it
    // starts, and the rule's prediction for it (made as it was sent) is the same time.
    const ratios: number[] = [];
    let slower = 0;
    const trace: SimTrace = {
      batchStart: (_t, _m, _g, _size, durationMs, predictedMs) => {
        ratios.push(durationMs / predictedMs);
        if (predictedMs > 2.2) slower++; // beyond c's or d's solo time at batch 1 (2 ms)
      },
    };
    run(['c', 'd'], 200, 'overlap', { pooledPrediction: 'running' }, trace);
    expect(ratios.length).toBeGreaterThan(5000);
    expect(slower).toBeGreaterThan(100);
    for (const r of ratios) expect(r).toBeCloseTo(1, 9);
  });

  it("a worker's batch times follow the batches running on its pooled GPU", () => {
    const cluster = buildCluster(
      [profile],
      ['c', 'd', 'a'].map((name) => ({ name, sloMs: 1000 })),
      'overlap',
    );
    const gpu = cluster.gpus[0]!;
    const lm = gpu.model;
    const [c, d, a] = ['c', 'd', 'a'].map((x) => lm.modelIndex(x));
    const peers = [0, 1, 2].map((model) => ({ model, batch: 4, pct: 100 }));
    const running = new RunningBatches();
    const times = new WorkerTimes();
    predictionTable(gpu, peers, 0, true, times.table);
    times.follow({ gpu, running, worker: 'w0', model: 0, plan: undefined });
    const pcts: number[] = [];
    const out: number[] = [];
    // Nothing beside it: its solo time (its own batch in flight does not count).
    running.add('b0', 'w0', 0, 8);
    expect(times.ms(4)).toBeCloseTo(soloBatchMs(lm, c!, 4), 9);
    // d's batch of 2 and a's of 6 running: the pooled rule with them, for each size asked.
    running.add('b1', 'w1', 1, 2);
    expect(times.ms(4)).toBeCloseTo(pooledBatchMs(lm, 'overlap', [c!, d!], [4, 2], 2, pcts, out), 9);
    expect(times.ms(4)).toBeGreaterThan(1.4 * soloBatchMs(lm, c!, 4));
    running.add('b2', 'w2', 2, 6);
    expect(times.ms(3)).toBeCloseTo(pooledBatchMs(lm, 'overlap', [c!, d!, a!], [3, 2, 6], 3, pcts, out), 9);
    // A batch ends: the prediction follows.
    running.remove('b1');
    expect(times.ms(4)).toBeCloseTo(pooledBatchMs(lm, 'overlap', [c!, a!], [4, 6], 2, pcts, out), 9);
    running.remove('b2');
    expect(times.ms(4)).toBeCloseTo(soloBatchMs(lm, c!, 4), 9);
    // Not following (an MPS partition, or a serial GPU): the table alone.
    running.add('b3', 'w1', 1, 2);
    times.follow(null);
    expect(times.ms(4)).toBe(times.table[4]);
  });
});

import { describe, expect, it } from 'vitest';
import {
  execLatencyMs,
  feedbackMs,
  l2Utilisation,
  memoryMb,
  runningMs,
  schedInterferencePerKernelMs,
  schedulingMs,
  taskLatencyMs,
  throughputPerS,
  uploadMs,
} from '../../src/model/latency.js';

describe('GPU execution latency terms (paper section 4.1)', () => {
  it.each([
    { bytes: 602112, batch: 1, bw: 1e7, ms: 0.0602112 },
    { bytes: 602112, batch: 8, bw: 1e7, ms: 0.4816896 },
    { bytes: 4000, batch: 32, bw: 1.2e7, ms: 0.010666666666666666 },
  ])('PCIe transfer of $bytes B x $batch at $bw B/ms takes $ms ms', ({ bytes, batch, bw, ms }) => {
    expect(uploadMs(bytes, batch, bw)).toBeCloseTo(ms, 12);
    expect(feedbackMs(bytes, batch, bw)).toBeCloseTo(ms, 12);
  });

  it.each([
    { n: 1, alpha: 0.005, beta: -0.01, int: 0 },
    { n: 2, alpha: 0.005, beta: -0.01, int: 0 }, // the line is negative at 2: clamped
    { n: 3, alpha: 0.005, beta: -0.01, int: 0.005 },
    { n: 4, alpha: 0.005, beta: 0.001, int: 0.021 },
  ])('scheduling interference with $n models is $int ms per kernel', ({ n, alpha, beta, int }) => {
    expect(schedInterferencePerKernelMs(n, alpha, beta)).toBeCloseTo(int, 12);
  });

  it('scheduling latency is linear in the kernel count', () => {
    expect(schedulingMs(0.002, 0.001, 80)).toBeCloseTo(0.24, 12);
    expect(schedulingMs(0.002, 0, 40)).toBeCloseTo(0.08, 12);
  });

  it('L2 utilisation is linear in the share and never negative', () => {
    expect(l2Utilisation(0.25, 0.03, 40)).toBeCloseTo(0.13, 12);
    expect(l2Utilisation(0.25, -0.1, 20)).toBe(0);
  });

  it.each([
    { solo: 10, ac: 0.4, others: 0.2, self: 0.1, w: 0, shared: true, run: 10.8 },
    { solo: 10, ac: 0.4, others: 0.2, self: 0.1, w: 1, shared: true, run: 11.2 },
    { solo: 10, ac: 0.4, others: 0, self: 0.1, w: 1, shared: false, run: 10 },
  ])(
    'running time $solo ms under contention (others $others, self $self x $w) is $run ms',
    ({ solo, ac, others, self, w, shared, run }) => {
      expect(runningMs(solo, ac, others, self, w, shared)).toBeCloseTo(run, 12);
    },
  );

  it('t_inf sums its four parts; throughput is b / t_inf per second; memory is linear in batch', () => {
    expect(execLatencyMs(0.5, 0.2, 10, 0.3)).toBeCloseTo(11, 12);
    expect(throughputPerS(8, 20)).toBeCloseTo(400, 9);
    expect(memoryMb(1000, 12.5, 8)).toBe(1100);
  });
});

describe('task latency, eq. (2)', () => {
  it.each([
    // W = G + 1 >= b: waits for the running batch, then ceil(W/b) batches.
    { name: 'full batch queued', queued: 7, batch: 8, tInf: 10, exec: 4, rate: 100, ms: 4 + 1 * 10 },
    { name: 'two batches ahead', queued: 16, batch: 8, tInf: 10, exec: 4, rate: 100, ms: 4 + 3 * 10 },
    // W < b: max(exec, (b - W)/lambda) + t_inf.
    {
      name: 'batch filling, wait dominates',
      queued: 2,
      batch: 8,
      tInf: 10,
      exec: 4,
      rate: 500,
      ms: (5 / 500) * 1000 + 10,
    },
    { name: 'batch filling, GPU busy dominates', queued: 2, batch: 8, tInf: 10, exec: 40, rate: 500, ms: 40 + 10 },
    { name: 'batch of one never waits for others', queued: 0, batch: 1, tInf: 3, exec: 0, rate: 0, ms: 3 },
    { name: 'rate 0 never fills', queued: 0, batch: 4, tInf: 3, exec: 0, rate: 0, ms: Infinity },
  ])('$name', ({ queued, batch, tInf, exec, rate, ms }) => {
    expect(
      taskLatencyMs({ queuedTasks: queued, batch, tInfMs: tInf, execRemainingMs: exec, ratePerS: rate }),
    ).toBeCloseTo(ms, 9);
  });
});

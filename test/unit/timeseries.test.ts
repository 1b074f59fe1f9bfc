// The dashboard's pure core (scheduler/timeseries.ts): bounded series, p99 from histogram buckets,
// and the timeline's reading of worker and deployment changes.
import { describe, expect, it } from 'vitest';
import {
  ModelTimeSeries,
  planEvent,
  quantileFromBuckets,
  Ring,
  type WorkerView,
  workerEvents,
} from '../../scheduler/timeseries.js';

describe('Ring', () => {
  it('keeps the last `capacity` items, oldest first', () => {
    const r = new Ring<number>(3);
    for (let i = 1; i <= 5; i++) r.push(i);
    expect(r.toArray()).toEqual([3, 4, 5]);
    expect(r.length).toBe(3);
    expect(() => new Ring(0)).toThrow(/positive integer/);
  });
});

describe('quantileFromBuckets', () => {
  const bounds = [0.01, 0.02, 0.05, Infinity];
  it('interpolates inside the bucket holding the rank, like histogram_quantile', () => {
    // 100 observations: 50 <= 10 ms, 40 in (10, 20], 10 in (20, 50].
    expect(quantileFromBuckets(bounds, [50, 90, 100, 100], 0.5)).toBeCloseTo(0.01);
    expect(quantileFromBuckets(bounds, [50, 90, 100, 100], 0.7)).toBeCloseTo(0.015);
    expect(quantileFromBuckets(bounds, [50, 90, 100, 100], 0.99)).toBeCloseTo(0.02 + 0.03 * 0.9);
  });
  it('gives the largest finite bound when the rank is in +Inf, and null with nothing counted', () => {
    expect(quantileFromBuckets(bounds, [0, 0, 0, 10], 0.99)).toBe(0.05);
    expect(quantileFromBuckets(bounds, [0, 0, 0, 0], 0.99)).toBeNull();
  });
});

describe('ModelTimeSeries', () => {
  const bounds = [0.01, 0.1, Infinity];
  const reading = (finished: number, within: number, buckets: number[], rate = 1) => ({
    ratePerS: rate,
    queued: 0,
    withinSlo: within,
    finished,
    latencyBuckets: buckets,
  });

  it('computes attainment and p99 over the last window of samples from cumulative counters', () => {
    const s = new ModelTimeSeries(['a'], bounds, 10, 2);
    s.record(1000, [reading(10, 10, [10, 10, 10])]);
    s.record(2000, [reading(20, 15, [10, 20, 20])]);
    s.record(3000, [reading(30, 25, [20, 30, 30])]);
    const v = s.view();
    expect(v.t).toEqual([1000, 2000, 3000]);
    expect(v.models.a!.attainment).toEqual([1, 0.75, 0.75]);
    // Window of 2 samples at t=3000: 20 finished since t=1000, 10 <= 10 ms and 10 in (10, 100] ms.
    expect(v.models.a!.p99Ms[2]).toBeCloseTo(10 + 90 * ((0.99 * 20 - 10) / 10));
    expect(s.latest('a')).toMatchObject({ ratePerS: 1, attainment: 0.75 });
  });

  it('is bounded, answers only the samples after `since`, and leaves gaps where nothing finished', () => {
    const s = new ModelTimeSeries(['a', 'b'], bounds, 3, 1);
    for (let i = 1; i <= 5; i++) s.record(i * 1000, [reading(0, 0, [0, 0, 0], i), reading(i, i, [i, i, i])]);
    expect(s.view().t).toEqual([3000, 4000, 5000]);
    expect(s.view(4000).t).toEqual([5000]);
    expect(s.view(4000).models.a!.rate).toEqual([5]);
    expect(s.view().models.a!.attainment).toEqual([null, null, null]);
    expect(s.latest('nope')).toBeNull();
  });
});

describe('workerEvents', () => {
  const w = (workerId: string, model: string, pct: number, role: string, state = 'ready', gpu = 0): WorkerView => ({
    workerId,
    model,
    gpu,
    pct,
    batch: 1,
    role,
    state,
  });

  it('pairs a shadow that took over with the worker it replaced, with both shares', () => {
    const before = [
      w('w1', 'resnet50', 6, 'retiring'),
      w('w2', 'resnet50', 12, 'shadow', 'starting'),
      w('w3', 'vgg16', 20, 'active'),
    ];
    const after = [w('w2', 'resnet50', 12, 'active'), w('w3', 'vgg16', 20, 'active')];
    const ev = workerEvents(5, before, after);
    expect(ev).toHaveLength(1);
    expect(ev[0]).toMatchObject({
      kind: 'swap',
      model: 'resnet50',
      from: { workerId: 'w1', pct: 6 },
      to: { workerId: 'w2', pct: 12 },
    });
    expect(ev[0]!.text).toBe('resnet50: w1 -> w2, GPU 0, share 6% -> 12%');
  });

  it('counts a replaced worker still finishing its last batch as replaced, and reports starts and stops', () => {
    const swapInFlight = workerEvents(
      1,
      [w('w1', 'a', 10, 'retiring'), w('w2', 'a', 30, 'shadow', 'starting', 1)],
      [w('w1', 'a', 10, 'retiring'), w('w2', 'a', 30, 'active', 'ready', 1)],
    );
    expect(swapInFlight.map((e) => e.text)).toEqual(['a: w1 -> w2, GPU 0 -> GPU 1, share 10% -> 30%']);
    const first = workerEvents(1, [w('w1', 'a', 10, 'shadow', 'starting')], [w('w1', 'a', 10, 'active')]);
    expect(first.map((e) => e.kind)).toEqual(['serving']);
    const gone = workerEvents(1, [w('w1', 'a', 10, 'active')], []);
    expect(gone.map((e) => e.kind)).toEqual(['stopped']);
    // A replaced worker that finished its last batch and left is not news (the swap was reported).
    expect(
      workerEvents(2, [w('w1', 'a', 10, 'retiring'), w('w2', 'a', 30, 'active')], [w('w2', 'a', 30, 'active')]),
    ).toEqual([]);
    expect(workerEvents(1, [w('w1', 'a', 10, 'active')], [w('w1', 'a', 10, 'active')])).toEqual([]);
  });
});

describe('planEvent', () => {
  it('lists what changed per model and GPU, and is null when nothing did', () => {
    const before = [
      { model: 'a', gpu: 0, pct: 10, batch: 1 },
      { model: 'b', gpu: 1, pct: 50, batch: 4 },
    ];
    const after = [
      { model: 'a', gpu: 0, pct: 20, batch: 2 },
      { model: 'c', gpu: 1, pct: 30, batch: 1 },
    ];
    const e = planEvent(7, before, after)!;
    expect(e.kind).toBe('plan');
    expect(e.text).toBe(
      'new deployment: a GPU 0 10% b1 -> GPU 0 20% b2; c none -> GPU 1 30% b1; b GPU 1 50% b4 -> none',
    );
    expect(planEvent(7, before, before)).toBeNull();
  });
});

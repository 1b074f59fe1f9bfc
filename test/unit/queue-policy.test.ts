// A model's queue policy (src/serving/queuePolicy.ts) and the dispatch margin's timer-lateness window
// (src/serving/lateness.ts), both followed by the simulator and the scheduler.
import { describe, expect, it } from 'vitest';
import { LatenessWindow } from '../../src/serving/lateness.js';
import { admit, DEFAULT_MAX_QUEUE_SIZE, onTimeBudgetMs, resolveQueuePolicy } from '../../src/serving/queuePolicy.js';

describe('queue policy', () => {
  it.each([
    { what: 'room left', onTime: 3, delayed: 4, max: 8, admission: 'accept' },
    { what: 'full, with a delayed task to drop', onTime: 3, delayed: 5, max: 8, admission: 'evict-delayed' },
    { what: 'full of on-time tasks', onTime: 8, delayed: 0, max: 8, admission: 'reject' },
    { what: 'no bound given', onTime: 100_000, delayed: 0, max: Infinity, admission: 'accept' },
  ])('a task arriving: $what -> $admission', ({ onTime, delayed, max, admission }) => {
    expect(admit(onTime, delayed, max)).toBe(admission);
  });

  it('resolves a configuration: delay and the default bound unless given; the timeout only shortens the deadline', () => {
    expect(resolveQueuePolicy(undefined)).toEqual({
      delay: true,
      timeoutMs: Number.NaN,
      maxQueueSize: DEFAULT_MAX_QUEUE_SIZE,
    });
    expect(resolveQueuePolicy({ timeoutAction: 'reject' })).toEqual({
      delay: false,
      timeoutMs: Number.NaN,
      maxQueueSize: DEFAULT_MAX_QUEUE_SIZE,
    });
    const p = resolveQueuePolicy({ timeoutMs: 30, maxQueueSize: 10 });
    expect(onTimeBudgetMs(78, p)).toBe(30);
    expect(onTimeBudgetMs(25, p)).toBe(25);
    expect(onTimeBudgetMs(78, resolveQueuePolicy({}))).toBe(78);
  });
});

describe('timer lateness', () => {
  it('is the p99 of the latest firings, early ones counting 0', () => {
    const w = new LatenessWindow();
    expect(w.quantileMs(0.99)).toBe(0);
    // 100 firings: 97 at 0.2 ms late, two at 12 ms, one early.
    for (let i = 0; i < 97; i++) w.add(100, 100.2);
    w.add(100, 112);
    w.add(100, 112);
    w.add(100, 95);
    expect(w.quantileMs(0.5)).toBeCloseTo(0.2, 9);
    expect(w.quantileMs(0.99)).toBe(12);
    // Only the latest 512 count: the 12 ms spike is forgotten.
    for (let i = 0; i < 512; i++) w.add(0, 1);
    expect(w.quantileMs(0.99)).toBe(1);
  });
});

// A model's queue policy (src/serving/queuePolicy.ts), the dispatch margin's timer-lateness window
// (src/serving/lateness.ts), the task queue and the epoch statistics: each followed or used by both the
// simulator and the scheduler.
import { describe, expect, it } from 'vitest';
import { EpochStats } from '../../src/serving/epochStats.js';
import { LatenessWindow } from '../../src/serving/lateness.js';
import { RateMonitor } from '../../src/serving/monitor.js';
import { admit, DEFAULT_MAX_QUEUE_SIZE, onTimeBudgetMs, resolveQueuePolicy } from '../../src/serving/queuePolicy.js';
import { TaskQueue } from '../../src/serving/taskQueue.js';

describe('queue policy', () => {
  it.each([
    { what: 'room left', onTime: 3, delayed: 4, max: 8, admission: 'accept' },
    { what: 'full, with a delayed task to drop', onTime: 3, delayed: 5, max: 8, admission: 'evict-delayed' },
    { what: 'full of on-time tasks', onTime: 8, delayed: 0, max: 8, admission: 'reject' },
    { what: 'no bound given', onTime: 100_000, delayed: 0, max: Infinity, admission: 'accept' },
  ])('a task arriving: $what -> $admission', ({ onTime, delayed, max, admission }) => {
    expect(admit(onTime, delayed, max)).toBe(admission);
  });

  it(
    'resolves a configuration: delay and the default bound unless given; the timeout only shortens ' + 'the deadline',
    () => {
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
    },
  );
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

describe('TaskQueue: a task-buffer lane, the same for the simulator and the scheduler', () => {
  it('of times: first in, first out, across growth of its ring', () => {
    const q = TaskQueue.ofTimes();
    for (let i = 0; i < 3000; i++) {
      q.push(i);
      if (i % 3 === 0) expect(q.shift()).toBe(i / 3);
    }
    expect(q.length).toBe(2000);
    expect(q.peek()).toBe(1000);
    expect(q.drain()).toEqual(Array.from({ length: 2000 }, (_, i) => 1000 + i));
    expect(q.length).toBe(0);
  });

  it('of tasks: kept in arrival order; a refused batch goes back to the head in its order', () => {
    const q = TaskQueue.ofTasks((t: { id: string; arrivalMs: number }) => t.arrivalMs);
    q.push({ id: 'a', arrivalMs: 10 });
    q.push({ id: 'c', arrivalMs: 30 });
    q.push({ id: 'b', arrivalMs: 20 }); // its body took longer to read: it goes ahead of c
    q.push({ id: 'd', arrivalMs: 30 }); // same arrival as c: after it
    const batch = [q.shift(), q.shift()];
    expect(batch.map((t) => t.id)).toEqual(['a', 'b']);
    q.unshiftAll(batch);
    expect(q.drain().map((t) => t.id)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('of tasks: putting back more than its ring holds grows it', () => {
    const q = TaskQueue.ofTasks((t: number) => t);
    q.push(5000);
    q.unshiftAll(Array.from({ length: 3000 }, (_, i) => i));
    expect(q.length).toBe(3001);
    expect(q.shift()).toBe(0);
    expect(q.drain().at(-1)).toBe(5000);
  });
});

describe('EpochStats: what a policy observes of the last epoch, the same on both sides', () => {
  it('counts, means and totals per model; NaN where nothing ran; reset starts over', () => {
    const s = new EpochStats(2);
    s.answered(0, 10, false);
    s.answered(0, 30, true);
    s.dropped(0);
    s.dropped(1, 3);
    s.batchTimed(0, 4);
    s.batchTimed(0, 6);
    expect(s.outcomes()).toEqual({
      served: [2, 0],
      violated: [1, 0],
      dropped: [1, 3],
      meanExecMs: [5, NaN],
      meanLatencyMs: [20, NaN],
    });
    expect(s.totals()).toEqual({ served: 2, good: 1, missed: 5 });
    const monitor = new RateMonitor(2, 1000, 1000);
    const current = { placements: [] };
    const obs = s.observe(500, monitor, [7, 8], [4, 0], current);
    expect(obs).toMatchObject({ nowMs: 500, ratePerS: [7, 8], queued: [4, 0], current });
    expect(obs.lastEpoch.served).toEqual([2, 0]);
    s.reset();
    expect(s.totals()).toEqual({ served: 0, good: 0, missed: 0 });
    expect(s.outcomes().meanExecMs).toEqual([NaN, NaN]);
  });
});

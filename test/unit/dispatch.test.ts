// The task buffer's dispatch rule (src/sim/dispatch.ts), shared by the simulator and the scheduler:
// a short queue that built up is served in a smaller batch rather than dropped, a backlog drops the
// heads a full batch cannot serve in time, and a task one worker cannot
// serve in time is left to another free worker that can.
import { describe, expect, it } from 'vitest';
import { type DispatchView, dispatchModel, dispatchStep, MAX_PRED_BATCH } from '../../src/sim/dispatch.js';

/** t_inf = 4 + 3 b ms. */
const table = Float64Array.from({ length: MAX_PRED_BATCH }, (_, b) => (b === 0 ? 0 : 4 + 3 * b));
const base = { nowMs: 1000, headArrivalMs: 1000, sloMs: 80, batch: 32, timeoutMs: Number.NaN, slack: 0, predicted: table };

describe('dispatchStep', () => {
  it('serves a burst in the largest batch the head can still make, instead of dropping it', () => {
    // 30 tasks at once: a batch of 30 takes 94 ms > 80; 25 take 79 ms, the largest that fits.
    expect(dispatchStep({ ...base, queued: 30 })).toEqual({ kind: 'start', size: 25 });
    // With 20 ms of transport the largest is 18 (4 + 54 + 20 = 78).
    expect(dispatchStep({ ...base, queued: 30, overheadMs: 20 })).toEqual({ kind: 'start', size: 18 });
  });

  it('drops the head only when even a batch of one would finish late', () => {
    expect(dispatchStep({ ...base, queued: 5, nowMs: 1074 })).toEqual({ kind: 'drop' }); // 74 + 7 > 80
    expect(dispatchStep({ ...base, queued: 5, nowMs: 1073 })).toEqual({ kind: 'start', size: 1 }); // 73 + 7 = 80
    expect(dispatchStep({ ...base, queued: 1, overheadMs: 77 })).toEqual({ kind: 'drop' });
  });

  it('under a backlog (more queued than a batch) drops a head that a full batch cannot serve in time, rather than shrinking the batch', () => {
    // 40 queued, batch 16 (t = 52 ms): the head arrived 30 ms ago, 30 + 52 > 80, so it is dropped
    // (the old rule served a batch of 15, 30 + 49 = 79, and the backlog grew).
    expect(dispatchStep({ ...base, batch: 16, queued: 40, nowMs: 1030 })).toEqual({ kind: 'drop' });
    // A head that a full batch still serves in time: a full batch.
    expect(dispatchStep({ ...base, batch: 16, queued: 40, nowMs: 1028 })).toEqual({ kind: 'start', size: 16 }); // 28 + 52 = 80
    // Not a backlog (16 queued, batch 16): the head is saved by a smaller batch, as before.
    expect(dispatchStep({ ...base, batch: 16, queued: 16, nowMs: 1030 })).toEqual({ kind: 'start', size: 15 });
  });

  it('where batches pay transport, an idle worker takes what is queued at once; without transport, or with a batch in flight, it waits to fill', () => {
    expect(dispatchStep({ ...base, queued: 3, overheadMs: 2, idle: true })).toEqual({ kind: 'start', size: 3 });
    expect(dispatchStep({ ...base, queued: 3, overheadMs: 2, idle: false })).toEqual({ kind: 'wait', untilMs: 1065 }); // 1080 - (13 + 2)
    expect(dispatchStep({ ...base, queued: 3, overheadMs: 0, idle: true })).toEqual({ kind: 'wait', untilMs: 1067 });
  });

  it('waits to fill a batch while the head has time, as before', () => {
    // 3 queued of 32: the head can wait until 1080 - t(3) = 1067.
    expect(dispatchStep({ ...base, queued: 3 })).toEqual({ kind: 'wait', untilMs: 1067 });
    expect(dispatchStep({ ...base, queued: 8, batch: 8 })).toEqual({ kind: 'start', size: 8 }); // a full batch that fits
  });
});

interface W {
  readonly id: string;
  readonly overheadMs: number;
  free: boolean;
  /** When it may take another batch while one is in flight (pipelining); absent: not before it is answered. */
  pipelinedAtMs?: number;
}

function view(queue: number[], started: { w: string; size: number }[], dropped: string[]): DispatchView<W> {
  return {
    model: () => 0,
    canRun: (w) => w.free,
    batch: () => 8,
    timeoutMs: () => 0,
    predicted: () => table,
    overheadMs: (w) => w.overheadMs,
    queued: () => queue.length,
    headArrivalMs: () => queue[0]!,
    drop: (_m, w) => {
      queue.shift();
      dropped.push(w.id);
    },
    start: (w, size) => {
      queue.splice(0, size);
      started.push({ w: w.id, size });
      w.free = false;
    },
    pipelinedAtMs: (w) => w.pipelinedAtMs ?? Infinity,
    idle: (w) => w.free && w.pipelinedAtMs === undefined,
  };
}

describe('dispatchModel', () => {
  it('with tasks left queued, wakes when a busy worker may take the next batch (pipelining), not after', () => {
    const queue = [1000];
    const busy: W = { id: 'busy', overheadMs: 5, free: false, pipelinedAtMs: 1003 };
    const idle: W = { id: 'idle', overheadMs: 5, free: false };
    expect(dispatchModel(0, 1000, 80, 0, [busy, idle], view(queue, [], []))).toBe(1003);
    // Nothing queued: nothing to wake for.
    expect(dispatchModel(0, 1000, 80, 0, [busy, idle], view([], [], []))).toBe(Infinity);
    // A pipelining time already past is the caller's canRun, not a wake-up.
    expect(dispatchModel(0, 1000, 80, 0, [{ ...busy, pipelinedAtMs: 999 }], view([1000], [], []))).toBe(Infinity);
  });

  it('leaves a task a slow worker cannot serve in time to a free worker that can', () => {
    const queue = [1000, 1000];
    const started: { w: string; size: number }[] = [];
    const dropped: string[] = [];
    const slow: W = { id: 'slow', overheadMs: 90, free: true };
    const fast: W = { id: 'fast', overheadMs: 5, free: true };
    dispatchModel(0, 1000, 80, 0, [slow, fast], view(queue, started, dropped));
    expect(dropped).toEqual([]);
    expect(started).toEqual([{ w: 'fast', size: 2 }]);
  });

  it('drops when no free worker can serve the head in time', () => {
    const queue = [1000];
    const started: { w: string; size: number }[] = [];
    const dropped: string[] = [];
    const slow: W = { id: 'slow', overheadMs: 90, free: true };
    const busy: W = { id: 'busy', overheadMs: 5, free: false };
    dispatchModel(0, 1000, 80, 0, [slow, busy], view(queue, started, dropped));
    expect(dropped).toEqual(['slow']);
    expect(started).toEqual([]);
  });
});

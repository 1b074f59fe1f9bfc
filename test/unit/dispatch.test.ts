// Over 400 lines because the rule's cases (one step, the delayed lane, the loop over workers) share one
// prediction table and one scripted view, and read best as one table of the rule stated in the file head.
// The dispatch rule (stated in the head of src/serving/dispatch.ts), shared by the simulator and the
// scheduler: a short queue that built up is served in a smaller batch rather than dropped, a backlog
// drops the heads a full batch cannot serve in time, and a task one worker cannot serve in time is left
// to another free worker that can.
import { describe, expect, it } from 'vitest';
import {
  delayedBatchSize,
  type DispatchView,
  dispatchModel,
  dispatchStep,
  latestStartMs,
  MAX_PRED_BATCH,
  tableTimes,
} from '../../src/serving/dispatch.js';

/** t_inf = 4 + 3 b ms. */
const table = tableTimes(Float64Array.from({ length: MAX_PRED_BATCH }, (_, b) => (b === 0 ? 0 : 4 + 3 * b)));
const RULES = { slack: 0, marginMs: 0 };
const base = {
  nowMs: 1000,
  headArrivalMs: 1000,
  sloMs: 80,
  batch: 32,
  timeoutMs: Number.NaN,
  slack: 0,
  predicted: table,
};

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

  it('where the times follow the batches running on a pooled GPU, times out a head a full batch cannot serve', () => {
    // A burst of 30 under the batch of 32: served in a batch of 25 by a worker on its own, but where a smaller batch
    // would overlap more batches on a pooled GPU the head times out and the next heads go in a full batch.
    const following = { ms: (b: number) => table.ms(b), followsRunning: true };
    expect(dispatchStep({ ...base, queued: 30, predicted: following })).toEqual({ kind: 'drop' });
    // 25 queued: a full batch the head makes (79 ms), held toward its latest start as anywhere.
    expect(dispatchStep({ ...base, queued: 25, predicted: following })).toEqual({ kind: 'wait', untilMs: 1001 });
    // A lone task is not held to a full batch it does not have.
    expect(dispatchStep({ ...base, queued: 1, nowMs: 1073, predicted: following })).toEqual({ kind: 'start', size: 1 });
  });

  it(
    'under a backlog (more queued than a batch) drops a head that a full batch cannot serve in time, ' +
      'rather than shrinking the batch',
    () => {
      // 40 queued, batch 16 (t = 52 ms): the head arrived 30 ms ago, 30 + 52 > 80, so it is dropped
      // (the old rule served a batch of 15, 30 + 49 = 79, and the backlog grew).
      expect(dispatchStep({ ...base, batch: 16, queued: 40, nowMs: 1030 })).toEqual({ kind: 'drop' });
      // A head that a full batch still serves in time: a full batch.
      // 28 + 52 = 80
      expect(dispatchStep({ ...base, batch: 16, queued: 40, nowMs: 1028 })).toEqual({ kind: 'start', size: 16 });
      // Not a backlog (16 queued, batch 16): the head is saved by a smaller batch, as before.
      expect(dispatchStep({ ...base, batch: 16, queued: 16, nowMs: 1030 })).toEqual({ kind: 'start', size: 15 });
    },
  );

  it(
    'where batches pay transport, an idle worker takes what is queued at once; without transport, or ' +
      'with a batch in flight, it waits to fill',
    () => {
      expect(dispatchStep({ ...base, queued: 3, overheadMs: 2, idle: true })).toEqual({ kind: 'start', size: 3 });
      // 1080 - (13 + 2)
      expect(dispatchStep({ ...base, queued: 3, overheadMs: 2, idle: false })).toEqual({ kind: 'wait', untilMs: 1065 });
      expect(dispatchStep({ ...base, queued: 3, overheadMs: 0, idle: true })).toEqual({ kind: 'wait', untilMs: 1067 });
    },
  );

  it('waits to fill a batch while the head has time, as before', () => {
    // 3 queued of 32: the head can wait until 1080 - t(3) = 1067.
    expect(dispatchStep({ ...base, queued: 3 })).toEqual({ kind: 'wait', untilMs: 1067 });
    // a full batch that fits
    expect(dispatchStep({ ...base, queued: 8, batch: 8 })).toEqual({ kind: 'start', size: 8 });
  });
});

describe('dispatchStep: waiting for a fuller batch only while the arrival rate can bring one', () => {
  // 1 queued of 32 at t = 1000, SLO 80: t(1) = 7, latest start 1073 (slack 0).
  it.each([
    {
      what: 'no rate given: waits until the latest start',
      ratePerS: undefined,
      marginMs: 0,
      nowMs: 1000,
      step: { kind: 'wait', untilMs: 1073 },
    },
    {
      what: 'no arrivals measured: starts at once',
      ratePerS: 0,
      marginMs: 0,
      nowMs: 1000,
      step: { kind: 'start', size: 1 },
    },
    {
      what: '1 task/s: another is not expected within 73 ms, starts at once',
      ratePerS: 1,
      marginMs: 0,
      nowMs: 1000,
      step: { kind: 'start', size: 1 },
    },
    {
      what: '10 tasks/s: the mean gap (100 ms) is longer than the time left',
      ratePerS: 10,
      marginMs: 0,
      nowMs: 1000,
      step: { kind: 'start', size: 1 },
    },
    {
      what: '100 tasks/s: waits until one gap (10 ms) before the latest start',
      ratePerS: 100,
      marginMs: 0,
      nowMs: 1000,
      step: { kind: 'wait', untilMs: 1063 },
    },
    {
      what: '100 tasks/s, at that instant: starts',
      ratePerS: 100,
      marginMs: 0,
      nowMs: 1063,
      step: { kind: 'start', size: 1 },
    },
    {
      what: '1000 tasks/s with a 2 ms margin for timer jitter',
      ratePerS: 1000,
      marginMs: 2,
      nowMs: 1000,
      step: { kind: 'wait', untilMs: 1070 },
    },
    {
      what: 'a margin as long as the time left: starts',
      ratePerS: 1000,
      marginMs: 73,
      nowMs: 1000,
      step: { kind: 'start', size: 1 },
    },
  ])('$what', ({ ratePerS, marginMs, nowMs, step }) => {
    expect(
      dispatchStep({ ...base, queued: 1, nowMs, marginMs, ...(ratePerS === undefined ? {} : { ratePerS }) }),
    ).toEqual(step);
  });

  it('a full batch, a timeout or a head that cannot wait start whatever the rate', () => {
    expect(dispatchStep({ ...base, queued: 8, batch: 8, ratePerS: 1e6 })).toEqual({ kind: 'start', size: 8 });
    expect(dispatchStep({ ...base, queued: 2, timeoutMs: 5, nowMs: 1005, ratePerS: 1e6 })).toEqual({
      kind: 'start',
      size: 2,
    });
    // latest start 1070
    expect(dispatchStep({ ...base, queued: 2, nowMs: 1070, ratePerS: 1e6 })).toEqual({ kind: 'start', size: 2 });
  });
});

describe('latestStartMs and delayedBatchSize: a delayed batch ends before the on-time lane must start', () => {
  const lane = { nowMs: 1000, headArrivalMs: 990, sloMs: 80, batch: 8, slack: 0, predicted: table };
  it.each([
    {
      what: 'an on-time head (arrived 990, 2 queued): 1070 - t(2) = 1060',
      queued: 2,
      overheadMs: 0,
      marginMs: 0,
      ratePerS: undefined,
      latest: 1060,
    },
    {
      what: 'more queued than a batch: the full batch, 1070 - t(8)',
      queued: 20,
      overheadMs: 0,
      marginMs: 0,
      ratePerS: undefined,
      latest: 1042,
    },
    { what: 'with transport and margin', queued: 2, overheadMs: 3, marginMs: 2, ratePerS: undefined, latest: 1055 },
    {
      what: 'nothing on time: a task arriving now, alone, 1080 - t(1)',
      queued: 0,
      overheadMs: 0,
      marginMs: 0,
      ratePerS: undefined,
      latest: 1073,
    },
    {
      what: 'the batch the rate brings by the deadline (50/s over 70 ms: 3 more): 1070 - t(5)',
      queued: 2,
      overheadMs: 0,
      marginMs: 0,
      ratePerS: 50,
      latest: 1051,
    },
    {
      what: 'a rate that fills the batch: 1070 - t(8)',
      queued: 2,
      overheadMs: 0,
      marginMs: 0,
      ratePerS: 1000,
      latest: 1042,
    },
  ])('$what', ({ queued, overheadMs, marginMs, ratePerS, latest }) => {
    expect(
      latestStartMs({ ...lane, queued, overheadMs, marginMs, ...(ratePerS === undefined ? {} : { ratePerS }) }),
    ).toBe(latest);
  });

  const delayedIn = {
    nowMs: 1000,
    batch: 8,
    predicted: table,
    overheadMs: 0,
    slack: 0,
    sharedBusyMs: Infinity,
    onTimeQueued: 0,
    ratePerS: 0,
  };
  it.each([
    { what: 'the whole placed batch fits', delayed: 30, endByMs: 1100, size: 8 },
    { what: 'fewer delayed than a batch', delayed: 3, endByMs: 1100, size: 3 },
    { what: 'the largest that ends in time: 1000 + 4 + 3b <= 1020', delayed: 30, endByMs: 1020, size: 5 },
    { what: 'not even one while on-time tasks wait', delayed: 30, endByMs: 1006, onTimeQueued: 1, size: 0 },
    { what: 'nothing on time: one, though it cannot end by a new arrival start', delayed: 30, endByMs: 1006, size: 1 },
    { what: 'nothing on time, but no gap on a time-shared GPU', delayed: 30, endByMs: 1006, sharedBusyMs: 0, size: 0 },
    { what: 'with the slack: 1000 + 1.5 (4 + 3b) <= 1020', delayed: 30, endByMs: 1020, slack: 0.5, size: 3 },
    {
      what: 'the on-time tasks by its end fit one batch: 5 queued + 200/s x (4 + 3b) ms <= 8',
      delayed: 30,
      endByMs: 1100,
      onTimeQueued: 5,
      ratePerS: 200,
      size: 3,
    },
    { what: 'a time-shared GPU leaves it 15 ms: 4 + 3b <= 15', delayed: 30, endByMs: 1100, sharedBusyMs: 15, size: 3 },
    { what: 'a time-shared GPU leaves it nothing', delayed: 30, endByMs: 1100, sharedBusyMs: 0, size: 0 },
  ])('$what', (c) => {
    expect(delayedBatchSize({ ...delayedIn, ...c })).toBe(c.size);
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
    gpu: () => 0,
    timeshared: () => false,
    gpuBusy: () => false,
    budgetMs: () => 80,
    ratePerS: () => Infinity,
    delays: () => false,
    queued: () => queue.length,
    headArrivalMs: () => queue[0]!,
    delayed: () => 0,
    drop: (_m, w) => {
      queue.shift();
      dropped.push(w.id);
    },
    delay: () => {
      throw new Error('a reject policy delays nothing');
    },
    startDelayed: () => {
      throw new Error('a reject policy delays nothing');
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
    expect(dispatchModel(0, 1000, RULES, [busy, idle], view(queue, [], []))).toBe(1003);
    // Nothing queued: nothing to wake for.
    expect(dispatchModel(0, 1000, RULES, [busy, idle], view([], [], []))).toBe(Infinity);
    // A pipelining time already past is the caller's canRun, not a wake-up.
    expect(dispatchModel(0, 1000, RULES, [{ ...busy, pipelinedAtMs: 999 }], view([1000], [], []))).toBe(Infinity);
  });

  it('leaves a task a slow worker cannot serve in time to a free worker that can', () => {
    const queue = [1000, 1000];
    const started: { w: string; size: number }[] = [];
    const dropped: string[] = [];
    const slow: W = { id: 'slow', overheadMs: 90, free: true };
    const fast: W = { id: 'fast', overheadMs: 5, free: true };
    dispatchModel(0, 1000, RULES, [slow, fast], view(queue, started, dropped));
    expect(dropped).toEqual([]);
    expect(started).toEqual([{ w: 'fast', size: 2 }]);
  });

  it('drops when no free worker can serve the head in time', () => {
    const queue = [1000];
    const started: { w: string; size: number }[] = [];
    const dropped: string[] = [];
    const slow: W = { id: 'slow', overheadMs: 90, free: true };
    const busy: W = { id: 'busy', overheadMs: 5, free: false };
    dispatchModel(0, 1000, RULES, [slow, busy], view(queue, started, dropped));
    expect(dropped).toEqual(['slow']);
    expect(started).toEqual([]);
  });
});

/** A worker of model `model` on `gpu` for the queue-policy cases (batch 8, the table above, no transport). */
interface LW {
  readonly id: string;
  readonly model: number;
  readonly gpu: number;
  free: boolean;
}

/** Two models' on-time and delayed lanes (arrival times), as one side would hold them. */
function lanes(opts: {
  delays: boolean;
  onTime: number[][];
  delayed: number[];
  timeshared?: boolean;
  gpuBusy?: boolean;
  ratePerS?: number;
}) {
  const log: string[] = [];
  const v: DispatchView<LW> = {
    model: (w) => w.model,
    canRun: (w) => w.free,
    batch: () => 8,
    timeoutMs: () => Number.NaN,
    predicted: () => table,
    overheadMs: () => 0,
    gpu: (w) => w.gpu,
    timeshared: () => opts.timeshared ?? false,
    gpuBusy: () => opts.gpuBusy ?? false,
    budgetMs: () => 80,
    ratePerS: () => opts.ratePerS ?? 0,
    delays: () => opts.delays,
    queued: (m) => opts.onTime[m]!.length,
    headArrivalMs: (m) => opts.onTime[m]![0]!,
    delayed: (m) => (m === 0 ? opts.delayed.length : 0),
    drop: (m) => log.push(`drop ${opts.onTime[m]!.shift()}`),
    delay: (m) => {
      opts.delayed.push(opts.onTime[m]!.shift()!);
      log.push(`delay ${opts.delayed[opts.delayed.length - 1]}`);
    },
    start: (w, size) => {
      log.push(`${w.id} starts ${opts.onTime[w.model]!.splice(0, size).length} on time`);
      w.free = false;
    },
    startDelayed: (w, size) => {
      log.push(`${w.id} starts ${opts.delayed.splice(0, size).length} delayed`);
      w.free = false;
    },
    pipelinedAtMs: () => Infinity,
    idle: (w) => w.free,
  };
  return { v, log };
}

describe('dispatchModel: the queue policy', () => {
  const w0 = () => ({ id: 'w0', model: 0, gpu: 0, free: true });
  it(
    'a head that timed out is dropped under reject and delayed under delay; a free worker with ' +
      'nothing on time then serves the delayed lane',
    () => {
      // At 1000: tasks of 900 and 910 can no longer make their 80 ms; 995 can (t(1) = 7).
      const reject = lanes({ delays: false, onTime: [[900, 910, 995], []], delayed: [] });
      dispatchModel(0, 1000, RULES, [w0()], reject.v);
      expect(reject.log).toEqual(['drop 900', 'drop 910', 'w0 starts 1 on time']);
      const delay = lanes({ delays: true, onTime: [[900, 910, 995], []], delayed: [] });
      dispatchModel(0, 1000, RULES, [w0()], delay.v);
      expect(delay.log).toEqual(['delay 900', 'delay 910', 'w0 starts 1 on time']);
      // The on-time lane empty, the worker free: the delayed tasks go, late, in one batch.
      const later = lanes({ delays: true, onTime: [[], []], delayed: [900, 910] });
      dispatchModel(0, 1000, RULES, [w0()], later.v);
      expect(later.log).toEqual(['w0 starts 2 delayed']);
    },
  );

  it('a delayed batch goes only while the on-time lane waits, and only one that ends before its latest start', () => {
    // On time: one task of 990 waiting to fill (100 tasks/s: another is expected before its latest start).
    const waiting = lanes({
      delays: true,
      onTime: [[990], []],
      delayed: Array.from({ length: 20 }, () => 900),
      ratePerS: 100,
    });
    dispatchModel(0, 1000, RULES, [w0()], waiting.v);
    // The on-time head's batch by its deadline (100/s over 70 ms: a full 8): latest start 1070 - t(8) = 1042;
    // 1000 + 4 + 3b <= 1042: b = 12, so the placed batch, 8.
    expect(waiting.log).toEqual(['w0 starts 8 delayed']);
    // 5 on time at 200 tasks/s: a delayed batch of b takes 4 + 3b ms, while 0.2 (4 + 3b) more arrive;
    // all of them must fit one on-time batch of 8 when it ends: b = 3.
    const close = lanes({
      delays: true,
      onTime: [[990, 990, 990, 990, 990], []],
      delayed: Array.from({ length: 20 }, () => 900),
      ratePerS: 200,
    });
    dispatchModel(0, 1000, RULES, [w0()], close.v);
    expect(close.log).toEqual(['w0 starts 3 delayed']);
    // An on-time batch to start now: no delayed batch.
    const busy = lanes({ delays: true, onTime: [Array.from({ length: 8 }, () => 990), []], delayed: [900] });
    dispatchModel(0, 1000, RULES, [w0()], busy.v);
    expect(busy.log).toEqual(['w0 starts 8 on time']);
  });

  it('on a time-shared GPU a delayed batch takes only a gap of the whole GPU', () => {
    const peer = () => ({ id: 'p1', model: 1, gpu: 0, free: false });
    // Model 1 on the same GPU has an on-time task queued: it would wait behind the late batch.
    const queued = lanes({
      delays: true,
      onTime: [[], [990]],
      delayed: Array.from({ length: 20 }, () => 900),
      timeshared: true,
    });
    dispatchModel(0, 1000, RULES, [w0(), peer()], queued.v);
    expect(queued.log).toEqual([]);
    // Nothing queued on an idle GPU, 50 tasks/s each: the placed batch, whatever the peer's arrivals
    // (a task of its that arrives meanwhile waits behind it, as behind any batch).
    const idle = lanes({
      delays: true,
      onTime: [[], []],
      delayed: Array.from({ length: 20 }, () => 900),
      timeshared: true,
      ratePerS: 50,
    });
    dispatchModel(0, 1000, RULES, [w0(), peer()], idle.v);
    expect(idle.log).toEqual(['w0 starts 8 delayed']);
    // A batch runs on the GPU: nothing.
    const busy = lanes({
      delays: true,
      onTime: [[], []],
      delayed: Array.from({ length: 20 }, () => 900),
      timeshared: true,
      ratePerS: 50,
      gpuBusy: true,
    });
    dispatchModel(0, 1000, RULES, [w0(), peer()], busy.v);
    expect(busy.log).toEqual([]);
    // On an MPS GPU the other model runs beside it: the placed batch.
    const mps = lanes({ delays: true, onTime: [[], [990]], delayed: Array.from({ length: 20 }, () => 900) });
    dispatchModel(0, 1000, RULES, [w0(), peer()], mps.v);
    expect(mps.log).toEqual(['w0 starts 8 delayed']);
  });
});

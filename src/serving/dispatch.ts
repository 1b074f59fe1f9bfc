// The dispatch rule: when a worker takes a batch of its model's tasks, and how many. The discrete-event
// simulator (src/sim/engine.ts) and the scheduler's control plane (scheduler/control.ts) both drive it
// through a `DispatchView` of their own workers and queues, so the running system batches exactly as
// the twin does. Pure. This comment is the rule's one authoritative statement; other code comments and
// the docs point here.
//
// Each model has an on-time lane and a delayed lane (src/serving/queuePolicy.ts). A task's deadline is
// its arrival plus its model's budget: the SLO less the answer's way out, or the queue policy's shorter
// timeout. t_pred(q) is a worker's predicted GPU time for a batch of q given the other workers on its
// GPU, and on a pooled overlap GPU the batches running there now (unless the serving settings say
// `solo`; prediction.ts); `transport` is the
// time a batch spends outside the GPU (0 in the simulator unless it is given one, learnt by the
// scheduler). A free serving worker takes a batch of the on-time lane when
//   (a) `batch` tasks are queued, or
//   (b) the oldest task has waited the placement's `timeoutMs`, or
//   (c) waiting longer is not expected to bring another task before the oldest task's latest start:
//       now >= latestStart - 1000 / ratePerS, where
//       latestStart = deadline - (1 + slack) * (t_pred(q) + transport) - margin
//       (ratePerS: the monitor's estimate; margin: the running system's timer jitter), or
//   (d) where batches pay transport, the worker has no batch in flight.
// The batch is the largest, up to `batch` of the oldest tasks, with which the oldest still finishes by
// its deadline. With a backlog (more than `batch` queued), a head that cannot finish in a full batch
// times out instead (Nexus's early drop): shrinking batches to save heads near their deadlines lowers
// the worker's throughput while the queue is long and brings the next heads nearer theirs, a spiral.
// The same holds for any queue of two or more where the worker's prediction follows the batches running
// on its pooled GPU (prediction.ts): there a smaller batch also overlaps more batches, each slower.
// A head that no free worker of its model can finish in time, even alone and started now, times out:
// it is dropped, or moved to the delayed lane, by its queue policy.
// A worker with nothing to start from the on-time lane and no batch in flight takes the largest batch
// of the delayed lane that ends by the on-time lane's latest start, leaves the worker able to keep up
// with the on-time arrivals, and on a time-shared GPU starts only on an idle GPU with no other model's
// on-time task queued (`delayedBatchSize`, `sharedBusyMs`). With nothing on time queued it takes at
// least one delayed task (where the GPU and the arrivals allow): an idle worker never holds late tasks
// for an arrival that may not come.
// Pipelining (`nextBatchAtMs`): where batches pay transport, on a GPU that is not time-shared, a worker
// with a batch in flight takes the next once the first's predicted GPU time since it was sent is over.
import type { BatchTimes } from './prediction.js';

export {
  type BatchTimes,
  MAX_PRED_BATCH,
  type PeerPlacement,
  predictedMs,
  predictionTable,
  refreshTimes,
  RunningBatches,
  tableTimes,
  WorkerTimes,
} from './prediction.js';

/** What the worker should do next about its model's queue. */
export type DispatchStep =
  | { readonly kind: 'empty' }
  /** The head task has timed out: drop or delay it (its queue policy), then ask again. */
  | { readonly kind: 'drop' }
  | { readonly kind: 'start'; readonly size: number }
  /** Nothing to start yet; ask again at `untilMs` (or when a task arrives). */
  | { readonly kind: 'wait'; readonly untilMs: number };

export interface DispatchInput {
  readonly nowMs: number;
  readonly queued: number;
  /** Arrival time of the oldest queued task. */
  readonly headArrivalMs: number;
  readonly sloMs: number;
  readonly batch: number;
  /** NaN: no timeout. */
  readonly timeoutMs: number;
  readonly slack: number;
  /** The worker's predicted t_inf by batch size (prediction.ts). */
  readonly predicted: BatchTimes;
  /** A batch's transport: time outside the GPU on its way to the worker and back (ms; default 0). */
  readonly overheadMs?: number;
  /**
   * No batch in flight on the worker: rule (d). A batch that fills first then crosses the wire whole,
   * while batches sent as the worker frees overlap their transfer with the next arrivals.
   */
  readonly idle?: boolean;
  /** The monitor's arrival rate (tasks/s) for rule (c); absent: wait until the latest start whatever the rate. */
  readonly ratePerS?: number;
  /** How much earlier than its latest start a waiting batch starts: the running system's timer jitter (ms). */
  readonly marginMs?: number;
}

/** What `latestStartMs` reads: the on-time lane of one model as one worker sees it. */
export interface LaneInput {
  readonly nowMs: number;
  readonly queued: number;
  /** Arrival time of the oldest queued task (read only when `queued > 0`). */
  readonly headArrivalMs: number;
  /** Deadline of a task, ms after its arrival. */
  readonly sloMs: number;
  readonly batch: number;
  readonly slack: number;
  readonly predicted: BatchTimes;
  readonly overheadMs?: number;
  readonly marginMs?: number;
  /** Arrival rate (tasks/s): the head's batch counts the tasks expected by its deadline (absent: those queued). */
  readonly ratePerS?: number;
}

/**
 * The latest instant the on-time lane's head can start its batch and still finish within its
 * deadline with the rule's slack and margin. Its batch: the tasks queued, plus those the rate brings
 * before the head's deadline, up to `batch` (what it may have grown to when it starts). With nothing
 * queued, that of a task arriving now: a delayed batch that ends by then leaves any task that arrives
 * meanwhile its full SLO.
 */
export function latestStartMs(x: LaneInput): number {
  const deadline = (x.queued > 0 ? x.headArrivalMs : x.nowMs) + x.sloMs;
  const coming = x.ratePerS === undefined ? 0 : Math.max(0, ((deadline - x.nowMs) * x.ratePerS) / 1000);
  const q = Math.min(x.batch, Math.max(1, x.queued + Math.floor(coming)));
  return deadline - (1 + x.slack) * (x.predicted.ms(q) + (x.overheadMs ?? 0)) - (x.marginMs ?? 0);
}

/** What `delayedBatchSize` reads: a worker's delayed lane and what its on-time lane leaves it. */
export interface DelayedInput {
  readonly nowMs: number;
  /** Tasks in the delayed lane. */
  readonly delayed: number;
  /** The worker's placed batch. */
  readonly batch: number;
  readonly predicted: BatchTimes;
  readonly overheadMs: number;
  readonly slack: number;
  /** When the batch must end: the latest start of its model's on-time lane (`latestStartMs`). */
  readonly endByMs: number;
  /** The longest the batch may hold a time-shared GPU (`sharedBusyMs`; Infinity on an MPS GPU). */
  readonly sharedBusyMs: number;
  /** Tasks of the model on time and queued now, and their arrival rate (tasks/s). */
  readonly onTimeQueued: number;
  readonly ratePerS: number;
}

/**
 * The delayed batch a worker may take now: the largest, up to `batch` tasks of the delayed lane, that
 * (1) ends by `endByMs`, (2) leaves the on-time tasks queued by its end (those queued now and those the
 * rate brings meanwhile) to one on-time batch, so that the worker does not fall behind the on-time
 * arrivals, and (3) takes at most `sharedBusyMs`; its time counts the rule's slack. With nothing on time
 * queued and no such batch, one task if (2) and (3) allow it. 0: none. At most the placed
 * batch, so that its neighbours on an MPS GPU see no more interference than their predictions count.
 */
export function delayedBatchSize(x: DelayedInput): number {
  const busyMs = (size: number) => (1 + x.slack) * (x.predicted.ms(size) + x.overheadMs);
  const keepsUp = (ms: number) => ms <= x.sharedBusyMs && x.onTimeQueued + (x.ratePerS * ms) / 1000 <= x.batch;
  for (let size = Math.min(x.delayed, x.batch); size > 0; size--) {
    if (x.nowMs + busyMs(size) <= x.endByMs && keepsUp(busyMs(size))) return size;
  }
  // Nothing on time is queued: the end-by bound only guards a task that may arrive, and where even one
  // delayed task cannot end by it (a tight SLO, a large margin) it would hold the lane forever.
  return x.delayed > 0 && x.onTimeQueued === 0 && keepsUp(busyMs(1)) ? 1 : 0;
}

export function dispatchStep(x: DispatchInput): DispatchStep {
  if (x.queued === 0) return EMPTY;
  const full = Math.min(x.queued, x.batch);
  const deadline = x.headArrivalMs + x.sloMs;
  const over = x.overheadMs ?? 0;
  // A backlog, or a worker predicted beside the batches running on its pooled GPU: a head that cannot
  // finish within its SLO in a full batch times out (the early drop in the file head) rather than being
  // served in a smaller batch.
  const early = x.queued > x.batch || (x.predicted.followsRunning === true && x.queued > 1);
  if (early && x.nowMs + x.predicted.ms(full) + over > deadline) return DROP;
  // Otherwise the largest batch of the oldest tasks that still lets the head finish within its SLO:
  // a short queue that built up (a burst, a swap, requests parsed together) is served in a smaller
  // batch rather than dropped. The head is dropped only when even a batch of one would finish late.
  let size = full;
  while (size > 1 && x.nowMs + x.predicted.ms(size) + over > deadline) size--;
  const t = x.predicted.ms(size) + over;
  if (x.nowMs + t > deadline) return DROP;
  if (size < full) return { kind: 'start', size };
  const latestStart = deadline - (1 + x.slack) * t - (x.marginMs ?? 0);
  // Rule (c): wait for a fuller batch only while another task is expected before the latest start
  // (one mean inter-arrival time, 1000 / ratePerS, before it); at a low rate a lone task starts at once.
  const gapMs = x.ratePerS === undefined ? 0 : x.ratePerS > 0 ? 1000 / x.ratePerS : Infinity;
  const fillByMs = latestStart - gapMs;
  const timeoutAt = Number.isNaN(x.timeoutMs) ? Infinity : x.headArrivalMs + x.timeoutMs;
  if (x.queued >= x.batch || x.nowMs >= timeoutAt || x.nowMs >= fillByMs || (x.idle === true && over > 0))
    return { kind: 'start', size };
  return { kind: 'wait', untilMs: Math.min(timeoutAt, fillByMs) };
}

const EMPTY: DispatchStep = { kind: 'empty' };
const DROP: DispatchStep = { kind: 'drop' };

/** How the dispatch loop reads one side's workers and queues and acts on them (created once per side). */
export interface DispatchView<W> {
  model(w: W): number;
  /** Free and serving (and its GPU free, when time-shared). */
  canRun(w: W): boolean;
  batch(w: W): number;
  /** NaN: no timeout. */
  timeoutMs(w: W): number;
  predicted(w: W): BatchTimes;
  /** Transport a batch pays beyond its GPU time (the scheduler's learned estimate; the simulator's setting). */
  overheadMs(w: W): number;
  /** The worker's GPU (cluster index), whether it is time-shared, and whether a batch runs on it now. */
  gpu(w: W): number;
  timeshared(w: W): boolean;
  gpuBusy(w: W): boolean;
  /** Model m's on-time deadline, ms after a task's arrival (`onTimeBudgetMs`, src/serving/queuePolicy.ts). */
  budgetMs(m: number): number;
  /** Model m's arrival rate as the monitor last estimated it, tasks/s. */
  ratePerS(m: number): number;
  /** Model m's queue policy delays tasks that time out (true) or drops them (false). */
  delays(m: number): boolean;
  queued(m: number): number;
  /** Arrival time of model m's oldest queued task (only asked when one is queued). */
  headArrivalMs(m: number): number;
  /** Tasks in model m's delayed lane. */
  delayed(m: number): number;
  /** Drops model m's head task (it timed out and its policy rejects); `w`: the worker that could not take it. */
  drop(m: number, w: W): void;
  /** Moves model m's head task (it timed out) to the tail of its delayed lane. */
  delay(m: number): void;
  /** Starts a batch of `size` of the model's oldest tasks on `w`. */
  start(w: W, size: number): void;
  /** Starts a batch of `size` of the model's oldest delayed tasks on `w`. */
  startDelayed(w: W, size: number): void;
  /**
   * Pipelining: when `w`, serving with a batch in flight, may take the next before that one is answered
   * (`nextBatchAtMs`); Infinity for a worker that is not serving, has nothing in flight or may not pipeline.
   */
  pipelinedAtMs(w: W): number;
  /** No batch in flight on `w` (sent and not yet answered). */
  idle(w: W): boolean;
}

/** The rule's settings both sides share (src/serving/settings.ts) and the running system's measured margin. */
export interface DispatchRules {
  /** Safety margin of rule (c), a fraction of the predicted batch time. */
  readonly slack: number;
  /** Timer jitter the rule starts waiting batches ahead of (ms): the scheduler's measured p99, the twin's setting. */
  readonly marginMs: number;
}

/** Whether a free worker of model m other than `w` could finish one task alone by `deadlineMs` if started now. */
function otherCanServe<W>(
  m: number,
  w: W,
  nowMs: number,
  deadlineMs: number,
  workers: readonly W[],
  v: DispatchView<W>,
): boolean {
  for (const o of workers)
    if (o !== w && v.model(o) === m && v.canRun(o) && nowMs + v.predicted(o).ms(1) + v.overheadMs(o) <= deadlineMs)
      return true;
  return false;
}

/** Model m's on-time lane as worker `w` sees it (for `latestStartMs`). */
function lane<W>(m: number, w: W, nowMs: number, rules: DispatchRules, v: DispatchView<W>): LaneInput {
  const queued = v.queued(m);
  return {
    nowMs,
    queued,
    headArrivalMs: queued > 0 ? v.headArrivalMs(m) : 0,
    sloMs: v.budgetMs(m),
    batch: v.batch(w),
    slack: rules.slack,
    predicted: v.predicted(w),
    overheadMs: v.overheadMs(w),
    marginMs: rules.marginMs,
    ratePerS: v.ratePerS(m),
  };
}

/**
 * On a time-shared GPU, the longest a delayed batch of model m may hold `w`'s GPU: only a gap of the
 * whole GPU, so 0 while a batch runs there or another model has on-time tasks queued, and no bound
 * otherwise. Tasks of the others that arrive meanwhile wait behind it (serial) or start beside it
 * (overlap): the delayed batch is at most the placed batch, and a late task is served after the
 * on-time work queued now, as Triton's DELAY serves a timed-out request after the others that have
 * not timed out. Waiting also for a gap in which no other model's task is expected would starve late
 * tasks for seconds beside a tight-SLO model, whose next task is always expected sooner than a batch
 * takes. Infinity on an MPS GPU, where the others run beside it at their own shares.
 */
function sharedBusyMs<W>(m: number, w: W, workers: readonly W[], v: DispatchView<W>): number {
  if (!v.timeshared(w)) return Infinity;
  if (v.gpuBusy(w)) return 0;
  const g = v.gpu(w);
  for (const o of workers) {
    const om = v.model(o);
    if (om !== m && v.gpu(o) === g && v.queued(om) > 0) return 0;
  }
  return Infinity;
}

/**
 * The dispatch loop for model m (the rule in the file head): each free
 * worker of the model, in order, takes batches by `dispatchStep` until the queue is empty or the rule
 * says wait; a head task one worker cannot serve in time is left to another free worker that can; a
 * head that no free worker can serve in time is dropped or delayed by the model's queue policy. A
 * free worker left with nothing to start from the on-time lane (the rule says wait, or it is empty)
 * and no batch in flight takes the largest batch of the delayed lane `delayedBatchSize` allows.
 * Returns when to ask again (the earliest wait; Infinity when nothing waits on a timer).
 */
export function dispatchModel<W>(
  m: number,
  nowMs: number,
  rules: DispatchRules,
  workers: readonly W[],
  v: DispatchView<W>,
): number {
  let wake = Infinity;
  const sloMs = v.budgetMs(m);
  for (const w of workers) {
    if (v.model(w) !== m || !v.canRun(w)) continue;
    let free = false; // nothing to start from the on-time lane now: the worker may take a delayed batch
    for (;;) {
      const queued = v.queued(m);
      const step = dispatchStep({
        nowMs,
        queued,
        headArrivalMs: queued > 0 ? v.headArrivalMs(m) : 0,
        sloMs,
        batch: v.batch(w),
        timeoutMs: v.timeoutMs(w),
        slack: rules.slack,
        predicted: v.predicted(w),
        overheadMs: v.overheadMs(w),
        idle: v.idle(w),
        ratePerS: v.ratePerS(m),
        marginMs: rules.marginMs,
      });
      if (step.kind === 'empty') {
        free = true;
        break;
      }
      if (step.kind === 'drop') {
        // Another free worker of the model that can still finish the head in time takes it instead
        // (a replica with less interference, or a shorter measured transport): only a task that no
        // free worker can serve within its deadline times out.
        if (otherCanServe(m, w, nowMs, v.headArrivalMs(m) + sloMs, workers, v)) break;
        if (v.delays(m)) v.delay(m);
        else v.drop(m, w);
        continue;
      }
      if (step.kind === 'start') v.start(w, step.size);
      else {
        if (step.untilMs < wake) wake = step.untilMs;
        free = true;
      }
      break;
    }
    if (free && v.delayed(m) > 0 && v.idle(w)) {
      const size = delayedBatchSize({
        nowMs,
        delayed: v.delayed(m),
        batch: v.batch(w),
        predicted: v.predicted(w),
        overheadMs: v.overheadMs(w),
        slack: rules.slack,
        endByMs: latestStartMs(lane(m, w, nowMs, rules, v)),
        sharedBusyMs: sharedBusyMs(m, w, workers, v),
        onTimeQueued: v.queued(m),
        ratePerS: v.ratePerS(m),
      });
      if (size > 0) v.startDelayed(w, size);
    }
  }
  // Tasks still queued: wake when a busy worker of the model may take the next batch (pipelining).
  if (v.queued(m) > 0) {
    for (const w of workers) {
      if (v.model(w) !== m) continue;
      const at = v.pipelinedAtMs(w);
      if (at > nowMs && at < wake) wake = at;
    }
  }
  return wake;
}

/**
 * Pipelining: a worker holds at most PIPELINE_DEPTH batches, one on its GPU and one on its way to it or
 * waiting at it, so that a batch's transfer overlaps the batch running. Sent when the batch in flight's
 * predicted GPU time is over, the next batch reaches the worker as the GPU frees (a batch's transport
 * being mostly its inputs' way in). Only where there is transport to hide (`transportMs > 0`) and on a
 * GPU that is not time-shared (where one batch at a time holds the whole GPU); with zero transport this
 * is the one-batch-at-a-time rule.
 */
export const PIPELINE_DEPTH = 2;

/**
 * When a worker with `inFlight` batches may take another (ms; Infinity: not until one is answered).
 * `lastSentMs`/`lastPredictedMs`: when its latest batch was sent and that batch's predicted GPU time.
 */
export function nextBatchAtMs(
  inFlight: number,
  lastSentMs: number,
  lastPredictedMs: number,
  transportMs: number,
  timeshared: boolean,
): number {
  if (inFlight === 0) return -Infinity;
  if (inFlight >= PIPELINE_DEPTH || !(transportMs > 0) || timeshared) return Infinity;
  return lastSentMs + lastPredictedMs;
}

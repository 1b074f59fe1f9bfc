// The task buffer's dispatch rule and the predictions it rests on, shared by the discrete-event
// simulator (simulator.ts) and the scheduler service (scheduler/control.ts), so the running system
// batches exactly as the simulator does. Pure. The rule (docs/simulator.md):
// a free worker takes a batch when
//   (a) `batch` tasks are queued, or
//   (b) the oldest task has waited the placement's `timeoutMs`, or
//   (c) waiting longer would make the oldest task miss its SLO: now >= deadline - (1 + slack) * t_pred(q);
// and before it starts, a head task that cannot finish within its SLO even if started now is dropped.
import type { GpuInfo } from '../policy/types.js';

/** Predicted batch times are tabulated for batches 1..MAX_PRED_BATCH-1; beyond, scaled linearly. */
export const MAX_PRED_BATCH = 64;

/** What the worker should do next about its model's queue. */
export type DispatchStep =
  | { readonly kind: 'empty' }
  /** Drop the head task (it cannot meet its SLO), then ask again. */
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
  /** The worker's predicted t_inf table (index = batch size), from `predictionTable`. */
  readonly predicted: Float64Array;
  /**
   * Time a batch spends outside the GPU on its way to the worker and back (the running system's
   * measured transport; 0 in the simulator, whose batches start where they are decided).
   */
  readonly overheadMs?: number;
}

export function predictedMs(table: Float64Array, size: number): number {
  return size < MAX_PRED_BATCH ? table[size]! : table[MAX_PRED_BATCH - 1]! * (size / (MAX_PRED_BATCH - 1));
}

export function dispatchStep(x: DispatchInput): DispatchStep {
  if (x.queued === 0) return EMPTY;
  const size = Math.min(x.queued, x.batch);
  const t = predictedMs(x.predicted, size) + (x.overheadMs ?? 0);
  if (x.nowMs + t > x.headArrivalMs + x.sloMs) return DROP;
  const latestStart = x.headArrivalMs + x.sloMs - (1 + x.slack) * t;
  const timeoutAt = Number.isNaN(x.timeoutMs) ? Infinity : x.headArrivalMs + x.timeoutMs;
  if (x.queued >= x.batch || x.nowMs >= timeoutAt || x.nowMs >= latestStart) return { kind: 'start', size };
  return { kind: 'wait', untilMs: Math.min(timeoutAt, latestStart) };
}

const EMPTY: DispatchStep = { kind: 'empty' };
const DROP: DispatchStep = { kind: 'drop' };

/** A worker on a GPU as the task buffer sees it: its model (ServedModel index), batch and share. */
export interface PeerPlacement {
  readonly model: number;
  readonly batch: number;
  readonly pct: number;
}

const scratch = { models: [] as number[], batches: [] as number[], pcts: [] as number[], out: [] as number[] };

/**
 * Fills `out[b]` (b = 1..MAX_PRED_BATCH-1) with the predicted t_inf of `peers[self]` at batch b, with
 * the other serving workers of its GPU at their batch sizes (a replica of the same model does not
 * count as interference). On a timeshare GPU each model runs alone on the whole GPU.
 */
export function predictionTable(gpu: GpuInfo, peers: readonly PeerPlacement[], self: number, timeshare: boolean, out: Float64Array): void {
  const me = peers[self]!;
  const on = timeshare ? [me] : peers.filter((x, k) => k === self || x.model !== me.model);
  const n = on.length;
  const s = scratch;
  s.models.length = s.batches.length = s.pcts.length = s.out.length = n;
  const at = on.indexOf(me);
  on.forEach((x, k) => {
    s.models[k] = gpu.profileIndex[x.model]!;
    s.batches[k] = x.batch;
    s.pcts[k] = timeshare ? 100 : x.pct;
  });
  for (let b = 1; b < MAX_PRED_BATCH; b++) {
    s.batches[at] = b;
    gpu.model.predictGpu(s.models, s.batches, s.pcts, n, s.out);
    out[b] = s.out[at]!;
  }
}

// Clipper's adaptive batching (Crankshaw's thesis, chapter 3): additive increase, multiplicative
// decrease of a model's batch size, driven by the measured latency of its batches. It needs no
// profile, which is why a model without one is served with it until its profile is fitted
// (docs/online-profiling.md). Pure.
//
// Clipper adjusts after each batch. Here the batch size in force changes at the decision epoch, so an
// epoch's batches are taken together: if any was over the target, the size backs off by 10% (at least one,
// never under 1); otherwise each batch that was full (it ran at the size in force) adds `step`, at most
// doubling the size in one epoch and never beyond `maxBatch` (one step per epoch would take a model from 1 to
// 20 in 20 s). A batch that was not full says nothing about larger ones: at a low rate the size stays where
// the load has taken it.
//
// The target is half the SLO. A batch's tasks arrive while the batch before them runs, so a task waits up
// to one batch time for the worker to free, then its own batch runs: with both under half the SLO, the task
// is within it. Clipper's target is the SLO itself because its SLO bounds the batch's processing time; ours
// bounds the task's latency from arrival, queueing included.

export interface AimdSettings {
  /** Additive increase per full batch under the target. */
  readonly step: number;
  /** Multiplicative decrease when a batch is over the target (Clipper: 0.9). */
  readonly backoff: number;
  readonly maxBatch: number;
}

export const DEFAULT_AIMD: AimdSettings = { step: 1, backoff: 0.9, maxBatch: 32 };

/** The batch-time target for a model with this SLO (ms): see the file head. */
export function aimdTargetMs(sloMs: number): number {
  return sloMs / 2;
}

/** One finished batch: how many tasks it ran and its GPU time. */
export interface AimdBatch {
  readonly ran: number;
  readonly execMs: number;
}

/** The batch size after an epoch whose batches ran at `batch` (the size in force) took `batches` (file head). */
export function aimdEpoch(
  batch: number,
  batches: readonly AimdBatch[],
  targetMs: number,
  s: AimdSettings = DEFAULT_AIMD,
): number {
  let full = 0;
  for (const b of batches) {
    if (b.execMs > targetMs) return Math.max(1, Math.min(batch - 1, Math.floor(batch * s.backoff)));
    if (b.ran >= batch) full++;
  }
  return Math.min(s.maxBatch, batch + Math.min(batch, full * s.step));
}

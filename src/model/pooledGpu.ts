// What a pooled GPU does with several models' batches at once: the one rule the planner
// (src/policy/pooling/), the simulator (src/sim/gpus.ts), the scheduler's dispatch
// (scheduler/control.ts) and the simulated worker (agent/simWorker.ts) all follow. Pure. It lives with
// the latency model, not with the serving rules (src/serving/): it says how long a batch takes on a
// pooled GPU (`pooledMs`, `pooledBatchMs`), which the planner predicts with, the ground truth times by
// and the dispatch rule predicts a batch by from the batches running beside it
// (src/serving/prediction.ts, `WorkerTimes`); the dispatch side also reads `pooledConcurrency`.
//
// A pooled GPU (GpuMode `timeshare`) runs one worker per model, each at the whole GPU, and the
// scheduler sends them batches. What happens when two of them have a batch at once is a property of
// the GPU's configuration, which its agent reports (`AgentGpu.pooled`) and a scenario gives
// (`timeshareGpu`, per scenario or per GPU entry); it lands in `GpuInfo.pooled`, the one place every
// side reads it. docs/pooled-gpu.md gives the evidence for each mode.
//
// - `overlap`: batches of different models run at once and contend for the SMs and DRAM. This is what
//   an MPS server does with clients at 100% active threads, and what Triton does with its models'
//   CUDA streams in one process ("Concurrent Model Execution": requests for different models are
//   scheduled onto the GPU at once and the hardware scheduler works on both). n overlapping batches are
//   timed as n co-located workers at an even share (100/n %) each, by the latency model with its
//   interference (fitted on measured V100 co-location data) and the ground truth's DRAM contention,
//   bounded two ways, the smaller taken (a batch's time is fixed when it starts, so the rule cannot
//   know which case it is in): never slower than n times its solo time, what fair time-slicing
//   between the n busy contexts would give it if the others stayed busy throughout; and never slower
//   than in series, its solo time plus the others' solo times, if they end while it runs. On the
//   measured V100 pairs the even split is right (docs/pooled-gpu.md) and the
//   bounds only act where a profile predicts a split slower than taking turns; the series bound
//   credits a long batch overlapped by a stream of short ones with more than it gets
//   (docs/pooled-gpu.md gives both figures). The scheduler dispatches to a pooled overlap GPU as to
//   any other: each worker runs one batch at a time, nothing more.
// - `serial`: one batch at a time on the whole GPU. This is what separate processes without an MPS
//   server get: the driver time-slices their contexts. The scheduler then holds the GPU from a batch's
//   send to its answer, so no batch is ever preempted mid-way by another process's, and each runs at
//   its solo time. Switching contexts between batches, on an idle GPU, costs no preemption: the rule
//   charges none (NVIDIA publishes no figure; docs/pooled-gpu.md).
import type { LatencyModel } from './predictor.js';

export const POOLED_GPU_MODES = ['overlap', 'serial'] as const;
export type PooledGpuMode = (typeof POOLED_GPU_MODES)[number];

export const DEFAULT_POOLED_GPU_MODE: PooledGpuMode = 'overlap';

/**
 * How many batches may run at once on a pooled GPU: one when serial; when overlapping, one per worker (no further
 * limit).
 */
export function pooledConcurrency(mode: PooledGpuMode): number {
  return mode === 'serial' ? 1 : Infinity;
}

/** The share (%) each of `running` overlapping batches is timed at: an even split of the GPU. */
export function pooledSharePct(running: number): number {
  if (!(running >= 1) || !Number.isInteger(running))
    throw new RangeError(`running batches must be a positive integer, got ${running}`);
  return 100 / running;
}

/**
 * A pooled batch's latency-model time, from its ready to its end, when it finds `count - 1` batches
 * running, from its even-split time, its solo time and the series time (its solo time plus the
 * others' solo times): overlapping, the even split but never more than `count` times its solo time
 * (fair turns) nor the series time; serial, its solo time after the rest of the others, half their
 * time in the mean (it becomes ready at a time uniform over theirs).
 */
export function pooledMs(
  mode: PooledGpuMode,
  evenSplitMs: number,
  soloMs: number,
  count: number,
  seriesMs: number,
): number {
  return mode === 'serial' ? soloMs + (seriesMs - soloMs) / 2 : Math.min(evenSplitMs, count * soloMs, seriesMs);
}

const solo = { models: [0], batches: [0], pcts: [100], out: [0] };
/** A batch's latency-model time alone on the whole GPU (`profileModel`: its index in `lm`). */
export function soloBatchMs(lm: LatencyModel, profileModel: number, batch: number): number {
  solo.models[0] = profileModel;
  solo.batches[0] = batch;
  lm.predictGpu(solo.models, solo.batches, solo.pcts, 1, solo.out);
  return solo.out[0]!;
}

/**
 * The latency-model time of the batch at index 0 of (`models`, `batches`) (profile-model indices of
 * `lm`), started on a pooled GPU while the `count - 1` others run there; fills `pcts` with the shares
 * the ground truth times the configuration at (the even split: what the GPU's SMs are divided into).
 * One batch alone: its solo time, whatever the mode.
 */
export function pooledBatchMs(
  lm: LatencyModel,
  mode: PooledGpuMode,
  models: readonly number[],
  batches: readonly number[],
  count: number,
  pcts: number[],
  out: number[],
): number {
  const pct = pooledSharePct(count);
  for (let k = 0; k < count; k++) pcts[k] = pct;
  out.length = Math.max(out.length, count);
  lm.predictGpu(models, batches, pcts, count, out);
  if (count === 1) return out[0]!;
  const own = soloBatchMs(lm, models[0]!, batches[0]!);
  let series = own;
  for (let k = 1; k < count; k++) series += soloBatchMs(lm, models[k]!, batches[k]!);
  return pooledMs(mode, out[0]!, own, count, series);
}

/** Validates a mode named from outside (a flag, a config file); throws with the allowed values. */
export function parsePooledGpuMode(value: string, where: string): PooledGpuMode {
  if ((POOLED_GPU_MODES as readonly string[]).includes(value)) return value as PooledGpuMode;
  throw new RangeError(`${where}: must be ${POOLED_GPU_MODES.join(' or ')}, got '${value}'`);
}

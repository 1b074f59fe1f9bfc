// The predictions the dispatch rule (dispatch.ts) rests on: per worker, a table of its predicted
// GPU time t_inf at each batch size, given the other workers on its GPU, from the latency model. The
// simulator and the scheduler fill it when a GPU's placements change. Pure.
import { type CostPlan, planFactor } from '../model/costDistribution.js';
import type { GpuInfo } from '../policy/types.js';

/** Predicted batch times are tabulated for batches 1..MAX_PRED_BATCH-1; beyond, scaled linearly. */
export const MAX_PRED_BATCH = 64;

/** The predicted t_inf of a batch of `size` from a worker's table. */
export function predictedMs(table: Float64Array, size: number): number {
  return size < MAX_PRED_BATCH ? table[size]! : table[MAX_PRED_BATCH - 1]! * (size / (MAX_PRED_BATCH - 1));
}

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
 * count as interference). On a timeshare GPU each model runs alone on the whole GPU. A model the GPU's
 * profile lacks (profileIndex -1, an unprofiled model: docs/online-profiling.md) has no prediction: its
 * table is all 0, so the rule starts its batches by its placement's timeout, and it counts as no
 * interference to its neighbours. A model whose cost depends on the input and is batched against its tail
 * (`plan`, the served model's `cost.plan`) has each entry multiplied by its batch cost's quantile: the
 * rule then starts, sizes and drops its batches by the time a batch takes at that quantile (Orloj).
 */
export function predictionTable(
  gpu: GpuInfo,
  peers: readonly PeerPlacement[],
  self: number,
  timeshare: boolean,
  out: Float64Array,
  plan?: CostPlan,
): void {
  const me = peers[self]!;
  if ((gpu.profileIndex[me.model] ?? -1) < 0) {
    out.fill(0);
    return;
  }
  const known = (x: PeerPlacement) => (gpu.profileIndex[x.model] ?? -1) >= 0;
  const on = timeshare ? [me] : peers.filter((x, k) => k === self || (x.model !== me.model && known(x)));
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
    out[b] = plan ? s.out[at]! * planFactor(plan.latency, b) : s.out[at]!;
  }
}

// The predictions the dispatch rule (dispatch.ts) rests on: per worker, a table of its predicted
// GPU time t_inf at each batch size, given the other workers on its GPU, from the latency model, and on
// a pooled overlap GPU the batches running beside it when it is asked (`WorkerTimes`). The simulator
// and the scheduler fill the table when a GPU's placements change and the running batches as they
// start and end. Pure.
import { type CostPlan, planFactor } from '../model/costDistribution.js';
import { pooledBatchMs } from '../model/pooledGpu.js';
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

/**
 * The batches running now on one GPU, as a dispatch side sees them: each one's worker, model (the
 * cluster's index) and size. `version` changes with every batch that starts or ends, so what was
 * predicted for the set holds until then. The simulator fills it from its batches on the GPU; the
 * scheduler from its batches sent and not yet answered.
 */
export class RunningBatches {
  version = 0;
  readonly keys: unknown[] = [];
  readonly workers: unknown[] = [];
  readonly models: number[] = [];
  readonly batches: number[] = [];

  get size(): number {
    return this.keys.length;
  }

  /** A batch (`key`) of `batch` tasks of `model` starts on `worker`. */
  add(key: unknown, worker: unknown, model: number, batch: number): void {
    this.keys.push(key);
    this.workers.push(worker);
    this.models.push(model);
    this.batches.push(batch);
    this.version++;
  }

  /** The batch `key` ended (or was lost); nothing if it is not running. */
  remove(key: unknown): void {
    const k = this.keys.indexOf(key);
    if (k < 0) return;
    for (const xs of [this.keys, this.workers, this.models, this.batches] as unknown[][]) xs.splice(k, 1);
    this.version++;
  }
}

/** A worker's predicted t_inf by batch size, as the dispatch rule reads it. */
export interface BatchTimes {
  ms(size: number): number;
  /** The times follow the batches running on a pooled overlap GPU (`WorkerTimes`). */
  readonly followsRunning?: boolean;
}

/** Batch times from a table alone (index = batch size), as `predictionTable` fills it. */
export function tableTimes(table: Float64Array): BatchTimes {
  return { ms: (size) => predictedMs(table, size) };
}

/** Where a worker on a pooled `overlap` GPU reads what runs beside it. */
interface Beside {
  readonly gpu: GpuInfo;
  readonly running: RunningBatches;
  readonly worker: unknown;
  readonly model: number;
  readonly plan: CostPlan | undefined;
}

const pooled = { models: [] as number[], batches: [] as number[], pcts: [] as number[], out: [] as number[] };

/**
 * A worker's predicted batch times: its table from the placements on its GPU (`predictionTable`),
 * and on a pooled `overlap` GPU the batches running there when it is asked. Such a batch is timed
 * by the pooled rule the ground truth and a real GPU follow (src/model/pooledGpu.ts,
 * `pooledBatchMs`): up to n times its solo time beside n - 1 others. Only the sizes asked for are
 * computed, and kept until a batch starts or ends on the GPU. Replicas of its own model and models the
 * GPU's profile lacks count as no interference, as in the table.
 */
export class WorkerTimes implements BatchTimes {
  readonly table = new Float64Array(MAX_PRED_BATCH);
  private beside: Beside | null = null;
  private readonly memo = new Float64Array(MAX_PRED_BATCH);
  private memoVersion = -1;
  /** Nothing of another known model runs beside it at `memoVersion`: the table holds. */
  private alone = true;

  get followsRunning(): boolean {
    return this.beside !== null;
  }

  /** Follow the batches `running` on its pooled overlap GPU (null: the table alone). */
  follow(beside: Beside | null): void {
    this.beside = beside;
    this.memoVersion = -1;
  }

  ms(size: number): number {
    const b = this.beside;
    if (b === null) return predictedMs(this.table, size);
    if (this.memoVersion !== b.running.version) {
      this.memo.fill(NaN);
      this.memoVersion = b.running.version;
      this.alone = !runsBeside(b);
    }
    if (this.alone) return predictedMs(this.table, size);
    const at = Math.min(size, MAX_PRED_BATCH - 1);
    let ms = this.memo[at]!;
    if (Number.isNaN(ms)) ms = this.memo[at] = pooledPrediction(b, at);
    return size < MAX_PRED_BATCH ? ms : ms * (size / (MAX_PRED_BATCH - 1));
  }
}

/**
 * Fills `peers[self]`'s batch times on its GPU: its table from the placements (`predictionTable`) and, on
 * a pooled `overlap` GPU, the batches `running` there, which it follows (null: none followed, e.g. a
 * worker not yet serving).
 */
export function refreshTimes(
  gpu: GpuInfo,
  peers: readonly PeerPlacement[],
  self: number,
  timeshare: boolean,
  running: RunningBatches | null,
  times: WorkerTimes,
  plan?: CostPlan,
): void {
  predictionTable(gpu, peers, self, timeshare, times.table, plan);
  const worker = peers[self]!;
  const overlap = running !== null && timeshare && gpu.pooled === 'overlap';
  const known = (gpu.profileIndex[worker.model] ?? -1) >= 0;
  times.follow(overlap && known ? { gpu, running, worker, model: worker.model, plan } : null);
}

/** Another known model's batch runs on the GPU. */
function runsBeside(b: Beside): boolean {
  const r = b.running;
  for (let k = 0; k < r.models.length; k++) if (counts(b, k)) return true;
  return false;
}

function counts(b: Beside, k: number): boolean {
  const m = b.running.models[k]!;
  return b.running.workers[k] !== b.worker && m !== b.model && (b.gpu.profileIndex[m] ?? -1) >= 0;
}

function pooledPrediction(b: Beside, size: number): number {
  const s = pooled;
  s.models.length = s.batches.length = 0;
  s.models.push(b.gpu.profileIndex[b.model]!);
  s.batches.push(size);
  for (let k = 0; k < b.running.models.length; k++) {
    if (!counts(b, k)) continue;
    s.models.push(b.gpu.profileIndex[b.running.models[k]!]!);
    s.batches.push(b.running.batches[k]!);
  }
  const ms = pooledBatchMs(b.gpu.model, 'overlap', s.models, s.batches, s.models.length, s.pcts, s.out);
  return b.plan ? ms * planFactor(b.plan.latency, size) : ms;
}

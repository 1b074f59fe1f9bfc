// The pooling planner's per-cluster memo and scratch. A planner (inss holds one per policy) makes one
// `PoolingContext` for its cluster and passes it to every score, so the latency model's answers that the
// fixed point asks for again and again (solo times, overlap times, time sharing's batches) are computed
// once. Every memoised value is a pure function of the cluster, so a fresh context gives the same
// results, only slower. A score runs to its end without yielding, so no two ever share the scratch.
import { pooledMs, pooledSharePct } from '../../model/pooledGpu.js';
import { BDA_MAX_BATCH } from '../bda.js';
import { NumberMemo } from './numberMemo.js';
import { timeshareMaxBatch, timesharePlan } from '../policies/timeshare.js';
import type { ClusterInfo, Deployment, GpuInfo, Placement } from '../types.js';
import { predictOnGpu } from '../util.js';

/** Most batches a pooled-GPU server is assumed to overlap with at once (itself included). */
export const MAX_OVERLAP = 4;

/** Most overlap times memoised (4 MB by number, more by name): a long-running scheduler sees ever more batch mixes. */
const OVERLAP_MEMO_MAX = 100_000;

/** Time sharing's batch for a model on a GPU and its solo t_inf (ms) there. */
export interface PooledServer {
  readonly batch: number;
  readonly ms: number;
}

/**
 * Scratch for the pooled fixed point (score.ts), grown to the widest pooled GPU and the most
 * placements seen: busy fractions, the busiest-first order, the count of busy neighbours, and per
 * placement its last slowdown step and the overlap times of its busiest neighbours' prefixes (with
 * the signature each was computed for).
 */
export interface PassScratch {
  readonly rho: Float64Array;
  readonly byBusy: Int32Array;
  readonly count: Float64Array;
  readonly lastStep: Float64Array;
  readonly prefixSig: Int32Array;
  readonly prefixMs: Float64Array;
}

export class PoolingContext {
  /** Per GPU: the first GPU of its profile and pooled mode (they share one latency model, so one memo). */
  private readonly kind: Int32Array;
  /** soloMs by (GPU kind, model, batch 1..BDA_MAX_BATCH); NaN: not computed yet. */
  private readonly solo: Float64Array;
  /** Entries of `solo` per GPU: models x (BDA_MAX_BATCH + 1). */
  private readonly perGpu: number;
  /**
   * overlapMs by a numeric key of (GPU kind, models, batches), or by a string one on large clusters
   * (`overlapByName`); each cleared when it reaches OVERLAP_MEMO_MAX entries (the batches seen drift with
   * the load).
   */
  private readonly overlap = new NumberMemo(OVERLAP_MEMO_MAX);
  private readonly overlapByName = new Map<string, number>();
  /** Whether overlap keys fit in a number exactly (up to 64 GPUs and 64 models). */
  private readonly numericKeys: boolean;
  /** pooledServer by GPU index x 4096 + model. */
  private readonly servers = new Map<number, PooledServer>();
  private timeshare: Deployment | undefined;
  private scratch: PassScratch = {
    rho: new Float64Array(0),
    byBusy: new Int32Array(0),
    count: new Float64Array(1),
    lastStep: new Float64Array(0),
    prefixSig: new Int32Array(0),
    prefixMs: new Float64Array(0),
  };
  /** predictOne's inputs for batchOneMs and overlapMs, reused (predictOne keeps none). */
  private readonly batchOne = { models: [] as number[], pcts: [] as number[] };

  /** The members of an overlap for overlapMs: model and (whole) batch of each, the first the one timed. */
  readonly overlapMembers = { models: new Int32Array(MAX_OVERLAP), batches: new Int32Array(MAX_OVERLAP) };

  constructor(readonly cluster: ClusterInfo) {
    this.perGpu = cluster.models.length * (BDA_MAX_BATCH + 1);
    this.kind = Int32Array.from(cluster.gpus, (g) =>
      cluster.gpus.findIndex((x) => x.profileId === g.profileId && x.pooled === g.pooled),
    );
    this.solo = new Float64Array(cluster.gpus.length * this.perGpu).fill(NaN);
    this.numericKeys = cluster.gpus.length <= 64 && cluster.models.length <= 64;
  }

  /** Time sharing's batch for a model on a GPU and its solo t_inf there. */
  pooledServer(gpu: GpuInfo, model: number): PooledServer {
    const key = gpu.index * 4096 + model;
    let s = this.servers.get(key);
    if (!s) {
      const batch = timeshareMaxBatch(gpu, model, this.cluster.models[model]!.sloMs);
      s = { batch, ms: predictOnGpu(gpu, [{ model, batch, pct: 100 }])[0]! };
      this.servers.set(key, s);
    }
    return s;
  }

  /** timesharePlan (static: it depends on the cluster only), computed once. */
  timeshareDeployment(): Deployment {
    return (this.timeshare ??= timesharePlan(this.cluster));
  }

  /** t_inf (ms) of a model alone at the whole GPU at a (whole) batch. */
  soloMs(gpu: GpuInfo, model: number, batch: number): number {
    const key = this.kind[gpu.index]! * this.perGpu + model * (BDA_MAX_BATCH + 1) + batch;
    let ms = this.solo[key]!;
    if (Number.isNaN(ms)) this.solo[key] = ms = predictOnGpu(gpu, [{ model, batch, pct: 100 }])[0]!;
    return ms;
  }

  /** soloMs at a fractional batch (a mean batch): linear between the two whole batches around it. */
  soloMsAt(gpu: GpuInfo, model: number, batch: number): number {
    const lo = Math.max(1, Math.floor(batch));
    const hi = Math.min(BDA_MAX_BATCH, lo + 1);
    const t = this.soloMs(gpu, model, lo);
    return hi === lo ? t : t + (batch - lo) * (this.soloMs(gpu, model, hi) - t);
  }

  /**
   * t_inf (ms) of the first `count` of overlapMembers (the first of them timed) running at once on a
   * pooled GPU, by the GPU's mode (src/model/pooledGpu.ts, the simulator's and the live system's
   * rule): overlapping, an even split of the GPU with the latency model's interference, never more
   * than the smaller of its solo time times `count` (fair turns) and the series; serial, its solo
   * time after the rest of the others' (half their time in the mean).
   */
  overlapMs(gpu: GpuInfo, count: number): number {
    const { models, batches } = this.overlapMembers;
    let key = this.kind[gpu.index]!;
    let name = '';
    if (this.numericKeys) {
      for (let k = 0; k < count; k++) key = key * this.perGpu + models[k]! * (BDA_MAX_BATCH + 1) + batches[k]!;
      key = key * (MAX_OVERLAP + 1) + count;
    } else {
      name = `${key}|${models.subarray(0, count).join(',')}|${batches.subarray(0, count).join(',')}`;
    }
    let ms = this.numericKeys ? this.overlap.get(key) : this.overlapByName.get(name);
    if (ms === undefined) {
      const pct = pooledSharePct(count);
      const { models: indices, pcts } = this.batchOne;
      let series = 0;
      for (let k = 0; k < count; k++) {
        indices[k] = gpu.profileIndex[models[k]!]!;
        pcts[k] = pct;
        series += this.soloMs(gpu, models[k]!, batches[k]!);
      }
      ms = pooledMs(
        gpu.pooled,
        // predictOnGpu's t_inf of the first member, to the last bit (the others' batches do not enter)
        gpu.pooled === 'serial' ? series : gpu.model.predictOne(indices, pcts, count, 0, batches[0]!),
        this.soloMs(gpu, models[0]!, batches[0]!),
        count,
        series,
      );
      if (this.numericKeys) this.overlap.set(key, ms);
      else {
        if (this.overlapByName.size >= OVERLAP_MEMO_MAX) this.overlapByName.clear();
        this.overlapByName.set(name, ms);
      }
    }
    return ms;
  }

  /** t_inf (ms) at batch 1 of the `k`-th of the placements `on` (indices into `ps`, all on `gpu`), beside the rest. */
  batchOneMs(gpu: GpuInfo, ps: readonly Placement[], on: readonly number[], k: number, interference: boolean): number {
    const { models, pcts } = this.batchOne;
    for (let j = 0; j < on.length; j++) {
      const p = ps[on[j]!]!;
      models[j] = gpu.profileIndex[p.model]!;
      pcts[j] = p.pct;
    }
    return gpu.model.predictOne(models, pcts, on.length, k, 1, interference);
  }

  /** The fixed point's scratch for `n` placements, the widest pooled GPU holding `widest`: reset, grown as needed. */
  passScratch(widest: number, n: number): PassScratch {
    let s = this.scratch;
    if (s.rho.length < widest || s.lastStep.length < n) {
      const w = Math.max(widest, s.rho.length);
      const m = Math.max(n, s.lastStep.length);
      this.scratch = s = {
        rho: new Float64Array(w),
        byBusy: new Int32Array(w),
        count: new Float64Array(w + 1),
        lastStep: new Float64Array(m),
        prefixSig: new Int32Array(m * MAX_OVERLAP),
        prefixMs: new Float64Array(m * MAX_OVERLAP),
      };
    }
    s.lastStep.fill(0, 0, n);
    s.prefixSig.fill(-1, 0, n * MAX_OVERLAP);
    return s;
  }
}

/** A caller's context, or a fresh one for a cluster (nothing memoised beyond the call). */
export function poolingContext(pooling: PoolingContext | ClusterInfo): PoolingContext {
  return pooling instanceof PoolingContext ? pooling : new PoolingContext(pooling);
}

// A deployment's servers as the pooling score sees them, one per placement (the deployment's order):
// each pooled server at time sharing's batch cap alone at the whole GPU, each MPS partition at BDA's
// batch beside its co-located partitions, and each model's rate split over its servers in proportion to
// their rates (what one shared queue with free workers pulling from it does).
import { planFactor } from '../../model/costDistribution.js';
import { bda, BDA_MAX_BATCH, bdaInput } from '../bda.js';
import type { ClusterInfo, Deployment, GpuInfo, GpuMode, Placement } from '../types.js';
import { memoryOnGpu } from '../util.js';
import type { PoolingContext } from './context.js';

/** Per placement of one deployment (its order), the state the score's steps fill in. */
export interface Servers {
  readonly ps: readonly Placement[];
  readonly modes: readonly GpuMode[];
  /** Per GPU: the indices of its placements. */
  readonly byGpu: readonly number[][];
  /** Per model: the indices of its placements (its pool of servers). */
  readonly byModel: readonly number[][];
  /** Batch cap: BDA's on MPS GPUs, time sharing's on pooled ones. */
  readonly batch: number[];
  /** t_inf (ms) at `batch`: an MPS partition's beside its co-located partitions, a pooled server's alone. */
  readonly tMs: number[];
  /** Tasks/s of the server at its batch cap (mps: with its co-located partitions). */
  readonly mu: number[];
  /** Its share of its model's rate (tasks/s). */
  lam: number[];
  /** Tasks/s with the overlap slowdown (pooled servers; an MPS partition's is `mu`). */
  readonly effMu: number[];
  /** Expected batch time (ms) at the mean batch, with the overlap slowdown. */
  readonly effMs: number[];
  /** Mean batch at the planned rates (pooled servers: gatedMeanBatch; MPS partitions: the cap). */
  readonly fill: number[];
  /** Overlap slowdown of each pooled server (1 on MPS GPUs). */
  readonly slow: number[];
}

/** Each GPU's mode in `d` (absent: mps). */
export const modesOf = (cluster: ClusterInfo, d: Deployment): GpuMode[] =>
  cluster.gpus.map((g) => d.gpuModes?.[g.index] ?? 'mps');

/** The placements of `ps` per GPU and per model: null when a placement names a GPU or model that is not there. */
function indexPlacements(
  cluster: ClusterInfo,
  ps: readonly Placement[],
): { byGpu: number[][]; byModel: number[][] } | null {
  const byGpu: number[][] = cluster.gpus.map(() => []);
  const byModel: number[][] = cluster.models.map(() => []);
  for (let i = 0; i < ps.length; i++) {
    const q = ps[i]!;
    if (!byGpu[q.gpu] || !byModel[q.model]) return null;
    byGpu[q.gpu]!.push(i);
    byModel[q.model]!.push(i);
  }
  return { byGpu, byModel };
}

/** Each model's rate split over the servers of `ps` in proportion to `rates` (one per placement). */
export function splitRates(
  ps: readonly Placement[],
  nModels: number,
  ratePerS: readonly number[],
  rates: readonly number[],
): number[] {
  const total = new Array<number>(nModels).fill(0);
  for (let i = 0; i < ps.length; i++) total[ps[i]!.model]! += rates[i]!;
  return ps.map((p, i) => (total[p.model]! > 0 ? (ratePerS[p.model]! * rates[i]!) / total[p.model]! : 0));
}

/**
 * The servers of `ps` at the planned rates, before any overlap: pooled ones at time sharing's batch
 * cap; MPS partitions' batch-1 rates (with interference) decide a first split, then BDA sets their
 * batches GPU by GPU (mpsGpu) and the split is made again. Null when a placement names a GPU or model
 * that is not there or that the GPU's profile lacks.
 */
export function buildServers(
  ctx: PoolingContext,
  ps: readonly Placement[],
  modes: readonly GpuMode[],
  ratePerS: readonly number[],
  interference: boolean,
  sloFraction: number,
): Servers | null {
  const cluster = ctx.cluster;
  const index = indexPlacements(cluster, ps);
  if (!index) return null;
  const { byGpu, byModel } = index;
  const n = ps.length;
  const nModels = cluster.models.length;
  const batch = new Array<number>(n).fill(1);
  const tMs = new Array<number>(n).fill(NaN);
  const mu = new Array<number>(n).fill(0);
  for (let i = 0; i < ps.length; i++) {
    const p = ps[i]!;
    const gpu = cluster.gpus[p.gpu];
    if (!gpu || (gpu.profileIndex[p.model] ?? -1) < 0) return null;
    if (modes[p.gpu] === 'timeshare') {
      const server = ctx.pooledServer(gpu, p.model);
      batch[i] = server.batch;
      tMs[i] = server.ms;
      mu[i] = (1000 * server.batch) / server.ms;
    }
  }
  for (const g of cluster.gpus)
    if (modes[g.index] === 'timeshare' && g.pooled === 'serial')
      capSerialBlocking(ctx, g, ps, byGpu[g.index]!, batch, tMs, mu, sloFraction);
  const mpsGpus: number[] = [];
  for (const g of cluster.gpus) {
    if (modes[g.index] === 'timeshare') continue;
    const on = byGpu[g.index]!;
    if (on.length === 0) continue;
    mpsGpus.push(g.index);
    for (let k = 0; k < on.length; k++) mu[on[k]!] = 1000 / ctx.batchOneMs(g, ps, on, k, interference);
  }
  let lam = splitRates(ps, nModels, ratePerS, mu);
  if (mpsGpus.length > 0) {
    for (const gi of mpsGpus) {
      const on = byGpu[gi]!;
      const r = mpsGpu(
        cluster,
        cluster.gpus[gi]!,
        on.map((i) => ps[i]!),
        on.map((i) => lam[i]!),
        interference,
        sloFraction,
      );
      on.forEach((i, k) => {
        batch[i] = r.batches[k]!;
        tMs[i] = r.tInfMs[k]!;
        mu[i] = (1000 * batch[i]) / tMs[i];
      });
    }
    lam = splitRates(ps, nModels, ratePerS, mu);
  }
  return {
    ps,
    modes,
    byGpu,
    byModel,
    batch,
    tMs,
    mu,
    lam,
    effMu: [...mu],
    effMs: [...tMs],
    fill: [...batch],
    slow: new Array<number>(n).fill(1),
  };
}

/**
 * One MPS GPU's batches and t_inf (ms) for its partitions (in the order given) carrying `rates`:
 * BDA's, or where BDA finds none, the largest batch whose worst task (one batch waiting, then its
 * own) still meets the SLO; the queue then says what it misses. BDA and that fallback look only at
 * the GPU's own partitions.
 */
function mpsGpu(
  cluster: ClusterInfo,
  g: GpuInfo,
  on: readonly Placement[],
  rates: readonly number[],
  interference: boolean,
  sloFraction: number,
): { batches: number[]; tInfMs: number[] } {
  const r = bda(
    cluster.gpus,
    on.map((p, k) => bdaInput(cluster, p, rates[k]!)),
    { interference, sloFraction },
  );
  const batches = [...r.batches];
  const tInfMs = [...r.tInfMs];
  // A partition's t_inf does not depend on the others' batches (interference depends on shares):
  // predictOne, predictOnGpu's number for the one partition, to the last bit.
  const models = on.map((q) => g.profileIndex[q.model]!);
  const pcts = on.map((q) => q.pct);
  on.forEach((p, k) => {
    if (r.feasible[k]) return;
    // Partitions after this one count at batch 1 here, as BDA's memory check (4a) counts them.
    const peers = on.map((q, j) => ({ ...q, batch: j <= k ? batches[j]! : 1 }));
    const budget = cluster.models[p.model]!.sloMs * sloFraction;
    const plan = cluster.models[p.model]!.cost?.plan;
    for (let b = BDA_MAX_BATCH; b > batches[k]!; b--) {
      const t = g.model.predictOne(models, pcts, on.length, k, b, interference);
      if (2 * t * planFactor(plan?.latency, b) > budget) continue;
      peers[k] = { ...peers[k]!, batch: b };
      if (memoryOnGpu(g, peers) <= g.memMb) {
        batches[k] = b;
        tInfMs[k] = t * planFactor(plan?.throughput, b);
        break;
      }
    }
  });
  return { batches, tInfMs };
}

/**
 * On a serial pooled GPU a batch, once started, holds the GPU to its end: a task of another model that
 * becomes ready meanwhile waits for it. So each model's batch cap there is also bounded by the slack of
 * every other model on the GPU (its planned budget, SLO x `sloFraction`, less its own batch of one):
 * the largest batch whose solo time fits the tightest such slack, and never below one (where even a
 * batch of one blocks too long, the score's serial turn counts the misses). Time sharing's cap alone
 * (2 t_inf <= own SLO) lets a 400 ms model run 100 ms batches beside a 25 ms one. Sets `batch`, `tMs`
 * and `mu` of the GPU's placements `on`.
 */
function capSerialBlocking(
  ctx: PoolingContext,
  g: GpuInfo,
  ps: readonly Placement[],
  on: readonly number[],
  batch: number[],
  tMs: number[],
  mu: number[],
  sloFraction: number,
): void {
  for (const i of on) {
    let slackMs = Infinity;
    for (const j of on) {
      if (ps[j]!.model === ps[i]!.model) continue;
      const budget = ctx.cluster.models[ps[j]!.model]!.sloMs * sloFraction;
      slackMs = Math.min(slackMs, budget - ctx.soloMs(g, ps[j]!.model, 1));
    }
    let b = batch[i]!;
    while (b > 1 && ctx.soloMs(g, ps[i]!.model, b) > slackMs) b--;
    if (b === batch[i]) continue;
    const t = ctx.soloMs(g, ps[i]!.model, b);
    batch[i] = b;
    tMs[i] = t;
    mu[i] = (1000 * b) / t;
  }
}

// Decomposition of a large cluster into independent pools (docs/inss.md, "Large clusters"): the
// planner's cost grows faster than linearly in GPUs and models (every candidate plan is scored over the
// whole cluster), so past POOL_MAX_GPUS GPUs or POOL_MAX_MODELS models the cluster is split into pools of
// GPUs and models, each planned on its own as a cluster of that size is, and the plans are merged. Pure:
// the split is a function of the cluster and the models' demand.
import { soloBatchMs } from '../model/pooledGpu.js';
import type { BatchRecord, ClusterInfo, Deployment, GpuMode, Observation, Placement } from './types.js';

/** The largest pool planned as one: the size whose decisions are measured within 50 ms (docs/benchmarks.md). */
export const POOL_MAX_GPUS = 32;
export const POOL_MAX_MODELS = 32;
/** The batch a model's demand is counted at. */
const DEMAND_BATCH = 8;

/** One pool: cluster GPU indices and served-model indices, each ascending. */
export interface ClusterPool {
  readonly gpus: readonly number[];
  readonly models: readonly number[];
}

/**
 * How many pools a cluster is split into: 1 (planned whole) up to POOL_MAX_GPUS GPUs and POOL_MAX_MODELS models,
 * and where some GPU lacks a served model's profile (a model only some GPU types can run, or one not profiled
 * yet): the split deals models to pools without regard to which GPUs can hold them.
 */
export function poolCount(cluster: ClusterInfo): number {
  if (cluster.gpus.some((g) => g.profileIndex.some((k) => k < 0))) return 1;
  const k = Math.max(
    Math.ceil(cluster.gpus.length / POOL_MAX_GPUS),
    Math.ceil(cluster.models.length / POOL_MAX_MODELS),
  );
  // Every pool needs a GPU.
  return Math.max(1, Math.min(k, cluster.gpus.length));
}

/**
 * Each model's demand at `rates`: the GPUs' time its tasks take at batch 8 alone on a GPU (GPU-seconds per
 * second), the mean over the GPUs that hold its profile; a model no GPU profiles counts as the mean of the
 * others. A floor of 1% of the mean keeps an idle model from weighing nothing.
 */
export function modelDemand(cluster: ClusterInfo, rates: readonly number[]): number[] {
  const byType = new Map<string, (typeof cluster.gpus)[number]>();
  for (const g of cluster.gpus) if (!byType.has(g.profileId)) byType.set(g.profileId, g);
  const raw = cluster.models.map((m, i) => {
    let sum = 0;
    let n = 0;
    for (const g of byType.values()) {
      const k = g.profileIndex[m.index]!;
      if (k < 0) continue;
      sum += soloBatchMs(g.model, k, DEMAND_BATCH);
      n++;
    }
    const rate = Math.max(0, rates[i] ?? 0);
    return n === 0 ? NaN : (rate * sum) / n / DEMAND_BATCH / 1000;
  });
  const known = raw.filter((d) => Number.isFinite(d));
  const mean = known.length > 0 ? known.reduce((a, b) => a + b, 0) / known.length : 0;
  const floor = mean > 0 ? mean * 0.01 : 1;
  return raw.map((d) => Math.max(Number.isFinite(d) ? d : mean, floor));
}

/**
 * The pools: models dealt largest demand first to the pool with the least demand among those with room
 * (at most ceil(M / K) models each), so the pools' demands are about equal; GPUs dealt in an order that
 * alternates their types, each pool taking a run of them in proportion to its demand (largest remainder,
 * at least one GPU and at least a quarter of its even share of the GPUs per model), so each pool has the
 * cluster's mix of types. Covers every GPU and every model exactly once. One pool: the whole cluster.
 */
export function decomposeCluster(cluster: ClusterInfo, demand: readonly number[]): ClusterPool[] {
  const nG = cluster.gpus.length;
  const nM = cluster.models.length;
  const k = poolCount(cluster);
  if (k === 1) return [{ gpus: cluster.gpus.map((g) => g.index), models: cluster.models.map((m) => m.index) }];
  const cap = Math.ceil(nM / k);
  const members: number[][] = Array.from({ length: k }, () => []);
  const load = new Array<number>(k).fill(0);
  const order = cluster.models.map((m) => m.index).sort((a, b) => demand[b]! - demand[a]! || a - b);
  for (const m of order) {
    let best = -1;
    for (let p = 0; p < k; p++) if (members[p]!.length < cap && (best < 0 || load[p]! < load[best]! - 1e-12)) best = p;
    members[best]!.push(m);
    load[best]! += demand[m]!;
  }
  const total = load.reduce((a, b) => a + b, 0);
  const floors = members.map((ms) => Math.max(1, Math.min(Math.floor(nG / k), Math.ceil((ms.length * nG) / nM / 4))));
  const counts = allot(
    nG,
    load.map((d) => d / total),
    floors,
  );
  // GPUs in an order that alternates their types (round-robin over the types in order of first appearance).
  const groups = new Map<string, number[]>();
  for (const g of cluster.gpus) {
    const list = groups.get(g.profileId) ?? [];
    list.push(g.index);
    groups.set(g.profileId, list);
  }
  const dealt: number[] = [];
  const lists = [...groups.values()];
  for (let i = 0; dealt.length < nG; i++) for (const l of lists) if (i < l.length) dealt.push(l[i]!);
  let at = 0;
  return members.map((ms, p) => {
    const gpus = dealt.slice(at, at + counts[p]!).sort((a, b) => a - b);
    at += counts[p]!;
    return { gpus, models: ms.sort((a, b) => a - b) };
  });
}

/** `n` items split in proportion to `shares` (largest remainder), each at least its floor. */
function allot(n: number, shares: readonly number[], floors: readonly number[]): number[] {
  const spare = n - floors.reduce((a, b) => a + b, 0);
  const exact = shares.map((s) => s * spare);
  const out = exact.map((e, i) => floors[i]! + Math.floor(e));
  let left = n - out.reduce((a, b) => a + b, 0);
  const byRemainder = exact.map((e, i) => [e - Math.floor(e), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (let j = 0; left > 0; j = (j + 1) % out.length, left--) out[byRemainder[j]![1]]!++;
  return out;
}

/** A pool as a cluster of its own: its GPUs and models renumbered from 0 in ascending order. */
export function poolCluster(cluster: ClusterInfo, pool: ClusterPool): ClusterInfo {
  return {
    gpus: pool.gpus.map((g, j) => {
      const gpu = cluster.gpus[g]!;
      return { ...gpu, index: j, profileIndex: pool.models.map((m) => gpu.profileIndex[m]!) };
    }),
    models: pool.models.map((m, j) => ({ ...cluster.models[m]!, index: j })),
  };
}

/** Maps between a pool's numbering and the cluster's. */
export class PoolView {
  private readonly gpuLocal: Map<number, number>;
  private readonly modelLocal: Map<number, number>;

  constructor(readonly pool: ClusterPool) {
    this.gpuLocal = new Map(pool.gpus.map((g, j) => [g, j]));
    this.modelLocal = new Map(pool.models.map((m, j) => [m, j]));
  }

  /** The observation as the pool's planner sees it: its models' figures, its placements in force. */
  observe(obs: Observation): Observation {
    // An array the serving side left empty stays empty.
    const pick = <T>(xs: readonly T[]): T[] => (xs.length === 0 ? [] : this.pool.models.map((m) => xs[m]!));
    const e = obs.lastEpoch;
    const batches = e.batches ? this.batches(e.batches) : undefined;
    return {
      nowMs: obs.nowMs,
      ratePerS: pick(obs.ratePerS),
      ...(obs.meanRatePerS ? { meanRatePerS: pick(obs.meanRatePerS) } : {}),
      ...(obs.arrivalCv2 ? { arrivalCv2: pick(obs.arrivalCv2) } : {}),
      queued: pick(obs.queued),
      lastEpoch: {
        served: pick(e.served),
        violated: pick(e.violated),
        dropped: pick(e.dropped),
        meanExecMs: pick(e.meanExecMs),
        meanLatencyMs: pick(e.meanLatencyMs),
        ...(batches ? { batches } : {}),
      },
      current: this.local(obs.current),
    };
  }

  /** The placements of `d` with both the model and the GPU in this pool, renumbered. */
  local(d: Deployment): Deployment {
    const placements: Placement[] = [];
    for (const p of d.placements) {
      const m = this.modelLocal.get(p.model);
      const g = this.gpuLocal.get(p.gpu);
      if (m !== undefined && g !== undefined) placements.push({ ...p, model: m, gpu: g });
    }
    return d.gpuModes ? { placements, gpuModes: this.pool.gpus.map((g) => d.gpuModes![g] ?? 'mps') } : { placements };
  }

  private batches(records: readonly BatchRecord[]): BatchRecord[] {
    const out: BatchRecord[] = [];
    for (const r of records) {
      const m = this.modelLocal.get(r.model);
      const g = this.gpuLocal.get(r.gpu);
      if (m === undefined || g === undefined) continue;
      const beside = r.beside.flatMap((b) => {
        const bm = this.modelLocal.get(b.model);
        return bm === undefined ? [] : [{ ...b, model: bm }];
      });
      out.push({ ...r, model: m, gpu: g, beside });
    }
    return out;
  }
}

/** The pools' deployments (each in its pool's numbering) as one deployment of the cluster. */
export function mergeDeployments(cluster: ClusterInfo, pools: readonly ClusterPool[], plans: readonly Deployment[]) {
  const placements: Placement[] = [];
  const modes: GpuMode[] = cluster.gpus.map(() => 'mps');
  let anyMode = false;
  pools.forEach((pool, k) => {
    const d = plans[k]!;
    for (const p of d.placements) placements.push({ ...p, model: pool.models[p.model]!, gpu: pool.gpus[p.gpu]! });
    if (d.gpuModes) {
      anyMode = true;
      d.gpuModes.forEach((mode, j) => (modes[pool.gpus[j]!] = mode));
    }
  });
  const out: Deployment = anyMode ? { placements, gpuModes: modes } : { placements };
  return out;
}

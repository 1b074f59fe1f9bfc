// Candidate deployments for the pooling planner (search.ts) and their neighbours: time sharing's own
// deployment (so the planner is never worse than time sharing by its own score), MPS partitions to start
// from when no trained actor fits (greedyPartition, balancedPartition), each MPS plan's assignment pooled
// (pooledAssignment), hybrids of each (the first k GPUs pooled over every model that fits, the rest
// keeping their partitions), and the local search's moves (add or drop a model on a pooled GPU, move an
// MPS unit, pool a partitioned GPU, partition a pooled one).
import type { ClusterInfo, Deployment, GpuInfo, GpuMode, Placement } from '../types.js';
import { type PoolingContext, poolingContext } from './context.js';
import type { PlanScore } from './score.js';
import { modesOf } from './servers.js';

const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;

/** Models that fit on a pooled GPU at time sharing's batches, in the order given, while memory lasts. */
function fillPooled(ctx: PoolingContext, gpu: GpuInfo, models: readonly number[]): number[] {
  let used = 0;
  const out: number[] = [];
  for (const m of models) {
    if ((gpu.profileIndex[m] ?? -1) < 0 || out.includes(m)) continue;
    const mb = gpu.model.memoryMb(gpu.profileIndex[m]!, ctx.pooledServer(gpu, m).batch);
    if (used + mb > gpu.memMb + 1e-6) continue;
    used += mb;
    out.push(m);
  }
  return out;
}

/** Partition shares for `models` on an MPS GPU in proportion to `demand`, multiples of the unit, at least one each. */
function partitionShares(gpu: GpuInfo, models: readonly number[], demand: readonly number[]): number[] | null {
  const unit = gpu.mpsUnitPct;
  const units = Math.floor(100 / unit + 1e-9);
  if (models.length === 0 || models.length > units) return null;
  const total = models.reduce((s, m) => s + Math.max(demand[m]!, 1e-9), 0);
  const got = models.map((m) => Math.max(1, Math.floor((units * Math.max(demand[m]!, 1e-9)) / total)));
  let left = units - got.reduce((s, u) => s + u, 0);
  for (let k = 0; left > 0; k = (k + 1) % models.length, left--) got[k]!++;
  while (got.reduce((s, u) => s + u, 0) > units) {
    const k = got.indexOf(Math.max(...got));
    got[k]!--;
  }
  return got.map((u) => round6(Math.min(100, u * unit)));
}

/** A model's demand in GPU-seconds per second on a GPU at the whole GPU (time sharing's batch). */
function demandOn(ctx: PoolingContext, gpu: GpuInfo, ratePerS: readonly number[]): number[] {
  return ctx.cluster.models.map((m) =>
    (gpu.profileIndex[m.index] ?? -1) < 0
      ? 0
      : (ratePerS[m.index]! * ctx.pooledServer(gpu, m.index).ms) / (1000 * ctx.pooledServer(gpu, m.index).batch),
  );
}

/**
 * A greedy MPS partition to start the model-based planner from when no trained actor fits: models by
 * demand, largest first, each on the GPU with the most capacity left that holds it; then each GPU's
 * units split in proportion to its models' demand. One placement per model.
 */
export function greedyPartition(pooling: PoolingContext | ClusterInfo, ratePerS: readonly number[]): Placement[] {
  const ctx = poolingContext(pooling);
  const cluster = ctx.cluster;
  const gpus = cluster.gpus;
  const left = gpus.map(() => 1);
  const mem = gpus.map(() => 0);
  const on: number[][] = gpus.map(() => []);
  const demand = gpus.map((g) => demandOn(ctx, g, ratePerS));
  const order = cluster.models
    .map((m) => m.index)
    .sort((a, b) => Math.max(...demand.map((d) => d[b]!)) - Math.max(...demand.map((d) => d[a]!)) || a - b);
  for (const m of order) {
    let best = -1;
    for (const g of gpus) {
      const idx = g.profileIndex[m] ?? -1;
      if (
        idx < 0 ||
        mem[g.index]! + g.model.memoryMb(idx, 1) > g.memMb ||
        (on[g.index]!.length + 1) * g.mpsUnitPct > 100 + 1e-9
      )
        continue;
      if (best < 0 || left[g.index]! - demand[g.index]![m]! > left[best]! - demand[best]![m]! + 1e-12) best = g.index;
    }
    if (best < 0) continue;
    on[best]!.push(m);
    left[best]! -= demand[best]![m]!;
    mem[best]! += gpus[best]!.model.memoryMb(gpus[best]!.profileIndex[m]!, 1);
  }
  const out: Placement[] = [];
  for (const g of gpus) {
    const shares = partitionShares(g, on[g.index]!, demand[g.index]!);
    if (!shares) continue;
    on[g.index]!.forEach((m, k) => out.push({ model: m, gpu: g.index, pct: shares[k]!, batch: 1 }));
  }
  return out;
}

/**
 * An MPS plan that uses every GPU: each model gets GPUs in proportion to its demand (GPU-seconds per
 * second at the whole GPU, averaged over the GPUs that hold it), so every model runs at about the
 * cluster's mean load: whole GPUs for the whole part (replicas, one queue), and the fractional parts
 * packed onto the GPUs left, each onto the GPU with the most room (split over two where it does not
 * fit), as MPS partitions in proportion to the parts. greedyPartition gives each model one
 * partition only, so on a cluster with more GPUs than models it leaves GPUs idle and a model whose
 * demand exceeds one GPU short. A part under half an MPS unit is left to the model's whole GPUs.
 */
export function balancedPartition(pooling: PoolingContext | ClusterInfo, ratePerS: readonly number[]): Placement[] {
  const ctx = poolingContext(pooling);
  const cluster = ctx.cluster;
  const gpus = cluster.gpus;
  const demandByGpu = gpus.map((g) => demandOn(ctx, g, ratePerS));
  const holds = (g: GpuInfo, m: number) => (g.profileIndex[m] ?? -1) >= 0;
  const demand = cluster.models.map((m) => {
    const on = gpus.filter((g) => holds(g, m.index));
    return on.length === 0 ? 0 : on.reduce((s, g) => s + demandByGpu[g.index]![m.index]!, 0) / on.length;
  });
  const total = demand.reduce((s, d) => s + d, 0);
  const out: Placement[] = [];
  if (!(total > 0)) return out;
  const level = total / gpus.length; // each GPU's load when every model runs at the same utilisation
  const free = gpus.map(() => 1); // fraction of each GPU not yet given
  const mem = gpus.map(() => 0);
  const parts: { model: number; gpu: number; size: number }[] = [];
  const fitsMem = (g: GpuInfo, m: number) => mem[g.index]! + g.model.memoryMb(g.profileIndex[m]!, 1) <= g.memMb + 1e-6;
  const take = (g: GpuInfo, m: number, size: number) => {
    parts.push({ model: m, gpu: g.index, size });
    free[g.index]! -= size;
    mem[g.index]! += g.model.memoryMb(g.profileIndex[m]!, 1);
  };
  const order = cluster.models
    .map((m) => m.index)
    .filter((m) => demand[m]! > 0)
    .sort((a, b) => demand[b]! - demand[a]! || a - b);
  const share = order.map((m) => demand[m]! / level); // GPUs' worth each model gets
  // Whole GPUs first, largest models first, each on the free GPU (lowest index) that holds it.
  order.forEach((m, k) => {
    for (let w = Math.floor(share[k]! + 1e-9); w > 0; w--) {
      const g = gpus.find((x) => free[x.index]! >= 1 - 1e-9 && holds(x, m) && fitsMem(x, m));
      if (!g) break;
      take(g, m, 1);
      share[k]! -= 1;
    }
  });
  // Fractional parts, largest first, each on the GPU with the most room (split when it does not fit).
  const minPart = Math.min(...gpus.map((g) => g.mpsUnitPct)) / 200;
  const rest = order.map((m, k) => ({ m, left: share[k]! })).sort((a, b) => b.left - a.left || a.m - b.m);
  for (const r of rest) {
    const hasWhole = parts.some((p) => p.model === r.m);
    let left = r.left;
    while (left > (hasWhole ? minPart : 0)) {
      let best: GpuInfo | undefined;
      for (const g of gpus) {
        const units = Math.floor(100 / g.mpsUnitPct + 1e-9);
        if (
          !holds(g, r.m) ||
          !fitsMem(g, r.m) ||
          parts.some((p) => p.gpu === g.index && p.model === r.m) ||
          parts.filter((p) => p.gpu === g.index).length >= units
        )
          continue;
        if (free[g.index]! > 1e-9 && (!best || free[g.index]! > free[best.index]! + 1e-12)) best = g;
      }
      if (!best) break;
      const size = Math.min(left, free[best.index]!);
      take(best, r.m, size);
      left -= size;
    }
  }
  for (const g of gpus) {
    const on = parts.filter((p) => p.gpu === g.index);
    if (on.length === 0) continue;
    const size = new Array<number>(cluster.models.length).fill(0);
    for (const p of on) size[p.model] = p.size;
    const shares = partitionShares(
      g,
      on.map((p) => p.model),
      size,
    );
    if (!shares) continue;
    on.forEach((p, k) => out.push({ model: p.model, gpu: g.index, pct: shares[k]!, batch: 1 }));
  }
  return out;
}

/** GPUs in the order hybrids pool them: fastest type first (most throughput per model), then index. */
function poolingOrder(ctx: PoolingContext, ratePerS: readonly number[]): number[] {
  const cluster = ctx.cluster;
  const work = cluster.gpus.map((g) => demandOn(ctx, g, ratePerS).reduce((s, x) => s + x, 0));
  return cluster.gpus.map((g) => g.index).sort((a, b) => work[a]! - work[b]! || a - b);
}

/** timesharePlan (static: it depends on the cluster only), computed once per context. */
export function timeshareDeployment(pooling: PoolingContext | ClusterInfo): Deployment {
  return poolingContext(pooling).timeshareDeployment();
}

/** Most hybrids tried per MPS plan: k = 1, 2, 3, 4, 6, 8, 12, 16, ... GPUs pooled (up to all but one). */
function hybridSizes(gpus: number): number[] {
  const out: number[] = [];
  for (let k = 1; k < gpus; k = k < 4 ? k + 1 : Math.round(k * 1.5)) out.push(k);
  return out;
}

/**
 * Hybrids of an MPS plan: the first k GPUs (of poolingOrder) pooled over every model that fits, the
 * rest as planned.
 */
export function hybrids(
  pooling: PoolingContext | ClusterInfo,
  plan: Deployment,
  ratePerS: readonly number[],
): Deployment[] {
  const ctx = poolingContext(pooling);
  const cluster = ctx.cluster;
  const order = poolingOrder(ctx, ratePerS);
  const byRate = cluster.models.map((m) => m.index).sort((a, b) => ratePerS[b]! - ratePerS[a]! || a - b);
  const out: Deployment[] = [];
  for (const k of hybridSizes(cluster.gpus.length)) {
    const pooled = new Set(order.slice(0, k));
    const modes: GpuMode[] = cluster.gpus.map((g) => (pooled.has(g.index) ? 'timeshare' : 'mps'));
    const placements: Placement[] = plan.placements.filter((p) => !pooled.has(p.gpu)).map((p) => ({ ...p }));
    for (const g of order.slice(0, k))
      for (const m of fillPooled(ctx, cluster.gpus[g]!, byRate))
        placements.push({ model: m, gpu: g, pct: 100, batch: 1 });
    out.push({ placements, gpuModes: modes });
  }
  return out;
}

/**
 * An MPS plan's assignment of models to GPUs, pooled: every GPU it uses in `timeshare` mode with the
 * models it gave that GPU (not every model that fits, as time sharing and the hybrids do). A model
 * with partitions on several GPUs is one queue over them. The oracle sweep of fixed plans
 * (docs/results.md) found the plans that carry the most to be of this kind: pooled GPUs holding two or
 * three models each, where time sharing loads every model on every GPU and its batches overlap those
 * of all the others.
 */
export function pooledAssignment(cluster: ClusterInfo, plan: Deployment): Deployment {
  const used = new Set(plan.placements.map((p) => p.gpu));
  const gpuModes: GpuMode[] = cluster.gpus.map((g) => (used.has(g.index) ? 'timeshare' : 'mps'));
  const seen = new Set<number>();
  const placements: Placement[] = [];
  for (const p of plan.placements) {
    const key = p.gpu * cluster.models.length + p.model;
    if (seen.has(key)) continue;
    seen.add(key);
    placements.push({ model: p.model, gpu: p.gpu, pct: 100, batch: 1 });
  }
  return { placements, gpuModes };
}

/** Neighbours of a deployment for the local search, those touching the worst-served models first. */
export function* moves(
  pooling: PoolingContext | ClusterInfo,
  s: PlanScore,
  ratePerS: readonly number[],
): Generator<Deployment> {
  const ctx = poolingContext(pooling);
  const cluster = ctx.cluster;
  const d = s.deployment;
  const modes = modesOf(cluster, d);
  const ps = d.placements;
  const worst = cluster.models
    .map((m) => m.index)
    .sort(
      (a, b) =>
        ratePerS[b]! * s.violation[b]! - ratePerS[a]! * s.violation[a]! ||
        s.utilisation[b]! - s.utilisation[a]! ||
        a - b,
    );
  const count = new Array<number>(cluster.models.length).fill(0);
  for (const p of ps) count[p.model]!++;
  const withModes = (placements: Placement[], m: GpuMode[]): Deployment => ({ placements, gpuModes: m });
  // Add the worst-served models to pooled GPUs that can hold them.
  for (const m of worst) {
    for (const g of cluster.gpus) {
      if (
        modes[g.index] !== 'timeshare' ||
        ps.some((p) => p.gpu === g.index && p.model === m) ||
        (g.profileIndex[m] ?? -1) < 0
      )
        continue;
      yield withModes([...ps, { model: m, gpu: g.index, pct: 100, batch: 1 }], modes);
    }
  }
  // Move one MPS unit to a worst-served model's partition from a co-located one.
  for (const m of worst) {
    if (!(s.violation[m]! > 0 || s.utilisation[m]! > 0.7)) continue;
    for (const p of ps) {
      if (p.model !== m || modes[p.gpu] !== 'mps') continue;
      const unit = cluster.gpus[p.gpu]!.mpsUnitPct;
      for (const q of ps) {
        if (q.gpu !== p.gpu || q.model === m || q.pct < 2 * unit - 1e-9) continue;
        yield withModes(
          ps.map((x) =>
            x === p ? { ...x, pct: round6(x.pct + unit) } : x === q ? { ...x, pct: round6(x.pct - unit) } : x,
          ),
          modes,
        );
      }
    }
  }
  // Pool a partitioned GPU (its models take turns at the whole GPU).
  for (const g of cluster.gpus) {
    if (modes[g.index] !== 'mps') continue;
    const m2 = [...modes];
    m2[g.index] = 'timeshare';
    yield withModes(
      ps.map((p) => (p.gpu === g.index ? { ...p, pct: 100 } : p)),
      m2,
    );
  }
  // Drop a model from a pooled GPU where it has other servers (less contention for the rest).
  for (const m of [...worst].reverse()) {
    if (count[m]! < 2) continue;
    for (const g of cluster.gpus)
      if (modes[g.index] === 'timeshare' && ps.some((p) => p.gpu === g.index && p.model === m))
        yield withModes(
          ps.filter((p) => !(p.gpu === g.index && p.model === m)),
          modes,
        );
  }
  // Partition a pooled GPU: its models get shares in proportion to their demand there.
  for (const g of cluster.gpus) {
    if (modes[g.index] !== 'timeshare') continue;
    const on = ps.filter((p) => p.gpu === g.index).map((p) => p.model);
    const shares = partitionShares(g, on, demandOn(ctx, g, ratePerS));
    if (!shares) continue;
    const m2 = [...modes];
    m2[g.index] = 'mps';
    yield withModes(
      [
        ...ps.filter((p) => p.gpu !== g.index),
        ...on.map((m, k) => ({ model: m, gpu: g.index, pct: shares[k]!, batch: 1 })),
      ],
      m2,
    );
  }
}

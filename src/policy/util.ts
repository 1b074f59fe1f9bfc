// Helpers shared by the policies: share arithmetic in MPS units, per-GPU views of a deployment,
// and predictions for a worker given its co-located workers. Pure.
import { sharedByProblem } from '../serving/tiers.js';
import type { ClusterInfo, Deployment, GpuInfo, Placement } from './types.js';

/** Largest multiple of the GPU's MPS unit not above `pct` (at least one unit). */
export function floorToUnit(gpu: GpuInfo, pct: number): number {
  const units = Math.max(1, Math.floor(pct / gpu.mpsUnitPct + 1e-9));
  return Math.min(100, units * gpu.mpsUnitPct);
}

/** Smallest multiple of the GPU's MPS unit at or above `pct`, capped at 100. */
export function ceilToUnit(gpu: GpuInfo, pct: number): number {
  const units = Math.max(1, Math.ceil(pct / gpu.mpsUnitPct - 1e-9));
  return Math.min(100, units * gpu.mpsUnitPct);
}

/** Every share a GPU can hand out: 1..U units (the last is 100 when 100 is not a multiple). */
export function shareLevels(gpu: GpuInfo): number[] {
  const levels: number[] = [];
  for (let u = 1; u * gpu.mpsUnitPct <= 100 + 1e-9; u++) levels.push(Math.round(u * gpu.mpsUnitPct * 1e6) / 1e6);
  if (levels[levels.length - 1]! < 100) levels.push(100);
  return levels;
}

/** Placements on one GPU. */
export function placementsOn(deployment: Deployment, gpu: number): Placement[] {
  return deployment.placements.filter((p) => p.gpu === gpu);
}

/**
 * Predicted t_inf (ms) of each of `placements`, all on `gpu`, with interference between them
 * (unless `interference` is false). Shares are as given; in timeshare mode pass 100 for each and
 * predict them one at a time.
 */
export function predictOnGpu(
  gpu: GpuInfo,
  placements: readonly Pick<Placement, 'model' | 'batch' | 'pct'>[],
  interference = true,
): number[] {
  const n = placements.length;
  const out = new Array<number>(n).fill(0);
  if (n === 0) return out;
  const { models, batches, pcts } = predictScratch;
  for (let i = 0; i < n; i++) {
    const p = placements[i]!;
    models[i] = gpu.profileIndex[p.model]!;
    batches[i] = p.batch;
    pcts[i] = p.pct;
  }
  gpu.model.predictGpu(models, batches, pcts, n, out, interference);
  return out;
}

/** predictOnGpu's inputs, reused (predictGpu reads the first n of each and keeps none). */
const predictScratch = { models: [] as number[], batches: [] as number[], pcts: [] as number[] };

/** GPU memory (MB) the placements on one GPU need at their batch sizes. */
export function memoryOnGpu(gpu: GpuInfo, placements: readonly Pick<Placement, 'model' | 'batch'>[]): number {
  let mb = 0;
  for (const p of placements) mb += gpu.model.memoryMb(gpu.profileIndex[p.model]!, p.batch);
  return mb;
}

/** Checks the invariants every emitted deployment must hold; returns the first violation, or null. */
export function deploymentProblem(cluster: ClusterInfo, d: Deployment): string | null {
  const perGpuPct = new Array<number>(cluster.gpus.length).fill(0);
  const perGpu = new Map<number, Placement[]>();
  const seen = new Set<string>();
  for (const [i, p] of d.placements.entries()) {
    const gpu = cluster.gpus[p.gpu];
    if (!gpu) return `placements[${i}].gpu: no GPU ${p.gpu}`;
    if (!cluster.models[p.model]) return `placements[${i}].model: no model ${p.model}`;
    if ((gpu.profileIndex[p.model] ?? -1) < 0)
      return `placements[${i}]: profile ${gpu.profileId} has no model ${cluster.models[p.model]!.name}`;
    if (!Number.isInteger(p.batch) || p.batch < 1) return `placements[${i}].batch: must be an integer >= 1`;
    if (!(p.pct > 0 && p.pct <= 100)) return `placements[${i}].pct: must be in (0, 100]`;
    const key = `${p.model}@${p.gpu}`;
    if (seen.has(key)) return `placements[${i}]: model ${p.model} placed twice on GPU ${p.gpu}`;
    seen.add(key);
    if ((d.gpuModes?.[p.gpu] ?? 'mps') === 'mps') perGpuPct[p.gpu]! += p.pct;
    const list = perGpu.get(p.gpu) ?? [];
    list.push(p);
    perGpu.set(p.gpu, list);
  }
  if (d.sharedBy) {
    const why = sharedByProblem(d.sharedBy, cluster.models.length);
    if (why !== null) return why;
    const i = d.placements.findIndex((p) => d.sharedBy![p.model] !== p.model);
    if (i >= 0) return `placements[${i}].model: model ${d.placements[i]!.model} is served by its lane's workers`;
  }
  for (const [g, pct] of perGpuPct.entries()) if (pct > 100 + 1e-6) return `gpu ${g}: shares sum to ${pct}%`;
  for (const [g, list] of perGpu) {
    const mem = memoryOnGpu(cluster.gpus[g]!, list);
    if (mem > cluster.gpus[g]!.memMb + 1e-6)
      return `gpu ${g}: memory ${mem.toFixed(0)} MB > ${cluster.gpus[g]!.memMb} MB`;
  }
  return null;
}

/**
 * Renumbers GPUs within each group of the same profile so the plan keeps as many (model, GPU, share)
 * workers of `current` as it can: GPUs of one profile are interchangeable to the planner, and a
 * worker kept in place needs no shadow-process swap. Greedy, in planned-GPU order; deterministic.
 */
export function alignToCurrent(cluster: ClusterInfo, plan: Deployment, current: Deployment): Deployment {
  if (current.placements.length === 0) return plan;
  const key = (p: Placement) => `${p.model}:${p.pct}`;
  const currentOn = cluster.gpus.map((g) => new Set(current.placements.filter((p) => p.gpu === g.index).map(key)));
  const mapping = new Array<number>(cluster.gpus.length).fill(-1);
  const taken = new Set<number>();
  for (const g of cluster.gpus) {
    const mine = plan.placements.filter((p) => p.gpu === g.index).map(key);
    let best = -1;
    let bestOverlap = -1;
    for (const h of cluster.gpus) {
      if (h.profileId !== g.profileId || taken.has(h.index)) continue;
      const overlap = mine.filter((k) => currentOn[h.index]!.has(k)).length;
      if (overlap > bestOverlap) {
        best = h.index;
        bestOverlap = overlap;
      }
    }
    mapping[g.index] = best;
    taken.add(best);
  }
  const placements = plan.placements.map((p) => ({ ...p, gpu: mapping[p.gpu]! }));
  placements.sort((a, b) => a.gpu - b.gpu || a.model - b.model);
  return { placements };
}

// Candidate splits of a pipeline's SLO across its steps (src/serving/pipeline.ts), for a planner that chooses the
// split with its plan (InferLine's planner: each step gets the part of the end-to-end SLO its latency needs).
// In the twin and the scheduler alike, the dispatch rule holds a step's tasks toward their deadline to fill
// batches, so an earlier step spends whatever it is given, and the time passes on to the next steps; the last
// step's deadline is the pipeline's whatever the split, and its budget is the only room its misses have. So each
// candidate starts from the even split blended with the split in proportion to each step's predicted batch time
// (in the planner's plan, or `stepBatchMs`), keeps every earlier step at no more than its even share, and gives
// what the light earlier steps do not need to the last step (`toLastStep`). The planner scores the candidates with
// its own prediction. Pure.
import { budgetsError, evenBudgets } from '../serving/pipeline.js';
import type { ClusterInfo, ClusterPipeline } from './types.js';

/** The largest batch a step's predicted time is looked up at. */
const MAX_STEP_BATCH = 64;
/** Weights of the proportional split in each candidate, the even split taking the rest (0: even). */
export const SPLIT_BLENDS = [0, 0.25, 0.5, 0.75] as const;
/** Budgets are rounded to this (ms) so that near-equal candidates are the same split. */
const ROUND_MS = 0.5;

/**
 * Model m's predicted batch time (ms) at the smallest batch whose throughput on a whole GPU carries `ratePerS`
 * (the largest looked up where none does), on the GPU kind where that time is least; Infinity where no GPU has
 * its profile.
 */
export function stepBatchMs(cluster: ClusterInfo, m: number, ratePerS: number): number {
  let best = Infinity;
  const out = [0];
  for (const gpu of cluster.gpus) {
    const idx = gpu.profileIndex[m] ?? -1;
    if (idx < 0) continue;
    for (let b = 1; b <= MAX_STEP_BATCH; b++) {
      gpu.model.predictGpu([idx], [b], [100], 1, out);
      if ((1000 * b) / out[0]! >= ratePerS || b === MAX_STEP_BATCH) {
        best = Math.min(best, out[0]!);
        break;
      }
    }
  }
  return best;
}

/**
 * `weight` x `proportional` + (1 - weight) x even, rounded to ROUND_MS (each at least ROUND_MS) with the last
 * step taking what rounding left, so the budgets sum to the SLO.
 */
export function blendBudgets(p: ClusterPipeline, proportional: readonly number[], weight: number): number[] {
  const even = evenBudgets(p);
  const raw = even.map((e, k) => (1 - weight) * e + weight * proportional[k]!);
  // The last step keeps at least its even share: its deadline is the pipeline's whatever the split, so what it is
  // given is the only room its misses have, while what an earlier step is given beyond its need it spends filling
  // batches (the dispatch rule holds its tasks toward their deadline), which saves GPU time.
  const n = raw.length;
  if (n > 1 && raw[n - 1]! < even[n - 1]!) {
    const scale = (p.sloMs - even[n - 1]!) / (p.sloMs - raw[n - 1]!);
    for (let k = 0; k < n - 1; k++) raw[k]! *= scale;
    raw[n - 1] = even[n - 1]!;
  }
  const out = raw.map((b) => Math.max(ROUND_MS, Math.round(b / ROUND_MS) * ROUND_MS));
  const rest = out.slice(0, -1).reduce((a, b) => a + b, 0);
  out[out.length - 1] = p.sloMs - rest;
  return budgetsError(p, out) === undefined ? out : even;
}

/**
 * The distinct candidate splits of `p` (SPLIT_BLENDS' order: the even split first) blending the even split with
 * the split in proportion to `stepMs`, each step's predicted time (the even split where they are not all finite
 * and positive).
 */
export function candidateSplits(p: ClusterPipeline, stepMs: readonly number[]): number[][] {
  const total = stepMs.reduce((a, b) => a + b, 0);
  const usable = Number.isFinite(total) && stepMs.every((t) => t > 0);
  const prop = usable ? stepMs.map((t) => (p.sloMs * t) / total) : evenBudgets(p);
  const out: number[][] = [];
  const add = (b: number[]) => {
    if (!out.some((o) => o.every((x, k) => Math.abs(x - b[k]!) < 1e-9))) out.push(b);
  };
  for (const w of SPLIT_BLENDS) add(w === 0 ? evenBudgets(p) : toLastStep(p, blendBudgets(p, prop, w)));
  return out;
}

/**
 * `budgets` with every earlier step above its even share brought back to it and what that frees given to the last
 * step: the time the light steps do not need goes where a miss is the pipeline's, not to a heavy step (which would
 * spend it holding its tasks for larger batches).
 */
export function toLastStep(p: ClusterPipeline, budgets: readonly number[]): number[] {
  const even = evenBudgets(p);
  const out = budgets.map((b, k) => (k < budgets.length - 1 ? Math.min(b, even[k]!) : b));
  out[out.length - 1] = p.sloMs - out.slice(0, -1).reduce((a, b) => a + b, 0);
  return budgetsError(p, out) === undefined ? out : even;
}

/** `cluster` with each pipeline's step models given their step's budget (per pipeline name) as their SLO. */
export function withStepSlos(cluster: ClusterInfo, budgets: Readonly<Record<string, readonly number[]>>): ClusterInfo {
  const slo = new Map<number, number>();
  for (const p of cluster.pipelines ?? []) {
    const b = budgets[p.name];
    if (b) p.stepModels.forEach((m, k) => slo.set(m, b[k]!));
  }
  return { ...cluster, models: cluster.models.map((m) => (slo.has(m.index) ? { ...m, sloMs: slo.get(m.index)! } : m)) };
}

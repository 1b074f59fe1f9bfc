// The best a GPU can do for one model, per unit of GPU, under the simulator's own timing: the rates the
// capacity ceiling's linear program (ceiling.ts) is built from. Every figure is an upper bound on what
// any deployment gets, because each batch time it uses is a lower bound on the ground truth's
// (src/sim/groundTruth.ts, src/model/pooledGpu.ts); docs/ceiling.md gives the argument. Pure.
//
// - The latency model's interference terms are never negative (the profile schema holds alphaCache,
//   cacheSelfWeight >= 0 and the terms are clamped at 0), so a batch is never faster beside others
//   than alone at its share: the solo time at a share bounds it from below.
// - The ground truth multiplies that by the configuration's systematic factor (known, seeded: read
//   here from the ground truth itself), a per-batch noise of mean 1 (a fluid rate pays its mean) and a
//   DRAM factor >= 1 (dropped).
// - A batch counts only where it can meet its SLO: its noise-free time times the noise's 4-sigma low
//   factor fits the SLO. A batch over that meets its SLO with probability below NOISE_TAIL, which the
//   linear program takes off the attainment.
// - Shares are the GPU's MPS levels (multiples of its unit, src/policy/util.ts shareLevels) and batches
//   at most BDA_MAX_BATCH (32): what every policy emits (GpuInfo.mpsUnitPct's contract). The latency
//   model's table is not meant below the unit: at 0.5% it times alexnet on a V100 as at 1%.
import { BDA_MAX_BATCH } from '../../src/policy/bda.js';
import type { ClusterInfo, GpuInfo } from '../../src/policy/types.js';
import type { PooledGpuMode } from '../../src/model/pooledGpu.js';
import { GroundTruth, type GroundTruthSettings, gpuTypeIndex, profileModelIndex } from '../../src/sim/groundTruth.js';
import { predictOnGpu, shareLevels } from '../../src/policy/util.js';

/** How many standard deviations of per-batch noise a batch's time may be below its mean (see NOISE_TAIL). */
export const NOISE_SIGMAS = 4;
/** P(Z < -4) for a standard normal: the chance a batch beats NOISE_SIGMAS; taken off the attainment. */
export const NOISE_TAIL = 3.2e-5;
/** GPUs of one profile and one pooled-GPU mode: interchangeable to the bound. */
export interface CeilingGroup {
  readonly profileId: string;
  readonly pooled: PooledGpuMode;
  readonly count: number;
  /** Per served model: its MPS worker's rates (MpsRates). A model has at most one worker a GPU. */
  readonly mps: readonly MpsRates[];
  /**
   * Overlap groups only (empty when serial: a serial pooled GPU runs one batch at a time at its solo
   * time, which the share 100 of `mps` already covers). `pooledPerS[m][n - 1]`: the most tasks per
   * second model m's one worker on a pooled GPU serves while busy in batches that start with n batches
   * running (its own included), by the lower bound on the overlap rule's time (pooledLowerMs).
   */
  readonly pooledPerS: readonly (readonly number[])[];
}

/** The noise's low factor: exp(-NOISE_SIGMAS sigma - sigma^2 / 2), the log-normal of mean 1 at -4 sigma. */
export function noiseLowFactor(noisePct: number): number {
  const s = noisePct / 100;
  return Math.exp(-NOISE_SIGMAS * s - (s * s) / 2);
}

/** A model's solo t_inf (ms) on a GPU at a share: the latency model alone (no interference). */
function soloMs(gpu: GpuInfo, model: number, batch: number, pct: number): number {
  return predictOnGpu(gpu, [{ model, batch, pct }])[0]!;
}

/** One MPS worker's best: at a share (%), the most tasks per second it serves within SLO while busy. */
export interface SharePoint {
  readonly pct: number;
  readonly perS: number;
}

/**
 * An MPS worker's rates by how its batches start: `alone` (no other batch running on the GPU, so no
 * interference: such batches never overlap each other) and `beside` (at least one running, so at least
 * the latency model's interference with one neighbour of the least L2 utilisation). Each reduced to the
 * shares worth holding (upperHull). Empty where nothing meets the SLO or the profile lacks the model.
 */
export interface MpsRates {
  readonly alone: readonly SharePoint[];
  readonly beside: readonly SharePoint[];
}

/**
 * The neighbour (served model, share) of least L2 utilisation that can sit beside `model` at `pct` on
 * this GPU: another model of the profile at a level that fits in the rest. Null when there is none.
 */
function quietestNeighbour(gpu: GpuInfo, model: number, pct: number): { model: number; pct: number } | null {
  let best: { model: number; pct: number; l2: number } | null = null;
  gpu.profileIndex.forEach((pi, o) => {
    if (o === model || pi < 0) return;
    const l2 = gpu.model.profile.models[gpu.model.modelNames[pi]!]!.l2;
    for (const q of shareLevels(gpu)) {
      if (q > 100 - pct + 1e-9) break;
      const u = Math.max(0, l2.alphaU * (q / 100) + l2.betaU);
      if (!best || u < best.l2) best = { model: o, pct: q, l2: u };
    }
  });
  return best === null ? null : { model: (best as { model: number }).model, pct: (best as { pct: number }).pct };
}

/** `model`'s MPS rates on one GPU of this type under the seed's ground truth (MpsRates). */
export function mpsRates(gpu: GpuInfo, truth: GroundTruth, model: number, sloMs: number, noiseLow: number): MpsRates {
  const pi = gpu.profileIndex[model] ?? -1;
  if (pi < 0) return { alone: [], beside: [] };
  const type = gpuTypeIndex(gpu.profileId);
  // Interference per kernel, alpha_s n + beta_s clamped at 0, is least at n = 2 only when alpha_s >= 0;
  // otherwise the neighbour's terms are left out (solo times: still a lower bound).
  const interferes = gpu.model.profile.gpu.schedInterference.alphaSMs >= 0;
  const alone: SharePoint[] = [];
  const beside: SharePoint[] = [];
  for (const pct of shareLevels(gpu)) {
    const n = interferes ? quietestNeighbour(gpu, model, pct) : null;
    let [a, s] = [0, 0];
    for (let b = 1; b <= BDA_MAX_BATCH; b++) {
      const f = truth.systematicFactor(type, profileModelIndex(pi), b, pct);
      const solo = soloMs(gpu, model, b, pct) * f;
      const near = n
        ? predictOnGpu(gpu, [
            { model, batch: b, pct },
            { model: n.model, batch: 1, pct: n.pct },
          ])[0]! * f
        : solo;
      if (solo * noiseLow <= sloMs) a = Math.max(a, (b * 1000) / solo);
      if (near * noiseLow <= sloMs) s = Math.max(s, (b * 1000) / near);
    }
    if (a > 0) alone.push({ pct, perS: a });
    if (s > 0 && pct < 100) beside.push({ pct, perS: s });
  }
  return { alone: upperHull(alone), beside: upperHull(beside) };
}

/** The upper concave hull from (0, 0) of points in increasing share, rising part only. */
export function upperHull(points: readonly SharePoint[]): SharePoint[] {
  const hull: SharePoint[] = [{ pct: 0, perS: 0 }];
  for (const q of points) {
    if (q.perS <= hull[hull.length - 1]!.perS) continue;
    while (hull.length >= 2) {
      const [a, b] = [hull[hull.length - 2]!, hull[hull.length - 1]!];
      // b is under the chord from a to q: drop it.
      if ((b.perS - a.perS) * (q.pct - a.pct) <= (q.perS - a.perS) * (b.pct - a.pct)) hull.pop();
      else break;
    }
    hull.push(q);
  }
  return hull.slice(1);
}

/**
 * A lower bound (ms, before the ground truth's factors) on a pooled overlap batch's time when it starts
 * with `n` batches running: the overlap rule's min(even split, n x solo, solo + the others' solos)
 * (src/model/pooledGpu.ts), with the even split at its solo time at 100/n % (interference >= 0) and the
 * others' solos at the `n - 1` smallest of `othersMinSoloMs` (any model that could run beside it, at
 * its fastest batch).
 */
export function pooledLowerMs(
  gpu: GpuInfo,
  model: number,
  batch: number,
  n: number,
  othersMinSoloMs: readonly number[],
): number {
  const solo = soloMs(gpu, model, batch, 100);
  if (n === 1) return solo;
  const split = soloMs(gpu, model, batch, 100 / n);
  let series = solo;
  for (let k = 0; k < n - 1; k++) series += othersMinSoloMs[k]!;
  return Math.min(split, n * solo, series);
}

/** Per start count n = 1..maxN, the best tasks per second of `model`'s one pooled overlap worker while busy. */
export function pooledRates(
  gpu: GpuInfo,
  truth: GroundTruth,
  model: number,
  sloMs: number,
  noiseLow: number,
  othersMinSoloMs: readonly number[],
): number[] {
  const pi = gpu.profileIndex[model] ?? -1;
  const maxN = othersMinSoloMs.length + 1;
  if (pi < 0) return new Array<number>(maxN).fill(0);
  const type = gpuTypeIndex(gpu.profileId);
  const out: number[] = [];
  for (let n = 1; n <= maxN; n++) {
    let best = 0;
    for (let b = 1; b <= BDA_MAX_BATCH; b++) {
      // The ground truth keys the systematic factor by the even split the rule times the batch at.
      const ms =
        pooledLowerMs(gpu, model, b, n, othersMinSoloMs) *
        truth.systematicFactor(type, profileModelIndex(pi), b, 100 / n);
      if (ms * noiseLow > sloMs) continue;
      best = Math.max(best, (b * 1000) / ms);
    }
    out.push(best);
  }
  return out;
}

/** The groups of a cluster (GPUs by profile and pooled mode) with their rates under the seed's ground truth. */
export function ceilingGroups(
  cluster: ClusterInfo,
  truthSettings: Omit<GroundTruthSettings, 'seed'>,
  seed: number,
): CeilingGroup[] {
  const truth = new GroundTruth({ ...truthSettings, seed });
  const noiseLow = noiseLowFactor(truthSettings.noisePct);
  const byKey = new Map<string, GpuInfo[]>();
  for (const g of cluster.gpus) {
    const key = `${g.profileId}\u0000${g.pooled}`;
    byKey.set(key, [...(byKey.get(key) ?? []), g]);
  }
  return [...byKey.values()].map((gpus) => {
    const gpu = gpus[0]!;
    const models = cluster.models;
    const mps = models.map((m) => mpsRates(gpu, truth, m.index, m.sloMs, noiseLow));
    let pooledPerS: number[][] = [];
    if (gpu.pooled === 'overlap') {
      const here = models.filter((m) => (gpu.profileIndex[m.index] ?? -1) >= 0);
      const fastest = new Map(
        here.map((m) => {
          let min = Infinity;
          for (let b = 1; b <= BDA_MAX_BATCH; b++) min = Math.min(min, soloMs(gpu, m.index, b, 100));
          return [m.index, min] as const;
        }),
      );
      pooledPerS = models.map((m) => {
        const others = here
          .filter((o) => o.index !== m.index)
          .map((o) => fastest.get(o.index)!)
          .sort((a, b) => a - b);
        return pooledRates(gpu, truth, m.index, m.sloMs, noiseLow, others);
      });
    }
    return { profileId: gpu.profileId, pooled: gpu.pooled, count: gpus.length, mps, pooledPerS };
  });
}

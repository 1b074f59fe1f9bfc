// The online fit of one model's latency model on one GPU type, from its batches as the serving side
// measured them (Observation.lastEpoch.batches), and the held-out test that says when the fit is good
// enough to plan with (docs/online-profiling.md). Pure; its state is plain JSON (state.ts validates it).
//
// What each batch gives: its size b, its share p, the number of models running on its GPU and their L2
// utilisation (from their profiles), and its GPU time t_inf. The fit identifies
// - the running time o_r(b, p) at the batches and shares seen alone on the GPU (solo batches: t_inf less the
//   prior's scheduling time), interpolated log-log between seen batches;
// - the share shape: the prior's raised to a fitted exponent, once batches were seen at two shares or more (one
//   exponent per batch size where they ran at 100% and at a smaller share: shapes.ts, `batchExponents`);
// - alpha_cache, by least squares through the origin on batches that ran beside profiled models on MPS
//   shares, once there are `minColocated` of them.
// - memory, from the GPU memory its workers measured while they ran its batches (BatchRecord.memoryMb), where
//   they did.
// The rest is the prior's (prior.ts): o_r at batches under those seen (the prior's batch shape from the
// smallest seen; above them bounded by the model's own slope: shapes.ts, `runAtFull`), the share shape before two
// shares are seen, kernels and scheduling time, L2 utilisation, and memory where no worker measured it; input
// and output bytes are 0 (their transfer is inside the measured o_r).
//
// Held out: every `heldOutEvery`-th usable batch is kept out of the fit and predicted by it; the fit passes
// when the mean absolute relative error over the latest `maxHeldOut` held-out batches is at most `maxRelErr`
// and there are at least `minHeldOut` of them. Batches that overlapped others on a pooled GPU are timed by
// the pooled rule (src/model/pooledGpu.ts), not by the co-location model: they are neither fitted nor held out.
import { l2Utilisation, runningMs, schedInterferencePerKernelMs, schedulingMs } from '../../model/latency.js';
import { type LwrPoint, lwrRunMs, toLwrPoints } from '../../model/lwr.js';
import type { GpuProfile, LwrSettings, ModelProfile, RunSample } from '../../profile/schema.js';
import type { BatchRecord, GpuInfo } from '../types.js';
import type { Prior } from './prior.js';
import {
  batchExponents,
  type BatchExponents,
  GAMMAS,
  runAtFull,
  type Share,
  shareShape,
  type SoloConfig,
} from './shapes.js';

/** One usable batch: its size, share, GPU time, the models on its GPU (itself included) and their L2. */
export interface FitSample {
  readonly batch: number;
  readonly pct: number;
  readonly execMs: number;
  /** Models running on the GPU when it started, itself included (1: alone). */
  readonly models: number;
  /** Sum of the L2 utilisation of the others (0 alone). */
  readonly othersL2: number;
}

export type { SoloConfig };

/** The measured GPU memory of the model's worker at one batch size: how many readings and their sum (MB). */
export interface MemoryReading {
  readonly batch: number;
  n: number;
  sumMb: number;
}

export interface FitState {
  /** Usable batches taken (fitted and held out). */
  seen: number;
  solo: SoloConfig[];
  colocated: FitSample[];
  heldOut: FitSample[];
  /** Batches whose worker measured its GPU memory (BatchRecord.memoryMb), per batch size. */
  memory: MemoryReading[];
}

export interface FitSettings {
  readonly heldOutEvery: number;
  readonly minHeldOut: number;
  readonly maxHeldOut: number;
  readonly maxRelErr: number;
  readonly minColocated: number;
  readonly maxColocated: number;
  /** Usable batches between two refits of a promoted profile. */
  readonly refreshEvery: number;
}

export const DEFAULT_FIT: FitSettings = {
  heldOutEvery: 5,
  minHeldOut: 20,
  maxHeldOut: 40,
  maxRelErr: 0.1,
  minColocated: 20,
  maxColocated: 200,
  refreshEvery: 100,
};

export interface FitResult {
  readonly profile: ModelProfile;
  /** alpha_cache was fitted from co-located batches (false: the prior's). */
  readonly alphaCacheFitted: boolean;
  /** Batch sizes seen alone on the GPU. */
  readonly batchesSeen: readonly number[];
  readonly points: readonly LwrPoint[];
}

export interface HeldOutCheck {
  readonly heldOut: number;
  /** Mean absolute relative error over the held-out batches (NaN: none). */
  readonly meanRelErr: number;
  readonly pass: boolean;
}

export function emptyFitState(): FitState {
  return { seen: 0, solo: [], colocated: [], heldOut: [], memory: [] };
}

/** Takes one usable batch: held out every `heldOutEvery`-th, fitted otherwise. */
export function addSample(st: FitState, x: FitSample, s: FitSettings = DEFAULT_FIT): void {
  st.seen += 1;
  if (st.seen % s.heldOutEvery === 0) {
    st.heldOut.push(x);
    if (st.heldOut.length > s.maxHeldOut) st.heldOut.shift();
    return;
  }
  if (x.models > 1) {
    st.colocated.push(x);
    if (st.colocated.length > s.maxColocated) st.colocated.shift();
    return;
  }
  let c = st.solo.find((k) => k.batch === x.batch && k.pct === x.pct);
  if (!c) {
    c = { batch: x.batch, pct: x.pct, n: 0, sumLogMs: 0 };
    st.solo.push(c);
  }
  c.n += 1;
  c.sumLogMs += Math.log(x.execMs);
}

/** o_r at 100% for each batch size seen alone, from the solo configurations (geometric means). */
function seenAtFull(st: FitState, share: Share, schedMs: number): Map<number, number> {
  const acc = new Map<number, { w: number; sumLog: number }>();
  for (const c of st.solo) {
    const runMs = Math.exp(c.sumLogMs / c.n) - schedMs;
    const at100 = runMs / share(c.batch, c.pct);
    const a = acc.get(c.batch) ?? { w: 0, sumLog: 0 };
    a.w += c.n;
    a.sumLog += c.n * Math.log(at100);
    acc.set(c.batch, a);
  }
  return new Map([...acc].map(([b, a]) => [b, Math.exp(a.sumLog / a.w)]));
}

interface Candidate {
  readonly note: string;
  readonly share: Share;
  readonly seen: Map<number, number>;
  readonly alphaCache: number;
  readonly sse: number;
}

/**
 * The share shape: the prior's `o_r(b, p) / o_r(b, 100)` raised to the exponent gamma that best explains the
 * batches seen (squared log error over the solo configurations and the co-located batches), where they span
 * two shares or more; 1 (the prior's own) otherwise.
 */
function bestCandidate(st: FitState, prior: Prior, gpu: GpuProfile, m: ModelProfile, s: FitSettings): Candidate {
  const sched = schedulingMs(m.schedPerKernelMs, 0, m.kernels);
  const pcts = new Set([...st.solo.map((c) => c.pct), ...st.colocated.map((c) => c.pct)]);
  const colocated = st.colocated.length >= s.minColocated ? st.colocated : [];
  let best: Candidate | null = null;
  const lowest = Math.min(...pcts);
  const perBatch = batchExponents(st.solo, prior, sched);
  const shapes: BatchExponents[] = perBatch
    ? [perBatch]
    : (pcts.size >= 2 ? GAMMAS : [1]).map((g) => ({
        full: null,
        share: shareShape(prior, g, lowest),
        note: `share exponent ${g.toFixed(1)}`,
      }));
  for (const { share, note, full } of shapes) {
    const seen = full ?? seenAtFull(st, share, sched);
    const run = (b: number, p: number) => runAtFull(seen, prior, b) * share(b, p);
    let sse = 0;
    for (const c of st.solo) sse += c.n * (Math.log(sched + run(c.batch, c.pct)) - c.sumLogMs / c.n) ** 2;
    let alphaCache = m.alphaCache;
    if (colocated.length > 0) {
      alphaCache = fitAlphaCache(colocated, m, run, gpu);
      for (const x of colocated)
        sse += Math.log(predictWith(m, run(x.batch, x.pct), gpu, { ...x }, alphaCache) / x.execMs) ** 2;
    }
    if (!best || sse < best.sse) best = { note, share, seen, alphaCache, sse };
  }
  return best!;
}

/** The fit now (null before any solo batch). `gpu` and `lwr`: the GPU type's profile, whose LWR settings it uses. */
export function fitModel(
  st: FitState,
  prior: Prior,
  gpu: GpuProfile,
  lwr: LwrSettings,
  s: FitSettings = DEFAULT_FIT,
): FitResult | null {
  if (st.solo.length === 0) return null;
  const minMs = Math.min(...st.solo.map((c) => Math.exp(c.sumLogMs / c.n)));
  // The prior's scheduling time, at most a quarter of the fastest batch seen: what is left is running time.
  const schedMs = Math.min(schedulingMs(prior.schedPerKernelMs, 0, prior.kernels), minMs / 4);
  const base: ModelProfile = {
    inputBytes: 0,
    outputBytes: 0,
    kernels: prior.kernels,
    schedPerKernelMs: schedMs / prior.kernels,
    l2: { ...prior.l2 },
    alphaCache: prior.alphaCache,
    memory: fittedMemory(st, prior),
    runSamples: [],
    notes: [],
  };
  const c = bestCandidate(st, prior, gpu, base, s);
  const batches = [...new Set([...prior.batches, ...c.seen.keys()])].sort((a, b) => a - b);
  const runSamples: RunSample[] = [];
  for (const b of batches) {
    const full = runAtFull(c.seen, prior, b);
    for (const pct of prior.pcts) runSamples.push({ batch: b, pct, runMs: full * c.share(b, pct) });
  }
  const fitted = st.colocated.length >= s.minColocated;
  const seenList = [...c.seen.keys()].sort((a, b) => a - b);
  const profile: ModelProfile = {
    ...base,
    runSamples,
    alphaCache: c.alphaCache,
    notes: [
      `fitted online from ${st.seen} batches (batches seen alone: ${seenList.join(', ')}; ` + `${c.note})`,
      `from the GPU type's other models: kernels, scheduling time, L2 utilisation, ` +
        `${st.memory.length > 0 ? '' : 'memory, '}the share shape of o_r${fitted ? '' : ', alpha_cache'}` +
        (st.memory.length > 0 ? `; memory from its workers' readings at batches ${memoryBatches(st)}` : ''),
    ],
  };
  return { profile, alphaCacheFitted: fitted, batchesSeen: seenList, points: toLwrPoints(runSamples) };
}

/** t_inf of a batch with solo running time `soloRunMs` (the latency model's arithmetic: src/model/predictor.ts). */
function predictWith(
  m: ModelProfile,
  soloRunMs: number,
  gpu: GpuProfile,
  x: Pick<FitSample, 'pct' | 'models' | 'othersL2'>,
  alphaCache = m.alphaCache,
): number {
  const sched = schedulingMs(m.schedPerKernelMs, 0, m.kernels);
  if (x.models <= 1) return sched + soloRunMs;
  const inter = schedInterferencePerKernelMs(x.models, gpu.schedInterference.alphaSMs, gpu.schedInterference.betaSMs);
  const selfL2 = l2Utilisation(m.l2.alphaU, m.l2.betaU, x.pct);
  return sched + inter * m.kernels + runningMs(soloRunMs, alphaCache, x.othersL2, selfL2, gpu.cacheSelfWeight, true);
}

/** Predicted t_inf of a sample by a fitted profile (its LWR over `points`). */
export function predictSample(
  m: ModelProfile,
  points: readonly LwrPoint[],
  gpu: GpuProfile,
  lwr: LwrSettings,
  x: Pick<FitSample, 'batch' | 'pct' | 'models' | 'othersL2'>,
): number {
  return predictWith(m, lwrRunMs(points, lwr, x.batch, x.pct), gpu, x);
}

/** alpha_cache by least squares through the origin on co-located batches (clamped at 0). */
function fitAlphaCache(
  xs: readonly FitSample[],
  m: ModelProfile,
  run: (batch: number, pct: number) => number,
  gpu: GpuProfile,
): number {
  let sxz = 0;
  let sxx = 0;
  for (const x of xs) {
    const solo = run(x.batch, x.pct);
    const inter = schedInterferencePerKernelMs(x.models, gpu.schedInterference.alphaSMs, gpu.schedInterference.betaSMs);
    const z = (x.execMs - schedulingMs(m.schedPerKernelMs, inter, m.kernels)) / solo - 1;
    const c = x.othersL2 + gpu.cacheSelfWeight * l2Utilisation(m.l2.alphaU, m.l2.betaU, x.pct);
    sxz += c * z;
    sxx += c * c;
  }
  return sxx > 0 ? Math.max(0, sxz / sxx) : m.alphaCache;
}

/** The held-out test of a fit (file head). */
export function heldOutCheck(
  st: FitState,
  fit: FitResult | null,
  gpu: GpuProfile,
  lwr: LwrSettings,
  s: FitSettings = DEFAULT_FIT,
): HeldOutCheck {
  const n = st.heldOut.length;
  if (!fit || n === 0) return { heldOut: n, meanRelErr: NaN, pass: false };
  let sum = 0;
  for (const x of st.heldOut) sum += Math.abs(predictSample(fit.profile, fit.points, gpu, lwr, x) / x.execMs - 1);
  const meanRelErr = sum / n;
  return { heldOut: n, meanRelErr, pass: n >= s.minHeldOut && meanRelErr <= s.maxRelErr };
}

/** A record as a fit sample: null where it cannot be predicted (overlapped on a pooled GPU, or beside a model
 * the GPU's profile lacks). */
/** Takes one batch record: its GPU time where usable (`recordSample`, `addSample`), its memory where measured. */
export function takeRecord(st: FitState, r: BatchRecord, gpu: GpuInfo, s: FitSettings = DEFAULT_FIT): void {
  const x = recordSample(r, gpu);
  if (x) addSample(st, x, s);
  if (r.memoryMb === undefined || !(r.memoryMb > 0) || !Number.isFinite(r.memoryMb) || !(r.batch >= 1)) return;
  let m = st.memory.find((k) => k.batch === r.batch);
  if (!m) {
    m = { batch: r.batch, n: 0, sumMb: 0 };
    st.memory.push(m);
  }
  m.n += 1;
  m.sumMb += r.memoryMb;
}

function memoryBatches(st: FitState): string {
  return st.memory
    .map((m) => m.batch)
    .sort((a, b) => a - b)
    .join(', ');
}

/**
 * The model's memory from its workers' readings: base and per-batch MB by least squares over the batch sizes
 * read (weighted by readings; the slope at least 0), the prior's per-batch MB where one size was read, the
 * prior's memory where none was.
 */
export function fittedMemory(st: FitState, prior: Prior): { baseMb: number; perBatchMb: number } {
  const pts = st.memory;
  if (pts.length === 0) return { ...prior.memory };
  let n = 0;
  let sb = 0;
  let sm = 0;
  for (const p of pts) {
    n += p.n;
    sb += p.n * p.batch;
    sm += p.sumMb;
  }
  const [mb, mm] = [sb / n, sm / n];
  let sxy = 0;
  let sxx = 0;
  for (const p of pts) {
    sxy += p.n * (p.batch - mb) * (p.sumMb / p.n - mm);
    sxx += p.n * (p.batch - mb) ** 2;
  }
  const perBatchMb = pts.length > 1 && sxx > 0 ? Math.max(0, sxy / sxx) : prior.memory.perBatchMb;
  return { baseMb: Math.max(0, mm - perBatchMb * mb), perBatchMb };
}

export function recordSample(r: BatchRecord, gpu: GpuInfo): FitSample | null {
  if (r.pooled && r.beside.length > 0) return null;
  if (!(r.execMs > 0) || !(r.batch >= 1) || !(r.pct > 0 && r.pct <= 100)) return null;
  let othersL2 = 0;
  for (const b of r.beside) {
    const pi = gpu.profileIndex[b.model] ?? -1;
    if (pi < 0) return null;
    const l2 = gpu.model.profile.models[gpu.model.modelNames[pi]!]!.l2;
    othersL2 += l2Utilisation(l2.alphaU, l2.betaU, b.pct);
  }
  return { batch: r.batch, pct: r.pct, execMs: r.execMs, models: 1 + r.beside.length, othersL2 };
}

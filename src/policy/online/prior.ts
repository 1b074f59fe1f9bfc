// What the online fit (fit.ts) takes from a GPU's profiled models for the parts of a new model's latency
// model its batch times do not identify (docs/online-profiling.md, "What is not identified"): the median
// over those models of each coefficient, and of the shapes of their running times in share and batch.
// Pure.
import type { LatencyModel } from '../../model/predictor.js';
import type { ModelProfile } from '../../profile/schema.js';

export interface Prior {
  readonly kernels: number;
  readonly schedPerKernelMs: number;
  readonly l2: { readonly alphaU: number; readonly betaU: number };
  readonly alphaCache: number;
  /**
   * The profiled models' median memory: a new model's is not measured. The largest would be safe against
   * overcommitting a GPU, but it counts the new model as the zoo's largest, and the planner then cannot place
   * it beside a large model at all (docs/online-profiling.md, "What is not identified").
   */
  readonly memory: { readonly baseMb: number; readonly perBatchMb: number };
  /** Shares (%) and batches the fitted model's LWR samples are laid on: those of the profiled models' samples. */
  readonly pcts: readonly number[];
  readonly batches: readonly number[];
  /** `o_r(b, pct) / o_r(b, 100)`: how running time grows as the share shrinks. */
  shareRatio(batch: number, pct: number): number;
  /** `o_r(b, 100) / o_r(b0, 100)`: how running time grows with the batch. */
  batchRatio(batch: number, b0: number): number;
  /** The median model's t_inf alone at 100% for a batch (ms; NaN without a profiled model): a first guess. */
  typicalMs(batch: number): number;
  /** The shapes are the fitted model's own profile's (`ownShapes`), not the other models' median. */
  readonly own?: boolean;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 === 1 ? s[h]! : (s[h - 1]! + s[h]!) / 2;
}

const DEFAULT_PCTS = [25, 50, 75, 100];
const DEFAULT_BATCHES = [1, 2, 4, 8, 16, 32];

/**
 * The prior of a GPU type from the models its latency model has, leaving out `exclude` (profile-model
 * indices: the model being fitted, once it is in the profile). Without any profiled model: one kernel, no
 * scheduling cost, no interference, no memory, running time proportional to batch and inverse to share.
 */
export function gpuPrior(lm: LatencyModel, exclude: ReadonlySet<string> = new Set()): Prior {
  const names = lm.modelNames.filter((n) => !exclude.has(n));
  const idx = names.map((n) => lm.modelIndex(n));
  const ms = names.map((n) => lm.profile.models[n]!);
  if (ms.length === 0) {
    return {
      kernels: 1,
      schedPerKernelMs: 0,
      l2: { alphaU: 0, betaU: 0 },
      alphaCache: 0,
      memory: { baseMb: 0, perBatchMb: 0 },
      pcts: DEFAULT_PCTS,
      batches: DEFAULT_BATCHES,
      shareRatio: (_b, pct) => 100 / pct,
      batchRatio: (b, b0) => b / b0,
      typicalMs: () => NaN,
    };
  }
  const pctSet = new Set<number>([100]);
  const batchSet = new Set<number>([1]);
  for (const m of ms) {
    for (const s of m.runSamples) {
      pctSet.add(s.pct);
      batchSet.add(s.batch);
    }
  }
  const ratio = (f: (i: number) => number) => median(idx.map(f));
  return {
    kernels: Math.max(1, Math.round(median(ms.map((m) => m.kernels)))),
    schedPerKernelMs: median(ms.map((m) => m.schedPerKernelMs)),
    l2: { alphaU: median(ms.map((m) => m.l2.alphaU)), betaU: median(ms.map((m) => m.l2.betaU)) },
    alphaCache: median(ms.map((m) => m.alphaCache)),
    memory: {
      baseMb: median(ms.map((m) => m.memory.baseMb)),
      perBatchMb: median(ms.map((m) => m.memory.perBatchMb)),
    },
    pcts: [...pctSet].sort((a, b) => a - b),
    batches: [...batchSet].sort((a, b) => a - b),
    shareRatio: (b, pct) => ratio((i) => lm.soloRunMs(i, b, pct) / lm.soloRunMs(i, b, 100)),
    batchRatio: (b, b0) => ratio((i) => lm.soloRunMs(i, b, 100) / lm.soloRunMs(i, b0, 100)),
    typicalMs: (b) => median(names.map((n) => lm.predict([{ model: n, batch: b, pct: 100 }]).latencyMs[0]!)),
  };
}

/**
 * `prior` with the shapes in batch and share of `name`'s own profile in `lm` (the one in use, fitted or carried
 * over): what a refit of a model already profiled extrapolates with, so that batches seen over a narrow range
 * (a model placed at one batch size, one share) refine that profile instead of falling back to the median
 * model's shapes. `prior` itself when `lm` lacks the model.
 */
export function ownShapes(prior: Prior, lm: LatencyModel, name: string): Prior {
  const i = lm.modelIndex(name);
  if (i < 0) return prior;
  return {
    ...prior,
    own: true,
    shareRatio: (b, pct) => lm.soloRunMs(i, b, pct) / lm.soloRunMs(i, b, 100),
    batchRatio: (b, b0) => lm.soloRunMs(i, b, 100) / lm.soloRunMs(i, b0, 100),
  };
}

/**
 * A profile fitted on GPU type `from` carried over to type `to`: each running-time sample scaled by the median,
 * over the models both types' profiles have, of their `o_r` on `to` over their `o_r` on `from` at that batch and
 * share; kernels, scheduling, L2 and memory from `to`'s prior, but memory `m`'s own where its workers measured it
 * (`measuredMemory`: a model's memory is its own on any GPU type). Null when the two share no model.
 */
export function transferProfile(
  m: ModelProfile,
  from: LatencyModel,
  to: LatencyModel,
  toPrior: Prior,
  note: string,
  measuredMemory = false,
): ModelProfile | null {
  const both = from.modelNames.filter((n) => to.modelIndex(n) >= 0);
  if (both.length === 0) return null;
  const ratio = (b: number, pct: number) =>
    median(both.map((n) => to.soloRunMs(to.modelIndex(n), b, pct) / from.soloRunMs(from.modelIndex(n), b, pct)));
  return {
    ...m,
    kernels: toPrior.kernels,
    schedPerKernelMs: toPrior.schedPerKernelMs,
    l2: { ...toPrior.l2 },
    memory: measuredMemory ? { ...m.memory } : { ...toPrior.memory },
    runSamples: m.runSamples.map((s) => ({ ...s, runMs: s.runMs * ratio(s.batch, s.pct) })),
    notes: [...m.notes, note],
  };
}

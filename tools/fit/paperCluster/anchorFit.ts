// The RTX 2060 Super fit: every model's surface bent, by Levenberg-Marquardt with prior residuals,
// until the full latency model of section 4.1 reproduces the published points. Part of `inss profile
// derive` (derive.ts).
import {
  feedbackMs,
  l2Utilisation,
  runningMs,
  schedInterferencePerKernelMs,
  uploadMs,
} from '../../../src/model/latency.js';
import { levenbergMarquardt } from '../leastSquares.js';
import { type AnchorCell, type AnchorPlacement, type ThroughputAnchor } from './anchors.js';
import { fromTheta, monotonicityPenalty, PARAM_NAMES, type Surface, surfaceRunMs, toTheta } from './surface.js';

// ---------------------------------------------------------------------------------------------
// 4. The RTX 2060 Super fit: every model's surface anchored through the full latency model
// ---------------------------------------------------------------------------------------------

/** The paper's eight models and where each one's shape comes from (docs/profiles-paper-cluster.md). */
interface Derivation {
  readonly model: string;
  /** Surface prior: a V100 model carried to this GPU, or a model already fitted on this GPU. */
  readonly prior: { readonly v100: string } | { readonly fitted: string };
  /** V100 model whose interference coefficients and per-kernel scheduling cost this model starts from. */
  readonly coefficientsFrom: string;
}

// Order matters: a `fitted` prior must come earlier in the list.
export const DERIVATIONS: readonly Derivation[] = [
  { model: 'resnet50', prior: { v100: 'resnet50' }, coefficientsFrom: 'resnet50' },
  { model: 'alexnet', prior: { v100: 'alexnet' }, coefficientsFrom: 'alexnet' },
  { model: 'vgg16', prior: { v100: 'vgg19' }, coefficientsFrom: 'vgg19' },
  { model: 'resnet18', prior: { fitted: 'resnet50' }, coefficientsFrom: 'resnet50' },
  { model: 'vgg19', prior: { fitted: 'vgg16' }, coefficientsFrom: 'vgg19' },
  { model: 'mnasnet', prior: { fitted: 'resnet18' }, coefficientsFrom: 'resnet50' },
  { model: 'mobilenet', prior: { fitted: 'mnasnet' }, coefficientsFrom: 'resnet50' },
  { model: 'efficientnet', prior: { fitted: 'mnasnet' }, coefficientsFrom: 'resnet50' },
];

/** Log-space prior widths of the surface parameters (PARAM_NAMES order): how far anchors may bend the shape. */
const PRIOR_SIGMA = [0.7, 1.0, 0.7, 0.7, 0.15, 0.4, 0.5, 0.3, 0.7, 1.5, 0.7];
/** Log-space prior width of an interference coefficient freed by the anchors. */
const COEFF_SIGMA = 0.5;
/** Relative tolerance the fit aims at: 1% on table cells, 3% on the throughputs. */
const CELL_SIGMA = 0.01;
const THROUGHPUT_SIGMA = 0.03;

/** PCIe 3.0 x16 host link of both desktop GPUs, bytes per ms (docs/profiles-paper-cluster.md). */
export const PCIE3_X16_BYTES_PER_MS = 1e7;
export const INPUT_BYTES = 224 * 224 * 3 * 4;
export const OUTPUT_BYTES = 1000 * 4;

export interface Coefficients {
  alphaU: number;
  betaU: number;
  alphaCache: number;
}

export interface FitContext {
  readonly smCount: number;
  readonly pcieBytesPerMs: number;
  readonly cacheSelfWeight: number;
  readonly schedInterference: { readonly alphaSMs: number; readonly betaSMs: number };
  readonly kernels: ReadonlyMap<string, number>;
  readonly schedPerKernelMs: ReadonlyMap<string, number>;
}

/** `t_inf` of the measured model of a cell (section 4.1), with the surface standing in for the LWR. */
function predictCellMs(
  cell: { placements: readonly AnchorPlacement[] },
  surface: Surface,
  coeffs: ReadonlyMap<string, Coefficients>,
  ctx: FitContext,
): number {
  const n = cell.placements.length;
  const shared = n > 1;
  const l2 = cell.placements.map((p) => {
    const c = coeffs.get(p.model)!;
    return l2Utilisation(c.alphaU, c.betaU, p.pct);
  });
  const total = l2.reduce((a, b) => a + b, 0);
  const me = cell.placements[0]!;
  const c = coeffs.get(me.model)!;
  const solo = surfaceRunMs(surface, me.batch, (me.pct / 100) * ctx.smCount);
  const run = runningMs(solo, c.alphaCache, total - l2[0]!, l2[0]!, ctx.cacheSelfWeight, shared);
  const kernels = ctx.kernels.get(me.model)!;
  const sched =
    (ctx.schedPerKernelMs.get(me.model)! +
      schedInterferencePerKernelMs(n, ctx.schedInterference.alphaSMs, ctx.schedInterference.betaSMs)) *
    kernels;
  return (
    uploadMs(INPUT_BYTES, me.batch, ctx.pcieBytesPerMs) +
    sched +
    run +
    feedbackMs(OUTPUT_BYTES, me.batch, ctx.pcieBytesPerMs)
  );
}

/**
 * A coefficient the anchors free: a neighbour's share varies along a row, so its L2 term and the measured model's
 * alpha^cache are seen.
 */
interface FreeCoefficient {
  readonly model: string;
  readonly field: keyof Coefficients;
}

function freedCoefficients(model: string, cells: readonly AnchorCell[]): FreeCoefficient[] {
  const out: FreeCoefficient[] = [];
  const rows = new Map<string, AnchorCell[]>();
  for (const c of cells) rows.set(`${c.table}/${c.row}`, [...(rows.get(`${c.table}/${c.row}`) ?? []), c]);
  for (const row of rows.values()) {
    for (let j = 1; j < row[0]!.placements.length; j++) {
      const pcts = new Set(row.map((c) => c.placements[j]!.pct));
      if (pcts.size < 2) continue;
      const neighbour = row[0]!.placements[j]!.model;
      for (const f of [
        { model, field: 'alphaCache' as const },
        { model: neighbour, field: 'alphaU' as const },
        { model: neighbour, field: 'betaU' as const },
      ]) {
        if (!out.some((o) => o.model === f.model && o.field === f.field)) out.push(f);
      }
    }
  }
  return out;
}

/**
 * Fits one model's surface (and any coefficients its anchors free) by Levenberg-Marquardt: log
 * residuals of its cells and throughputs through the full latency model, prior residuals that keep
 * the shape near `prior`, and the monotonicity penalty. Updates `coeffs` in place for freed ones.
 */
export function fitModel(
  model: string,
  prior: Surface,
  cells: readonly AnchorCell[],
  throughputs: readonly ThroughputAnchor[],
  coeffs: Map<string, Coefficients>,
  ctx: FitContext,
): { surface: Surface; freed: { model: string; field: string; start: number; fitted: number }[] } {
  const mine = cells.filter((c) => c.placements[0]!.model === model);
  const tput = throughputs.filter((t) => t.model === model);
  const free = freedCoefficients(model, mine);
  const theta0 = [...toTheta(prior), ...free.map((f) => Math.log(coeffs.get(f.model)![f.field]))];
  const np = PARAM_NAMES.length;
  const withCoeffs = (t: readonly number[]): Map<string, Coefficients> => {
    if (free.length === 0) return coeffs;
    const m = new Map([...coeffs].map(([k, v]) => [k, { ...v }]));
    free.forEach((f, i) => {
      m.get(f.model)![f.field] = Math.exp(t[np + i]!);
    });
    return m;
  };
  const residuals = (t: readonly number[]): number[] => {
    const s = fromTheta(t);
    const cs = withCoeffs(t);
    const out = mine.map((c) => Math.log(predictCellMs(c, s, cs, ctx) / c.observedMs) / CELL_SIGMA);
    for (const a of tput) {
      const ms = predictCellMs({ placements: [{ model, batch: a.batch, pct: a.pct }] }, s, cs, ctx);
      out.push(Math.log((a.batch * 1000) / ms / a.ratePerS) / THROUGHPUT_SIGMA);
    }
    t.forEach((v, i) => out.push((v - theta0[i]!) / (i < np ? PRIOR_SIGMA[i]! : COEFF_SIGMA)));
    return [...out, ...monotonicityPenalty(s, ctx.smCount, 30)];
  };
  const theta = levenbergMarquardt(residuals, theta0, 800);
  const freed = free.map((f, i) => ({
    model: f.model,
    field: f.field,
    start: coeffs.get(f.model)![f.field],
    fitted: Math.exp(theta[np + i]!),
  }));
  const final = withCoeffs(theta);
  for (const f of free) coeffs.get(f.model)![f.field] = final.get(f.model)![f.field];
  return { surface: fromTheta(theta), freed };
}

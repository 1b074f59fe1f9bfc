// `inss profile derive`: profiles for the paper's cluster (RTX 2060 Super and RTX 2060), whose
// provenance is "derived" (docs/profiles-paper-cluster.md). No full latency tables of these GPUs
// are published; the paper gives a few points (Tables 2 and 3 of section 6.2, and batch-1
// throughputs at 100%), collected in data/paper-cluster/README.md. This module
//  1. parses those points out of the README's text (`parsePaperTables`), so that no published
//     number is copied into the code;
//  2. fits a smooth parametric running-time surface o_r(batch, SMs) to each V100 analogue model;
//  3. carries each surface to the RTX 2060 Super by hardware ratios and bends it, by
//     Levenberg-Marquardt with prior residuals, until the full latency model of section 4.1
//     (transfers, scheduling, cache interference) reproduces the published points;
//  4. emits LWR samples of the surfaces, picks LWR bandwidths so that the compiled predictor
//     follows the surfaces, and scales the RTX 2060 Super profile to the RTX 2060.
// Pure: the caller reads the files and writes the result. Deterministic: no randomness anywhere.
import { Matrix, solve } from 'ml-matrix';
import { feedbackMs, l2Utilisation, runningMs, schedInterferencePerKernelMs, uploadMs } from '../model/latency.js';
import { lwrRunMs, toLwrPoints } from '../model/lwr.js';
import { LatencyModel, type Placement } from '../model/predictor.js';
import { InvalidInputError, type LwrSettings, type ModelProfile, type Profile, ProfileSchema, type RunSample } from '../profile/schema.js';
import { derivedMemory, MODEL_FACTS } from './catalog.js';

// ---------------------------------------------------------------------------------------------
// 1. The published points, parsed from the README text
// ---------------------------------------------------------------------------------------------

/** One model on the GPU in a published cell. */
export interface AnchorPlacement {
  readonly model: string;
  readonly batch: number;
  readonly pct: number;
}

/** One observed cell of Table 2 or 3: the GPU holds `placements`; `placements[0]` is the measured model. */
export interface AnchorCell {
  readonly table: 'Table 2' | 'Table 3';
  /** The row's case as published ("AlexNet with ResNet50*"). */
  readonly row: string;
  /** The column header as published ("b=4", "24%"). */
  readonly column: string;
  readonly placements: readonly AnchorPlacement[];
  readonly observedMs: number;
}

/** A published throughput of one model alone (req/s) at a batch and share. */
export interface ThroughputAnchor {
  readonly model: string;
  readonly batch: number;
  readonly pct: number;
  readonly ratePerS: number;
}

/** A GPU of the cluster as the README's hardware table and prose describe it. */
export interface GpuSpec {
  readonly name: string;
  readonly smCount: number;
  readonly memMb: number;
  readonly l2Mb: number;
  readonly memBandwidthGBs: number;
  readonly mpsUnitPct: number;
}

export interface PaperAnchors {
  readonly cells: readonly AnchorCell[];
  readonly throughputs: readonly ThroughputAnchor[];
  readonly gpus: { readonly rtx2060s: GpuSpec; readonly rtx2060: GpuSpec };
}

/** Model names as the paper writes them -> profile ids (MODEL_FACTS keys). */
function modelId(published: string, where: string): string {
  const id = published.replace(/\*/g, '').replace(/\(.*?\)/g, '').trim().toLowerCase();
  if (!(id in MODEL_FACTS)) throw new InvalidInputError(`${where}: unknown model '${published}' (known: ${Object.keys(MODEL_FACTS).join(', ')})`);
  return id;
}

const NUMBER = String.raw`(\d+(?:\.\d+)?)`;

/** The markdown table (header + body rows, separator dropped) starting at the first `|` line at or after `from`. */
function tableAfter(lines: readonly string[], from: number, where: string): string[][] {
  let i = from;
  while (i < lines.length && !lines[i]!.trim().startsWith('|')) i++;
  const rows: string[][] = [];
  for (; i < lines.length && lines[i]!.trim().startsWith('|'); i++) {
    const cells = lines[i]!.trim().replace(/^\||\|$/g, '').split('|').map((c) => c.trim());
    if (cells.every((c) => /^:?-+:?$/.test(c))) continue;
    rows.push(cells);
  }
  if (rows.length < 2) throw new InvalidInputError(`${where}: no table found`);
  return rows;
}

function lineIndex(lines: readonly string[], re: RegExp, what: string): { index: number; match: RegExpMatchArray } {
  for (let i = 0; i < lines.length; i++) {
    const match = lines[i]!.match(re);
    if (match) return { index: i, match };
  }
  throw new InvalidInputError(`paper-cluster README: ${what} not found`);
}

function parseNumber(text: string, where: string): number {
  const v = Number(text.replace(/[^\d.]/g, ''));
  if (!(text.trim().length > 0) || !Number.isFinite(v) || v <= 0) throw new InvalidInputError(`${where}: expected a positive number, got '${text}'`);
  return v;
}

/**
 * Parses one published table. Row semantics (the README's legend): the first model named is the
 * measured one; a starred model X* is a fixed neighbour (`starred`); every unstarred model takes
 * the column's value (`column(value)`): "A with B*" varies A, "E* beside M" varies M while E is measured.
 */
function parseCaseTable(
  lines: readonly string[],
  start: number,
  table: AnchorCell['table'],
  columnRe: RegExp,
  column: (value: number) => { batch?: number; pct?: number },
  base: { batch: number; pct: number },
  starred: { batch: number; pct: number },
): AnchorCell[] {
  const where = `paper-cluster README: ${table}`;
  const [header, ...body] = tableAfter(lines, start + 1, where);
  const columns = header!.slice(1).map((h) => {
    const m = h.match(columnRe);
    if (!m) throw new InvalidInputError(`${where}: column header '${h}' not understood`);
    return { label: h, value: Number(m[1]) };
  });
  const cells: AnchorCell[] = [];
  for (const row of body) {
    const label = row[0] ?? '';
    const names = label.split(/\s+/).filter((w) => w.length > 0 && !['alone', 'with', 'and', 'beside'].includes(w.toLowerCase()));
    if (names.length === 0) throw new InvalidInputError(`${where}: row '${label}' names no model`);
    if (names.every((n) => n.endsWith('*'))) throw new InvalidInputError(`${where}: row '${label}' has no model that takes the column's value`);
    if (row.length !== columns.length + 1) throw new InvalidInputError(`${where}: row '${label}' has ${row.length - 1} values for ${columns.length} columns`);
    columns.forEach((col, c) => {
      const placements = names.map((n): AnchorPlacement => {
        const model = modelId(n, `${where}, row '${label}'`);
        if (n.endsWith('*')) return { model, ...starred };
        return { model, ...base, ...column(col.value) };
      });
      cells.push({ table, row: label, column: col.label, placements, observedMs: parseNumber(row[c + 1]!, `${where}, row '${label}', column '${col.label}'`) });
    });
  }
  return cells;
}

/**
 * Reads the published points out of the text of data/paper-cluster/README.md: Tables 2
 * and 3 (with the shares and batches their captions state), the batch-1 throughputs, and the
 * hardware of the two GPUs. Throws InvalidInputError naming what is missing or malformed.
 */
export function parsePaperTables(markdown: string): PaperAnchors {
  const lines = markdown.split(/\r?\n/);

  // "Table 2, every model at 30% of the GPU; X* means X runs beside it with batch 4:"
  const t2 = lineIndex(lines, new RegExp(String.raw`^Table 2\b.*?at ${NUMBER}% of the GPU.*?with batch (\d+)`), 'Table 2 (caption "Table 2, every model at P% of the GPU; ... with batch B")');
  const t2Pct = Number(t2.match[1]);
  const t2StarBatch = Number(t2.match[2]);
  const table2 = parseCaseTable(lines, t2.index, 'Table 2', /^b\s*=\s*(\d+)$/, (b) => ({ batch: b }), { batch: 1, pct: t2Pct }, { batch: t2StarBatch, pct: t2Pct });

  // "Table 3, batch 4 at 6/24/42/60% of the GPU; X* means X runs beside it at 18%:"
  const t3 = lineIndex(lines, new RegExp(String.raw`^Table 3\b.*?batch (\d+) at .*?beside it at ${NUMBER}%`), 'Table 3 (caption "Table 3, batch B at ...; ... beside it at P%")');
  const t3Batch = Number(t3.match[1]);
  const t3StarPct = Number(t3.match[2]);
  const table3 = parseCaseTable(lines, t3.index, 'Table 3', new RegExp(String.raw`^${NUMBER}\s*%$`), (p) => ({ pct: p }), { batch: t3Batch, pct: 100 }, { batch: t3Batch, pct: t3StarPct });

  // "- Throughput at 100% of the GPU and batch 1, used by ... (req/s): AlexNet 788.6, ..., EfficientNet 217.3."
  const tm = markdown.match(new RegExp(String.raw`Throughput at ${NUMBER}% of the GPU and batch (\d+)[^:]*:([\s\S]*?)(?:\n\s*-\s|\n\s*\n|$)`));
  if (!tm) throw new InvalidInputError('paper-cluster README: the throughput list ("Throughput at P% of the GPU and batch B ...: Model rate, ...") not found');
  const throughputs = tm[3]!
    .replace(/\.\s*$/, '')
    .split(',')
    .map((item): ThroughputAnchor => {
      const m = item.trim().match(new RegExp(String.raw`^([A-Za-z][\w]*(?:\([^)]*\))?)\s+${NUMBER}$`));
      if (!m) throw new InvalidInputError(`paper-cluster README: throughput entry '${item.trim()}' not understood`);
      return { model: modelId(m[1]!, 'paper-cluster README: throughputs'), batch: Number(tm[2]), pct: Number(tm[1]), ratePerS: Number(m[2]) };
    });

  return { cells: [...table2, ...table3], throughputs, gpus: parseHardware(lines) };
}

/** The hardware table (GPU | SMs | memory | L2 | memory bandwidth) and the MPS units in the prose after it. */
function parseHardware(lines: readonly string[]): PaperAnchors['gpus'] {
  const h = lineIndex(lines, /^#+\s*Hardware/i, 'the Hardware section');
  const [header, ...rows] = tableAfter(lines, h.index + 1, 'paper-cluster README: hardware');
  const col = (re: RegExp): number => {
    const i = header!.findIndex((c) => re.test(c));
    if (i < 0) throw new InvalidInputError(`paper-cluster README: hardware table lacks a column matching ${String(re)}`);
    return i;
  };
  const [cSm, cMem, cL2, cBw] = [col(/^SMs?$/i), col(/^memory$/i), col(/^L2$/i), col(/bandwidth/i)];
  const units = lines.join(' ').match(new RegExp(String.raw`${NUMBER}% on the 2060 Super, ${NUMBER}% on the 2060\b`));
  if (!units) throw new InvalidInputError('paper-cluster README: MPS units ("N% on the 2060 Super, M% on the 2060") not found');
  const spec = (name: string, mpsUnitPct: number): GpuSpec => {
    const row = rows.find((r) => r[0]?.trim().toLowerCase() === name.toLowerCase());
    if (!row) throw new InvalidInputError(`paper-cluster README: hardware table has no row '${name}'`);
    const where = `paper-cluster README: hardware, ${name}`;
    return {
      name,
      smCount: parseNumber(row[cSm] ?? '', where),
      memMb: parseNumber(row[cMem] ?? '', where),
      l2Mb: parseNumber(row[cL2] ?? '', where),
      memBandwidthGBs: parseNumber(row[cBw] ?? '', where),
      mpsUnitPct,
    };
  };
  return { rtx2060s: spec('RTX 2060 Super', Number(units[1])), rtx2060: spec('RTX 2060', Number(units[2])) };
}

// ---------------------------------------------------------------------------------------------
// 2. The parametric running-time surface
// ---------------------------------------------------------------------------------------------

/**
 * o_r(b, x) in ms for batch b on x SMs (x = pct/100 * smCount), alone on the GPU:
 *
 *   o_r = eMs + dMs * w(b) + (aMs + cMs * w(b)) / s(x, b)^g
 *   w(b) = b * (1 + (b / kneeBatch)^m)^(-r/m)      batch work: linear, bending to b^(1-r) past the knee
 *   s(x, b) = (x^-k + xSat(b)^-k)^(-1/k)            SMs the batch can use: x, capped smoothly at
 *   xSat(b) = qSms * b^h                            the parallelism of the batch (saturation)
 *
 * eMs is the fixed per-batch cost, dMs the share-independent (memory-bound) cost per unit of batch
 * work, (a + c w)/s^g the SM-bound part. With r < 1 and h * g < 1 the surface rises with batch;
 * it always falls (weakly, once saturated) with share.
 */
export interface Surface {
  readonly eMs: number;
  readonly dMs: number;
  readonly aMs: number;
  readonly cMs: number;
  readonly g: number;
  readonly k: number;
  readonly qSms: number;
  readonly h: number;
  readonly kneeBatch: number;
  readonly r: number;
  /** Sharpness of the knee. */
  readonly m: number;
}

const R_MAX = 0.95;

/** w(b): batch work, increasing in b whenever r < 1 (r is kept below R_MAX). */
export function batchWork(batch: number, s: Surface): number {
  return batch * (1 + (batch / s.kneeBatch) ** s.m) ** (-s.r / s.m);
}

/** s(x, b): SMs a batch can use, never more than x nor than its saturation xSat(b); increasing in x. */
export function usableSms(sms: number, batch: number, s: Surface): number {
  const sat = s.qSms * batch ** s.h;
  return (sms ** -s.k + sat ** -s.k) ** (-1 / s.k);
}

/** o_r in ms of a batch alone on `sms` SMs (the LWR target of section 4.1, in closed form). */
export function surfaceRunMs(s: Surface, batch: number, sms: number): number {
  const w = batchWork(batch, s);
  return s.eMs + s.dMs * w + (s.aMs + s.cMs * w) / usableSms(sms, batch, s) ** s.g;
}

// Parameter vector for the optimiser: logs of the positive parameters, a logit for r.
const PARAM_NAMES = ['eMs', 'dMs', 'aMs', 'cMs', 'g', 'k', 'qSms', 'h', 'kneeBatch', 'r', 'm'] as const;

function toTheta(s: Surface): number[] {
  const rr = Math.min(Math.max(s.r / R_MAX, 1e-6), 1 - 1e-6);
  return [Math.log(s.eMs), Math.log(s.dMs), Math.log(s.aMs), Math.log(s.cMs), Math.log(s.g), Math.log(s.k), Math.log(s.qSms), Math.log(s.h), Math.log(s.kneeBatch), Math.log(rr / (1 - rr)), Math.log(s.m)];
}

function fromTheta(t: readonly number[]): Surface {
  const e = (i: number): number => Math.exp(t[i]!);
  return { eMs: e(0), dMs: e(1), aMs: e(2), cMs: e(3), g: e(4), k: e(5), qSms: e(6), h: e(7), kneeBatch: e(8), r: R_MAX / (1 + Math.exp(-t[9]!)), m: e(10) };
}

// ---------------------------------------------------------------------------------------------
// Levenberg-Marquardt (deterministic; forward-difference Jacobian; Marquardt's diagonal scaling)
// ---------------------------------------------------------------------------------------------

/** Minimises sum(residuals(theta)^2) from theta0. Returns the best theta found. */
export function levenbergMarquardt(residuals: (theta: readonly number[]) => number[], theta0: readonly number[], maxIterations = 400): number[] {
  let theta = [...theta0];
  let r = residuals(theta);
  let cost = sumSq(r);
  let lambda = 1e-2;
  const n = theta.length;
  for (let it = 0; it < maxIterations; it++) {
    const jac: number[][] = r.map(() => new Array<number>(n).fill(0));
    for (let j = 0; j < n; j++) {
      const step = 1e-6 * Math.max(1, Math.abs(theta[j]!));
      const t2 = [...theta];
      t2[j] = theta[j]! + step;
      const r2 = residuals(t2);
      for (let i = 0; i < r.length; i++) jac[i]![j] = (r2[i]! - r[i]!) / step;
    }
    const J = new Matrix(jac);
    const jtj = J.transpose().mmul(J);
    const jtr = J.transpose().mmul(Matrix.columnVector(r));
    let improved = false;
    for (let attempt = 0; attempt < 12; attempt++) {
      const a = jtj.clone();
      for (let j = 0; j < n; j++) a.set(j, j, jtj.get(j, j) * (1 + lambda) + 1e-12);
      const delta = solve(a, jtr.clone().mul(-1)).to1DArray();
      const cand = theta.map((v, j) => v + delta[j]!);
      const rc = residuals(cand);
      const cc = sumSq(rc);
      if (Number.isFinite(cc) && cc < cost) {
        const gain = cost - cc;
        theta = cand;
        r = rc;
        cost = cc;
        lambda = Math.max(lambda / 3, 1e-9);
        improved = gain > 1e-12 * Math.max(1, cost);
        break;
      }
      lambda *= 4;
    }
    if (!improved) break;
  }
  return theta;
}

function sumSq(r: readonly number[]): number {
  let s = 0;
  for (const v of r) s += v * v;
  return s;
}

/** Residuals that stay 0 while the surface rises with batch and falls with SMs on a coarse grid (a soft constraint). */
function monotonicityPenalty(s: Surface, smCount: number, weight: number): number[] {
  const batches = [1, 2, 4, 8, 16, 32];
  const pcts = [3, 6, 12, 24, 48, 75, 100];
  const out: number[] = [];
  for (const p of pcts) {
    for (let i = 1; i < batches.length; i++) {
      const lo = surfaceRunMs(s, batches[i - 1]!, (p / 100) * smCount);
      const hi = surfaceRunMs(s, batches[i]!, (p / 100) * smCount);
      out.push(weight * Math.max(0, Math.log(lo / hi) + 0.02)); // at least 2% more per doubling of batch
    }
  }
  for (const b of batches) {
    for (let i = 1; i < pcts.length; i++) {
      const more = surfaceRunMs(s, b, (pcts[i]! / 100) * smCount);
      const less = surfaceRunMs(s, b, (pcts[i - 1]! / 100) * smCount);
      out.push(weight * Math.max(0, Math.log(more / less)));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// 2b. Fitting a surface to a measured solo table (the V100 analogues)
// ---------------------------------------------------------------------------------------------

/** Fits the surface to measured solo running times (LWR samples of a measured profile). Log residuals. */
export function fitSurfaceToSamples(samples: readonly RunSample[], smCount: number): { surface: Surface; meanRelErr: number; maxRelErr: number } {
  const b1 = samples.filter((s) => s.batch === 1).sort((x, y) => x.pct - y.pct);
  const bMax = Math.max(...samples.map((s) => s.batch));
  const ref = (batch: number): number => {
    const row = samples.filter((s) => s.batch === batch).sort((x, y) => x.pct - y.pct);
    return row[0]!.runMs * ((row[0]!.pct / 100) * smCount);
  };
  const start: Surface = {
    eMs: 0.2 * (b1.at(-1)?.runMs ?? 1),
    dMs: 1e-3,
    aMs: 0.5 * ref(1),
    cMs: Math.max((ref(bMax) - ref(1)) / (bMax - 1), 1e-3),
    g: 1,
    k: 4,
    qSms: 0.4 * smCount,
    h: 0.5,
    kneeBatch: 64,
    r: 0.05,
    m: 2,
  };
  const theta0 = toTheta(start);
  const res = (t: readonly number[]): number[] => {
    const s = fromTheta(t);
    const out = samples.map((x) => Math.log(surfaceRunMs(s, x.batch, (x.pct / 100) * smCount) / x.runMs));
    // Weak priors keep unidentified parameters (the knee, where the data is linear) at their start.
    t.forEach((v, i) => out.push((v - theta0[i]!) / 5));
    return [...out, ...monotonicityPenalty(s, smCount, 10)];
  };
  const surface = fromTheta(levenbergMarquardt(res, theta0, 600));
  let sum = 0;
  let max = 0;
  for (const x of samples) {
    const e = Math.abs(surfaceRunMs(surface, x.batch, (x.pct / 100) * smCount) / x.runMs - 1);
    sum += e;
    max = Math.max(max, e);
  }
  return { surface, meanRelErr: sum / samples.length, maxRelErr: max };
}

// ---------------------------------------------------------------------------------------------
// 3. Carrying surfaces across GPUs and models
// ---------------------------------------------------------------------------------------------

/**
 * Fraction of the SM-bound running time that waits on DRAM. The V100 analogues' solo tables
 * (data/v100/solo.json, "dram", percent of peak) average 16% (alexnet), 13% (resnet50)
 * and 39% (vgg19): about 0.2 over the three.
 */
export const DRAM_BOUND_FRACTION = 0.2;

/** The hardware of a GPU as far as the surface scaling needs it. */
interface Hardware {
  readonly smCount: number;
  readonly memBandwidthGBs: number;
  readonly l2Mb: number;
}

/**
 * A surface (in SM units) moved from one GPU to another. SM-bound work per SM is kept (Volta and
 * Turing SMs both issue 64 FP32 lanes per clock); its DRAM-bound fraction and the share-independent
 * memory term d scale with the inverse bandwidth ratio; the fixed cost e (launches, host work)
 * and the saturation in SMs are kept.
 */
export function scaleSurfaceToGpu(s: Surface, from: Hardware, to: Hardware): Surface {
  const bw = from.memBandwidthGBs / to.memBandwidthGBs;
  const smPart = 1 + DRAM_BOUND_FRACTION * (bw - 1);
  return { ...s, aMs: s.aMs * smPart, cMs: s.cMs * smPart, dMs: s.dMs * bw };
}

/**
 * A surface moved from one model to another on the same GPU: the work terms (a, c, d) and the
 * SMs a batch can fill (qSms) scale with GFLOPs per image, the fixed cost with the kernel count.
 */
export function scaleSurfaceToModel(s: Surface, from: string, to: string): Surface {
  const f = MODEL_FACTS[from]!;
  const t = MODEL_FACTS[to]!;
  const work = t.gflops / f.gflops;
  return { ...s, aMs: s.aMs * work, cMs: s.cMs * work, dMs: s.dMs * work, qSms: s.qSms * work, eMs: s.eMs * (t.kernels / f.kernels) };
}

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
const DERIVATIONS: readonly Derivation[] = [
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
const INPUT_BYTES = 224 * 224 * 3 * 4;
const OUTPUT_BYTES = 1000 * 4;

interface Coefficients {
  alphaU: number;
  betaU: number;
  alphaCache: number;
}

interface FitContext {
  readonly smCount: number;
  readonly pcieBytesPerMs: number;
  readonly cacheSelfWeight: number;
  readonly schedInterference: { readonly alphaSMs: number; readonly betaSMs: number };
  readonly kernels: ReadonlyMap<string, number>;
  readonly schedPerKernelMs: ReadonlyMap<string, number>;
}

/** `t_inf` of the measured model of a cell (section 4.1), with the surface standing in for the LWR. */
function predictCellMs(cell: { placements: readonly AnchorPlacement[] }, surface: Surface, coeffs: ReadonlyMap<string, Coefficients>, ctx: FitContext): number {
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
  const sched = (ctx.schedPerKernelMs.get(me.model)! + schedInterferencePerKernelMs(n, ctx.schedInterference.alphaSMs, ctx.schedInterference.betaSMs)) * kernels;
  return uploadMs(INPUT_BYTES, me.batch, ctx.pcieBytesPerMs) + sched + run + feedbackMs(OUTPUT_BYTES, me.batch, ctx.pcieBytesPerMs);
}

/** A coefficient the anchors free: a neighbour's share varies along a row, so its L2 term and the measured model's alpha^cache are seen. */
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
      for (const f of [{ model, field: 'alphaCache' as const }, { model: neighbour, field: 'alphaU' as const }, { model: neighbour, field: 'betaU' as const }]) {
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
function fitModel(
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
    free.forEach((f, i) => { m.get(f.model)![f.field] = Math.exp(t[np + i]!); });
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
  const freed = free.map((f, i) => ({ model: f.model, field: f.field, start: coeffs.get(f.model)![f.field], fitted: Math.exp(theta[np + i]!) }));
  const final = withCoeffs(theta);
  for (const f of free) coeffs.get(f.model)![f.field] = final.get(f.model)![f.field];
  return { surface: fromTheta(theta), freed };
}

// ---------------------------------------------------------------------------------------------
// 5. From surfaces to profiles
// ---------------------------------------------------------------------------------------------

// Batches sampled: dense where the surface bends (saturation at small batch, the knee near 8..16).
const GRID_BATCHES = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32];
/** Below this share, half-unit shares are sampled too: light models saturate there (a few SMs). */
const DENSE_BELOW_PCT = 36;
const LWR_BATCH_BANDWIDTHS = [0.06, 0.08, 0.1, 0.15, 0.2, 0.25, 0.3];
const LWR_PCT_BANDWIDTHS = [0.02, 0.03, 0.04, 0.06, 0.08, 0.1, 0.125, 0.15, 0.2];

/** Shares sampled: every multiple of the MPS unit (half units below DENSE_BELOW_PCT), 100%, and the extra shares asked for (anchor shares). */
export function gridPcts(mpsUnitPct: number, extra: readonly number[]): number[] {
  const set = new Set<number>([100, ...extra]);
  for (let i = 2; (i / 2) * mpsUnitPct <= 100 + 1e-9; i++) {
    const p = (i / 2) * mpsUnitPct;
    if (i % 2 === 0 || p < DENSE_BELOW_PCT) set.add(Math.round(p * 1000) / 1000);
  }
  return [...set].sort((a, b) => a - b);
}

function roundSig(x: number, digits = 6): number {
  return Number(x.toPrecision(digits));
}

function surfaceSamples(s: Surface, smCount: number, pcts: readonly number[]): RunSample[] {
  const out: RunSample[] = [];
  for (const batch of GRID_BATCHES) for (const pct of pcts) out.push({ batch, pct, runMs: roundSig(surfaceRunMs(s, batch, (pct / 100) * smCount)) });
  return out;
}

/** Where the compiled predictor is checked against the surface: every batch 1..32, shares from the MPS unit to 100% in steps of 1%. */
function checkPoints(mpsUnitPct: number): { batch: number; pct: number }[] {
  const out: { batch: number; pct: number }[] = [];
  for (let batch = 1; batch <= 32; batch++) {
    for (let pct = Math.ceil(mpsUnitPct); pct <= 100; pct++) out.push({ batch, pct });
  }
  return out;
}

/** LWR fidelity: relative error of LWR over `samples` against the surface at the check points. */
function lwrFidelity(samples: ReadonlyMap<string, RunSample[]>, surfaces: ReadonlyMap<string, Surface>, smCount: number, settings: LwrSettings, points: readonly { batch: number; pct: number }[]): { maxRelErr: number; meanRelErr: number } {
  let max = 0;
  let sum = 0;
  let n = 0;
  for (const [model, list] of samples) {
    const pts = toLwrPoints(list);
    const s = surfaces.get(model)!;
    for (const q of points) {
      const e = Math.abs(lwrRunMs(pts, settings, q.batch, q.pct) / surfaceRunMs(s, q.batch, (q.pct / 100) * smCount) - 1);
      max = Math.max(max, e);
      sum += e;
      n++;
    }
  }
  return { maxRelErr: max, meanRelErr: sum / n };
}

/** The LWR bandwidths (from a small grid) whose compiled predictions follow the surfaces best (least max error). */
function chooseLwr(samples: ReadonlyMap<string, RunSample[]>, surfaces: ReadonlyMap<string, Surface>, smCount: number, mpsUnitPct: number): { settings: LwrSettings; maxRelErr: number; meanRelErr: number } {
  const points = checkPoints(mpsUnitPct).filter((_, i) => i % 3 === 0);
  let best: { settings: LwrSettings; maxRelErr: number; meanRelErr: number } | null = null;
  for (const bandwidthLogBatch of LWR_BATCH_BANDWIDTHS) {
    for (const bandwidthLogPct of LWR_PCT_BANDWIDTHS) {
      const settings = { bandwidthLogBatch, bandwidthLogPct };
      const f = lwrFidelity(samples, surfaces, smCount, settings, points);
      if (!best || f.maxRelErr < best.maxRelErr - 1e-9) best = { settings, ...f };
    }
  }
  return { ...best!, ...lwrFidelity(samples, surfaces, smCount, best!.settings, checkPoints(mpsUnitPct)) };
}

// ---------------------------------------------------------------------------------------------
// 6. The whole derivation
// ---------------------------------------------------------------------------------------------

export interface CellResult extends AnchorCell {
  readonly predictedMs: number;
  readonly relErr: number;
}

export interface ThroughputResult extends ThroughputAnchor {
  /** The compiled rtx2060s profile's b / t_inf at the anchor's batch and share. */
  readonly predictedPerS: number;
  readonly relErr: number;
  /** The same figure from the rtx2060 profile (no published counterpart). */
  readonly rtx2060PerS: number;
}

export interface DeriveReport {
  /** Every published cell, predicted by the compiled rtx2060s profile (LWR included). */
  readonly cells: readonly CellResult[];
  readonly maxCellRelErr: number;
  readonly throughputs: readonly ThroughputResult[];
  /** How well the parametric surface fits each V100 analogue's measured solo table. */
  readonly v100SurfaceFit: Readonly<Record<string, { meanRelErr: number; maxRelErr: number }>>;
  /** The fitted rtx2060s surfaces (in SMs of that GPU) and their priors. */
  readonly surfaces: Readonly<Record<string, { fitted: Surface; prior: Surface }>>;
  /** Interference coefficients the anchors moved from their V100-derived start. */
  readonly freedCoefficients: readonly { model: string; field: string; start: number; fitted: number }[];
  /** LWR bandwidths chosen and how closely the compiled predictor follows the surfaces (every batch 1..32, every 1% share). */
  readonly lwr: Readonly<Record<'rtx2060s' | 'rtx2060', { settings: LwrSettings; maxRelErr: number; meanRelErr: number }>>;
}

function requireHardware(p: Profile): Hardware {
  if (p.gpu.memBandwidthGBs === undefined) throw new InvalidInputError(`profile ${p.id}: gpu.memBandwidthGBs is needed to scale it to another GPU`);
  return { smCount: p.gpu.smCount, memBandwidthGBs: p.gpu.memBandwidthGBs, l2Mb: p.gpu.l2Mb };
}

/** `l` scaled to a GPU with a different L2: the same working set is a larger fraction of a smaller cache. */
function scaleL2(c: Coefficients, fromL2Mb: number, toL2Mb: number): Coefficients {
  const f = fromL2Mb / toL2Mb;
  return { alphaU: c.alphaU * f, betaU: c.betaU * f, alphaCache: c.alphaCache };
}

interface GpuBuild {
  readonly id: string;
  readonly spec: GpuSpec;
  readonly surfaces: ReadonlyMap<string, Surface>;
  readonly coeffs: ReadonlyMap<string, Coefficients>;
  readonly extraPcts: readonly number[];
  readonly source: string;
  readonly notes: readonly string[];
  readonly modelNotes: ReadonlyMap<string, string[]>;
}

function buildProfile(b: GpuBuild, v100: Profile, ctx: FitContext, command: string): { profile: Profile; lwr: { settings: LwrSettings; maxRelErr: number; meanRelErr: number } } {
  const pcts = gridPcts(b.spec.mpsUnitPct, b.extraPcts);
  const samples = new Map([...b.surfaces].map(([m, s]) => [m, surfaceSamples(s, b.spec.smCount, pcts)]));
  const lwr = chooseLwr(samples, b.surfaces, b.spec.smCount, b.spec.mpsUnitPct);
  const models: Record<string, ModelProfile> = {};
  for (const d of DERIVATIONS) {
    const c = b.coeffs.get(d.model)!;
    models[d.model] = {
      inputBytes: INPUT_BYTES,
      outputBytes: OUTPUT_BYTES,
      kernels: ctx.kernels.get(d.model)!,
      schedPerKernelMs: roundSig(ctx.schedPerKernelMs.get(d.model)!),
      l2: { alphaU: roundSig(c.alphaU), betaU: roundSig(c.betaU) },
      alphaCache: roundSig(c.alphaCache),
      memory: derivedMemory(MODEL_FACTS[d.model]!),
      runSamples: samples.get(d.model)!,
      notes: b.modelNotes.get(d.model) ?? [],
    };
  }
  const profile = ProfileSchema.parse({
    schemaVersion: 1,
    id: b.id,
    gpu: {
      name: `NVIDIA GeForce ${b.spec.name}`,
      smCount: b.spec.smCount,
      memMb: b.spec.memMb,
      l2Mb: b.spec.l2Mb,
      memBandwidthGBs: b.spec.memBandwidthGBs,
      pcieBytesPerMs: ctx.pcieBytesPerMs,
      mpsUnitPct: b.spec.mpsUnitPct,
      schedInterference: { ...v100.gpu.schedInterference },
      cacheSelfWeight: ctx.cacheSelfWeight,
    },
    lwr: lwr.settings,
    provenance: { kind: 'derived', source: b.source, command, notes: [...b.notes] },
    models,
  });
  return { profile, lwr };
}

/**
 * Derives the rtx2060s and rtx2060 profiles from the measured V100 profile and the published
 * points (docs/profiles-paper-cluster.md). `command` is recorded as the profiles' provenance.
 * Deterministic: the same inputs give byte-identical profiles.
 */
export function derivePaperCluster(v100: Profile, anchors: PaperAnchors, command: string): { rtx2060s: Profile; rtx2060: Profile; report: DeriveReport } {
  const v100Hw = requireHardware(v100);
  const super_ = anchors.gpus.rtx2060s;
  const plain = anchors.gpus.rtx2060;
  const known = new Set(DERIVATIONS.map((d) => d.model));
  for (const c of anchors.cells) {
    for (const p of c.placements) if (!known.has(p.model)) throw new InvalidInputError(`${c.table}, row '${c.row}': model '${p.model}' is not one of the paper's eight (${[...known].join(', ')})`);
  }

  // The V100 analogues' surfaces.
  const v100Fits: Record<string, { meanRelErr: number; maxRelErr: number }> = {};
  const v100Surfaces = new Map<string, Surface>();
  for (const d of DERIVATIONS) {
    for (const name of ['v100' in d.prior ? d.prior.v100 : null, d.coefficientsFrom]) {
      if (name === null || v100Surfaces.has(name)) continue;
      const m = v100.models[name];
      if (!m) throw new InvalidInputError(`profile ${v100.id}: model '${name}' is needed as an analogue but missing`);
      const fit = fitSurfaceToSamples(m.runSamples, v100.gpu.smCount);
      v100Surfaces.set(name, fit.surface);
      v100Fits[name] = { meanRelErr: fit.meanRelErr, maxRelErr: fit.maxRelErr };
    }
  }

  // Starting coefficients: the V100 analogue's, with L2 utilisation scaled by the L2-size ratio.
  const coeffs = new Map<string, Coefficients>();
  const schedPerKernelMs = new Map<string, number>();
  const kernels = new Map<string, number>();
  for (const d of DERIVATIONS) {
    const m = v100.models[d.coefficientsFrom]!;
    coeffs.set(d.model, scaleL2({ ...m.l2, alphaCache: m.alphaCache }, v100Hw.l2Mb, super_.l2Mb));
    schedPerKernelMs.set(d.model, m.schedPerKernelMs);
    kernels.set(d.model, MODEL_FACTS[d.model]!.kernels);
  }
  const ctx: FitContext = {
    smCount: super_.smCount,
    pcieBytesPerMs: PCIE3_X16_BYTES_PER_MS,
    cacheSelfWeight: v100.gpu.cacheSelfWeight,
    schedInterference: v100.gpu.schedInterference,
    kernels,
    schedPerKernelMs,
  };

  // Fit each model in turn, its prior carried from a V100 analogue or from a model fitted before it.
  const fitted = new Map<string, Surface>();
  const surfacesReport: Record<string, { fitted: Surface; prior: Surface }> = {};
  const freedCoefficients: DeriveReport['freedCoefficients'][number][] = [];
  const modelNotes = new Map<string, string[]>();
  for (const d of DERIVATIONS) {
    let prior: Surface;
    let priorNote: string;
    if ('v100' in d.prior) {
      prior = scaleSurfaceToGpu(v100Surfaces.get(d.prior.v100)!, v100Hw, super_);
      if (d.prior.v100 !== d.model) prior = scaleSurfaceToModel(prior, d.prior.v100, d.model);
      priorNote = `the measured V100 ${d.prior.v100} surface carried to this GPU by SM count and memory bandwidth${d.prior.v100 !== d.model ? ` and to ${d.model} by GFLOPs and kernels` : ''}`;
    } else {
      prior = scaleSurfaceToModel(fitted.get(d.prior.fitted)!, d.prior.fitted, d.model);
      priorNote = `this GPU's ${d.prior.fitted} surface scaled by GFLOPs and kernels`;
    }
    const r = fitModel(d.model, prior, anchors.cells, anchors.throughputs, coeffs, ctx);
    fitted.set(d.model, r.surface);
    surfacesReport[d.model] = { fitted: r.surface, prior };
    freedCoefficients.push(...r.freed);
    const nCells = anchors.cells.filter((c) => c.placements[0]!.model === d.model).length;
    const nTput = anchors.throughputs.filter((t) => t.model === d.model).length;
    modelNotes.set(d.model, [
      `runSamples: a smooth surface (docs/profiles-paper-cluster.md) started from ${priorNote}, anchored on ${nCells} published cells and ${nTput} published throughputs`,
      `l2, alphaCache, schedPerKernelMs: from the V100 ${d.coefficientsFrom}, L2 utilisation scaled by the L2-size ratio${r.freed.length > 0 ? `; ${r.freed.map((f) => `${f.model}.${f.field}`).join(', ')} adjusted to the anchors` : ''}`,
      'memory: derived from public model facts (src/fit/catalog.ts)',
    ]);
  }

  const anchorPcts = [...new Set([...anchors.cells.flatMap((c) => c.placements.map((p) => p.pct)), ...anchors.throughputs.map((t) => t.pct)])];
  const docs = 'docs/profiles-paper-cluster.md';
  const superBuild = buildProfile(
    {
      id: 'rtx2060s',
      spec: super_,
      surfaces: fitted,
      coeffs,
      extraPcts: anchorPcts,
      source: `derived: shapes from the V100 profile ${v100.id} (measured), scaled by SM count, memory bandwidth and L2 size, anchored on InSS Tables 2 and 3 and the batch-1 throughputs (data/paper-cluster/README.md); ${docs}`,
      notes: [
        `PCIe 3.0 x16 taken as ${PCIE3_X16_BYTES_PER_MS} bytes/ms, the figure measured on the V100's PCIe 3.0 x16 host`,
        'the published cells are what this profile was anchored on: reproducing them shows the model form can express them, not that it predicts unseen points',
      ],
      modelNotes,
    },
    v100,
    ctx,
    command,
  );

  // rtx2060: the rtx2060s surfaces in SMs, carried by memory bandwidth; L2 utilisation by the L2-size ratio.
  const plainSurfaces = new Map([...fitted].map(([m, s]) => [m, scaleSurfaceToGpu(s, super_, plain)]));
  const plainCoeffs = new Map([...coeffs].map(([m, c]) => [m, scaleL2(c, super_.l2Mb, plain.l2Mb)]));
  const plainBuild = buildProfile(
    {
      id: 'rtx2060',
      spec: plain,
      surfaces: plainSurfaces,
      coeffs: plainCoeffs,
      extraPcts: [],
      source: `derived: the rtx2060s profile scaled to the RTX 2060 by SM count (shares become fewer SMs), memory bandwidth and L2 size; no published points of this GPU; ${docs}`,
      notes: [`PCIe 3.0 x16 taken as ${PCIE3_X16_BYTES_PER_MS} bytes/ms`, 'no published latency of this GPU: every number is scaled from rtx2060s'],
      modelNotes: new Map(DERIVATIONS.map((d) => [d.model, [`runSamples: the rtx2060s surface on 30 SMs, its DRAM-bound part slowed by the bandwidth ratio`, 'l2: rtx2060s values scaled by the L2-size ratio; alphaCache and scheduling as rtx2060s', 'memory: derived from public model facts (src/fit/catalog.ts)']])),
    },
    v100,
    ctx,
    command,
  );

  const compiled = LatencyModel.compile(superBuild.profile);
  const compiledPlain = LatencyModel.compile(plainBuild.profile);
  const cells = anchors.cells.map((c): CellResult => {
    const predictedMs = compiled.predict(c.placements).latencyMs[0]!;
    return { ...c, predictedMs, relErr: predictedMs / c.observedMs - 1 };
  });
  const throughputs = anchors.throughputs.map((t): ThroughputResult => {
    const p: Placement[] = [{ model: t.model, batch: t.batch, pct: t.pct }];
    const predictedPerS = compiled.predict(p).throughputPerS[0]!;
    return { ...t, predictedPerS, relErr: predictedPerS / t.ratePerS - 1, rtx2060PerS: compiledPlain.predict(p).throughputPerS[0]! };
  });
  return {
    rtx2060s: superBuild.profile,
    rtx2060: plainBuild.profile,
    report: {
      cells,
      maxCellRelErr: Math.max(...cells.map((c) => Math.abs(c.relErr))),
      throughputs,
      v100SurfaceFit: v100Fits,
      surfaces: surfacesReport,
      freedCoefficients,
      lwr: { rtx2060s: superBuild.lwr, rtx2060: plainBuild.lwr },
    },
  };
}

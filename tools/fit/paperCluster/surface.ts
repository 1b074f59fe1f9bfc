// The parametric running-time surface o_r(batch, SMs) of one model alone on a GPU, its fit to a
// measured solo table, and its carrying across GPUs (hardware ratios) and models. Part of `inss
// profile derive` (derive.ts).
import { type RunSample } from '../../../src/profile/schema.js';
import { MODEL_FACTS } from '../catalog.js';
import { levenbergMarquardt } from '../leastSquares.js';

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
export const PARAM_NAMES = ['eMs', 'dMs', 'aMs', 'cMs', 'g', 'k', 'qSms', 'h', 'kneeBatch', 'r', 'm'] as const;

export function toTheta(s: Surface): number[] {
  const rr = Math.min(Math.max(s.r / R_MAX, 1e-6), 1 - 1e-6);
  return [
    Math.log(s.eMs),
    Math.log(s.dMs),
    Math.log(s.aMs),
    Math.log(s.cMs),
    Math.log(s.g),
    Math.log(s.k),
    Math.log(s.qSms),
    Math.log(s.h),
    Math.log(s.kneeBatch),
    Math.log(rr / (1 - rr)),
    Math.log(s.m),
  ];
}

export function fromTheta(t: readonly number[]): Surface {
  const e = (i: number): number => Math.exp(t[i]!);
  return {
    eMs: e(0),
    dMs: e(1),
    aMs: e(2),
    cMs: e(3),
    g: e(4),
    k: e(5),
    qSms: e(6),
    h: e(7),
    kneeBatch: e(8),
    r: R_MAX / (1 + Math.exp(-t[9]!)),
    m: e(10),
  };
}

/** Residuals that stay 0 while the surface rises with batch and falls with SMs on a coarse grid (a soft constraint). */
export function monotonicityPenalty(s: Surface, smCount: number, weight: number): number[] {
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
export function fitSurfaceToSamples(
  samples: readonly RunSample[],
  smCount: number,
): { surface: Surface; meanRelErr: number; maxRelErr: number } {
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
export interface Hardware {
  readonly smCount: number;
  readonly memBandwidthGBs: number;
  readonly l2Mb: number;
}

/**
 * A surface (in SM units) moved from one GPU to another. SM-bound work per SM is kept (Volta and
 * Turing SMs both run 64 FP32 lanes per clock); its DRAM-bound fraction and the share-independent
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
  return {
    ...s,
    aMs: s.aMs * work,
    cMs: s.cMs * work,
    dMs: s.dMs * work,
    qSms: s.qSms * work,
    eMs: s.eMs * (t.kernels / f.kernels),
  };
}

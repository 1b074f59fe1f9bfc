// The shapes of a fitted model's running time o_r(b, p) that the online fit (fit.ts) extrapolates with: in batch
// (`runAtFull`: above and below the sizes seen) and in share (`shareShape`, `batchExponents`), from what was seen
// and the prior's shapes (prior.ts). Pure.
import type { Prior } from './prior.js';

/** Solo batches at one (batch, share): how many, and the sum of the logs of their GPU times. */
export interface SoloConfig {
  readonly batch: number;
  readonly pct: number;
  n: number;
  sumLogMs: number;
}

/** o_r(b, p) / o_r(b, 100): how a model's running time grows as its share shrinks. */
export type Share = (batch: number, pct: number) => number;

/**
 * o_r(b, 100) at any batch: seen, log-log between seen batches; below them, the prior's shape from the
 * smallest. Above them, the larger of the prior's shape and a power law from the largest seen batch whose
 * exponent is the slope (log-log) between the smallest and largest seen, at most 1 (1 when they span less than
 * a doubling). A model's running time grows less than in proportion to its batch and more slowly the larger the
 * batch, so that slope is an upper bound where the prior's median shape (that of the profiled models, often
 * smaller ones) can be far under: a planner given the fit then never counts on batches it has not seen being
 * cheaper than the model's own batches say. Where the prior's shapes are the model's own (a refit of a profiled
 * model), its shape alone above them too.
 */
export function runAtFull(seen: ReadonlyMap<number, number>, prior: Prior, b: number): number {
  const at = seen.get(b);
  if (at !== undefined) return at;
  const bs = [...seen.keys()].sort((x, y) => x - y);
  const hi = bs.find((x) => x > b);
  const lo = [...bs].reverse().find((x) => x < b);
  if (lo !== undefined && hi !== undefined) {
    const f = Math.log(b / lo) / Math.log(hi / lo);
    return Math.exp((1 - f) * Math.log(seen.get(lo)!) + f * Math.log(seen.get(hi)!));
  }
  if (hi !== undefined) return seen.get(hi)! * prior.batchRatio(b, hi);
  // The model's own shape (a refit of a profiled model: prior.ts, `ownShapes`) already carries that bound.
  if (prior.own === true) return seen.get(lo!)! * prior.batchRatio(b, lo!);
  const first = bs[0]!;
  const slope =
    lo! >= 2 * first
      ? Math.min(1, Math.max(0, Math.log(seen.get(lo!)! / seen.get(first)!) / Math.log(lo! / first)))
      : 1;
  return seen.get(lo!)! * Math.max(prior.batchRatio(b, lo!), (b / lo!) ** slope);
}

/**
 * Exponents of the prior's share shape tried when batches were seen at two shares or more: down to 0.1, a model
 * that barely slows on a smaller share (depthwise convolutions: mobilenet at half the GPU is 1.01 times its time
 * on the whole, where the median model's is 1.8).
 */
export const GAMMAS = Array.from({ length: 20 }, (_, i) => 0.1 + i * 0.1);

/**
 * The share shape with exponent `gamma`: the prior's raised to it from 100% down to `lowestPct`, the smallest share
 * seen; below it the prior's own shape from there. An exponent fitted on shares 100 and p describes the model over
 * that span only: under it the prior's slope is the one with evidence, and for a model that barely slows down to p
 * a small exponent carried to 10% would promise it far less slowing than any model shows.
 */
export function shareShape(prior: Prior, gamma: number, lowestPct: number): Share {
  return (b, p) =>
    p >= lowestPct
      ? prior.shareRatio(b, p) ** gamma
      : prior.shareRatio(b, lowestPct) ** gamma * (prior.shareRatio(b, p) / prior.shareRatio(b, lowestPct));
}

/**
 * The share shape where batches were seen at 100% and at a smaller share (the share probe): an exponent per batch
 * size, `ln(o_r(b, p) / o_r(b, 100)) / ln(prior's ratio)` at each batch seen at share p whose time at 100% the
 * batches at 100% give (seen or between seen sizes), in 0.1..2.0, log-linear in the batch between them and the
 * nearest's beyond; from 100% down to the smallest share seen, the prior's shape below it (`shareShape`). A model's
 * sensitivity to its share grows with its batch (mnasnet on the RTX 2060 Super at 25%: 1.7 times its time on the
 * whole GPU at batch 8, 2.5 at batch 32, where the median model's is 3.4 at both): one exponent for every batch
 * fits neither end. Null where there is no such batch.
 */
export function batchExponents(solo: readonly SoloConfig[], prior: Prior, schedMs: number): BatchExponents | null {
  const full = new Map<number, number>();
  for (const c of solo) if (c.pct === 100) full.set(c.batch, Math.exp(c.sumLogMs / c.n) - schedMs);
  const lows = solo.filter((c) => c.pct < 100);
  if (full.size === 0 || lows.length === 0) return null;
  const lo = Math.min(...full.keys());
  const hi = Math.max(...full.keys());
  const acc = new Map<number, { w: number; sum: number }>();
  for (const c of lows) {
    const ratio = prior.shareRatio(c.batch, c.pct);
    if (c.batch < lo || c.batch > hi || !(ratio > 1.01)) continue;
    const r = (Math.exp(c.sumLogMs / c.n) - schedMs) / runAtFull(full, prior, c.batch);
    const g = Math.min(2, Math.max(0.1, Math.log(Math.max(r, 1)) / Math.log(ratio)));
    const a = acc.get(c.batch) ?? { w: 0, sum: 0 };
    a.w += c.n;
    a.sum += c.n * g;
    acc.set(c.batch, a);
  }
  if (acc.size === 0) return null;
  const points = [...acc].map(([b, a]) => [b, a.sum / a.w] as const).sort((x, y) => x[0] - y[0]);
  const gammaAt = (b: number): number => {
    if (b <= points[0]![0]) return points[0]![1];
    const k = points.findIndex(([x]) => x >= b);
    if (k < 0) return points[points.length - 1]![1];
    const [b0, g0] = points[k - 1]!;
    const [b1, g1] = points[k]!;
    return g0 + ((g1 - g0) * Math.log(b / b0)) / Math.log(b1 / b0);
  };
  const lowest = Math.min(...lows.map((c) => c.pct));
  const gs = points.map(([, g]) => g);
  return {
    full,
    share: (b, p) => shareShape(prior, gammaAt(b), lowest)(b, p),
    note: `share exponents ${Math.min(...gs).toFixed(1)} to ${Math.max(...gs).toFixed(1)} by batch`,
  };
}

/** A share shape, with o_r at 100% where it is known without it (null: from every batch through the shape). */
export interface BatchExponents {
  /** o_r at 100% at the batch sizes seen there: the batches at the smaller share only give the exponents. */
  readonly full: Map<number, number> | null;
  readonly share: Share;
  readonly note: string;
}

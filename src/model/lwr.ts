// Locally Weighted Regression for the GPU running time `o_r = LWR(b, rho * C_k)` (paper section 4.1,
// Cleveland's LOESS, degree 1). It works in log coordinates: features (ln b, ln pct), target ln o_r.
// Running time is close to a power law in both batch and share (Fig. 11), so a local plane in log
// space follows it with far less bias than a local plane in linear space, and it never predicts a
// negative time. Pure; called when a predictor is compiled and by the fitting code, never per task.
import type { LwrSettings, RunSample } from '../profile/schema.js';

export interface LwrPoint {
  readonly x1: number; // ln batch
  readonly x2: number; // ln pct
  readonly y: number; // ln runMs
}

export function toLwrPoints(samples: readonly RunSample[]): LwrPoint[] {
  return samples.map((s) => ({ x1: Math.log(s.batch), x2: Math.log(s.pct), y: Math.log(s.runMs) }));
}

/**
 * Predicts ln o_r at (ln b, ln pct) by Gaussian-weighted local linear least squares over `points`.
 * `skip` leaves one point out (for leave-one-out validation); -1 uses them all.
 * Falls back to the weighted mean when the local design is degenerate (all weight on one line).
 */
export function lwrLogPredict(
  points: readonly LwrPoint[],
  settings: LwrSettings,
  x1: number,
  x2: number,
  skip = -1,
): number {
  const inv1 = 1 / (2 * settings.bandwidthLogBatch * settings.bandwidthLogBatch);
  const inv2 = 1 / (2 * settings.bandwidthLogPct * settings.bandwidthLogPct);
  // Weighted normal equations for y = c0 + c1 * d1 + c2 * d2, centred on the query point.
  let s0 = 0,
    s1 = 0,
    s2 = 0,
    s11 = 0,
    s12 = 0,
    s22 = 0,
    t0 = 0,
    t1 = 0,
    t2 = 0;
  for (let i = 0; i < points.length; i++) {
    if (i === skip) continue;
    const p = points[i]!;
    const d1 = p.x1 - x1;
    const d2 = p.x2 - x2;
    const w = Math.exp(-(d1 * d1 * inv1 + d2 * d2 * inv2));
    s0 += w;
    s1 += w * d1;
    s2 += w * d2;
    s11 += w * d1 * d1;
    s12 += w * d1 * d2;
    s22 += w * d2 * d2;
    t0 += w * p.y;
    t1 += w * d1 * p.y;
    t2 += w * d2 * p.y;
  }
  if (s0 < 1e-300) return nearestLog(points, x1, x2, skip);
  // Solve the 3x3 system by Cramer's rule; only c0 (the value at the query) is needed.
  const det = s0 * (s11 * s22 - s12 * s12) - s1 * (s1 * s22 - s12 * s2) + s2 * (s1 * s12 - s11 * s2);
  const scale = s0 * s11 * s22 + 1e-300;
  if (Math.abs(det) < 1e-10 * Math.abs(scale)) return t0 / s0;
  const det0 = t0 * (s11 * s22 - s12 * s12) - s1 * (t1 * s22 - s12 * t2) + s2 * (t1 * s12 - s11 * t2);
  return det0 / det;
}

function nearestLog(points: readonly LwrPoint[], x1: number, x2: number, skip: number): number {
  let best = Infinity;
  let y = 0;
  points.forEach((p, i) => {
    if (i === skip) return;
    const d = (p.x1 - x1) ** 2 + (p.x2 - x2) ** 2;
    if (d < best) {
      best = d;
      y = p.y;
    }
  });
  return y;
}

/** o_r in ms for a batch at an MPS percentage, straight from the samples (slow path: O(samples)). */
export function lwrRunMs(points: readonly LwrPoint[], settings: LwrSettings, batch: number, pct: number): number {
  return Math.exp(lwrLogPredict(points, settings, Math.log(batch), Math.log(pct)));
}

/** Mean relative error of each sample predicted from all the others (leave-one-out). */
export function lwrLeaveOneOutError(
  points: readonly LwrPoint[],
  settings: LwrSettings,
): { meanRelErr: number; maxRelErr: number } {
  let sum = 0;
  let max = 0;
  points.forEach((p, i) => {
    const pred = Math.exp(lwrLogPredict(points, settings, p.x1, p.x2, i));
    const err = Math.abs(pred / Math.exp(p.y) - 1);
    sum += err;
    if (err > max) max = err;
  });
  return { meanRelErr: sum / points.length, maxRelErr: max };
}

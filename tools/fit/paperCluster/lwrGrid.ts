// From surfaces to profiles: LWR samples of the surfaces on a batch x share grid, and the LWR
// bandwidths that make the compiled predictor follow the surfaces. Part of `inss profile derive`.
import { lwrRunMs, toLwrPoints } from '../../../src/model/lwr.js';
import { type LwrSettings, type RunSample } from '../../../src/profile/schema.js';
import { type Surface, surfaceRunMs } from './surface.js';

// ---------------------------------------------------------------------------------------------
// 5. From surfaces to profiles
// ---------------------------------------------------------------------------------------------

// Batches sampled: dense where the surface bends (saturation at small batch, the knee near 8..16).
const GRID_BATCHES = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32];
/** Below this share, half-unit shares are sampled too: light models saturate there (a few SMs). */
const DENSE_BELOW_PCT = 36;
const LWR_BATCH_BANDWIDTHS = [0.06, 0.08, 0.1, 0.15, 0.2, 0.25, 0.3];
const LWR_PCT_BANDWIDTHS = [0.02, 0.03, 0.04, 0.06, 0.08, 0.1, 0.125, 0.15, 0.2];

/**
 * Shares sampled: every multiple of the MPS unit (half units below DENSE_BELOW_PCT), 100%, and the extra shares asked
 * for (anchor shares).
 */
export function gridPcts(mpsUnitPct: number, extra: readonly number[]): number[] {
  const set = new Set<number>([100, ...extra]);
  for (let i = 2; (i / 2) * mpsUnitPct <= 100 + 1e-9; i++) {
    const p = (i / 2) * mpsUnitPct;
    if (i % 2 === 0 || p < DENSE_BELOW_PCT) set.add(Math.round(p * 1000) / 1000);
  }
  return [...set].sort((a, b) => a - b);
}

export function roundSig(x: number, digits = 6): number {
  return Number(x.toPrecision(digits));
}

export function surfaceSamples(s: Surface, smCount: number, pcts: readonly number[]): RunSample[] {
  const out: RunSample[] = [];
  for (const batch of GRID_BATCHES)
    for (const pct of pcts) out.push({ batch, pct, runMs: roundSig(surfaceRunMs(s, batch, (pct / 100) * smCount)) });
  return out;
}

/**
 * Where the compiled predictor is checked against the surface: every batch 1..32, shares from the MPS unit to 100% in
 * steps of 1%.
 */
function checkPoints(mpsUnitPct: number): { batch: number; pct: number }[] {
  const out: { batch: number; pct: number }[] = [];
  for (let batch = 1; batch <= 32; batch++) {
    for (let pct = Math.ceil(mpsUnitPct); pct <= 100; pct++) out.push({ batch, pct });
  }
  return out;
}

/** LWR fidelity: relative error of LWR over `samples` against the surface at the check points. */
function lwrFidelity(
  samples: ReadonlyMap<string, RunSample[]>,
  surfaces: ReadonlyMap<string, Surface>,
  smCount: number,
  settings: LwrSettings,
  points: readonly { batch: number; pct: number }[],
): { maxRelErr: number; meanRelErr: number } {
  let max = 0;
  let sum = 0;
  let n = 0;
  for (const [model, list] of samples) {
    const pts = toLwrPoints(list);
    const s = surfaces.get(model)!;
    for (const q of points) {
      const e = Math.abs(
        lwrRunMs(pts, settings, q.batch, q.pct) / surfaceRunMs(s, q.batch, (q.pct / 100) * smCount) - 1,
      );
      max = Math.max(max, e);
      sum += e;
      n++;
    }
  }
  return { maxRelErr: max, meanRelErr: sum / n };
}

/** The LWR bandwidths (from a small grid) whose compiled predictions follow the surfaces best (least max error). */
export function chooseLwr(
  samples: ReadonlyMap<string, RunSample[]>,
  surfaces: ReadonlyMap<string, Surface>,
  smCount: number,
  mpsUnitPct: number,
): { settings: LwrSettings; maxRelErr: number; meanRelErr: number } {
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

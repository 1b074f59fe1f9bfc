// How the derived profiles' share curves compare with the V100's measured shape
// (docs/profiles-paper-cluster.md "Share curves against the V100's measured shape"). Two figures:
//  - the solo share curve: running time at 20% and 50% of the GPU over that at 80%, per model and
//    batch (on the V100 straight from iGniter's solo table, data/v100/solo.json);
//  - the spatial-sharing gain of a pair at 50/50: the two models' throughputs relative to each alone
//    at 100%, summed (1 = no gain over taking turns at the full GPU). The V100's pairs are the measured
//    co-located latencies (data/v100/colocated-calibration.json) over the fitted v100 profile's 100%
//    latency (the solo table has 100% only at batch 1).
// Pure: the caller reads the files.
import type { LatencyModel } from '../../../src/model/predictor.js';
import { InvalidInputError } from '../../../src/profile/schema.js';

export const SHAPE_BATCHES = [1, 4, 16] as const;

export interface SoloShape {
  readonly gpu: string;
  readonly model: string;
  readonly batch: number;
  /** t(20%) / t(80%). */
  readonly t20: number;
  /** t(50%) / t(80%). */
  readonly t50: number;
}

export interface PairGain {
  readonly gpu: string;
  readonly a: string;
  readonly b: string;
  readonly batch: number;
  /** Summed throughput relative to each model alone at 100%. */
  readonly gain: number;
  readonly measured: boolean;
}

const num = (v: unknown, where: string): number => {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
    throw new InvalidInputError(`${where}: expected a positive number`);
  return v;
};

/** The V100's measured solo share curve for `model` (solo.json's `models.<m>.latency.<b>.<pct>`). */
export function measuredSoloShape(solo: unknown, model: string, batch: number): SoloShape {
  const row = (solo as { models?: Record<string, { latency?: Record<string, Record<string, unknown>> }> }).models?.[
    model
  ]?.latency?.[String(batch)];
  if (!row) throw new InvalidInputError(`solo.json: no latency row for ${model} at batch ${batch}`);
  const at = (pct: number): number => num(row[String(pct)], `solo.json ${model} b${batch} ${pct}%`);
  return { gpu: 'v100 (measured)', model, batch, t20: at(20) / at(80), t50: at(50) / at(80) };
}

export function profileSoloShape(gpu: string, lm: LatencyModel, model: string, batch: number): SoloShape {
  const t = (pct: number): number => lm.predict([{ model, batch, pct }]).latencyMs[0]!;
  return { gpu, model, batch, t20: t(20) / t(80), t50: t(50) / t(80) };
}

/** The gain of a pair at 50/50 by the profile's own prediction. */
export function profilePairGain(gpu: string, lm: LatencyModel, a: string, b: string, batch: number): PairGain {
  const solo = (m: string): number => lm.predict([{ model: m, batch, pct: 100 }]).latencyMs[0]!;
  const [ta, tb] = lm.predict([
    { model: a, batch, pct: 50 },
    { model: b, batch, pct: 50 },
  ]).latencyMs;
  return { gpu, a, b, batch, gain: solo(a) / ta! + solo(b) / tb!, measured: false };
}

interface PairSide {
  model: string;
  batch: number;
  pct: number;
  latency_ms: number;
}

/** The V100's measured pairs at 50/50 among the models `v100` holds, against its 100% latency. */
export function measuredPairGains(calibration: unknown, v100: LatencyModel): PairGain[] {
  const pairs = (calibration as { pairs?: { a: PairSide; b: PairSide }[] }).pairs;
  if (!Array.isArray(pairs)) throw new InvalidInputError('colocated-calibration.json: no pairs array');
  const solo = (m: string, batch: number): number => v100.predict([{ model: m, batch, pct: 100 }]).latencyMs[0]!;
  return pairs
    .filter(
      (p) => p.a.pct === 50 && p.b.pct === 50 && v100.modelIndex(p.a.model) >= 0 && v100.modelIndex(p.b.model) >= 0,
    )
    .map((p) => ({
      gpu: 'v100 (measured)',
      a: p.a.model,
      b: p.b.model,
      batch: p.a.batch,
      gain:
        solo(p.a.model, p.a.batch) / num(p.a.latency_ms, 'pair latency') +
        solo(p.b.model, p.b.batch) / num(p.b.latency_ms, 'pair latency'),
      measured: true,
    }));
}

/** Every pair of `lm`'s models at each batch. */
export function allPairGains(gpu: string, lm: LatencyModel, batches: readonly number[] = SHAPE_BATCHES): PairGain[] {
  const out: PairGain[] = [];
  const names = lm.modelNames;
  for (const batch of batches)
    for (let i = 0; i < names.length; i++)
      for (let j = i + 1; j < names.length; j++) out.push(profilePairGain(gpu, lm, names[i]!, names[j]!, batch));
  return out;
}

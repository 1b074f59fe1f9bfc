// Fits one newly measured model into an existing GPU profile with `inss profile fit`'s fitting
// (tools/fit/fit.ts), unchanged. The fit takes a whole measurement document, so the profile's own
// models are written back into one: their running-time samples as solo latencies (o_r plus the transfers
// and the scheduling time the fit subtracts again), their L2 lines as L2 readings, and the GPU's
// scheduling interference as per-kernel figures from which the fit's line gives it back. The profile's
// LWR bandwidths and cache self weight are kept (the fit is told them), so the new model's coefficients
// are on the profile's own terms: its alpha^cache comes from its latencies beside the profile's models,
// whose L2 lines are the profile's. Of the fitted profile only the new model's entry is taken; every
// other number of the profile stays as it was.
import { feedbackMs, uploadMs } from '../../src/model/latency.js';
import { LatencyModel } from '../../src/model/predictor.js';
import { type ModelProfile, type Profile, ProfileSchema, type Provenance } from '../../src/profile/schema.js';
import { fitProfile } from '../../tools/fit/fit.js';
import { fitLine } from '../../tools/fit/leastSquares.js';
import { type MeasuredRun, type MeasurementsInput, MeasurementsSchema } from '../../tools/fit/measurements.js';

/** What was measured of the new model (DriverResult, with its sizes and memory). */
export interface NewModelMeasurements {
  readonly name: string;
  readonly inputBytes: number;
  readonly outputBytes: number;
  readonly kernels: number;
  readonly memory: { baseMb: number; perBatchMb: number };
  readonly notes: string[];
  readonly solo: readonly { batch: number; pct: number; latencyMs: number }[];
  readonly colocated: readonly { runs: MeasuredRun[] }[];
}

export interface FitIntoReport {
  /** LWR leave-one-out error over the new model's samples. */
  readonly lwr: { meanRelErr: number; maxRelErr: number; samples: number };
  /** Mean relative error of the new profile's predictions of the co-located runs (both models), null without. */
  readonly colocatedMeanRelErr: number | null;
  readonly warnings: readonly string[];
}

/** `m(b) = baseMb + perBatchMb * b` by least squares over (batch, MiB) readings; a single reading: constant. */
export function memoryLine(points: readonly { batch: number; mb: number }[]): { baseMb: number; perBatchMb: number } {
  const n = points.length;
  const mb = points.reduce((s, p) => s + p.batch, 0) / n;
  const mm = points.reduce((s, p) => s + p.mb, 0) / n;
  const sxx = points.reduce((s, p) => s + (p.batch - mb) ** 2, 0);
  const slope = sxx > 0 ? points.reduce((s, p) => s + (p.batch - mb) * (p.mb - mm), 0) / sxx : 0;
  const round = (x: number, d: number) => Math.round(x * 10 ** d) / 10 ** d;
  return { baseMb: round(Math.max(0, mm - slope * mb), 1), perBatchMb: round(Math.max(0, slope), 3) };
}

/** The profile's own models and GPU as a measurement document the fit reproduces them from. */
function profileAsMeasurements(base: Profile, skip: string): MeasurementsInput {
  const { schedInterference, cacheSelfWeight: _w, ...hardware } = base.gpu;
  const pcie = hardware.pcieBytesPerMs;
  const { alphaSMs, betaSMs } = schedInterference;
  // int(n) = alphaS * n + betaS for n = 2, 3 over a sched(1) that keeps every figure non-negative.
  const one = Math.max(0, -(2 * alphaSMs + betaSMs), -(3 * alphaSMs + betaSMs));
  const models: MeasurementsInput['models'] = {};
  const solo: MeasurementsInput['solo'] = [];
  for (const [name, m] of Object.entries(base.models)) {
    if (name === skip) continue;
    const schedSoloMs = m.schedPerKernelMs * m.kernels;
    models[name] = { ...pick(m), schedSoloMs };
    for (const s of m.runSamples)
      solo.push({
        model: name,
        batch: s.batch,
        pct: s.pct,
        latencyMs:
          s.runMs + uploadMs(m.inputBytes, s.batch, pcie) + feedbackMs(m.outputBytes, s.batch, pcie) + schedSoloMs,
        l2Util: Math.min(1, Math.max(0, m.l2.alphaU * (s.pct / 100) + m.l2.betaU)),
      });
  }
  return {
    format: 'inss-measurements/1',
    gpu: hardware,
    schedPerKernelByModelCountMs: [one, one + 2 * alphaSMs + betaSMs, one + 3 * alphaSMs + betaSMs],
    models,
    solo,
    colocated: [],
  };
}

function pick(m: ModelProfile) {
  return {
    inputBytes: m.inputBytes,
    outputBytes: m.outputBytes,
    kernels: m.kernels,
    memory: m.memory,
    notes: m.notes,
  };
}

/** Runs the fit on the profile's models and the new one; returns the fitted profile and its report. */
function fitOnce(
  base: Profile,
  meas: NewModelMeasurements,
  l2: ((share: number) => number) | null,
  colocated: boolean,
) {
  const doc = profileAsMeasurements(base, meas.name);
  doc.models[meas.name] = {
    inputBytes: meas.inputBytes,
    outputBytes: meas.outputBytes,
    kernels: meas.kernels,
    schedSoloMs: 0,
    memory: meas.memory,
    notes: meas.notes,
  };
  doc.solo.push(...meas.solo.map((p) => ({ model: meas.name, ...p, ...(l2 ? { l2Util: l2(p.pct / 100) } : {}) })));
  doc.colocated = colocated ? meas.colocated.map((c) => ({ runs: c.runs.map((r) => ({ ...r })) })) : [];
  const provenance = { kind: 'measured' as const, source: 'fit', command: 'fit', notes: [] };
  return fitProfile(MeasurementsSchema.parse(doc), {
    id: base.id,
    provenance,
    lwr: base.lwr,
    cacheSelfWeight: base.gpu.cacheSelfWeight,
  });
}

/**
 * The new model's L2 utilisation as a line in its share, read off the profile's models beside it: a
 * peer's latency beyond its prediction with the new model's L2 at 0 is alpha^cache(peer) x o_r(peer) x
 * l(new). Null without a peer whose alpha^cache is positive at two shares of the new model.
 */
function l2FromPeers(base: Profile, meas: NewModelMeasurements): ((share: number) => number) | null {
  const solo = fitOnce(base, meas, null, false).profile.models[meas.name]!;
  const zeroL2 = LatencyModel.compile({
    ...base,
    models: { ...base.models, [meas.name]: { ...solo, l2: { alphaU: 0, betaU: 0 } } },
  });
  const shares: number[] = [];
  const l2: number[] = [];
  for (const c of meas.colocated) {
    if (!c.runs.some((r) => r.model === meas.name)) continue;
    const own = c.runs.find((r) => r.model === meas.name)!;
    const predicted = zeroL2.predict(c.runs).latencyMs;
    c.runs.forEach((r, i) => {
      const peer = base.models[r.model];
      if (r.model === meas.name || !peer || peer.alphaCache <= 0) return;
      const soloRun = zeroL2.soloRunMs(zeroL2.modelIndex(r.model), r.batch, r.pct);
      shares.push(own.pct / 100);
      l2.push(Math.min(1, Math.max(0, (r.latencyMs - predicted[i]!) / (peer.alphaCache * soloRun))));
    });
  }
  if (new Set(shares).size < 2) return null;
  const { alpha, beta } = fitLine(shares, l2);
  return (share) => Math.min(1, Math.max(0, alpha * share + beta));
}

/**
 * The profile with `meas.name` added (or replaced), and how well it reproduces the measurements. Its
 * L2 line comes from the profile's models beside it (l2FromPeers), else the share stands in for it
 * (the fit's rule). Throws the fit's RangeError where there are too few usable samples.
 */
export function fitIntoProfile(
  base: Profile,
  meas: NewModelMeasurements,
  provenance: Provenance,
  id: string = base.id,
): { profile: Profile; report: FitIntoReport } {
  const l2 = meas.colocated.length > 0 ? l2FromPeers(base, meas) : null;
  const fitted = fitOnce(base, meas, l2, true);
  const profile = ProfileSchema.parse({
    ...base,
    id,
    provenance,
    models: { ...base.models, [meas.name]: fitted.profile.models[meas.name] },
  });
  const model = LatencyModel.compile(profile);
  let err = 0;
  let count = 0;
  for (const c of meas.colocated) {
    const predicted = model.predict(c.runs).latencyMs;
    c.runs.forEach((r, i) => {
      err += Math.abs(predicted[i]! / r.latencyMs - 1);
      count++;
    });
  }
  const lwr = fitted.report.lwrLeaveOneOut[meas.name]!;
  let warnings = fitted.report.warnings.filter((w) => w.includes(meas.name));
  if (meas.colocated.length > 0 && !l2) {
    warnings = warnings.filter((w) => !w.includes('no L2 utilisation measured'));
    warnings.push(
      `${meas.name}: its L2 utilisation is read off the models beside it only from pairs at two or more of its ` +
        'shares with a model whose alpha_cache is above 0: the share stands in for it (l = share)',
    );
  }
  return { profile, report: { lwr, colocatedMeanRelErr: count > 0 ? err / count : null, warnings } };
}

// `inss profile fit`: from measurement files to a profile (paper section 4.1, "Prediction overhead").
// Least squares for the linear coefficients (alpha_s/beta_s, alpha_u/beta_u, alpha^cache), LWR
// samples for the running time. Pure: the caller reads the files and writes the result.
import { LatencyModel } from '../../src/model/predictor.js';
import { feedbackMs, uploadMs } from '../../src/model/latency.js';
import { lwrLeaveOneOutError, toLwrPoints } from '../../src/model/lwr.js';
import {
  type LwrSettings,
  type Profile,
  type Provenance,
  ProfileSchema,
  type RunSample,
} from '../../src/profile/schema.js';
import { fitLine, fitProportional } from './leastSquares.js';
import type { MeasuredRun, Measurements } from './measurements.js';

export interface FitOptions {
  readonly id: string;
  readonly provenance: Provenance;
  /** LWR bandwidths to use; chosen by leave-one-out cross-validation when absent. */
  readonly lwr?: LwrSettings;
  /** Weight of a model's own L2 utilisation in its contention; chosen by cross-validation when absent. */
  readonly cacheSelfWeight?: number;
}

/** How well the fitted profile reproduces the measurements it came from. */
export interface FitReport {
  /** Per model, LWR leave-one-out error over its running-time samples. */
  readonly lwrLeaveOneOut: Record<string, { meanRelErr: number; maxRelErr: number; samples: number }>;
  readonly lwrMeanRelErr: number;
  /** Co-located runs: mean relative error of t_inf, in sample and leaving each co-located run out of the fit. */
  readonly colocated: {
    count: number;
    inSampleMeanRelErr: number;
    leaveOneOutMeanRelErr: number;
    ignoringInterferenceMeanRelErr: number;
  } | null;
  readonly cacheSelfWeight: number;
  readonly warnings: readonly string[];
}

const BANDWIDTH_GRID = [0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7];
const SELF_WEIGHT_GRID = [0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2];

export function fitProfile(meas: Measurements, options: FitOptions): { profile: Profile; report: FitReport } {
  const warnings: string[] = [];
  const gpu = meas.gpu;

  // Scheduling interference: int(n) = sched(n) - sched(1), a line in n over n >= 2 (Fig. 10).
  let alphaSMs = 0;
  let betaSMs = 0;
  const byCount = meas.schedPerKernelByModelCountMs;
  if (byCount && byCount.length >= 3) {
    const xs: number[] = [];
    const ys: number[] = [];
    for (let n = 2; n <= byCount.length; n++) {
      xs.push(n);
      ys.push(byCount[n - 1]! - byCount[0]!);
    }
    ({ alpha: alphaSMs, beta: betaSMs } = fitLine(xs, ys));
  } else {
    warnings.push('no per-kernel scheduling figures for 3 or more model counts: scheduling interference set to 0');
  }

  // Running-time samples: the solo latency less the transfers and the solo scheduling time.
  const runSamples = new Map<string, RunSample[]>();
  const l2Points = new Map<string, { pct: number[]; l2: number[] }>();
  for (const p of meas.solo) {
    const m = meas.models[p.model]!;
    const runMs =
      p.latencyMs -
      uploadMs(m.inputBytes, p.batch, gpu.pcieBytesPerMs) -
      feedbackMs(m.outputBytes, p.batch, gpu.pcieBytesPerMs) -
      m.schedSoloMs;
    if (runMs <= 0) {
      warnings.push(
        `solo ${p.model} batch ${p.batch} pct ${p.pct}: latency ${p.latencyMs} ms is not above transfer + ` +
          `scheduling time; sample left out`,
      );
      continue;
    }
    const list = runSamples.get(p.model) ?? [];
    if (list.some((s) => s.batch === p.batch && s.pct === p.pct))
      throw new RangeError(`solo: ${p.model} batch ${p.batch} pct ${p.pct} is measured twice`);
    list.push({ batch: p.batch, pct: p.pct, runMs });
    runSamples.set(p.model, list);
    if (p.l2Util !== undefined) {
      const l = l2Points.get(p.model) ?? { pct: [], l2: [] };
      l.pct.push(p.pct / 100);
      l.l2.push(p.l2Util);
      l2Points.set(p.model, l);
    }
  }

  // LWR bandwidths by leave-one-out cross-validation over every model's samples.
  const lwr = options.lwr ?? chooseBandwidths([...runSamples.values()]);
  const lwrLeaveOneOut: FitReport['lwrLeaveOneOut'] = {};
  let lwrSum = 0;
  let lwrCount = 0;
  for (const [name, samples] of runSamples) {
    const e = lwrLeaveOneOutError(toLwrPoints(samples), lwr);
    lwrLeaveOneOut[name] = { ...e, samples: samples.length };
    lwrSum += e.meanRelErr * samples.length;
    lwrCount += samples.length;
  }

  const models: Record<string, Profile['models'][string]> = {};
  for (const [name, m] of Object.entries(meas.models)) {
    const samples = runSamples.get(name);
    if (!samples || samples.length < 4)
      throw new RangeError(`models.${name}: needs at least 4 usable solo measurements, has ${samples?.length ?? 0}`);
    const l = l2Points.get(name);
    // Without L2 measurements (Nsight Compute cannot profile MPS clients, so it is often absent) the
    // share stands in for the L2 utilisation (l = share, docs/profiles.md): alpha_cache, fitted from
    // the co-located pairs, then carries the model's L2 intensity. With no pairs it stays 0.
    let l2 = { alphaU: 1, betaU: 0 };
    if (l && l.pct.length >= 2) {
      const f = fitLine(l.pct, l.l2);
      l2 = { alphaU: f.alpha, betaU: f.beta };
    } else {
      warnings.push(`models.${name}: no L2 utilisation measured: the share stands in for it (l = share)`);
    }
    models[name] = {
      inputBytes: m.inputBytes,
      outputBytes: m.outputBytes,
      kernels: m.kernels,
      schedPerKernelMs: m.schedSoloMs / m.kernels,
      l2,
      alphaCache: 0,
      memory: m.memory,
      runSamples: samples.sort((a, b) => a.batch - b.batch || a.pct - b.pct),
      notes: m.notes,
    };
  }

  const base: Profile = ProfileSchema.parse({
    schemaVersion: 1,
    id: options.id,
    gpu: { ...gpu, schedInterference: { alphaSMs, betaSMs }, cacheSelfWeight: 0 },
    lwr,
    provenance: options.provenance,
    models,
  });

  if (meas.colocated.length === 0) {
    warnings.push('no co-located runs: alpha_cache set to 0 for every model');
    return {
      profile: base,
      report: { lwrLeaveOneOut, lwrMeanRelErr: lwrSum / lwrCount, colocated: null, cacheSelfWeight: 0, warnings },
    };
  }

  // alpha^cache per model and the self weight: least squares per model for each candidate weight,
  // the weight chosen by leaving each co-located run out in turn.
  const compiled = LatencyModel.compile(base);
  const obs = colocatedObservations(compiled, meas.colocated);
  const weights = options.cacheSelfWeight !== undefined ? [options.cacheSelfWeight] : SELF_WEIGHT_GRID;
  let best = { weight: 0, loo: Infinity };
  for (const w of weights) {
    const loo = leaveOneRunOutError(obs, w, meas.colocated.length);
    if (loo < best.loo - 1e-12) best = { weight: w, loo };
  }
  const alphaCache = fitAlphaCache(obs, best.weight, -1);
  const profile: Profile = {
    ...base,
    gpu: { ...base.gpu, cacheSelfWeight: best.weight },
    models: Object.fromEntries(
      Object.entries(base.models).map(([n, m]) => [n, { ...m, alphaCache: alphaCache.get(n) ?? 0 }]),
    ),
  };
  const fitted = LatencyModel.compile(profile);
  let inSample = 0;
  let ignoring = 0;
  let count = 0;
  for (const run of meas.colocated) {
    const withI = fitted.predict(run.runs).latencyMs;
    const without = fitted.predict(run.runs, { interference: false }).latencyMs;
    run.runs.forEach((r, i) => {
      inSample += Math.abs(withI[i]! / r.latencyMs - 1);
      ignoring += Math.abs(without[i]! / r.latencyMs - 1);
      count++;
    });
  }
  return {
    profile,
    report: {
      lwrLeaveOneOut,
      lwrMeanRelErr: lwrSum / lwrCount,
      colocated: {
        count,
        inSampleMeanRelErr: inSample / count,
        leaveOneOutMeanRelErr: best.loo,
        ignoringInterferenceMeanRelErr: ignoring / count,
      },
      cacheSelfWeight: best.weight,
      warnings,
    },
  };
}

function chooseBandwidths(samples: readonly RunSample[][]): LwrSettings {
  let best: { s: LwrSettings; err: number } | null = null;
  const sets = samples.map(toLwrPoints);
  for (const hb of BANDWIDTH_GRID) {
    for (const hp of BANDWIDTH_GRID) {
      const s = { bandwidthLogBatch: hb, bandwidthLogPct: hp };
      let sum = 0;
      let n = 0;
      for (const pts of sets) {
        sum += lwrLeaveOneOutError(pts, s).meanRelErr * pts.length;
        n += pts.length;
      }
      const err = sum / n;
      if (!best || err < best.err) best = { s, err };
    }
  }
  return best!.s;
}

/** One model's latency in one co-located run, split into the parts the cache term does and does not scale. */
interface Observation {
  readonly run: number;
  readonly model: string;
  readonly observedMs: number;
  /** Prediction with alpha^cache = 0 (transfers, scheduling with interference, solo running time). */
  readonly baseMs: number;
  readonly soloRunMs: number;
  readonly othersL2: number;
  readonly selfL2: number;
}

function colocatedObservations(model: LatencyModel, runs: readonly { runs: readonly MeasuredRun[] }[]): Observation[] {
  const out: Observation[] = [];
  runs.forEach((run, r) => {
    const check = model.checkPlacement(run.runs);
    if (!check.ok) throw new RangeError(`colocated[${r}]: ${check.reason}`);
    const base = model.predict(run.runs).latencyMs; // alpha^cache is 0 in this profile
    const l2 = run.runs.map((x) => {
      const m = model.profile.models[x.model]!;
      return Math.max(0, m.l2.alphaU * (x.pct / 100) + m.l2.betaU);
    });
    const total = l2.reduce((a, b) => a + b, 0);
    run.runs.forEach((x, i) => {
      out.push({
        run: r,
        model: x.model,
        observedMs: x.latencyMs,
        baseMs: base[i]!,
        soloRunMs: model.soloRunMs(model.modelIndex(x.model), x.batch, x.pct),
        othersL2: total - l2[i]!,
        selfL2: l2[i]!,
      });
    });
  });
  return out;
}

function fitAlphaCache(obs: readonly Observation[], selfWeight: number, skipRun: number): Map<string, number> {
  const byModel = new Map<string, { x: number[]; y: number[] }>();
  for (const o of obs) {
    if (o.run === skipRun) continue;
    const e = byModel.get(o.model) ?? { x: [], y: [] };
    e.x.push(o.soloRunMs * (o.othersL2 + selfWeight * o.selfL2));
    e.y.push(o.observedMs - o.baseMs);
    byModel.set(o.model, e);
  }
  const out = new Map<string, number>();
  for (const [m, e] of byModel) out.set(m, Math.max(0, fitProportional(e.x, e.y)));
  return out;
}

function leaveOneRunOutError(obs: readonly Observation[], selfWeight: number, runs: number): number {
  let sum = 0;
  let n = 0;
  for (let r = 0; r < runs; r++) {
    const ac = fitAlphaCache(obs, selfWeight, r);
    for (const o of obs) {
      if (o.run !== r) continue;
      const pred = o.baseMs + (ac.get(o.model) ?? 0) * o.soloRunMs * (o.othersL2 + selfWeight * o.selfL2);
      sum += Math.abs(pred / o.observedMs - 1);
      n++;
    }
  }
  return sum / n;
}

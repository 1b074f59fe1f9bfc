// The capacity ceiling: a fluid upper bound on the load multiplier x at which any policy can keep an
// attainment (99% or 95% of tasks within SLO) over a scenario's run on the simulator, under either
// pooled-GPU mode. One linear program over the run, solved with HiGHS (the npm package `highs`):
// maximise x such that the GPUs, at the best rates per model that ceilingRates.ts bounds, serve within
// SLO at least the attainment of the x-scaled arrivals, counted over the whole run as the capacity
// metric counts them (so a short peak may be dropped where the attainment's slack covers it). Nothing
// is lost to queueing, batching delay, placement granularity, memory or swaps, and interference only in
// part. The argument, its assumptions and what it leaves out: docs/ceiling.md. Pure (the solver is
// WebAssembly run in this process).
import type { ClusterInfo } from '../../src/policy/types.js';
import type { GroundTruthSettings } from '../../src/sim/groundTruth.js';
import type { Scenario } from '../../src/scenario/schema.js';
import { rateFunction } from '../../src/workload/arrivals.js';
import { type Spread, spread } from './capacity.js';
import { type CeilingGroup, ceilingGroups, type MpsRates, NOISE_TAIL } from './ceilingRates.js';

/** A stretch of the run with each model's mean arrival rate in it (tasks per second at x = 1). */
export interface RateBin {
  readonly lengthS: number;
  readonly ratePerS: readonly number[];
}

/** Thrown where a scenario's rates cannot be bounded (a trace: its compressed time is not linear in x). */
export class CeilingError extends Error {
  override readonly name = 'CeilingError';
}

/**
 * The run cut where any model's rate changes, stretches merged forward until each is at least
 * `minLengthS` long (the largest SLO: a task is served at most that long after its stretch ends, so
 * only into the next one). Merging stretches lets tasks use GPU time anywhere in the merged stretch, so
 * it can only raise the bound.
 */
export function rateBins(s: Scenario, minLengthS: number): RateBin[] {
  const endMs = s.durationS * 1000;
  // Its bound takes each model's tasks as independent under the model's SLO; a pipeline's tasks share one SLO.
  if (s.pipelines.length > 0)
    throw new CeilingError("pipelines: no ceiling (the bound takes every task as one model's, under its own SLO)");
  const fns = s.models.map((m, i) => {
    if (m.rate.kind === 'trace')
      throw new CeilingError(`models[${i}].rate: a trace has no ceiling (its load multiplier compresses time)`);
    return rateFunction(m.rate);
  });
  const cuts = new Set<number>([0, endMs]);
  for (const f of fns) for (let t = f.nextChangeMs(0); t < endMs; t = f.nextChangeMs(t)) cuts.add(t);
  const times = [...cuts].sort((a, b) => a - b);
  const raw = times.slice(1).map((t1, k) => {
    const t0 = times[k]!;
    return {
      lengthS: (t1 - t0) / 1000,
      arrivals: fns.map((f, i) => ((f.rateAt(t0) * (t1 - t0)) / 1000) * s.models[i]!.samplesPerRequest),
    };
  });
  const merged: { lengthS: number; arrivals: number[] }[] = [];
  let open: { lengthS: number; arrivals: number[] } | null = null;
  for (const r of raw) {
    open = open ? { lengthS: open.lengthS + r.lengthS, arrivals: open.arrivals.map((a, i) => a + r.arrivals[i]!) } : r;
    if (open.lengthS >= minLengthS) {
      merged.push(open);
      open = null;
    }
  }
  if (open) {
    const last = merged.pop();
    merged.push(
      last
        ? { lengthS: last.lengthS + open.lengthS, arrivals: last.arrivals.map((a, i) => a + open.arrivals[i]!) }
        : open,
    );
  }
  return merged.map((b) => ({ lengthS: b.lengthS, ratePerS: b.arrivals.map((a) => a / b.lengthS) }));
}

/** LP text writer: CPLEX LP format, a few terms a line. */
class Lp {
  private readonly rows: string[] = [];
  private readonly bounds: string[] = [];
  private n = 0;

  row(terms: readonly [number, string][], sense: '<=' | '>=', rhs: number): void {
    const parts = terms.filter(([c]) => c !== 0).map(([c, v]) => `${c < 0 ? '-' : '+'} ${num(Math.abs(c))} ${v}`);
    if (parts.length === 0) return;
    const lines: string[] = [];
    for (let i = 0; i < parts.length; i += 6) lines.push(parts.slice(i, i + 6).join(' '));
    this.rows.push(` r${this.n++}: ${lines.join('\n   ')} ${sense} ${num(rhs)}`);
  }

  upper(v: string, max: number): void {
    this.bounds.push(` ${v} <= ${num(max)}`);
  }

  text(objective: string): string {
    return ['Maximize', ` obj: ${objective}`, 'Subject To', ...this.rows, 'Bounds', ...this.bounds, 'End', ''].join(
      '\n',
    );
  }
}

function num(v: number): string {
  if (!Number.isFinite(v)) throw new RangeError(`ceiling LP: coefficient ${v}`);
  return Number(v.toPrecision(15)).toString();
}

/** The most stretches the LP models (coarserBins merges the rest). */
export const CEILING_MAX_BINS = 24;

/**
 * Consecutive stretches merged, as few at a time as keeps at most `maxBins`: tasks of a merged stretch may
 * then use GPU time anywhere in it, which can only raise the bound; it keeps the LP's size (and HiGHS's
 * time) bounded on a diurnal run of many one-second stretches, whose peaks it averages over a few seconds.
 */
export function coarserBins(bins: readonly RateBin[], maxBins: number): RateBin[] {
  const per = Math.ceil(bins.length / maxBins);
  if (per <= 1) return [...bins];
  const out: RateBin[] = [];
  for (let i = 0; i < bins.length; i += per) {
    const part = bins.slice(i, i + per);
    const lengthS = part.reduce((sum, b) => sum + b.lengthS, 0);
    out.push({
      lengthS,
      ratePerS: part[0]!.ratePerS.map((_, m) => part.reduce((sum, b) => sum + b.ratePerS[m]! * b.lengthS, 0) / lengthS),
    });
  }
  return out;
}

const NO_MPS: MpsRates = { alone: [], beside: [] };

/** Every rate a worker of model m reaches on one GPU of the group, any way it runs. */
function workerRates(g: CeilingGroup, m: number): number[] {
  const mps = g.mps[m] ?? NO_MPS;
  return [...mps.alone, ...mps.beside].map((pt) => pt.perS).concat(g.pooledPerS[m] ?? []);
}

/**
 * The indices of the `maxBins` stretches of most work (sum over models of rate / the cluster's best rate
 * for the model). The LP treats every other stretch as served in full without GPU time, which can only
 * raise the bound; it keeps its size (and HiGHS's time) bounded on a diurnal run of many stretches.
 */
export function busiestBins(bins: readonly RateBin[], bestPerS: readonly number[], maxBins: number): Set<number> {
  const work = bins.map((b, k) => ({
    k,
    w: b.ratePerS.reduce((s, r, m) => s + (r > 0 ? (bestPerS[m]! > 0 ? r / bestPerS[m]! : Infinity) : 0), 0),
  }));
  return new Set(
    work
      .sort((a, b) => b.w - a.w || a.k - b.k)
      .slice(0, maxBins)
      .map((x) => x.k),
  );
}

/**
 * The LP for one attainment (docs/ceiling.md gives the argument). Per stretch k and group g of `count`
 * GPUs: GPU-seconds on MPS partitions q and pooled p, q + p <= count * length. On MPS: worker-seconds z of
 * model m at each share worth holding, split by how its batches start (alone or beside another), with
 * per model sum z <= q (one worker a model a GPU), sum of share x z <= q, and the alone ones' sum <= q
 * (batches that start alone never overlap). On overlap groups: worker-seconds t[m, n] of model m in
 * batches that start with n running, per model sum_n t <= p, and per j sum_m sum_{n <= j} t <= j * p
 * (batches that start with at most j running never number more than j at once). Model m's tasks served
 * in k: the sum of rate x seconds. Tasks of k served within SLO: own[m, k] from k's production and
 * carry[m, k] from the next stretch's (at most an SLO's worth of the cluster's best rate for m), together
 * at most x times k's arrivals; their sum over models and stretches at least (attainment - NOISE_TAIL)
 * x all arrivals. Merged stretches: coarserBins. Maximise x.
 */
export function ceilingLp(
  groups: readonly CeilingGroup[],
  bins: readonly RateBin[],
  sloMs: readonly number[],
  attainment: number,
  maxBins = CEILING_MAX_BINS,
): string {
  const lp = new Lp();
  const models = sloMs.length;
  const need = attainment - NOISE_TAIL;
  const total: [number, string][] = [];
  let arrivals = 0;
  const bestPerS = sloMs.map((_, m) => groups.reduce((s, g) => s + g.count * Math.max(0, ...workerRates(g, m)), 0));
  coarserBins(bins, maxBins).forEach((bin, k) => {
    const served: [number, string][][] = sloMs.map(() => []);
    groups.forEach((g, gi) => {
      // GPU-seconds on MPS partitions (q) and pooled (p), within the group's.
      const q = `q_${gi}_${k}`;
      const shares: [number, string][] = [];
      const aloneTime: [number, string][] = [];
      for (let m = 0; m < models; m++) {
        const { alone, beside } = g.mps[m] ?? NO_MPS;
        const z = (c: string, i: number) => `z${c}_${gi}_${m}_${i}_${k}`;
        const worker: [number, string][] = [];
        for (const [c, points] of [
          ['a', alone],
          ['b', beside],
        ] as const)
          points.forEach((pt, i) => {
            worker.push([1, z(c, i)]);
            if (c === 'a') aloneTime.push([1, z(c, i)]);
            shares.push([pt.pct / 100, z(c, i)]);
            served[m]!.push([pt.perS, z(c, i)]);
          });
        // Worker-seconds: one worker of m a GPU.
        lp.row([...worker, [-1, q]], '<=', 0);
      }
      // Batches that start alone on a GPU never overlap one another.
      lp.row([...aloneTime, [-1, q]], '<=', 0);
      lp.row([...shares, [-1, q]], '<=', 0);
      const p = `p_${gi}_${k}`;
      lp.row([[1, q], ...(g.pooledPerS.length > 0 ? [[1, p] as [number, string]] : [])], '<=', g.count * bin.lengthS);
      if (g.pooledPerS.length > 0) {
        // Models that could run here (any rate); n runs to every model of the profile, late batches included.
        const here = g.pooledPerS.map((r, m) => (r.some((v) => v > 0) ? m : -1)).filter((m) => m >= 0);
        const maxN = Math.max(0, ...here.map((m) => g.pooledPerS[m]!.length));
        const t = (m: number, n: number) => `t_${gi}_${m}_${n}_${k}`;
        for (const m of here) {
          const perN = g.pooledPerS[m]!;
          lp.row([...perN.slice(0, maxN).map((_, i) => [1, t(m, i + 1)] as [number, string]), [-1, p]], '<=', 0);
          perN.slice(0, maxN).forEach((r, i) => served[m]!.push([r, t(m, i + 1)]));
        }
        for (let j = 1; j < maxN; j++) {
          const terms: [number, string][] = [[-j, p]];
          for (const m of here) for (let n = 1; n <= j; n++) terms.push([1, t(m, n)]);
          lp.row(terms, '<=', 0);
        }
      }
    });
    for (let m = 0; m < models; m++) {
      const own = `o_${m}_${k}`;
      const carry = `c_${m}_${k}`;
      const fromLast: [number, string][] = k > 0 ? [[1, `c_${m}_${k - 1}`]] : [];
      // What k produces of m serves k's own tasks and the previous stretch's carried ones.
      lp.row([[1, own], ...fromLast, ...served[m]!.map(([c, v]) => [-c, v] as [number, string])], '<=', 0);
      // k's arrivals bound the tasks of k served within SLO.
      lp.row(
        [
          [1, own],
          [1, carry],
          [-bin.ratePerS[m]! * bin.lengthS, 'x'],
        ],
        '<=',
        0,
      );
      lp.upper(carry, (sloMs[m]! / 1000) * bestPerS[m]!);
      total.push([1, own], [1, carry]);
      arrivals += bin.ratePerS[m]! * bin.lengthS;
    }
  });
  // With no arrivals nothing bounds x: the LP says so (unbounded) and solveCeiling gives Infinity.
  lp.row([...total, [-need * arrivals, 'x']], '>=', 0);
  return lp.text('x');
}

type Solver = { solve(problem: string, options?: Record<string, unknown>): { Status: string; ObjectiveValue: number } };
let solver: Promise<Solver> | undefined;

/** HiGHS, loaded once per process. */
async function highs(): Promise<Solver> {
  // The package's types describe its CommonJS build; under `import` its ES build's default is the loader.
  solver ??= import('highs').then((m) => (m as unknown as { default: () => Promise<Solver> }).default());
  return solver;
}

/** Solves one ceiling LP: the largest x (Infinity where nothing bounds it: a run with no arrivals). */
export async function solveCeiling(lpText: string): Promise<number> {
  const r = (await highs()).solve(lpText, { output_flag: false });
  if (r.Status === 'Unbounded') return Infinity;
  if (r.Status !== 'Optimal') throw new Error(`ceiling LP: HiGHS ended with '${r.Status}'`);
  return r.ObjectiveValue;
}

/** A scenario's ceiling at one seed (the ground truth's systematic errors follow the seed), per attainment. */
export interface SeedCeiling {
  readonly seed: number;
  /** Keyed as the suite keys attainments ('99', '95'). */
  readonly ceiling: Readonly<Record<string, number>>;
}

/** The ceiling of `s` on `cluster` (the ground truth's, scenarioCluster) at each seed and attainment. */
export async function scenarioCeiling(
  s: Scenario,
  cluster: ClusterInfo,
  seeds: readonly number[],
  attainments: readonly number[],
): Promise<SeedCeiling[]> {
  const sloMs = cluster.models.map((m) => m.sloMs);
  const bins = rateBins(s, Math.max(...sloMs) / 1000);
  const truth: Omit<GroundTruthSettings, 'seed'> = s.groundTruth;
  const out: SeedCeiling[] = [];
  for (const seed of seeds) {
    const groups = ceilingGroups(cluster, truth, seed);
    const ceiling: Record<string, number> = {};
    for (const a of attainments)
      ceiling[String(Math.round(a * 100))] = await solveCeiling(ceilingLp(groups, bins, sloMs, a));
    out.push({ seed, ceiling });
  }
  return out;
}

/** A scenario's ceilings over seeds, per attainment key, as the suite reports capacities (mean and range). */
export function ceilingSpread(seeds: readonly SeedCeiling[]): Record<string, Spread> {
  const out: Record<string, Spread> = {};
  for (const k of Object.keys(seeds[0]?.ceiling ?? {})) out[k] = spread(seeds.map((s) => s.ceiling[k]!));
  return out;
}

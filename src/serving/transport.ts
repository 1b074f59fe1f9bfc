// The path of a task in the twin, modelled per host and learnt by the running scheduler:
// - a batch's transport: the time a batch spends outside its worker's GPU time (scheduler -> worker ->
//   scheduler: its inputs' bytes crossing the data socket, the hand-offs between processes), a fixed
//   cost plus a cost per megabyte of input (`TransportFit`, one per agent);
// - a request's way in: from its HTTP request's arrival at the scheduler (headers read) to its task in
//   the queue (the body's bytes read and parsed), a fixed cost plus a cost per megabyte of body;
// - an answer's way out: from the task's answer to its response handed to the kernel (ms a task);
// - the client's own leg: what its client adds around the scheduler's view of a request (its HTTP
//   stack, the kernel's loopback both ways, the server's header parse; ms a task). The scheduler cannot
//   see it; `npm run bench:twin` measures it with the same client against a bare node:http server.
// The scheduler shows them at GET /v2/inss/cluster as `transport`; the simulator takes them as a
// setting (`SimSettings.transport`, `inss bench --transport FILE`), so a benchmark says what the live
// system does on that machine. The dispatch rule of both budgets each task's deadline less the
// expected way out (`dispatchBudgetMs`). Pure.
import { z } from 'zod';
import { normalCdf, normalQuantile } from '../workload/normal.js';

const LinearCostSchema = z
  .object({
    /** Per batch (or request), whatever its size (ms). */
    fixedMs: z.number().nonnegative().finite(),
    /** Per 10^6 bytes (ms). */
    perMbMs: z.number().nonnegative().finite(),
  })
  .strict();
export type LinearCost = z.infer<typeof LinearCostSchema>;

const SpreadSchema = z
  .array(z.number().nonnegative().finite())
  .min(2)
  .max(1024)
  .refine((q) => q.every((x, i) => i === 0 || x >= q[i - 1]!), 'quantiles must not decrease');

const Lag1Schema = z.number().min(-1).max(1);

export const TransportModelSchema = z
  .object({
    /** Per batch, whatever its size (ms). */
    fixedMs: z.number().nonnegative().finite(),
    /** Per 10^6 bytes of the batch's inputs (ms). */
    perMbMs: z.number().nonnegative().finite(),
    /** A request's way in, per 10^6 bytes of its input (absent: none; a task is queued as it arrives). */
    wayIn: LinearCostSchema.optional(),
    /** An answer's way out (ms a task; absent: none). */
    wayOutMs: z.number().nonnegative().finite().optional(),
    /**
     * The client's own leg (ms a task; absent: none): added to each task's latency as its client sees
     * it. Not in the scheduler's budget (the scheduler cannot see it), so it moves no dispatch decision.
     */
    clientMs: z.number().nonnegative().finite().optional(),
    /**
     * How a batch's transport spreads around the fit: quantiles of (measured / fitted) at evenly spaced
     * probabilities 0, 1/(k-1), ..., 1, scaled to a mean of 1 (`TransportFit.spread`). Absent: every
     * batch pays the fit exactly.
     */
    spread: SpreadSchema.optional(),
    /**
     * How slow batches come in runs: the lag-1 autocorrelation of the spread's ratios in the order the
     * fit took them, on the normal scale (`lag1NormalScores`). Absent: each batch's draw is independent.
     */
    spreadLag1: Lag1Schema.optional(),
    /** How a request's way in spreads around its fit, the same way (absent: every request pays the fit). */
    wayInSpread: SpreadSchema.optional(),
    /** The way in's runs, as `spreadLag1` (absent: each request's draw is independent). */
    wayInSpreadLag1: Lag1Schema.optional(),
    /**
     * Each model's own path on the host: the mean of its batches' (measured / fitted) over the mean of
     * all batches', by model name (`TransportFit.modelFactors`). What a model's batches pay beyond the
     * host's fit (its outputs' bytes, its worker's handling around the GPU time). Absent, or a model
     * not named: 1. The spread is then around each model's own fit.
     */
    modelFactors: z.record(z.string().min(1), z.number().positive().finite()).optional(),
  })
  .strict();
export type TransportModel = z.infer<typeof TransportModelSchema>;

/**
 * The transport model's fields of one host's entry at GET /v2/inss/cluster `transport` (which also
 * counts its samples: `batches`, `requests`, `answers`), for `TransportModelSchema` to check; anything
 * else is passed through as it is (the schema names what is wrong).
 */
export function transportFields(raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  const r = raw as Record<string, unknown>;
  return Object.fromEntries(
    [
      'fixedMs',
      'perMbMs',
      'wayIn',
      'wayOutMs',
      'clientMs',
      'spread',
      'spreadLag1',
      'wayInSpread',
      'wayInSpreadLag1',
      'modelFactors',
    ]
      .filter((k) => r[k] !== undefined)
      .map((k) => [k, r[k]]),
  );
}

/** A request's way in under the model (ms) for a request of `bytes` bytes (0 without a way-in term). */
export function wayInMsFor(m: TransportModel, bytes: number): number {
  return m.wayIn ? transportMsFor(m.wayIn, bytes) : 0;
}

/**
 * A batch's transport factor under a spread (`TransportModel.spread`) for a uniform draw `u` in
 * [0, 1): the inverse of the quantiles' piecewise-linear distribution. 1 without a spread.
 */
export function spreadFactor(spread: readonly number[] | undefined, u: number): number {
  if (!spread) return 1;
  const x = Math.min(Math.max(u, 0), 1) * (spread.length - 1);
  const i = Math.min(Math.floor(x), spread.length - 2);
  return spread[i]! + (spread[i + 1]! - spread[i]!) * (x - i);
}

/**
 * A chain of spread factors in which slow draws come in runs, as on a host whose stalls last several
 * batches: a Gaussian copula with an AR(1) on the normal scale, z_t = lag1 z_(t-1) + sqrt(1 - lag1^2)
 * e_t, each factor `spreadFactor(spread, Phi(z_t))`. Each z_t is standard normal, so each factor is
 * distributed as the spread says; only their order changes. The simulator keeps one chain per fit the
 * scheduler keeps (one per host's batches, one for the requests' way in), drawn in the order its
 * batches (requests) are sent (queued). Without `lag1` (or at 0) the factor is `spreadFactor(spread,
 * u)` itself, so the same uniforms give the same factors as independent draws.
 */
export class SpreadChain {
  private z = Number.NaN;

  constructor(
    private readonly spread: readonly number[] | undefined,
    private readonly lag1: number | undefined,
  ) {}

  /** The next factor, from a uniform draw `u` in [0, 1) of the chain's own stream. */
  factor(u: number): number {
    const rho = this.lag1;
    if (!rho) return spreadFactor(this.spread, u);
    const e = normalQuantile(Math.min(Math.max(u, 1e-12), 1 - 1e-12));
    this.z = Number.isNaN(this.z) ? e : rho * this.z + Math.sqrt(1 - rho * rho) * e;
    return spreadFactor(this.spread, normalCdf(this.z));
  }
}

/**
 * The lag-1 autocorrelation of a series' normal scores (each value's mid-rank r of n -> u = (r - 0.5)
 * / n -> the normal quantile of u): how much one value's rank says about the next's, whatever the
 * values' distribution, the estimate `SpreadChain`'s AR(1) takes. Null under 8 values or when all are
 * equal. In [-1, 1], to 4 decimals.
 */
export function lag1NormalScores(xs: readonly number[]): number | null {
  const n = xs.length;
  if (n < 8) return null;
  const order = xs.map((_, i) => i).sort((a, b) => xs[a]! - xs[b]!);
  const scores = new Array<number>(n);
  for (let i = 0; i < n;) {
    let j = i;
    while (j + 1 < n && xs[order[j + 1]!] === xs[order[i]!]) j++;
    const score = normalQuantile((i + j + 1) / 2 / n); // mid-rank (i + j) / 2 + 1, less 0.5, over n
    for (let k = i; k <= j; k++) scores[order[k]!] = score;
    i = j + 1;
  }
  const mean = scores.reduce((a, x) => a + x, 0) / n;
  let num = 0;
  let den = 0;
  for (let t = 0; t < n; t++) {
    const d = scores[t]! - mean;
    den += d * d;
    if (t + 1 < n) num += d * (scores[t + 1]! - mean);
  }
  if (!(den > 0)) return null;
  return Number(Math.min(1, Math.max(-1, num / den)).toFixed(4));
}

/** Quantiles kept in a spread (k: probabilities 0, 1/32, ..., 1). */
export const SPREAD_QUANTILES = 33;
/** Batches a fit needs before it measures the spread around itself, and the most recent ratios it keeps. */
const SPREAD_AFTER = 16;
const SPREAD_KEEP = 1024;
/** Ratios of one model among the kept ones before the fit names its own factor. */
const FACTOR_AFTER = 16;

/**
 * The part of a task's SLO its batch may use at the scheduler (ms): the SLO less the answer's expected
 * way out, so that the answer reaches its client within the SLO. Used by the dispatch rule and the
 * expiry of the simulator and the scheduler alike; with no way out it is the SLO.
 */
export function dispatchBudgetMs(sloMs: number, wayOutMs: number): number {
  return Math.max(0, sloMs - wayOutMs);
}

/** A batch's transport under the model (ms) for `inputBytes` bytes of inputs. */
export function transportMsFor(m: LinearCost, inputBytes: number): number {
  return m.fixedMs + (m.perMbMs * inputBytes) / 1e6;
}

/**
 * Least-squares fit of (input bytes, transport ms) samples to `fixedMs + perMbMs * MB`, from running
 * sums (O(1) per sample, no history kept). Both coefficients are kept non-negative: a fit whose slope
 * or intercept would be negative (sizes that hardly vary, noise) falls back to the other alone.
 */
export class TransportFit {
  private n = 0;
  private sx = 0;
  private sy = 0;
  private sxx = 0;
  private sxy = 0;
  /** The latest (measured / fitted) ratios, a ring of SPREAD_KEEP, and whose batch each was. */
  private readonly ratios: number[] = [];
  private readonly keys: (string | undefined)[] = [];
  private nextRatio = 0;

  /** A batch of `inputBytes` bytes of inputs took `transportMs`; `key` names its model (its own factor). */
  add(inputBytes: number, transportMs: number, key?: string): void {
    if (!Number.isFinite(inputBytes) || !Number.isFinite(transportMs) || inputBytes < 0 || transportMs < 0) return;
    if (this.n >= SPREAD_AFTER) {
      const fitted = transportMsFor(this.model()!, inputBytes);
      if (fitted > 0) {
        this.ratios[this.nextRatio] = transportMs / fitted;
        this.keys[this.nextRatio] = key;
        this.nextRatio = (this.nextRatio + 1) % SPREAD_KEEP;
      }
    }
    const x = inputBytes / 1e6;
    this.n++;
    this.sx += x;
    this.sy += transportMs;
    this.sxx += x * x;
    this.sxy += x * transportMs;
  }

  get samples(): number {
    return this.n;
  }

  /**
   * How the latest batches spread around the fit: SPREAD_QUANTILES quantiles of (measured / fitted
   * at the time), scaled so their distribution's mean is 1 (the fit keeps the mean; this the shape).
   * Null before SPREAD_AFTER + 2 batches, or when every ratio is 0.
   */
  spread(): number[] | null {
    if (this.ratios.length < 2) return null;
    // Around each model's own fit: a model whose batches pay more than the host's fit is its factor, not
    // the spread's tail.
    const factors = this.modelFactors() ?? {};
    const sorted = this.ratios
      .map((r, i) => {
        const k = this.keys[i];
        return r / ((k !== undefined ? factors[k] : undefined) ?? 1);
      })
      .sort((a, b) => a - b);
    const q = Array.from({ length: SPREAD_QUANTILES }, (_, k) => {
      const x = (k / (SPREAD_QUANTILES - 1)) * (sorted.length - 1);
      const i = Math.min(Math.floor(x), sorted.length - 2);
      return sorted[i]! + (sorted[i + 1]! - sorted[i]!) * (x - i);
    });
    // The mean of the piecewise-linear distribution between the quantiles (trapezoids).
    let mean = 0;
    for (let k = 1; k < q.length; k++) mean += (q[k - 1]! + q[k]!) / 2;
    mean /= q.length - 1;
    if (!(mean > 0)) return null;
    return q.map((v) => Number((v / mean).toFixed(4)));
  }

  /**
   * How slow batches come in runs: `lag1NormalScores` of the latest ratios in the order they were
   * measured. Null under 8 ratios or when all are equal.
   */
  spreadLag1(): number | null {
    const r = this.ratios;
    return lag1NormalScores(r.length < SPREAD_KEEP ? r : [...r.slice(this.nextRatio), ...r.slice(0, this.nextRatio)]);
  }

  /**
   * Each model's own path relative to the host's fit: over the kept ratios, the mean of its batches'
   * over the mean of all batches' (so the batches' mean factor is 1), for each model with at least
   * FACTOR_AFTER of them; to 4 decimals. Null while no model has that many, or when every ratio is 0.
   */
  modelFactors(): Record<string, number> | null {
    const sums = new Map<string, { sum: number; n: number }>();
    let all = 0;
    for (const [i, r] of this.ratios.entries()) {
      all += r;
      const k = this.keys[i];
      if (k === undefined) continue;
      const s = sums.get(k) ?? { sum: 0, n: 0 };
      s.sum += r;
      s.n++;
      sums.set(k, s);
    }
    const mean = all / this.ratios.length;
    if (!(mean > 0)) return null;
    const out = [...sums]
      .filter(([, s]) => s.n >= FACTOR_AFTER && s.sum > 0)
      .map(([k, s]) => [k, Number((s.sum / s.n / mean).toFixed(4))] as const);
    return out.length > 0 ? Object.fromEntries(out) : null;
  }

  /** The fitted model; null before any sample. */
  model(): LinearCost | null {
    const n = this.n;
    if (n === 0) return null;
    const meanX = this.sx / n;
    const meanY = this.sy / n;
    const varX = this.sxx / n - meanX * meanX;
    const round = (v: number) => Number(v.toFixed(4));
    // Sizes that do not vary cannot separate the two costs: all of it is fixed.
    if (!(varX > 1e-12 * Math.max(1, meanX * meanX))) return { fixedMs: round(meanY), perMbMs: 0 };
    const slope = (this.sxy / n - meanX * meanY) / varX;
    const intercept = meanY - slope * meanX;
    if (slope <= 0) return { fixedMs: round(meanY), perMbMs: 0 };
    if (intercept < 0) return { fixedMs: 0, perMbMs: round(this.sxy / this.sxx) }; // through the origin
    return { fixedMs: round(intercept), perMbMs: round(slope) };
  }
}

/**
 * The dispatch rule's transport estimate per worker, learned from its batches the same way by the
 * scheduler (each answered batch's round trip less its GPU time) and by the simulator (each batch's
 * transport under its transport setting): it starts at 0 and moves 10% toward each sample, so one slow
 * batch (a cold start) cannot make the rule drop everything, and halves each epoch the worker runs no
 * batch, so a stale estimate fades.
 */
export function learnedOverheadMs(prevMs: number, sampleMs: number): number {
  return 0.9 * prevMs + 0.1 * sampleMs;
}

/** The estimate after an epoch in which the worker ran no batch. */
export function idleOverheadMs(prevMs: number): number {
  return prevMs * 0.5;
}

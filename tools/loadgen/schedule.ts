// The send schedule of `inss loadgen` (pure, seeded, reproducible). Each model gets its own renewal
// process at a constant rate (src/workload/arrivals.ts: Poisson, or Gamma with a coefficient of
// variation), seeded from the run's seed and the model's name, or replays the arrival instants of a
// trace (`--trace`, the scenario trace format: docs/scenarios.md); the streams are merged into one
// time-ordered sequence that the shell replays against its clock. Open loop: the schedule does not
// depend on answers, so a slow server cannot slow the offered load down.
import { type ArrivalStream, rateFunction, RenewalStream, TraceStream } from '../../src/workload/arrivals.js';
import { mixSeed, Rng } from '../../src/workload/random.js';

/** Inter-arrival distribution: Poisson (exponential gaps, CV 1) or Gamma with CV `cv` (> 1 burstier, < 1 smoother). */
export type ArrivalSpec = { readonly kind: 'poisson' } | { readonly kind: 'gamma'; readonly cv: number };

/** One model's offered load. */
export interface ModelLoad {
  readonly name: string;
  /** Its mean rate: drawn at this rate, or, for a trace, its arrivals in the window per second of it (`traceLoad`). */
  readonly ratePerS: number;
  /**
   * A trace's arrival instants (ms after the run starts, any order): sent at exactly these times
   * instead of drawn (`--trace`); those at or after the window's end are not sent.
   */
  readonly arrivalsMs?: readonly number[];
}

/**
 * A model replayed from a trace: its arrival times in seconds (the scenario trace format, as
 * `parseTrace` reads it) and its rate over the send window of `durationS`. The rate is 0 when no
 * arrival falls in the window (the schedule refuses that; the CLI says which trace and why first).
 */
export function traceLoad(name: string, timesS: readonly number[], durationS: number): ModelLoad {
  const arrivalsMs = timesS.map((t) => t * 1000);
  const inWindow = arrivalsMs.filter((t) => t < durationS * 1000).length;
  return { name, ratePerS: inWindow / durationS, arrivalsMs };
}

export interface ScheduleSettings {
  /** Length of the send window; arrivals fall in [0, durationS * 1000) ms. */
  readonly durationS: number;
  readonly arrival: ArrivalSpec;
  readonly seed: number;
}

/** One request to send: when (ms after the run starts) and for which model (an index into the models). */
export interface ScheduledSend {
  readonly atMs: number;
  readonly model: number;
}

/** Random streams a model draws from; each (seed, name, stream) triple is independent of the others. */
export const STREAM_ARRIVALS = 0;
export const STREAM_INPUT = 1;

/**
 * 32-bit FNV-1a hash of a model name. Streams are keyed by name rather than by position, so a model's
 * arrivals and input stay the same when other --model flags are added, removed or reordered.
 */
export function nameSeed(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The seed of one model's stream (arrivals or input data). */
export function modelStreamSeed(seed: number, name: string, stream: number): number {
  return mixSeed(seed, nameSeed(name), stream);
}

/**
 * The merged send schedule, produced lazily (a long run at a high rate never holds every arrival in
 * memory). `next()` returns sends in non-decreasing `atMs` order (ties: the lower model index first),
 * then `undefined` once every stream has passed the end of the window. Throws RangeError on settings
 * the CLI should have rejected (no model, a rate or duration <= 0, a CV <= 0, a trace instant that is
 * negative or not finite).
 */
export class SendSchedule {
  private readonly streams: ArrivalStream[];
  private readonly headsMs: number[];
  private readonly endMs: number;

  constructor(models: readonly ModelLoad[], settings: ScheduleSettings) {
    if (models.length === 0) throw new RangeError('the schedule needs at least one model');
    if (!(settings.durationS > 0) || !Number.isFinite(settings.durationS))
      throw new RangeError(`durationS must be a finite number > 0, got ${settings.durationS}`);
    const cv = settings.arrival.kind === 'gamma' ? settings.arrival.cv : 1;
    if (!(cv > 0) || !Number.isFinite(cv)) throw new RangeError(`cv must be a finite number > 0, got ${cv}`);
    this.endMs = settings.durationS * 1000;
    this.streams = models.map((m) => {
      if (!(m.ratePerS > 0) || !Number.isFinite(m.ratePerS))
        throw new RangeError(`rate of model '${m.name}' must be a finite number > 0, got ${m.ratePerS}`);
      if (m.arrivalsMs) {
        const bad = m.arrivalsMs.find((t) => !(t >= 0) || !Number.isFinite(t));
        if (bad !== undefined)
          throw new RangeError(`trace of model '${m.name}': arrival instants must be finite numbers >= 0, got ${bad}`);
        return new TraceStream(m.arrivalsMs);
      }
      return new RenewalStream(
        rateFunction({ kind: 'constant', ratePerS: m.ratePerS }),
        new Rng(modelStreamSeed(settings.seed, m.name, STREAM_ARRIVALS)),
        cv,
      );
    });
    this.headsMs = this.streams.map((s) => s.next());
  }

  next(): ScheduledSend | undefined {
    // A linear scan: a run has a handful of models, so a heap would not pay for itself.
    let best = -1;
    let bestMs = Infinity;
    for (let i = 0; i < this.headsMs.length; i++) {
      const t = this.headsMs[i]!;
      if (t < bestMs) {
        bestMs = t;
        best = i;
      }
    }
    if (best < 0 || bestMs >= this.endMs) return undefined;
    this.headsMs[best] = this.streams[best]!.next();
    return { atMs: bestMs, model: best };
  }
}

/** Every send of a schedule, in order (for tests and small runs; the CLI iterates lazily). */
export function sendSchedule(models: readonly ModelLoad[], settings: ScheduleSettings): ScheduledSend[] {
  const s = new SendSchedule(models, settings);
  const out: ScheduledSend[] = [];
  for (let x = s.next(); x !== undefined; x = s.next()) out.push(x);
  return out;
}

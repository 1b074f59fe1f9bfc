// The dashboard's memory of the last minutes (docs/dashboard.md): bounded time series per model and a
// bounded timeline of events, fed once per epoch by the sampler in scheduler/dashboard.ts from what the
// control plane already publishes (its cluster snapshot and its Prometheus metrics). Pure: times are
// passed in, nothing here reads a clock, a socket or a file.
import type { WorkerView as ControlWorkerView } from './metrics.js';

/** A fixed-capacity FIFO: pushing beyond the capacity forgets the oldest item. */
export class Ring<T> {
  private readonly items: T[] = [];
  private start = 0;
  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new Error(`ring capacity must be a positive integer, got ${capacity}`);
  }
  get length(): number {
    return this.items.length;
  }
  push(x: T): void {
    if (this.items.length < this.capacity) this.items.push(x);
    else {
      this.items[this.start] = x;
      this.start = (this.start + 1) % this.capacity;
    }
  }
  /** Oldest first. */
  toArray(): T[] {
    return [...this.items.slice(this.start), ...this.items.slice(0, this.start)];
  }
}

/**
 * The q-quantile of observations counted in cumulative histogram buckets, as Prometheus'
 * histogram_quantile computes it: linear interpolation inside the bucket that holds the rank, the
 * first bucket starting at 0; a rank in the +Inf bucket gives the largest finite bound. null when
 * nothing was counted.
 */
export function quantileFromBuckets(
  upperBounds: readonly number[],
  cumulative: readonly number[],
  q: number,
): number | null {
  const total = cumulative[cumulative.length - 1] ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  for (let i = 0; i < cumulative.length; i++) {
    if (cumulative[i]! < rank) continue;
    const hi = upperBounds[i]!;
    if (!Number.isFinite(hi)) return upperBounds[i - 1] ?? null;
    const lo = i === 0 ? 0 : upperBounds[i - 1]!;
    const below = i === 0 ? 0 : cumulative[i - 1]!;
    const inBucket = cumulative[i]! - below;
    return inBucket > 0 ? lo + ((hi - lo) * (rank - below)) / inBucket : hi;
  }
  return upperBounds[upperBounds.length - 1] ?? null;
}

/** What the sampler read for one model at one epoch. Counters are cumulative since the service started. */
export interface ModelReading {
  readonly ratePerS: number;
  readonly queued: number;
  /** Tasks answered within their SLO (outcome ok). */
  readonly withinSlo: number;
  /** Tasks that count against the SLO: within it, late, dropped for the SLO, failed. */
  readonly finished: number;
  /** Cumulative latency histogram counts, one per bound of `latencyBoundsS` (the last is +Inf). */
  readonly latencyBuckets: readonly number[];
}

/** One model's series, aligned with `SeriesView.t`. null where nothing finished in the window. */
export interface ModelSeries {
  readonly rate: number[];
  readonly queued: number[];
  /** Fraction of the tasks finished in the window that met their SLO. */
  readonly attainment: (number | null)[];
  /** Latency p99 over the window, ms (estimated from the histogram buckets). */
  readonly p99Ms: (number | null)[];
}

export interface SeriesView {
  /** Sample times, ms since the epoch (wall clock). */
  readonly t: number[];
  readonly models: Record<string, ModelSeries>;
}

interface Point {
  readonly t: number;
  readonly rate: number;
  readonly queued: number;
  readonly attainment: number | null;
  readonly p99Ms: number | null;
}

/**
 * Per-model series of the last `capacity` samples. Attainment and p99 of a point cover the last
 * `windowSamples` samples (the difference of the cumulative counters), so one quiet epoch does not
 * blank the chart.
 */
export class ModelTimeSeries {
  private readonly points: Ring<Point>[];
  private readonly history: Ring<ModelReading>[];

  constructor(
    readonly models: readonly string[],
    readonly latencyBoundsS: readonly number[],
    readonly capacity = 300,
    readonly windowSamples = 5,
  ) {
    this.points = models.map(() => new Ring<Point>(capacity));
    this.history = models.map(() => new Ring<ModelReading>(windowSamples + 1));
  }

  /** Records one sample per model (in `models` order). */
  record(tMs: number, readings: readonly ModelReading[]): void {
    readings.forEach((r, m) => {
      const h = this.history[m]!;
      h.push(r);
      // The window starts at the oldest reading kept; until there are enough, at the service's start (zero).
      const base = h.length === h.capacity ? h.toArray()[0]! : null;
      const finished = r.finished - (base?.finished ?? 0);
      const within = r.withinSlo - (base?.withinSlo ?? 0);
      const buckets = r.latencyBuckets.map((c, i) => c - (base?.latencyBuckets[i] ?? 0));
      const p99 = quantileFromBuckets(this.latencyBoundsS, buckets, 0.99);
      this.points[m]!.push({
        t: tMs,
        rate: r.ratePerS,
        queued: r.queued,
        attainment: finished > 0 ? within / finished : null,
        p99Ms: p99 === null ? null : p99 * 1000,
      });
    });
  }

  /** The latest point of model `name`, or null before the first sample. */
  latest(name: string): { ratePerS: number; queued: number; attainment: number | null; p99Ms: number | null } | null {
    const m = this.models.indexOf(name);
    const pts = m < 0 ? [] : this.points[m]!.toArray();
    const p = pts[pts.length - 1];
    return p ? { ratePerS: p.rate, queued: p.queued, attainment: p.attainment, p99Ms: p.p99Ms } : null;
  }

  /** The samples taken after `sinceMs` (all of them without it). */
  view(sinceMs = -Infinity): SeriesView {
    const models: Record<string, ModelSeries> = {};
    let t: number[] = [];
    this.models.forEach((name, m) => {
      const pts = this.points[m]!.toArray().filter((p) => p.t > sinceMs);
      if (m === 0) t = pts.map((p) => p.t);
      models[name] = {
        rate: pts.map((p) => p.rate),
        queued: pts.map((p) => p.queued),
        attainment: pts.map((p) => p.attainment),
        p99Ms: pts.map((p) => p.p99Ms),
      };
    });
    return { t, models };
  }
}

// ---------------------------------------------------------------------------------------------------
// Events: what changed between two samples of the cluster.

/** A worker as the cluster snapshot shows it (the fields the timeline needs; metrics.ts's WorkerView). */
export type WorkerView = Pick<ControlWorkerView, 'workerId' | 'model' | 'gpu' | 'pct' | 'batch' | 'state'> & {
  readonly role: string;
};

/** A placement of the deployment in force, with the model's name. */
export interface PlacementView {
  readonly model: string;
  readonly gpu: number;
  readonly pct: number;
  readonly batch: number;
}

export type DashboardEvent =
  | { readonly t: number; readonly kind: 'plan'; readonly text: string; readonly changes: readonly PlanChange[] }
  | {
      readonly t: number;
      readonly kind: 'swap';
      readonly text: string;
      readonly model: string;
      readonly from: WorkerRef;
      readonly to: WorkerRef;
    }
  | {
      readonly t: number;
      readonly kind: 'serving' | 'stopped';
      readonly text: string;
      readonly model: string;
      readonly worker: WorkerRef;
    }
  | {
      readonly t: number;
      readonly kind: 'agent';
      readonly text: string;
      readonly agentId: string;
      readonly connected: boolean;
    };

export interface WorkerRef {
  readonly workerId: string;
  readonly gpu: number;
  readonly pct: number;
}

export interface PlanChange {
  readonly model: string;
  /** null: the model had no placement there before (or has none after). */
  readonly before: PlacementView | null;
  readonly after: PlacementView | null;
}

const ref = (w: WorkerView): WorkerRef => ({ workerId: w.workerId, gpu: w.gpu, pct: w.pct });
const place = (p: PlacementView | null): string => (p ? `GPU ${p.gpu} ${p.pct}% b${p.batch}` : 'none');
/** Takes batches: active (or retiring while its successor starts) and ready. */
const serves = (w: WorkerView): boolean => (w.role === 'active' || w.role === 'retiring') && w.state === 'ready';

/**
 * What the workers did between two samples. A worker that became active and ready is paired with a
 * worker of its model that served before and since left (or is finishing its last batch), same GPU
 * first: a shadow swap, with the share before and after; unpaired, it is a first start. An active
 * worker that left with no successor has stopped.
 */
export function workerEvents(t: number, before: readonly WorkerView[], after: readonly WorkerView[]): DashboardEvent[] {
  const active = (w: WorkerView | undefined) => w !== undefined && w.role === 'active' && w.state === 'ready';
  const prev = new Map(before.map((w) => [w.workerId, w]));
  const now = new Map(after.map((w) => [w.workerId, w]));
  const started = after.filter((w) => active(w) && !active(prev.get(w.workerId)));
  // Served before; now gone, or retiring (its last batch in flight).
  const left = before.filter((w) => serves(w) && (!now.has(w.workerId) || now.get(w.workerId)!.role === 'retiring'));
  const out: DashboardEvent[] = [];
  for (const w of started) {
    const candidates = left.filter((s) => s.model === w.model && s.workerId !== w.workerId);
    const old = candidates.find((s) => s.gpu === w.gpu) ?? candidates[0];
    if (old) {
      left.splice(left.indexOf(old), 1);
      const share = old.pct === w.pct ? `${w.pct}%` : `${old.pct}% -> ${w.pct}%`;
      const where = old.gpu === w.gpu ? `GPU ${w.gpu}` : `GPU ${old.gpu} -> GPU ${w.gpu}`;
      out.push({
        t,
        kind: 'swap',
        model: w.model,
        from: ref(old),
        to: ref(w),
        text: `${w.model}: ${old.workerId} -> ${w.workerId}, ${where}, share ${share}`,
      });
    } else {
      out.push({
        t,
        kind: 'serving',
        model: w.model,
        worker: ref(w),
        text: `${w.model}: ${w.workerId} serving on GPU ${w.gpu} at ${w.pct}%`,
      });
    }
  }
  // A retiring worker that leaves was replaced or let go (the plan event says which); an active one is news.
  for (const s of left)
    if (!now.has(s.workerId) && s.role === 'active')
      out.push({
        t,
        kind: 'stopped',
        model: s.model,
        worker: ref(s),
        text: `${s.model}: ${s.workerId} on GPU ${s.gpu} stopped serving`,
      });
  return out;
}

/** The policy's new deployment, as a list of what changed per model and GPU; null when nothing did. */
export function planEvent(
  t: number,
  before: readonly PlacementView[],
  after: readonly PlacementView[],
): DashboardEvent | null {
  const key = (p: PlacementView) => `${p.model}@${p.gpu}`;
  const old = new Map(before.map((p) => [key(p), p]));
  const now = new Map(after.map((p) => [key(p), p]));
  const changes: PlanChange[] = [];
  for (const [k, p] of now) {
    const o = old.get(k) ?? null;
    if (!o || o.pct !== p.pct || o.batch !== p.batch) changes.push({ model: p.model, before: o, after: p });
  }
  for (const [k, o] of old) if (!now.has(k)) changes.push({ model: o.model, before: o, after: null });
  if (changes.length === 0) return null;
  const shown = changes.slice(0, 6).map((c) => `${c.model} ${place(c.before)} -> ${place(c.after)}`);
  return {
    t,
    kind: 'plan',
    changes,
    text: `new deployment: ${shown.join('; ')}${changes.length > 6 ? `; and ${changes.length - 6} more` : ''}`,
  };
}

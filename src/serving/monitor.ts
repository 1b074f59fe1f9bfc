// The monitor's arrival-rate estimate, shared by the simulator and the scheduler's control plane: per
// model, arrivals are counted per decision epoch; the rate is the mean over the last `windowEpochs`
// epochs. One warm-up rule: until a full window of epochs has been seen, the estimate is at least the
// operator's initial rate (the scenario's), so the first decisions do not plan for an empty cluster
// while traffic ramps up. Given arrival times, it also measures how bursty each model's arrivals are:
// the squared coefficient of variation of the gaps between them over the same window (1 for Poisson
// arrivals, 0 for evenly spaced ones, more for bursts), which the planner's queueing model takes.
// Two kinds (the serving setting `monitor`): `mean` reports the window's mean rate; `envelope` also
// runs the tuner (src/serving/tuner.ts), which raises a model's rate where its traffic envelope
// outgrows the plan's and holds it raised a while. Pure.
import { EnvelopeTuner } from './tuner.js';

/** The monitor kinds: the mean rate over the window, or that with the envelope tuner on top. */
export const MONITOR_KINDS = ['mean', 'envelope'] as const;
export type MonitorKind = (typeof MONITOR_KINDS)[number];

/** Epochs in the monitor window: round(window / epoch), at least 1. */
export function windowEpochs(monitorWindowMs: number, epochMs: number): number {
  return Math.max(1, Math.round(monitorWindowMs / epochMs));
}

/** History longer than this many epochs is forgotten (the window never needs more). */
const KEEP_EPOCHS = 64;

/** Fewer gaps than this in the window: too few to tell, taken as Poisson (squared CV 1). */
export const MIN_GAPS_FOR_CV = 30;

export class RateMonitor {
  private readonly history: number[][];
  private readonly counts: number[];
  private readonly k: number;
  /** Per model: the last arrival's time (ms), and per epoch the gaps' count, sum and sum of squares. */
  private readonly lastMs: number[];
  private readonly gaps: Float64Array[];
  private readonly gapHistory: Float64Array[][];
  /** The envelope tuner (`envelope` monitor), else null. */
  private readonly tuner: EnvelopeTuner | null;

  constructor(
    nModels: number,
    private readonly epochMs: number,
    monitorWindowMs: number,
    kind: MonitorKind = 'mean',
  ) {
    this.history = Array.from({ length: nModels }, () => []);
    this.counts = new Array<number>(nModels).fill(0);
    this.k = windowEpochs(monitorWindowMs, epochMs);
    this.lastMs = new Array<number>(nModels).fill(NaN);
    this.gaps = Array.from({ length: nModels }, () => new Float64Array(3));
    this.gapHistory = Array.from({ length: nModels }, () => []);
    this.tuner = kind === 'envelope' ? new EnvelopeTuner(nModels, epochMs, monitorWindowMs) : null;
  }

  /** One arrival of model m in the current epoch, at `tMs` (ms, the caller's clock) when known. */
  arrival(m: number, tMs?: number): void {
    this.counts[m]! += 1;
    if (tMs === undefined) return;
    this.tuner?.arrival(m, tMs);
    const last = this.lastMs[m]!;
    this.lastMs[m] = tMs;
    if (Number.isNaN(last)) return;
    const gap = Math.max(0, tMs - last);
    const g = this.gaps[m]!;
    g[0]! += 1;
    g[1]! += gap;
    g[2]! += gap * gap;
  }

  /** Closes the current epoch: its counts join the history. */
  endEpoch(): void {
    this.counts.forEach((c, m) => {
      const h = this.history[m]!;
      h.push(c);
      if (h.length > KEEP_EPOCHS) h.shift();
    });
    this.counts.fill(0);
    this.gaps.forEach((g, m) => {
      const h = this.gapHistory[m]!;
      h.push(Float64Array.from(g));
      if (h.length > KEEP_EPOCHS) h.shift();
      g.fill(0);
    });
    this.tuner?.endEpoch(this.measured(), this.arrivalCv2());
  }

  /**
   * Per model, the squared coefficient of variation of its inter-arrival gaps over the window: 1 where
   * fewer than MIN_GAPS_FOR_CV gaps were seen (or no times were given).
   */
  arrivalCv2(): number[] {
    return this.gapHistory.map((h) => {
      let n = 0;
      let sum = 0;
      let sumSq = 0;
      for (const g of h.slice(-this.k)) {
        n += g[0]!;
        sum += g[1]!;
        sumSq += g[2]!;
      }
      if (n < MIN_GAPS_FOR_CV || !(sum > 0)) return 1;
      const mean = sum / n;
      return Math.max(0, sumSq / n - mean * mean) / (mean * mean);
    });
  }

  /** Tasks/s per model: the mean over the epochs of the window seen so far. */
  private measured(): number[] {
    return this.history.map((all) => {
      const h = all.slice(-this.k);
      return (h.reduce((a, b) => a + b, 0) / (Math.max(1, h.length) * this.epochMs)) * 1000;
    });
  }

  /**
   * Tasks/s per model over the window (see the file header for the warm-up rule), raised by the tuner
   * where it holds a higher rate (`envelope` monitor).
   */
  ratesPerS(initialRatePerS: readonly number[]): number[] {
    const means = this.meanRatesPerS(initialRatePerS);
    return this.tuner ? means.map((mean, m) => this.tuner!.ratePerS(m, mean)) : means;
  }

  /** Tasks/s per model over the window with the warm-up rule, never raised by the tuner. */
  meanRatesPerS(initialRatePerS: readonly number[]): number[] {
    const full = this.history.every((h) => h.length >= this.k);
    return this.measured().map((r, m) => (full ? r : Math.max(r, initialRatePerS[m] ?? 0)));
  }

  /** Whether a tuner runs on top of the mean rate (`envelope`). */
  get tuned(): boolean {
    return this.tuner !== null;
  }
}

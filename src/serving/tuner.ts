// The tuner's rule (InferLine's high-frequency tuner on traffic envelopes, docs/serving.md "The
// tuner"): one rule the simulator and the scheduler's control plane both run through the monitor
// (src/serving/monitor.ts, `monitor: envelope`). Pure.
//
// The plan's envelope: a plan made for rate r at burstiness cv2 (the monitor's squared CV of the gaps)
// expects, in a window of W ms ending at an arrival, that arrival plus r W / 1000 more, and allows a
// burst of z sqrt(cv2 r W / 1000) above that (the count's spread under a renewal process), z the normal
// quantile for a false alarm in ALARM_PER_EPOCH of the epochs per window size, split over the chances
// a sliding window of that size has in one epoch (twice the disjoint windows in it, at least one): a
// short window has many chances to look bursty by luck.
// The rule: at the end of each epoch, where the envelope the epoch observed exceeds the plan's for some
// window (the plan's rate: the rate the policy is told, the mean-rate monitor's or the tuner's own if
// higher), the rate that envelope implies is the rate r' whose plan envelope just holds the count; the
// policy is told the highest such rate over the windows, so it re-plans for it at once, and the tuner
// keeps telling it that rate for HOLD_MS before it falls back (scale down only after a hold: a plan
// left at the first quiet epoch swaps workers back and forth through a burst).
import { normalQuantile } from '../workload/normal.js';
import { envelopeWindowsMs, TrafficEnvelope } from './envelope.js';

/** Chance per epoch, model and window size that Poisson-like luck alone exceeds the plan's envelope. */
export const ALARM_PER_EPOCH = 1e-4;

/**
 * How long a raised rate is held (ms): InferLine waits 15 s, three times its replicas' 5 s start, before
 * scaling down; inss's shadow worker starts in 3 s (scenario swapS default), so three of them.
 */
export const HOLD_MS = 9000;

/** The shortest window, as a fraction of the epoch: bursts shorter than this are the queue's to absorb. */
export const SHORTEST_WINDOW_EPOCHS = 1 / 16;

/** The burst allowance's z for a window of `windowMs` in an epoch of `epochMs`. */
export function allowanceZ(windowMs: number, epochMs: number): number {
  const chances = Math.max(1, (2 * epochMs) / windowMs);
  return normalQuantile(1 - ALARM_PER_EPOCH / chances);
}

/** The plan's envelope: arrivals a plan for `ratePerS` (burstiness `cv2`) allows in a window ending at one. */
export function plannedCount(ratePerS: number, cv2: number, windowMs: number, z: number): number {
  const mean = (ratePerS * windowMs) / 1000;
  return 1 + mean + z * Math.sqrt(Math.max(0, cv2) * mean);
}

/**
 * The rate (tasks/s) whose plan envelope just holds `count` arrivals in a window of `windowMs` ending at
 * one: the positive root of 1 + x^2 + z s x = count in x = sqrt(r W), s = sqrt(cv2).
 */
export function impliedRatePerS(count: number, cv2: number, windowMs: number, z: number): number {
  const c = Math.max(0, count - 1);
  const zs = z * Math.sqrt(Math.max(0, cv2));
  const x = (-zs + Math.sqrt(zs * zs + 4 * c)) / 2;
  return (x * x * 1000) / windowMs;
}

/**
 * The rate one model's observed envelope implies over the plan's (`planPerS`): the highest implied rate
 * among the windows whose count exceeds the plan's envelope, or 0 when none does.
 */
export function envelopeRatePerS(
  counts: readonly number[],
  windowsMs: readonly number[],
  planPerS: number,
  cv2: number,
  epochMs: number,
): number {
  let best = 0;
  counts.forEach((c, k) => {
    const w = windowsMs[k]!;
    const z = allowanceZ(w, epochMs);
    if (c > plannedCount(planPerS, cv2, w, z)) best = Math.max(best, impliedRatePerS(c, cv2, w, z));
  });
  return best;
}

/** The envelope tuner: the envelope kept from arrivals and each model's raised rate held for HOLD_MS. */
export class EnvelopeTuner {
  private readonly envelope: TrafficEnvelope;
  /** Per model, per closed epoch within the hold (oldest first): the rate the envelope implied (0: none). */
  private readonly raised: number[][];
  private readonly holdEpochs: number;

  /**
   * @param longestMs the longest window the rule compares (the monitor's window: longer ones are the mean
   *   rate's to follow).
   */
  constructor(
    nModels: number,
    private readonly epochMs: number,
    longestMs: number,
  ) {
    const shortest = epochMs * SHORTEST_WINDOW_EPOCHS;
    this.envelope = new TrafficEnvelope(nModels, envelopeWindowsMs(shortest, Math.max(shortest, longestMs)), 1);
    this.holdEpochs = Math.max(1, Math.round(HOLD_MS / epochMs));
    this.raised = Array.from({ length: nModels }, () => []);
  }

  get windowsMs(): readonly number[] {
    return this.envelope.windowsMs;
  }

  arrival(m: number, tMs: number): void {
    this.envelope.arrival(m, tMs);
  }

  /**
   * Closes the epoch: per model, the envelope it observed against the plan's at the rate the policy is
   * told (`meanPerS`, the mean-rate monitor's after this epoch, or the rate held if higher).
   */
  endEpoch(meanPerS: readonly number[], cv2: readonly number[]): void {
    this.envelope.endEpoch();
    this.raised.forEach((h, m) => {
      const plan = this.ratePerS(m, meanPerS[m] ?? 0);
      h.push(envelopeRatePerS(this.envelope.max(m), this.envelope.windowsMs, plan, cv2[m] ?? 1, this.epochMs));
      if (h.length > this.holdEpochs) h.shift();
    });
  }

  /** Model m's rate to plan for: the mean-rate estimate, or the highest rate raised within the hold. */
  ratePerS(m: number, meanPerS: number): number {
    return Math.max(meanPerS, ...this.raised[m]!);
  }
}

// The batch an unprofiled model needs for its arrival rate, from what is known of its batch times before its
// profile is fitted (docs/online-profiling.md, "The batch before the fit"). AIMD alone starts at batch 1 and
// grows by at most a doubling per epoch, so a model whose rate needs batch 8 misses its SLO for the epochs the
// ramp takes while its queue grows. This gives AIMD a floor instead: the smallest batch b whose service rate
// alone on the GPU, b / t(b), covers the observed rate with `headroom`, and never a batch whose predicted time
// is over AIMD's target (half the SLO, aimd.ts). Pure.
//
// t(b) is estimated from the model's own batches alone at 100% (geometric mean per batch, log-log between
// batches, the prior's batch shape beyond them: fit.ts, `runAtFull`); before any, from the prior's median
// model (prior.ts, `typicalMs`): a guess, which the first epoch's batches replace. A guess too low gives a
// batch over the target in the first epoch; the next one's floor then comes from the measured times, and
// AIMD's decrease applies.
import type { FitState } from './fit.js';
import { runAtFull } from './fit.js';
import type { Prior } from './prior.js';

export interface StartBatchSettings {
  /** Service rate over arrival rate the floor aims at: room for Poisson bursts and the estimate's error. */
  readonly headroom: number;
  readonly maxBatch: number;
}

export const DEFAULT_START: StartBatchSettings = { headroom: 1.5, maxBatch: 32 };

/** t_inf alone at 100% for each batch size seen so (geometric means over the solo configurations). */
function seenAlone(st: FitState): Map<number, number> {
  const seen = new Map<number, number>();
  for (const c of st.solo) if (c.pct === 100) seen.set(c.batch, Math.exp(c.sumLogMs / c.n));
  return seen;
}

/** The estimate of t_inf alone at 100% at batch b (ms; NaN when nothing is known): see the file head. */
export function estimatedMs(st: FitState, prior: Prior, b: number): number {
  const seen = seenAlone(st);
  return seen.size > 0 ? runAtFull(seen, prior, b) : prior.typicalMs(b);
}

/**
 * The floor of the file head for a model arriving at `ratePerS` with AIMD target `targetMs`: the smallest batch
 * that covers the rate, else the largest within the target (1 at least); null when nothing is known of t(b).
 */
export function rateBatch(
  st: FitState,
  prior: Prior,
  ratePerS: number,
  targetMs: number,
  s: StartBatchSettings = DEFAULT_START,
): number | null {
  if (!(ratePerS >= 0)) return null;
  let within = 1;
  for (let b = 1; b <= s.maxBatch; b++) {
    const t = estimatedMs(st, prior, b);
    if (!(t > 0)) return null;
    if (t > targetMs) break;
    within = b;
    if ((1000 * b) / t >= s.headroom * ratePerS) return b;
  }
  return within;
}

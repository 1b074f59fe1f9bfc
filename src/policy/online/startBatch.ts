// The batch an unprofiled model needs for its arrival rate, from what is known of its batch times before its
// profile is fitted (docs/online-profiling.md, "The batch before the fit"). AIMD alone starts at batch 1 and
// grows by at most a doubling per epoch, so a model whose rate needs batch 8 misses its SLO for the epochs the
// ramp takes while its queue grows. This gives AIMD a floor instead: the smallest batch b whose service rate
// alone on the GPU, b / t(b), covers the observed rate with `headroom`, and a batch whose predicted time is over
// AIMD's target (half the SLO, aimd.ts) only where no batch within it serves the rate at all. Pure.
//
// t(b) is estimated from the model's own batches alone at 100% (geometric mean per batch, log-log between
// batches, the prior's batch shape beyond them: shapes.ts, `runAtFull`); before any, from the prior's median
// model (prior.ts, `typicalMs`): a guess, which the first epoch's batches replace. A guess too low gives a
// batch over the target in the first epoch; the next one's floor then comes from the measured times, and
// AIMD's decrease applies.
import type { FitState } from './fit.js';
import { runAtFull } from './shapes.js';
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

/**
 * The estimate of t_inf alone at batch b (ms; NaN when nothing is known): see the file head. At a share under 100%
 * (the share probe, probe.ts), that times the prior's share shape.
 */
export function estimatedMs(st: FitState, prior: Prior, b: number, pct = 100): number {
  const seen = seenAlone(st);
  const full = seen.size > 0 ? runAtFull(seen, prior, b) : prior.typicalMs(b);
  return pct < 100 ? full * prior.shareRatio(b, pct) : full;
}

/**
 * The floor of the file head for a model arriving at `ratePerS` with AIMD target `targetMs`: the smallest batch
 * that covers the rate with headroom within the target; else, where the largest batch within the target
 * (`within`) does not serve the rate at all, the smallest batch that does (without headroom) whose time is
 * within twice the target (the SLO): its tasks may miss by waiting for a batch over the target, while under
 * `within` the queue grows without end and nearly every task misses; else `within` (1 at least). Null when
 * nothing is known of t(b).
 */
export function rateBatch(
  st: FitState,
  prior: Prior,
  ratePerS: number,
  targetMs: number,
  s: StartBatchSettings = DEFAULT_START,
  pct = 100,
): number | null {
  if (!(ratePerS >= 0)) return null;
  let within = 1;
  let withinServes = true;
  for (let b = 1; b <= s.maxBatch; b++) {
    const t = estimatedMs(st, prior, b, pct);
    if (!(t > 0)) return null;
    const serves = (1000 * b) / t;
    if (t <= targetMs) {
      within = b;
      withinServes = serves >= ratePerS;
      if (serves >= s.headroom * ratePerS) return b;
    } else if (withinServes || t > 2 * targetMs) {
      break;
    } else if (serves >= ratePerS) {
      return b;
    }
  }
  return within;
}

/**
 * AIMD's batch `batch` after an epoch, held to the rate's floor: raised to it; after a batch over the target
 * (`overTarget`), lowered to it instead, unless the floor is itself over the target (the smallest batch that
 * serves the rate: under it the queue grows).
 */
export function flooredBatch(
  batch: number,
  overTarget: boolean,
  st: FitState,
  prior: Prior,
  ratePerS: number,
  targetMs: number,
  s: StartBatchSettings = DEFAULT_START,
  pct = 100,
): number {
  const floor = rateBatch(st, prior, ratePerS, targetMs, s, pct);
  if (floor === null) return batch;
  const lower = overTarget && estimatedMs(st, prior, floor, pct) <= targetMs;
  return lower ? Math.min(batch, floor) : Math.max(batch, floor);
}

// The share probe (docs/online-profiling.md, "A second share before promotion"). An unprofiled model runs at
// 100% of its GPU, so its fit has the prior's share shape: the median model's, within 3 to 11% of the plain
// convolutional networks on the RTX 2060 Super but 52 to 114% over for those with depthwise convolutions, which
// barely slow down on a smaller share. A pooled GPU under `overlap` times its batches at even shares, so the
// planner would see such a model as far more expensive beside others than it is. So once its fit passes at
// 100% and AIMD has reached its top there, a model alone on its GPU moves to a smaller share of that GPU (one
// worker swap) until its fit has `minBatches` batches there, and the fit's share exponents (one per batch size:
// fit.ts) are identified before it is promoted. Pure.
//
// Only a model whose time grows more slowly with its batch than the median model's is probed (`batchesBetter`):
// the others follow the prior's share shape (results.md, part c), and a probe would cost them misses for nothing.
// The share is the smallest of `shares` at which some batch serves the model's rate with the start floor's
// headroom within AIMD's target, timed by its fit at 100% and the prior's share shape (startBatch.ts). The prior's
// shape is near the truth for the models it fits and over it for the ones it does not, so a share it allows is
// one the model keeps up at; where it allows none (a model whose rate needs most of the GPU), no probe: the
// model is promoted with the prior's shape, which is the one that fits such models.
import type { FitState, SoloConfig } from './fit.js';
import type { Prior } from './prior.js';
import type { LearnerState } from './state.js';
import { DEFAULT_START, estimatedMs, rateBatch, type StartBatchSettings } from './startBatch.js';

export interface ProbeSettings {
  /** Shares (%) to try, smallest first. */
  readonly shares: readonly number[];
  /** Usable solo batches at the probe share before the model may be promoted. */
  readonly minBatches: number;
}

export const DEFAULT_PROBE: ProbeSettings = { shares: [25, 50, 75], minBatches: 20 };

/** The probe share for a model arriving at `ratePerS` with AIMD target `targetMs` (file head); null: none. */
export function probeShare(
  st: FitState,
  prior: Prior,
  ratePerS: number,
  targetMs: number,
  probe: ProbeSettings = DEFAULT_PROBE,
  s: StartBatchSettings = DEFAULT_START,
): number | null {
  for (const pct of [...probe.shares].sort((a, b) => a - b)) {
    if (!(pct > 0 && pct < 100)) continue;
    const b = rateBatch(st, prior, ratePerS, targetMs, s, pct);
    if (b === null) return null;
    const t = estimatedMs(st, prior, b, pct);
    if (t <= targetMs && (1000 * b) / t >= s.headroom * ratePerS) return pct;
  }
  return null;
}

/**
 * The model's running time grows more slowly with its batch than the prior's median model's, between the smallest
 * and largest batches it ran alone at 100% (at least a doubling apart): a batch that leaves more of the GPU idle
 * than the median's, whose share sensitivity then need not be the median's either. On the RTX 2060 Super the
 * prior's share shape is within 3 to 11% for the models whose time grows at least as fast as the median's
 * (resnet50, resnet18, vgg16, vgg19) and 52 to 114% over for three of the four that grow more slowly (mnasnet,
 * mobilenet, efficientnet; alexnet is the fourth): those are the ones worth a probe.
 */
export function batchesBetter(st: FitState, prior: Prior): boolean {
  const at100 = st.solo.filter((c) => c.pct === 100);
  if (at100.length === 0) return false;
  const lo = at100.reduce((a, c) => (c.batch < a.batch ? c : a));
  const hi = at100.reduce((a, c) => (c.batch > a.batch ? c : a));
  if (hi.batch < 2 * lo.batch) return false;
  const own = Math.exp(hi.sumLogMs / hi.n - lo.sumLogMs / lo.n);
  return own < prior.batchRatio(hi.batch, lo.batch);
}

/** The largest batch the fit has seen alone at share `pct` (0: none). */
export function largestAt(st: FitState, pct: number): number {
  let b = 0;
  for (const c of st.solo) if (c.pct === pct) b = Math.max(b, c.batch);
  return b;
}

/**
 * Whether AIMD may still climb for a model whose batches are padded to its size: the fit has not yet seen, alone at
 * 100%, the batch AIMD stops at (`maxBatch`, or the size it backed off from: a larger batch seen than AIMD's
 * `batch` now, or a largest batch already over `targetMs`). Above the batches seen the fit extrapolates with the
 * model's own slope, an upper bound that can be far over a model whose time grows ever more slowly with its batch
 * (vgg16 on the RTX 2060 Super: promoted having seen batches 1-8, its fit was 59% over at batch 32), and a
 * planner never chooses the batches it overprices, so they would never be seen.
 */
export function climbing(st: FitState, batch: number, targetMs: number, maxBatch: number): boolean {
  let top: SoloConfig | null = null;
  for (const c of st.solo) if (c.pct === 100 && (!top || c.batch > top.batch)) top = c;
  if (!top) return true;
  return top.batch < maxBatch && top.batch <= batch && Math.exp(top.sumLogMs / top.n) <= targetMs;
}

/** Solo batches the fit has taken at share `pct` (the fitted ones; `seen` counts the held-out ones too). */
export function soloBatchesAt(st: FitState, pct: number): number {
  let n = 0;
  for (const c of st.solo) if (c.pct === pct) n += c.n;
  return n;
}

/**
 * Whether learner `l`, whose fit has just passed at 100%, goes on probing instead of being promoted (file head).
 * The first time, decides its share (none unless it is `alone` on its GPU), once AIMD's batch in force has run at
 * 100% where its batches are `padded` (each epoch then runs it); then holds the promotion until the fit has
 * `minBatches` solo batches at the share. A model no longer alone ends its probe: its batches are not usable then.
 */
export function probing(
  l: LearnerState,
  alone: boolean,
  padded: boolean,
  ratePerS: number,
  targetMs: number,
  prior: Prior,
  probe: ProbeSettings | null,
  start: StartBatchSettings = DEFAULT_START,
): boolean {
  if (probe === null) return false;
  if (Number.isNaN(l.probePct)) {
    const worth = alone && batchesBetter(l.fit, prior);
    // A probe to come, and AIMD still climbing (padded, it doubles each epoch): first its top at 100%, so that
    // every batch the probe runs has its time at 100% to be compared with.
    if (worth && padded && largestAt(l.fit, 100) < l.batch) return true;
    l.probePct = (worth && probeShare(l.fit, prior, ratePerS, targetMs, probe, start)) || 100;
  } else if (!alone) l.probePct = 100;
  return l.probePct < 100 && soloBatchesAt(l.fit, l.probePct) < probe.minBatches;
}

// What a switch between two deployments changes, for inss's hysteresis (inss.ts): the rate of the models
// whose workers it starts or stops, whether two deployments run the same workers, and the stability rule that
// decides whether the pooling planner keeps the deployment in force against its best plan. Pure.
import type { ClusterInfo, Deployment, Placement } from '../src/policy/types.js';
import type { InssMargins } from './inssMargins.js';
import { DWELL_MS, SWITCH_HORIZON_MS, SWITCH_LOSS_S, SWITCH_MARGIN } from './inssTuning.js';

/** Tasks/s of the models whose workers a switch from `a` to `b` changes (a worker started or stopped). */
export function switchRate(cluster: ClusterInfo, a: Deployment, b: Deployment, rates: readonly number[]): number {
  const key = (d: Deployment, p: Placement) => `${p.gpu}:${p.pct}:${d.gpuModes?.[p.gpu] ?? 'mps'}`;
  let sum = 0;
  for (const m of cluster.models) {
    const ka = a.placements
      .filter((p) => p.model === m.index)
      .map((p) => key(a, p))
      .sort()
      .join(',');
    const kb = b.placements
      .filter((p) => p.model === m.index)
      .map((p) => key(b, p))
      .sort()
      .join(',');
    if (ka !== kb) sum += rates[m.index]!;
  }
  return sum;
}

/** The same workers: the same models on the same GPUs at the same shares, in the same GPU modes (batches aside). */
export function sameLayout(a: Deployment, b: Deployment): boolean {
  if (a.placements.length !== b.placements.length) return false;
  const key = (d: Deployment) =>
    d.placements
      .map((p) => `${p.model}@${p.gpu}:${p.pct}:${d.gpuModes?.[p.gpu] ?? 'mps'}`)
      .sort()
      .join(',');
  return key(a) === key(b);
}

/** A deployment's predicted misses (tasks/s) and score (src/policy/pooling/score.ts) at the planned rates. */
interface Scored {
  readonly missedPerS: number;
  readonly score: number;
}

export interface KeepInput {
  readonly cluster: ClusterInfo;
  /** The deployment in force, and its prediction at the planned rates. */
  readonly current: Deployment;
  readonly kept: Scored;
  /** The planner's best plan at the planned rates. */
  readonly best: Scored & { readonly deployment: Deployment };
  readonly planned: readonly number[];
  readonly margins: Pick<InssMargins, 'meetsMissed' | 'switchSaves'>;
  /**
   * Tasks/s the deployment in force was measured to miss past its dwell where that contradicts the target
   * (planFeedback.ts), else null.
   */
  readonly measuredMissedPerS: number | null;
  /** How long the deployment in force has been in force (ms). */
  readonly inForceMs: number;
}

/**
 * The stability rule: keep the deployment in force rather than switch to the best plan?
 * - A deployment predicted to meet the attainment target (at most margins.meetsMissed of the tasks missed)
 *   is left only for one that saves at least margins.switchSaves of the tasks, whatever the utilisation term
 *   says: measured rates move every epoch (most of all under bursty arrivals), each re-plan can land on
 *   another plan of about the same score, and every switch starts shadow workers (without this rule the plan
 *   flaps between near-equal plans). Otherwise the best must beat it by SWITCH_MARGIN.
 * - The switch's own cost (SWITCH_LOSS_S of the moved models' tasks, spread over the dwell) is added to the
 *   best plan's predicted misses before the comparison.
 * - Measured misses of the deployment in force stand in for its predicted ones where they are more: a layout
 *   the latency model wrongly thinks meets the target is not kept on that prediction, and its score carries
 *   what it was measured to miss. Such a deployment is expected to go on missing as long as it has been in
 *   force, so the one-off switch cost is spread over that time (at most SWITCH_HORIZON_MS), not the dwell
 *   alone; and a best plan of the same layout is no switch at all. This holds only where the best plan is
 *   predicted to meet the target: above what the GPUs carry, every plan misses.
 */
export function keepInForce(k: KeepInput): boolean {
  if (!Number.isFinite(k.kept.score)) return false;
  const total = k.planned.reduce((a, b) => a + b, 0);
  // Only for a best plan predicted to meet the target: above what the GPUs carry every plan misses, and
  // switching among them on measured misses only adds switches.
  const measured = k.best.missedPerS <= k.margins.meetsMissed * total ? k.measuredMissedPerS : null;
  if (measured !== null && sameLayout(k.best.deployment, k.current)) return true;
  const extra = measured !== null ? Math.max(0, measured - k.kept.missedPerS) : 0;
  const keptMissed = k.kept.missedPerS + extra;
  const keptScore = k.kept.score + extra;
  const meets = keptMissed <= k.margins.meetsMissed * total;
  const horizonMs = measured !== null ? Math.min(SWITCH_HORIZON_MS, Math.max(DWELL_MS, k.inForceMs)) : DWELL_MS;
  const switchCost =
    (SWITCH_LOSS_S / (horizonMs / 1000)) * switchRate(k.cluster, k.current, k.best.deployment, k.planned);
  const saves = k.best.missedPerS + switchCost < keptMissed - k.margins.switchSaves * total;
  return (meets && !saves) || !(k.best.score + switchCost < keptScore - SWITCH_MARGIN * keptScore - 1e-9);
}

// The pooling planner (docs/inss.md, "Pooling"): chooses per GPU between MPS partitions and time-shared
// pooling, scoring whole deployments with the latency model and a queueing model of each model's servers
// (score.ts). It scores the candidates (candidates.ts), then runs a bounded first-improvement local search
// from the best. Pure and deterministic.
import type { ClusterInfo, Deployment } from '../types.js';
import { hybrids, moves, pooledAssignment } from './candidates.js';
import { type PoolingContext, poolingContext } from './context.js';
import { cannotFit, infeasible, type PlanScore, type PoolingOptions, scoreDeployment } from './score.js';

export interface PoolingPlan {
  readonly best: PlanScore;
  /**
   * Which candidate family the best came from: 'timeshare', 'mps', 'pooled', 'hybrid' (+ 'search' when
   * the local search improved it).
   */
  readonly source: string;
  readonly evaluations: number;
}

/**
 * The best deployment among timeshare's, the given MPS plans, each pooled (pooledAssignment), their
 * hybrids, and a local search from the best of those, by `scoreDeployment` at `ratePerS`.
 */
export function planPooling(
  pooling: PoolingContext | ClusterInfo,
  ratePerS: readonly number[],
  mpsPlans: readonly Deployment[],
  options: PoolingOptions,
): PoolingPlan {
  const ctx = poolingContext(pooling);
  const cluster = ctx.cluster;
  let evaluations = 0;
  const evaluate = (d: Deployment) => {
    evaluations++;
    return scoreDeployment(ctx, d, ratePerS, options);
  };
  // A candidate that cannot fit never becomes the best (its score is Infinity), so after the first
  // it is not scored in full: more than half of the local search's moves fail on memory or shares.
  const evaluateCandidate = (d: Deployment) => {
    if (!cannotFit(ctx, d)) return evaluate(d);
    evaluations++;
    return infeasible(d, cluster.models.length);
  };
  let best = evaluate(ctx.timeshareDeployment());
  let source = 'timeshare';
  for (const plan of mpsPlans) {
    const s = evaluateCandidate(plan);
    if (s.score < best.score - 1e-9) [best, source] = [s, 'mps'];
    const pooled = evaluateCandidate(pooledAssignment(cluster, plan));
    if (pooled.score < best.score - 1e-9) [best, source] = [pooled, 'pooled'];
    for (const h of hybrids(ctx, plan, ratePerS)) {
      const hs = evaluateCandidate(h);
      if (hs.score < best.score - 1e-9) [best, source] = [hs, 'hybrid'];
    }
  }
  let improved = true;
  let searched = false;
  while (improved && evaluations < options.budget) {
    improved = false;
    for (const cand of moves(ctx, best, ratePerS)) {
      if (evaluations >= options.budget) break;
      const s = evaluateCandidate(cand);
      if (s.score < best.score - 1e-9 * Math.max(1, Math.abs(best.score))) {
        best = s;
        improved = searched = true;
        break;
      }
    }
  }
  return { best, source: searched ? `${source}+search` : source, evaluations };
}

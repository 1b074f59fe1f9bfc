// The pooling planner's public surface: the score (score.ts), the candidates (candidates.ts), the search
// (search.ts) and the per-cluster context that memoises them (context.ts). A caller that plans again and
// again on one cluster holds one PoolingContext and passes it in place of the cluster.
export { normalTail } from '../../workload/normal.js';
export {
  balancedPartition,
  greedyPartition,
  hybrids,
  moves,
  pooledAssignment,
  timeshareDeployment,
} from './candidates.js';
export { PoolingContext } from './context.js';
export { planPooling, type PoolingPlan } from './search.js';
export { cannotFit, type PlanScore, type PoolingOptions, scoreDeployment, UTILISATION_WEIGHT } from './score.js';

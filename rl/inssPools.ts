// inss on a large cluster (docs/inss.md, "Large clusters"): the cluster split into pools of GPUs and
// models (src/policy/decompose.ts), one InssPolicy per pool planning it as a cluster of that size, the
// pools' deployments merged. A pool whose rates did not move keeps its deployment at the cost of a
// comparison (InssPolicy's own re-plan rule), so a decision re-plans only the pools whose load moved.
import {
  type ClusterPool,
  decomposeCluster,
  mergeDeployments,
  modelDemand,
  poolCluster,
  poolCount,
  PoolView,
} from '../src/policy/decompose.js';
import type { ClusterInfo, Deployment, Observation, Policy } from '../src/policy/types.js';

/**
 * The split is made again when a pool's share of the demand exceeds its share of the GPUs by this factor
 * (the load moved between pools beyond what the pool's GPUs can take up); otherwise it stays, as a new split
 * moves models between GPUs.
 */
export const REBALANCE_FACTOR = 1.5;

export class PooledInssPolicy implements Policy {
  private pools: ClusterPool[] = [];
  private views: PoolView[] = [];
  private planners: Policy[] = [];
  readonly note: string;
  /** How many times the cluster was split (1 after the first decision). */
  splits = 0;

  constructor(
    readonly name: string,
    private readonly cluster: ClusterInfo,
    /** Makes the planner of one pool. */
    private readonly plannerFor: (pool: ClusterInfo) => Policy,
    /** Why no trained policy decides (as InssPolicy's note gives it). */
    why: string,
  ) {
    this.note = `model-based planner in ${poolCount(cluster)} pools (${why})`;
  }

  /** The pools in force (empty before the first decision); read by tests. */
  get currentPools(): readonly ClusterPool[] {
    return this.pools;
  }

  decide(obs: Observation): Deployment {
    const demand = modelDemand(this.cluster, obs.ratePerS);
    if (this.pools.length === 0 || this.unbalanced(demand)) {
      this.pools = decomposeCluster(this.cluster, demand);
      this.views = this.pools.map((p) => new PoolView(p));
      this.planners = this.pools.map((p) => this.plannerFor(poolCluster(this.cluster, p)));
      this.splits++;
    }
    const plans = this.planners.map((planner, k) => planner.decide(this.views[k]!.observe(obs)));
    return mergeDeployments(this.cluster, this.pools, plans);
  }

  private unbalanced(demand: readonly number[]): boolean {
    const total = demand.reduce((a, b) => a + b, 0);
    if (!(total > 0)) return false;
    const nG = this.cluster.gpus.length;
    return this.pools.some((p) => {
      const share = p.models.reduce((a, m) => a + demand[m]!, 0) / total;
      return share > (REBALANCE_FACTOR * p.gpus.length) / nG;
    });
  }
}

// oracle: exhaustive search of problem (1) of the InSS paper (section 3.3) on small instances
// (oracleSearch.ts), as a policy: the upper reference for how close a policy gets. It searches again
// when a rate moves; on a small move BDA alone re-picks the batches, as InSS does.
import { bda, bdaInput } from '../bda.js';
import { alignToCurrent, deploymentProblem } from '../util.js';
import type { ClusterInfo, Deployment, Observation, Policy, PolicyFactory, PolicyOptions } from '../types.js';
import { ratesMoved } from '../replan.js';
import { oracleSearch } from './oracleSearch.js';
import { assertOracleSize, oracleSizeProblem } from './oracleSize.js';

/** The policy re-searches when a rate moved more than this fraction since the last search. */
export const ORACLE_RATE_CHANGE_FRACTION = 0.05;
export const ORACLE_RATE_FLOOR_PER_S = 1;

class OraclePolicy implements Policy {
  readonly name = 'oracle';
  private searchedFor: number[] | null = null;
  private plan: Deployment = { placements: [] };

  constructor(private readonly cluster: ClusterInfo) {
    assertOracleSize(cluster);
  }

  decide(obs: Observation): Deployment {
    const rates = this.cluster.models.map((m) => {
      const r = obs.ratePerS[m.index] ?? 0;
      return Number.isFinite(r) && r > 0 ? r : 0;
    });
    const last = this.searchedFor;
    if (
      last !== null &&
      !ratesMoved(last, rates, { fraction: ORACLE_RATE_CHANGE_FRACTION, floorPerS: ORACLE_RATE_FLOOR_PER_S })
    ) {
      // Small rate change: keep placement and shares (no swap) and let BDA re-pick the batches (free),
      // as InSS does (section 5.5, case 1). Re-search only if BDA finds them infeasible.
      const inputs = this.plan.placements.map((p) => bdaInput(this.cluster, p, rates[p.model]!));
      const r = bda(this.cluster.gpus, inputs);
      if (r.ok || rates.every((x, i) => x === last[i])) {
        if (r.ok) {
          const next: Deployment = { placements: this.plan.placements.map((p, k) => ({ ...p, batch: r.batches[k]! })) };
          if (deploymentProblem(this.cluster, next) === null) this.plan = next;
        }
        return this.plan;
      }
    }
    const found = alignToCurrent(this.cluster, oracleSearch(this.cluster, rates).deployment, obs.current);
    if (deploymentProblem(this.cluster, found) === null) this.plan = found;
    this.searchedFor = rates;
    return this.plan;
  }
}

export const oracleFactory: PolicyFactory = {
  name: 'oracle',
  description:
    'Exhaustive search of problem (1) on small instances: every placement and MPS share split, batches by BDA, ' +
    'maximising predicted throughput; refuses instances over its size limit',
  supports(cluster: ClusterInfo, _options: PolicyOptions): string | null {
    return oracleSizeProblem(cluster);
  },
  create(cluster: ClusterInfo, _options: PolicyOptions): Policy {
    return new OraclePolicy(cluster);
  },
};

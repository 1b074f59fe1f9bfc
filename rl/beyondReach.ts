// What the pooling planner does where no plan meets the attainment target at the rates it plans for
// (docs/inss.md, "Beyond what the GPUs carry"). Two steps, each only where the one before leaves every plan
// predicted to miss more than the target allows:
// 1. The headroom plans for more than was measured, so that a plan chosen at one load still holds a little
//    above it. Where no plan meets the SLOs at the headroom's rates the GPUs cannot give that room, and the
//    best plan for rates that cannot be met may be a poor one for the rates measured (it gives up a model
//    the measured rates would not): the plan is then chosen, and compared with the deployment in force, at
//    the measured rates (the window's means where the monitor's tuner raised a rate on a burst: a burst's
//    rate that no plan meets would otherwise have a model given up for as long as the tuner holds it).
// 2. The search runs again from that plan and the MPS plans, guided by the misses the dispatch rule leaves
//    (PoolingOptions.expectedMisses: M/M/c+D, shrinking batches) instead of the score's bound on them. Where
//    the best plan overloads a model (or gives it no server) the expected misses judge too: the bound counts
//    an overloaded pool as missing every task, so a model given a share it cannot quite carry cost as much as
//    the model left out, and the planner shed the model whose tasks cost the most. Where it overloads none the
//    bound judges: the guided plan is taken only if the bound ranks it better (the bound's search can stop at
//    a plan its own tails keep missing from); its tails are pessimistic, but they are what inss's margins were
//    set against.
// Pure.
import {
  planPooling,
  type PlanScore,
  type PoolingContext,
  type PoolingOptions,
  type PoolingPlan,
  scoreDeployment,
} from '../src/policy/pooling/index.js';
import type { Deployment } from '../src/policy/types.js';

export interface BeyondReachInput {
  readonly pooling: PoolingContext;
  /** The planner's best plan at `rates`, and the MPS plans it started from. */
  readonly plan: PoolingPlan;
  readonly mpsPlans: readonly Deployment[];
  /** The rates it planned for (with the headroom), and the rates measured (null: no step 1). */
  readonly rates: readonly number[];
  readonly measured: readonly number[] | null;
  readonly options: PoolingOptions;
  /** The fraction of the tasks a plan may miss and meet the target (InssMargins.meetsMissed). */
  readonly meetsMissed: number;
  /** The deployment in force, and its score at `rates` (null: none). */
  readonly current: Deployment;
  readonly kept: PlanScore | null;
}

export interface BeyondReach {
  readonly plan: PoolingPlan;
  /** The rates the plan and the deployment in force were scored at. */
  readonly planned: readonly number[];
  /** The deployment in force scored as the plan was (null: none). */
  readonly keptAt: PlanScore | null;
}

/** The plan, the rates and the score of the deployment in force after steps 1 and 2 (file comment). */
export function planBeyondReach(input: BeyondReachInput): BeyondReach {
  const { pooling, mpsPlans, options, current, kept } = input;
  const missesTooMany = (p: PoolingPlan, at: readonly number[]) =>
    p.best.missedPerS > input.meetsMissed * at.reduce((a, b) => a + b, 0);
  let plan = input.plan;
  let planned = input.rates;
  let keptAt = kept;
  if (input.measured !== null && missesTooMany(plan, planned)) {
    const measured = input.measured;
    const bare = planPooling(pooling, measured, mpsPlans, options);
    if (bare.best.score < scoreDeployment(pooling, plan.best.deployment, measured, options).score - 1e-9) {
      plan = { ...bare, source: `${bare.source}+measured` };
      planned = measured;
      keptAt = kept ? scoreDeployment(pooling, current, measured, options) : null;
    }
  }
  if (options.expectedMisses || !missesTooMany(plan, planned)) return { plan, planned, keptAt };
  const expected: PoolingOptions = { ...options, expectedMisses: true };
  const searched = planPooling(pooling, planned, [plan.best.deployment, ...mpsPlans], expected);
  const overloaded = plan.best.utilisation.some((u, m) => planned[m]! > 0 && !(u < 1));
  if (!overloaded) {
    // The bound judges: the expected misses only guided the search.
    const judged = scoreDeployment(pooling, searched.best.deployment, planned, options);
    if (!(judged.score < plan.best.score - 1e-9)) return { plan, planned, keptAt };
    return { plan: { ...searched, best: judged, source: `${searched.source}+guided` }, planned, keptAt };
  }
  const held = scoreDeployment(pooling, plan.best.deployment, planned, expected);
  const best = searched.best.score < held.score - 1e-9 ? searched : { ...plan, best: held };
  return {
    plan: { ...best, source: `${best.source}+expected` },
    planned,
    keptAt: kept ? scoreDeployment(pooling, current, planned, expected) : null,
  };
}

// inss's tunables (docs/inss.md): when it re-plans, the margins it plans with, what each addition beyond
// the paper's TS is, and what a switch costs. Read by the policy (inss.ts) and by the benchmarks and
// ablations that build its variants.
import { type ReplanGate } from '../src/policy/replan.js';

/** Relative change of any model's rate that makes BDA run again (case 1). */
export const RATE_CHANGE = 0.02;
/** BDA runs again (case 1) when a rate moved by RATE_CHANGE, rates under 1 task/s counting as 1. */
export const INSS_REPLAN: ReplanGate = { fraction: RATE_CHANGE, floorPerS: 1 };
/**
 * Capacity kept above the measured rate at the 99% target: BDA's (4c) and the reward use rate x this, so a
 * Poisson burst or a rising rate between two epochs does not push a model to utilisation 1 (docs/inss.md).
 * inssMargins scales it for other targets.
 */
export const RATE_HEADROOM = 1.1;
/**
 * Fraction of each SLO BDA plans the worst task against at the 99% target: room for the latency model's
 * error. inssMargins scales it for other targets.
 */
export const SLO_FRACTION = 0.85;
/**
 * Reward evaluations one refinement may spend. Case 2 runs two (the actor's allocation and the
 * deployment in force); the budget keeps a decision within a few milliseconds (docs/benchmarks.md).
 */
export const REFINE_BUDGET = 60;
/** A reallocation must beat the current deployment's predicted reward by this much to pay for its swaps. */
export const SWITCH_MARGIN = 0.05;
/**
 * A deployment in force predicted to miss at most this fraction of the tasks meets the 99% target (1 - the
 * target; inssMargins)...
 */
export const MEETS_MISSED_FRACTION = 0.01;
/** ...and is left only for one predicted to miss this fraction of all tasks fewer (half the allowance). */
export const SWITCH_SAVES_FRACTION = 0.005;
/**
 * When no model's rate rose, the pooling planner keeps a deployment in force predicted to miss at most
 * this fraction of the tasks (a tenth of the 99% target's allowance).
 */
export const KEEP_MISSED_FRACTION = 0.001;
/**
 * Feedback from measured misses (pooling variants with `missFeedback`: the `inss-fb` ablation). Each
 * model's late and dropped tasks are counted over windows of FEEDBACK_EPOCHS epochs holding at least
 * FEEDBACK_MIN_TASKS finished tasks, from Observation.lastEpoch (which the simulator and the live
 * scheduler both fill). A model that missed more than MISS_TARGET in a window is planned for
 * MISS_BOOST x more rate from then on (up to MAX_MISS_BOOST): the planner gives it the capacity its
 * model-based estimate thought it did not need. A window with at most a quarter of MISS_TARGET lets
 * the boost decay by MISS_BOOST_DECAY. Misses during swaps count: they are the policy's doing too.
 * The window is several epochs because one short epoch of a model that misses little overall often
 * shows several times as much.
 */
export const MISS_TARGET = 0.02;
export const MISS_BOOST = 1.15;
export const MAX_MISS_BOOST = 1.6;
export const MISS_BOOST_DECAY = 0.98;
export const FEEDBACK_EPOCHS = 5;
export const FEEDBACK_MIN_TASKS = 200;
/**
 * The refinement credits a model's capacity up to this multiple of its (planned) rate: past it,
 * more capacity for one model is worth nothing, so units go where a model is near its limit.
 */
export const CAPACITY_CREDIT_X = 3;

/** What `inss` adds to the paper's TS (docs/inss.md); `inss-paper` has none of it. */
export interface InssAdditions {
  /** Model-based refinement of the actor's allocation, the rate headroom and the SLO margin. */
  readonly refine: boolean;
  /** The refinement may give a model replicas on other GPUs (one queue, several workers). */
  readonly replicas: boolean;
  /** When BDA fails, also repair the deployment in force, not only the actor's reallocation. */
  readonly repairCurrent: boolean;
  /** Cap each model's capacity credit in the refinement's reward at CAPACITY_CREDIT_X x its rate. */
  readonly capacityCredit: boolean;
  /**
   * Pooling: the MPS plan competes with time sharing's deployment and hybrids, scored by
   * the queueing model (src/policy/pooling/); and with no trained policy that fits, the MPS plan
   * comes from a greedy partition refined on the latency model instead of the actor.
   */
  readonly pooling: boolean;
  /**
   * Feedback from measured misses (MISS_TARGET and below): off in `inss`, on in the `inss-fb` ablation:
   * it helps some workloads and hurts others (docs/inss.md, "Feedback from measured misses").
   */
  readonly missFeedback: boolean;
  /**
   * The deployment in force is not kept on a prediction its measured misses contradict: more than twice
   * the misses the planner counts as meeting the target over FEEDBACK_EPOCHS epochs past its dwell
   * (planFeedback.ts) stand in for its predicted ones.
   */
  readonly planFeedback: boolean;
}

export const PAPER_ONLY: InssAdditions = {
  refine: false,
  replicas: false,
  repairCurrent: false,
  capacityCredit: false,
  pooling: false,
  missFeedback: false,
  planFeedback: false,
};
export const ALL_ADDITIONS: InssAdditions = {
  refine: true,
  replicas: true,
  repairCurrent: true,
  capacityCredit: true,
  pooling: true,
  missFeedback: false,
  planFeedback: true,
};
/**
 * After the pooling planner replaces a deployment, it keeps the new one (re-batched) this long (ms):
 * the scenarios' swap time (swapS 3 s), in which the new workers start beside the old.
 */
export const DWELL_MS = 3000;
/**
 * What a switch costs: about this many seconds of the tasks of the models whose workers it moves are
 * missed while the new workers start (measured in the simulator, more for a switch that changes a
 * GPU's mode; docs/inss.md, "Switch cost"). The planner charges it, spread over the dwell, against
 * the misses a switch saves.
 */
export const SWITCH_LOSS_S = 0.3;
/**
 * The longest time a switch's cost is spread over, for a deployment in force measured to miss (inss.ts): a
 * layout that has missed for this long is charged a tenth of the dwell's rate of switch cost.
 */
export const SWITCH_HORIZON_MS = 30_000;
/** Deployment evaluations the pooling planner's local search may spend (each scores every model's queue). */
export const POOLING_BUDGET = 40;

// The InSS scheduler TS (paper sections 5.1 and 5.5) as a policy: a trained SAC-Discrete actor
// decides placement and shares, BDA decides batch sizes.
// - Case 1: when arrival rates change, BDA alone re-picks the batches on the current placement
//   (free: no process changes).
// - Case 2: when BDA reports infeasible (or at the start), the actor reallocates from the current
//   state, and BDA runs again on its allocation.
// Beyond the paper (docs/inss.md): the actor's allocation is refined on the latency model (units
// moved between co-located models, free units added, a model moved, or given a replica on another
// GPU); in case 2 the deployment in force, refined the same way, competes with the actor's, and a
// reallocation is kept only if its predicted reward by eq. (3) beats it by a margin, so a poor actor
// output never replaces a better deployment and no shadow swap is paid for nothing.
// `inss-ni` is the same with interference ignored in the model it decides on (BDA and the check).
import {
  balancedPartition,
  greedyPartition,
  planPooling,
  PoolingContext,
  type PoolingOptions,
  scoreDeployment,
} from '../src/policy/pooling/index.js';
import type {
  ClusterInfo,
  Deployment,
  Observation,
  Policy,
  PolicyFactory,
  PolicyOptions,
} from '../src/policy/types.js';
import type { ActorForward } from './actorForward.js';
import { MissFeedback } from './missFeedback.js';
import { PlanFeedback } from './planFeedback.js';
import { keepInForce, sameLayout } from './switching.js';
import { planBeyondReach } from './beyondReach.js';
import {
  type ActionSpace,
  decodeAction,
  encodeState,
  memoryUsed,
  referenceThroughput,
  type ScoreOptions,
  scorePlacements,
  staticMasks,
} from './mdp.js';
import { refine, type RefineOptions } from './refine.js';
import { ratesMoved } from '../src/policy/replan.js';
import {
  ALL_ADDITIONS,
  CAPACITY_CREDIT_X,
  DWELL_MS,
  INSS_REPLAN,
  type InssAdditions,
  PAPER_ONLY,
  POOLING_BUDGET,
  RATE_CHANGE,
  REFINE_BUDGET,
  SWITCH_MARGIN,
} from './inssTuning.js';
import { inssMargins, type InssMargins } from './inssMargins.js';
import { attainmentTargetProblem, DEFAULT_ATTAINMENT_TARGET } from '../src/policy/attainment.js';
import { clusterTiers, withSharedTiers } from '../src/policy/tiers.js';
import { poolCount } from '../src/policy/decompose.js';
import { PooledInssPolicy } from './inssPools.js';
import { loadActor } from './inssActor.js';
import { PipelineSplitPolicy } from './inssPipelines.js';

export * from './inssTuning.js';

export class InssPolicy implements Policy {
  private lastRates: number[] | null = null;
  /** The rates the pooling planner chose the deployment in force for (null: not chosen by it). */
  private plannedFor: number[] | null = null;
  /** When the pooling planner last replaced a deployment in force (ms of simulated or live time). */
  private switchedAtMs = -Infinity;
  /** The deployment it switched to then. */
  private switchedTo: Deployment | null = null;
  /** Feedback from measured misses: each model's rate multiplier (missFeedback.ts). */
  private readonly feedback: MissFeedback;
  /** What the deployment in force was measured to miss (planFeedback.ts). */
  private readonly planFeedback: PlanFeedback;
  private readonly refPerS: number[];
  private readonly masks: Uint8Array[];
  private readonly state: Float32Array<ArrayBuffer>;
  private readonly bdaOptions: ScoreOptions;
  private readonly refineOptions: RefineOptions;
  private readonly poolingOptions: PoolingOptions;
  /** The pooling planner's memo for this cluster (solo and overlap times, time sharing's batches). */
  private readonly pooling: PoolingContext;
  private readonly headroom: number;
  /** The margins for the attainment target it plans for (inssMargins). */
  private readonly margins: InssMargins;
  /** How many decisions took each kind of plan (pooling: 'timeshare', 'mps', 'hybrid', '+search'; 'kept'). */
  readonly sources = new Map<string, number>();

  constructor(
    readonly name: string,
    private readonly cluster: ClusterInfo,
    private readonly space: ActionSpace | null,
    /** The trained actor; null: the model-based planner alone (pooling variants only). */
    private readonly actor: ActorForward | null,
    interference: boolean,
    private readonly add: InssAdditions = ALL_ADDITIONS,
    /** What the policy decides with, as `inss bench` reports it. */
    readonly note = actor ? 'trained actor' : 'model-based planner',
    /** The fraction of tasks it plans for within SLO (src/policy/attainment.ts). */
    readonly attainmentTarget = DEFAULT_ATTAINMENT_TARGET,
  ) {
    if (actor === null && !add.pooling) throw new PolicyFileError(`${name} needs a trained policy`);
    const why = attainmentTargetProblem(attainmentTarget);
    if (why !== null) throw new RangeError(`${name}: attainmentTarget ${why}`);
    this.margins = inssMargins(attainmentTarget);
    this.refPerS = referenceThroughput(cluster);
    this.masks = space ? staticMasks(cluster, space) : [];
    this.state = new Float32Array(actor ? actor.stateDim : 0);
    this.bdaOptions = {
      interference,
      sloFraction: add.refine ? this.margins.sloFraction : 1,
      ...(add.refine && add.capacityCredit ? { capacityCreditX: CAPACITY_CREDIT_X } : {}),
    };
    this.headroom = add.refine ? this.margins.rateHeadroom : 1;
    this.refineOptions = { ...this.bdaOptions, budget: REFINE_BUDGET, replicas: add.replicas };
    this.poolingOptions = { sloFraction: this.margins.sloFraction, interference, budget: POOLING_BUDGET };
    this.pooling = new PoolingContext(cluster);
    this.feedback = new MissFeedback(cluster.models.length);
    this.planFeedback = new PlanFeedback();
  }

  /** Per model: the rate multiplier measured misses have earned it (1: none); read by tests. */
  get missBoost(): readonly number[] {
    return this.feedback.boost;
  }

  decide(obs: Observation): Deployment {
    const boosted = this.add.pooling && this.add.missFeedback && this.feedback.update(obs);
    const rates = obs.ratePerS.map((r, i) => r * this.headroom * this.missBoost[i]!);
    const current = obs.current;
    const measuredMissedPerS =
      this.add.pooling && this.add.planFeedback ? this.planFeedback.verdict(obs, this.margins.meetsMissed) : null;
    if (current.placements.length > 0) {
      const changed =
        boosted ||
        measuredMissedPerS !== null ||
        this.lastRates === null ||
        ratesMoved(this.lastRates, rates, INSS_REPLAN);
      if (!changed) return current;
    }
    this.lastRates = rates;
    return this.add.pooling
      ? this.decidePooling(obs, rates, current, measuredMissedPerS)
      : this.decidePaper(obs, rates, current);
  }

  private count(source: string): void {
    this.sources.set(source, (this.sources.get(source) ?? 0) + 1);
  }

  /**
   * The paper's TS (with the refinement additions when set): BDA on the placement in force, the actor
   * when BDA fails.
   */
  private decidePaper(obs: Observation, rates: number[], current: Deployment): Deployment {
    const opts = this.bdaOptions;
    if (current.placements.length === 0) return this.reallocate(obs, rates, current).deployment;
    // Case 1: BDA alone on the current placement and shares.
    const kept = scorePlacements(
      this.cluster,
      this.refPerS,
      current.placements.map((p) => ({ ...p, batch: 1 })),
      rates,
      opts,
    );
    if (kept.bdaOk) return kept.deployment;
    // Case 2: BDA found no feasible batch for some model: the actor reallocates.
    const fresh = this.reallocate(obs, rates, current);
    // Beyond the paper: the deployment in force, refined (a few units moved, a replica added),
    // is the alternative the actor's reallocation must beat; it usually needs fewer swaps.
    const base = this.add.repairCurrent
      ? refine(this.cluster, this.refPerS, current.placements, rates, this.refineOptions).outcome
      : kept;
    return fresh.reward > base.reward + SWITCH_MARGIN * Math.abs(base.reward) ? fresh.deployment : base.deployment;
  }

  /**
   * Pooling (beyond the paper): the MPS plan (the actor's allocation refined, or a greedy partition
   * refined when no actor fits; and the MPS deployment in force, refined) competes with time
   * sharing's deployment and hybrids under the queueing model; the deployment in force (re-batched)
   * is kept unless the best beats it by SWITCH_MARGIN (hysteresis: no flapping between near-equal plans).
   */
  private decidePooling(
    obs: Observation,
    rates: number[],
    current: Deployment,
    measuredMissedPerS: number | null,
  ): Deployment {
    // How bursty each model's arrivals were (the monitor's measure), for the queueing model.
    const options: PoolingOptions = obs.arrivalCv2
      ? { ...this.poolingOptions, arrivalCv2: obs.arrivalCv2 }
      : this.poolingOptions;
    // An infeasible deployment in force (e.g. handed over by another policy) is always replaced; one
    // this planner chose for rates no lower than these, and predicted to meet the SLOs at these, is
    // kept (when the load falls a swap buys only a better utilisation score and costs worker
    // starts under load), and then nothing else needs planning; otherwise the best must beat it by
    // SWITCH_MARGIN.
    const kept = current.placements.length > 0 ? scoreDeployment(this.pooling, current, rates, options) : null;
    // A deployment this planner just switched to is kept (re-batched) while its workers start: what
    // the last epochs measured and the rates it was chosen for still describe the one before it, and
    // a switch during a switch stacks shadow workers (docs/inss.md, "Dwell").
    if (
      kept &&
      Number.isFinite(kept.score) &&
      obs.nowMs - this.switchedAtMs < DWELL_MS &&
      this.switchedTo !== null &&
      sameLayout(this.switchedTo, current)
    ) {
      this.count('kept');
      return kept.deployment;
    }
    if (kept && Number.isFinite(kept.score)) {
      const total = rates.reduce((a, b) => a + b, 0);
      const noHigher = this.plannedFor !== null && rates.every((r, i) => r <= this.plannedFor![i]! * (1 + RATE_CHANGE));
      if (noHigher && measuredMissedPerS === null && kept.missedPerS <= this.margins.keepMissed * total) {
        this.count('kept');
        return kept.deployment;
      }
    }
    const mpsPlans: Deployment[] = [];
    if (this.actor) mpsPlans.push(this.reallocate(obs, rates, current).deployment);
    else
      mpsPlans.push(
        refine(this.cluster, this.refPerS, greedyPartition(this.pooling, rates), rates, this.refineOptions).outcome
          .deployment,
      );
    const currentIsMps = current.placements.length > 0 && !(current.gpuModes ?? []).some((m) => m === 'timeshare');
    if (currentIsMps && this.add.repairCurrent)
      mpsPlans.push(
        refine(this.cluster, this.refPerS, current.placements, rates, this.refineOptions).outcome.deployment,
      );
    // Where the MPS plan leaves a GPU idle (more GPUs than it gives models partitions), also every
    // GPU in use, each model's share in proportion to its demand (unrefined: the scoring decides).
    if (this.cluster.gpus.some((g) => !mpsPlans[0]!.placements.some((p) => p.gpu === g.index)))
      mpsPlans.push({ placements: balancedPartition(this.pooling, rates) });
    // Where no plan meets the target at these rates: the measured rates, then the expected misses.
    const means = obs.meanRatePerS;
    const measured =
      this.headroom > 1 || means !== undefined
        ? means
          ? means.map((r, i) => r * this.missBoost[i]!)
          : rates.map((r) => r / this.headroom)
        : null;
    const beyond = planBeyondReach({
      pooling: this.pooling,
      plan: planPooling(this.pooling, rates, mpsPlans, options),
      mpsPlans,
      rates,
      measured,
      options,
      meetsMissed: this.margins.meetsMissed,
      current,
      kept,
    });
    const { plan, planned, keptAt } = beyond;
    if (measuredMissedPerS !== null) this.planFeedback.restart();
    if (
      keptAt &&
      keepInForce({
        cluster: this.cluster,
        current,
        kept: keptAt,
        best: plan.best,
        planned,
        margins: this.margins,
        measuredMissedPerS,
        inForceMs: this.planFeedback.inForceMs(obs.nowMs),
      })
    ) {
      this.count('kept');
      return keptAt.deployment;
    }
    this.count(plan.source);
    this.plannedFor = rates;
    if (current.placements.length > 0) {
      this.switchedAtMs = obs.nowMs;
      this.switchedTo = plan.best.deployment;
    }
    return plan.best.deployment;
  }

  private reallocate(
    obs: Observation,
    rates: number[],
    current: Deployment,
  ): { deployment: Deployment; reward: number } {
    if (!this.actor || !this.space) throw new PolicyFileError(`${this.name}: no trained actor`);
    encodeState(this.cluster, this.refPerS, memoryUsed(this.cluster, current), rates, obs.queued, this.state);
    const action = this.actor.act(this.state, { greedy: true, masks: this.masks });
    const { placements } = decodeAction(this.cluster, this.space, action);
    if (!this.add.refine) {
      const o = scorePlacements(this.cluster, this.refPerS, placements, rates, this.bdaOptions);
      return { deployment: o.deployment, reward: o.reward };
    }
    const r = refine(this.cluster, this.refPerS, placements, rates, this.refineOptions);
    return { deployment: r.outcome.deployment, reward: r.outcome.reward };
  }
}

/** Raised when a policy needs a trained file it was not given or that does not fit. */
export class PolicyFileError extends RangeError {
  override readonly name = 'PolicyFileError';
}

export interface InssVariant {
  readonly name: string;
  readonly interference: boolean;
  /** What it adds to the paper's TS. */
  readonly additions: InssAdditions;
  /** On a cluster with pipelines, choose each one's split of its SLO with the plan (inssPipelines.ts). */
  readonly splitsPipelines?: boolean;
  readonly description: string;
}

/** A factory for a variant of the TS policy (the registered three, or an ablation's). */
export function inssVariantFactory(v: InssVariant): PolicyFactory {
  const createFor = (cluster: ClusterInfo, options: PolicyOptions): Policy => {
    const target = options.attainmentTarget ?? DEFAULT_ATTAINMENT_TARGET;
    const a = loadActor(cluster, options.policyData);
    if ('reason' in a) {
      if (a.malformed) throw new PolicyFileError(`${v.name}: ${a.reason}`);
      if (!v.additions.pooling) throw new PolicyFileError(`${v.name} needs a trained policy that fits: ${a.reason}`);
      // Past one pool's size: planned as pools, each as a cluster of that size is (inssPools.ts).
      const plan = (c: ClusterInfo) =>
        new InssPolicy(v.name, c, null, null, v.interference, v.additions, 'model-based planner', target);
      if (poolCount(cluster) > 1) return new PooledInssPolicy(v.name, cluster, plan, a.reason);
    }
    const trained = 'reason' in a ? null : a;
    const source =
      'reason' in a
        ? `model-based planner (${a.reason})`
        : v.additions.pooling
          ? 'trained actor + pooling planner'
          : 'trained actor';
    const [space, actor] = [trained?.space ?? null, trained?.actor ?? null];
    return new InssPolicy(v.name, cluster, space, actor, v.interference, v.additions, source, target);
  };
  return {
    name: v.name,
    description: v.description,
    supports(cluster: ClusterInfo, options: PolicyOptions): string | null {
      const why = attainmentTargetProblem(options.attainmentTarget ?? DEFAULT_ATTAINMENT_TARGET);
      if (why !== null) return `${v.name}: attainmentTarget ${why}`;
      const a = loadActor(cluster, options.policyData);
      if (!('reason' in a)) return null;
      if (a.malformed) return `${v.name}: ${a.reason}`;
      if (v.additions.pooling) return null; // the model-based planner runs anywhere
      return `${v.name} needs a trained policy that fits: ${a.reason}`;
    },
    create(cluster: ClusterInfo, options: PolicyOptions): Policy {
      // SLO tiers of one network planned as one model where the cluster shares them (src/policy/tiers.ts).
      if (clusterTiers(cluster)) return withSharedTiers(cluster, (c) => createFor(c, options));
      if (!v.splitsPipelines || !cluster.pipelines?.length) return createFor(cluster, options);
      const target = options.attainmentTarget ?? DEFAULT_ATTAINMENT_TARGET;
      const plan = (c: ClusterInfo) => createFor(c, options);
      return new PipelineSplitPolicy(v.name, cluster, plan, target, v.interference, plan(cluster).note ?? '');
    },
  };
}

export const inssFactory = inssVariantFactory({
  name: 'inss',
  interference: true,
  additions: ALL_ADDITIONS,
  splitsPipelines: true,
  description:
    'InSS: MPS partitions (trained SAC-Discrete actor where a policy fits, else a model-based plan) ' +
    'refined on the latency model, against time-shared pooling and hybrids under a queueing model; ' +
    "BDA batch sizes; each pipeline's SLO split with the plan (docs/inss.md, docs/pipelines.md)",
});
export const inssEvenFactory = inssVariantFactory({
  name: 'inss-even',
  interference: true,
  additions: ALL_ADDITIONS,
  description: "inss with each pipeline's SLO split evenly and each step planned alone (docs/pipelines.md)",
});
export const inssNiFactory = inssVariantFactory({
  name: 'inss-ni',
  interference: false,
  additions: ALL_ADDITIONS,
  splitsPipelines: true,
  description: 'inss with interference ignored in the latency model it decides on',
});
export const inssPaperFactory = inssVariantFactory({
  name: 'inss-paper',
  interference: true,
  additions: PAPER_ONLY,
  description: "The paper's TS exactly: the actor's allocation and BDA, no refinement, no headroom, no pooling",
});

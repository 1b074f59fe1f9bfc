// inss on a cluster with pipelines (docs/pipelines.md): it chooses each pipeline's split of its SLO with its plan.
// When the rates moved by a tenth (or at the start), each candidate split (src/policy/pipelineSplit.ts: what the
// light earlier steps do not need, by their batch times in the plan for the split in force, given to the last
// step) is scored by the pooling planner's own prediction: the cluster with every step model's SLO set to its
// step's budget, a greedy partition for the planned rates and the pooling planner's search over it, its predicted
// missed tasks/s the candidate's. Among the splits predicted to miss no more than the fewest (by SPLIT_SAVES), the
// one giving the last steps the most is taken: the prediction does not see a last step's misses grow as its room
// shrinks (docs/pipelines.md). A split predicted to miss clearly fewer (SWITCH_MARGIN) replaces the one in force
// too. inss then plans each step model with its step's budget as its SLO (a planner for that cluster), and the
// deployment carries the split (`pipelineBudgetsMs`) that the twin and the scheduler budget step tasks with.
// `inss-even` is inss with the split even and each step planned alone: the cluster as given.
import {
  greedyPartition,
  planPooling,
  type PlanScore,
  PoolingContext,
  type PoolingOptions,
} from '../src/policy/pooling/index.js';
import { candidateSplits, stepBatchMs, withStepSlos } from '../src/policy/pipelineSplit.js';
import { ratesMoved, type ReplanGate } from '../src/policy/replan.js';
import type { ClusterInfo, ClusterPipeline, Deployment, Observation, Policy } from '../src/policy/types.js';
import { evenBudgets } from '../src/serving/pipeline.js';
import { inssMargins } from './inssMargins.js';
import { POOLING_BUDGET, SWITCH_MARGIN } from './inssTuning.js';

/** The splits are scored again when a rate moved this much since they last were (a tenth: scoring costs plans). */
export const SPLIT_REPLAN: ReplanGate = { fraction: 0.1, floorPerS: 1 };
/** A split replaces the one in force only if it saves, beyond SWITCH_MARGIN, this fraction of the tasks. */
export const SPLIT_SAVES = 0.001;

type Split = Readonly<Record<string, readonly number[]>>;

export class PipelineSplitPolicy implements Policy {
  private split: Split;
  private planner: Policy;
  private scoredAt: readonly number[] | null = null;
  private readonly options: PoolingOptions;
  private readonly headroom: number;
  /** How many times the split in force was replaced; read by tests. */
  switches = 0;

  constructor(
    readonly name: string,
    private readonly cluster: ClusterInfo,
    /** The inss planner for a cluster (the step models' SLOs set to a split). */
    private readonly plan: (c: ClusterInfo) => Policy,
    attainmentTarget: number,
    interference: boolean,
    readonly note: string,
  ) {
    const margins = inssMargins(attainmentTarget);
    this.options = { sloFraction: margins.sloFraction, interference, budget: POOLING_BUDGET };
    this.headroom = margins.rateHeadroom;
    this.split = Object.fromEntries((cluster.pipelines ?? []).map((p) => [p.name, evenBudgets(p)]));
    this.planner = plan(withStepSlos(cluster, this.split));
  }

  /** The split in force, per pipeline name. */
  get budgets(): Split {
    return this.split;
  }

  decide(obs: Observation): Deployment {
    if (this.scoredAt === null || ratesMoved(this.scoredAt, obs.ratePerS, SPLIT_REPLAN)) {
      this.scoredAt = obs.ratePerS;
      const best = this.bestSplit(
        obs.ratePerS.map((r) => r * this.headroom),
        obs.arrivalCv2,
      );
      if (best !== this.split) {
        this.split = best;
        this.planner = this.plan(withStepSlos(this.cluster, best));
        this.switches++;
      }
    }
    return { ...this.planner.decide(obs), pipelineBudgetsMs: this.split };
  }

  /**
   * The predicted missed tasks/s of the pooling planner's plan for `rates` with the step models' SLOs set to
   * `split`, and that plan; `arrivalCv2`: the monitor's burstiness per model (a step's tasks come in the batches of
   * the step before it).
   */
  scoreSplit(split: Split, rates: readonly number[], arrivalCv2?: readonly number[]): [number, PlanScore] {
    const ctx = new PoolingContext(withStepSlos(this.cluster, split));
    const options = arrivalCv2 ? { ...this.options, arrivalCv2 } : this.options;
    const mps: Deployment = { placements: greedyPartition(ctx, rates) };
    const best = planPooling(ctx, rates, [mps], options).best;
    return [best.missedPerS, best];
  }

  /** Per step of `p`, its batch time in `plan` (its slowest placement's), or on a whole GPU where it has none. */
  private stepMs(p: ClusterPipeline, plan: PlanScore, rates: readonly number[]): number[] {
    return p.stepModels.map((m) => {
      let t = 0;
      plan.deployment.placements.forEach((pl, i) => {
        if (pl.model === m) t = Math.max(t, plan.batchMs[i]!);
      });
      return t > 0 ? t : stepBatchMs(this.cluster, m, rates[m]!);
    });
  }

  /**
   * The candidate split predicted to miss the fewest tasks at `rates` (each pipeline's k-th candidate together, in
   * proportion to the steps' batch times in the plan for the split in force); the split in force (the same object)
   * unless another beats it by SWITCH_MARGIN.
   */
  private bestSplit(rates: readonly number[], arrivalCv2?: readonly number[]): Split {
    const pipelines = this.cluster.pipelines ?? [];
    const [current, plan] = this.scoreSplit(this.split, rates, arrivalCv2);
    const perPipeline = pipelines.map((p) => candidateSplits(p, this.stepMs(p, plan, rates)));
    const n = Math.max(...perPipeline.map((c) => c.length));
    const splits = [this.split];
    const missed = [current];
    for (let k = 0; k < n; k++) {
      const split = Object.fromEntries(
        pipelines.map((p, i) => [p.name, perPipeline[i]![Math.min(k, perPipeline[i]!.length - 1)]!]),
      );
      splits.push(split);
      missed.push(this.scoreSplit(split, rates, arrivalCv2)[0]);
    }
    // Among the splits predicted to miss no more than the fewest (by SPLIT_SAVES), the one giving the pipelines'
    // last steps the most: the planner's prediction does not see a last step's misses grow as its room shrinks.
    const total = rates.reduce((a, b) => a + b, 0);
    const fewest = Math.min(...missed);
    const lastRoom = (sp: Split) => pipelines.reduce((a, p) => a + sp[p.name]!.at(-1)!, 0);
    let best = 0;
    splits.forEach((sp, i) => {
      if (missed[i]! <= fewest + SPLIT_SAVES * total && lastRoom(sp) > lastRoom(splits[best]!) + 1e-9) best = i;
    });
    if (missed[best]! > fewest + SPLIT_SAVES * total) best = missed.indexOf(fewest);
    const bestScore = missed[best]!;
    if (lastRoom(splits[best]!) > lastRoom(this.split) + 1e-9 && bestScore <= current + SPLIT_SAVES * total)
      return splits[best]!;
    return bestScore < current - SWITCH_MARGIN * current - SPLIT_SAVES * total ? splits[best]! : this.split;
  }
}

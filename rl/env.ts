// The training environment of the GPU-provisioning MDP (rl/mdp.ts), on the latency model: one step
// is one decision epoch. It is fast (microseconds a step) so the agent can be trained in minutes;
// the discrete-event simulator, slower but with the ground truth's errors, judges checkpoints
// (rl/train.ts). Pure and seeded.
import type { ClusterInfo, Deployment } from '../src/policy/types.js';
import type { ScenarioModel } from '../src/scenario/schema.js';
import { type RateFunction, rateFunction } from '../src/workload/arrivals.js';
import { Rng } from '../src/workload/random.js';
import {
  type ActionSpace,
  actionSpace,
  decodeAction,
  encodeState,
  memoryUsed,
  referenceThroughput,
  scorePlacements,
  stateDim,
} from './mdp.js';

export interface EnvOptions {
  /** Seconds per step (the scenario's decision epoch). */
  readonly stepS: number;
  readonly stepsPerEpisode: number;
  /** Each episode's rates are the scenario's scaled by a factor drawn from [1 - j, 1 + j]. */
  readonly rateJitter: number;
  /** Each episode starts at a random point of the scenario's rate curves within this many seconds. */
  readonly startSpreadS: number;
  /** false: BDA and the reward ignore interference (trains the view of `inss-ni`). */
  readonly interference: boolean;
  readonly seed: number;
}

export interface StepInfo {
  /** Predicted tasks served per second: sum over models of min(lambda_i, h_i). */
  readonly servedPerS: number;
  /** Predicted share of tasks that miss their SLO. */
  readonly violationFrac: number;
  readonly bdaOk: boolean;
  readonly repaired: number;
}

export class ProvisioningEnv {
  readonly space: ActionSpace;
  readonly stateDim: number;
  readonly refPerS: number[];
  private readonly rates: RateFunction[];
  private readonly rng: Rng;
  private t = 0;
  private startMs = 0;
  private scale = 1;
  private queued: number[];
  private current: Deployment = { placements: [] };

  constructor(
    readonly cluster: ClusterInfo,
    models: readonly ScenarioModel[],
    readonly options: EnvOptions,
  ) {
    this.space = actionSpace(cluster);
    this.stateDim = stateDim(cluster);
    this.refPerS = referenceThroughput(cluster);
    this.rates = models.map((m) => {
      if (m.rate.kind === 'trace')
        throw new RangeError(
          `models: '${m.name}' has a trace rate; training needs rate curves (constant, steps, triangle, diurnal)`,
        );
      return rateFunction(m.rate);
    });
    this.rng = new Rng(options.seed);
    this.queued = models.map(() => 0);
  }

  ratesNow(): number[] {
    const tMs = this.startMs + this.t * this.options.stepS * 1000;
    return this.rates.map((r) => r.rateAt(tMs) * this.scale);
  }

  private state(): Float32Array {
    return encodeState(
      this.cluster,
      this.refPerS,
      memoryUsed(this.cluster, this.current),
      this.ratesNow(),
      this.queued,
    );
  }

  reset(): Float32Array {
    this.t = 0;
    this.startMs = Math.floor(this.rng.next() * this.options.startSpreadS) * 1000;
    this.scale = 1 + (2 * this.rng.next() - 1) * this.options.rateJitter;
    this.queued = this.queued.map(() => 0);
    this.current = { placements: [] };
    return this.state();
  }

  /** Applies one action (an option per model), scores it by eq. (3) at this step's rates, moves one step. */
  step(action: ArrayLike<number>): { state: Float32Array; reward: number; done: boolean; info: StepInfo } {
    const rates = this.ratesNow();
    const { placements, repaired } = decodeAction(this.cluster, this.space, action);
    const o = scorePlacements(this.cluster, this.refPerS, placements, rates, {
      interference: this.options.interference,
    });
    this.current = o.deployment;
    let served = 0;
    let missed = 0;
    let total = 0;
    rates.forEach((lambda, i) => {
      const carried = Math.min(lambda, o.capacityPerS[i]!);
      served += carried;
      missed += lambda * o.violation[i]!;
      total += lambda;
      // Work left over accumulates (at most one second of arrivals: the rest would be dropped).
      this.queued[i] = Math.min(lambda, Math.max(0, this.queued[i]! + (lambda - carried) * this.options.stepS));
    });
    this.t++;
    return {
      state: this.state(),
      reward: o.reward,
      done: this.t >= this.options.stepsPerEpisode,
      info: { servedPerS: served, violationFrac: total > 0 ? missed / total : 0, bdaOk: o.bdaOk, repaired },
    };
  }
}

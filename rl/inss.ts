// The InSS scheduler TS (paper sections 5.1 and 5.5) as a policy: a trained SAC-Discrete actor
// decides placement and shares, BDA decides batch sizes.
// - Case 1: when arrival rates change, BDA alone re-picks the batches on the current placement
//   (free: no process changes).
// - Case 2: when BDA reports infeasible (or at the start), the actor reallocates from the current
//   state, and BDA runs again on its allocation.
// Beyond the paper (docs/inss.md): the reallocation is kept only if its predicted reward by eq. (3)
// beats the current deployment's, so a poor actor output never replaces a better deployment and
// no shadow swap is paid for nothing.
// `inss-ni` is the same with interference ignored in the model it decides on (BDA and the check).
import type { ClusterInfo, Deployment, Observation, Policy, PolicyFactory, PolicyOptions } from '../src/policy/types.js';
import { ActorForward } from './actorForward.js';
import { type ActionSpace, actionSpace, decodeAction, encodeState, memoryUsed, referenceThroughput, scorePlacements, staticMasks } from './mdp.js';
import { policyMismatch, PolicyFileSchema } from './policyFile.js';
import { formatIssues } from '../src/profile/schema.js';

/** Relative change of any model's rate that makes BDA run again (case 1). */
const RATE_CHANGE = 0.02;

export class InssPolicy implements Policy {
  private lastRates: number[] | null = null;
  private readonly refPerS: number[];
  private readonly masks: Uint8Array[];
  private readonly state: Float32Array<ArrayBuffer>;

  constructor(
    readonly name: string,
    private readonly cluster: ClusterInfo,
    private readonly space: ActionSpace,
    private readonly actor: ActorForward,
    private readonly interference: boolean,
  ) {
    this.refPerS = referenceThroughput(cluster);
    this.masks = staticMasks(cluster, space);
    this.state = new Float32Array(actor.stateDim);
  }

  decide(obs: Observation): Deployment {
    const rates = [...obs.ratePerS];
    const current = obs.current;
    const opts = { interference: this.interference };
    if (current.placements.length > 0) {
      const changed = this.lastRates === null || rates.some((r, i) => Math.abs(r - this.lastRates![i]!) > RATE_CHANGE * Math.max(1, this.lastRates![i]!));
      if (!changed) return current;
      this.lastRates = rates;
      // Case 1: BDA alone on the current placement and shares.
      const kept = scorePlacements(this.cluster, this.refPerS, current.placements.map((p) => ({ ...p, batch: 1 })), rates, opts);
      if (kept.bdaOk) return kept.deployment;
      // Case 2: BDA found no feasible batch for some model: the actor reallocates.
      const fresh = this.reallocate(obs, rates, current);
      return fresh.reward > kept.reward ? fresh.deployment : kept.deployment;
    }
    this.lastRates = rates;
    return this.reallocate(obs, rates, current).deployment;
  }

  private reallocate(obs: Observation, rates: number[], current: Deployment): { deployment: Deployment; reward: number } {
    encodeState(this.cluster, this.refPerS, memoryUsed(this.cluster, current), rates, obs.queued, this.state);
    const action = this.actor.act(this.state, { greedy: true, masks: this.masks });
    const { placements } = decodeAction(this.cluster, this.space, action);
    const o = scorePlacements(this.cluster, this.refPerS, placements, rates, { interference: this.interference });
    return { deployment: o.deployment, reward: o.reward };
  }
}

/** Raised when a policy needs a trained file it was not given or that does not fit. */
export class PolicyFileError extends RangeError {
  override readonly name = 'PolicyFileError';
}

function makeFactory(name: 'inss' | 'inss-ni', interference: boolean, description: string): PolicyFactory {
  return {
    name,
    description,
    create(cluster: ClusterInfo, options: PolicyOptions): Policy {
      if (options.policyData === undefined) throw new PolicyFileError(`${name} needs a trained policy: train one with \`inss train\`, or pass --policy-file`);
      const parsed = PolicyFileSchema.safeParse(options.policyData);
      if (!parsed.success) throw new PolicyFileError(`policy file: ${formatIssues(parsed.error)}`);
      const space = actionSpace(cluster);
      const mismatch = policyMismatch(parsed.data, cluster, space);
      if (mismatch) throw new PolicyFileError(`policy file (scenario ${parsed.data.scenario}) does not fit this cluster: ${mismatch}`);
      return new InssPolicy(name, cluster, space, ActorForward.fromSnapshot(parsed.data.actor), interference);
    },
  };
}

export const inssFactory = makeFactory('inss', true, 'InSS: SAC-Discrete placement and shares, BDA batch sizes (paper section 5)');
export const inssNiFactory = makeFactory('inss-ni', false, 'InSS with interference ignored in the latency model it decides on');

// Small named fakes shared by the tests.
import type { Deployment, Observation, Policy } from '../../src/policy/types.js';

/** A policy that always returns the same deployment, recording what it observed. */
export class FixedPolicy implements Policy {
  readonly name = 'fixed';
  readonly observations: Observation[] = [];
  constructor(private readonly deployment: Deployment) {}
  decide(obs: Observation): Deployment {
    this.observations.push(obs);
    return this.deployment;
  }
}

/** A policy that plays a list of deployments, one per epoch, then repeats the last. */
export class ScriptedPolicy implements Policy {
  readonly name = 'scripted';
  private i = 0;
  constructor(private readonly script: readonly Deployment[]) {}
  decide(): Deployment {
    const d = this.script[Math.min(this.i, this.script.length - 1)]!;
    this.i++;
    return d;
  }
}

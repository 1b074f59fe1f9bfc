// The policy registry: the one module that imports every scheduling policy, so each is chosen by
// name (`inss bench --policies gpulet,inss`). A duplicate name is an error at start.
import { inssEvenFactory, inssFactory, inssNiFactory, inssPaperFactory } from '../rl/inss.js';
import { gpuletFactory } from '../src/policy/policies/gpulet.js';
import { gsliceFactory } from '../src/policy/policies/gslice.js';
import { timeshareFactory } from '../src/policy/policies/timeshare.js';
import { igniterFactory } from '../src/policy/policies/igniter.js';
import { oracleFactory } from '../src/policy/policies/oracle.js';
import { staticEvenFactory } from '../src/policy/policies/static-even.js';
import type { PolicyFactory } from '../src/policy/types.js';
import { parseAttainmentLabel, readsAttainmentTarget, withAttainmentTarget } from '../src/policy/attainment.js';

const FACTORIES: readonly PolicyFactory[] = [
  inssFactory,
  inssEvenFactory,
  inssNiFactory,
  inssPaperFactory,
  gpuletFactory,
  gsliceFactory,
  igniterFactory,
  staticEvenFactory,
  timeshareFactory,
  oracleFactory,
];

export class UnknownPolicyError extends Error {
  override readonly name = 'UnknownPolicyError';
}

function index(factories: readonly PolicyFactory[]): ReadonlyMap<string, PolicyFactory> {
  const byName = new Map<string, PolicyFactory>();
  for (const f of factories) {
    if (byName.has(f.name)) throw new Error(`policy registry: duplicate policy name '${f.name}'`);
    byName.set(f.name, f);
  }
  return byName;
}

export class PolicyRegistry {
  private readonly byName: ReadonlyMap<string, PolicyFactory>;

  constructor(factories: readonly PolicyFactory[] = FACTORIES) {
    this.byName = index(factories);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  /** A registered policy, or a label `<policy>@<pct>` of one that reads the attainment target (`inss@95`). */
  get(name: string): PolicyFactory {
    const f = this.byName.get(name);
    if (f) return f;
    let label;
    try {
      label = parseAttainmentLabel(name);
    } catch (e) {
      throw new UnknownPolicyError((e as Error).message);
    }
    const base = label ? this.byName.get(label.policy) : undefined;
    if (label && base && readsAttainmentTarget(base.name)) return withAttainmentTarget(base, label.target);
    if (label && base)
      throw new UnknownPolicyError(`policy '${name}': ${base.name} plans the same whatever the attainment target`);
    throw new UnknownPolicyError(`unknown policy '${name}' (known: ${this.names().join(', ')})`);
  }

  all(): PolicyFactory[] {
    return [...this.byName.values()];
  }
}

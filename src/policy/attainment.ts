// The attainment target: the fraction of tasks an operator wants served within their SLO, which a policy
// that reads it (inss: rl/inssTuning.ts inssMargins) plans for. One setting, read from one place: a
// scenario's `attainmentTarget`, overridden by `--attainment-target` or by a policy label `<policy>@<pct>`
// (`inss@95`: inss planning for 95%), so that two runs at different targets never share a name in a
// table. Pure.
import type { ClusterInfo, Policy, PolicyFactory, PolicyOptions } from './types.js';

/** The target when none is set: the 99% line the suite's first capacity is measured at. */
export const DEFAULT_ATTAINMENT_TARGET = 0.99;

/**
 * Why `v` is not an attainment target, or null: a number in (0.5, 1). 1 would ask for no task ever
 * late, which no queue under random arrivals gives; at 0.5 or below half the tasks may miss, which is
 * no service level.
 */
export function attainmentTargetProblem(v: number): string | null {
  return Number.isFinite(v) && v > 0.5 && v < 1 ? null : `must be a number in (0.5, 1), got ${v}`;
}

/** Policies that read the target (inss and its variants); the others plan the same whatever it is. */
export function readsAttainmentTarget(policyName: string): boolean {
  return policyName.startsWith('inss');
}

/** `inss@95` for inss at 0.95: the percentage with at most two decimals. */
export function attainmentLabel(policyName: string, target: number): string {
  return `${policyName}@${Number((target * 100).toFixed(2))}`;
}

/**
 * A label's policy and target (`inss@95` -> inss, 0.95), null when `name` is not a label; throws a
 * RangeError naming the label when its percentage is not a valid target.
 */
export function parseAttainmentLabel(name: string): { policy: string; target: number } | null {
  const m = /^(.+)@([0-9]+(?:\.[0-9]+)?)$/.exec(name);
  if (!m) return null;
  const target = Number(m[2]) / 100;
  const why = attainmentTargetProblem(target);
  if (why !== null) throw new RangeError(`policy '${name}': the target after '@' is a percentage in (50, 100)`);
  return { policy: m[1]!, target };
}

/** `factory`'s policy planning for `target` whatever its options say, registered as its label. */
export function withAttainmentTarget(factory: PolicyFactory, target: number): PolicyFactory {
  const why = attainmentTargetProblem(target);
  if (why !== null) throw new RangeError(`attainment target: ${why}`);
  const name = attainmentLabel(factory.name, target);
  const set = (options: PolicyOptions): PolicyOptions => ({ ...options, attainmentTarget: target });
  return {
    name,
    description: `${factory.name} planning for ${Number((target * 100).toFixed(2))}% of tasks within SLO`,
    supports: (cluster: ClusterInfo, options: PolicyOptions) => factory.supports(cluster, set(options)),
    create(cluster: ClusterInfo, options: PolicyOptions): Policy {
      const inner = factory.create(cluster, set(options));
      return {
        name,
        decide: (obs) => inner.decide(obs),
        ...(inner.note !== undefined ? { note: inner.note } : {}),
      };
    },
  };
}

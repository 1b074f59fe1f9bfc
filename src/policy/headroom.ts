// The same planning headroom inss uses, for any model-based baseline (so a table shows how much of
// any gap is margin). inss plans every model for its measured rate x RATE_HEADROOM and
// its worst task against SLO x SLO_FRACTION (rl/inssTuning.ts; docs/inss.md). `withHeadroom` gives a
// baseline exactly that: the inner policy sees every observed rate multiplied by `rateX` and a
// cluster whose SLOs are multiplied by `sloFraction`, so everything it derives from them (batch
// bounds, SLO/2 timeouts, shares, self-tuning residuals) is planned with the same margin. The
// simulator still judges tasks against the real SLOs. Pure.
import type { ClusterInfo, Observation, Policy, PolicyFactory, PolicyOptions } from './types.js';

export interface Headroom {
  /** Every observed arrival rate is multiplied by this before the policy plans on it (>= 1). */
  readonly rateX: number;
  /** Every SLO the policy plans against is multiplied by this (in (0, 1]). */
  readonly sloFraction: number;
}

/**
 * inss's headroom: rl/inssTuning.ts RATE_HEADROOM and SLO_FRACTION (src/ may not import rl/, so the values
 * are restated here; test/unit/policy-headroom.test.ts fails if they drift apart).
 */
export const INSS_HEADROOM: Headroom = { rateX: 1.1, sloFraction: 0.85 };

/** Suffix of a baseline's name when it runs with inss's headroom (`gpulet-h`). */
export const HEADROOM_SUFFIX = '-h';

/** The cluster as a policy planning with `h` sees it: same GPUs, every SLO x sloFraction. */
export function clusterWithHeadroom(cluster: ClusterInfo, h: Headroom): ClusterInfo {
  return { gpus: cluster.gpus, models: cluster.models.map((m) => ({ ...m, sloMs: m.sloMs * h.sloFraction })) };
}

/** The observation as a policy planning with `h` sees it: every rate x rateX. */
export function observationWithHeadroom(obs: Observation, h: Headroom): Observation {
  const mean = obs.meanRatePerS?.map((r) => r * h.rateX);
  return { ...obs, ratePerS: obs.ratePerS.map((r) => r * h.rateX), ...(mean ? { meanRatePerS: mean } : {}) };
}

/** `factory`'s policy planning with headroom `h`, registered as `<name>-h`. */
export function withHeadroom(factory: PolicyFactory, h: Headroom = INSS_HEADROOM): PolicyFactory {
  if (!(h.rateX >= 1) || !(h.sloFraction > 0 && h.sloFraction <= 1))
    throw new RangeError(`headroom: rateX must be >= 1 and sloFraction in (0, 1], got ${h.rateX}, ${h.sloFraction}`);
  const name = `${factory.name}${HEADROOM_SUFFIX}`;
  return {
    name,
    description: `${factory.name} planning with inss's headroom (rates x ${h.rateX}, SLOs x ${h.sloFraction})`,
    supports: (cluster: ClusterInfo, options: PolicyOptions) =>
      factory.supports(clusterWithHeadroom(cluster, h), options),
    create(cluster: ClusterInfo, options: PolicyOptions): Policy {
      const inner = factory.create(clusterWithHeadroom(cluster, h), options);
      return { name, decide: (obs) => inner.decide(observationWithHeadroom(obs, h)) };
    },
  };
}

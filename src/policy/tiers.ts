// The planner's side of SLO tiers that share workers (src/serving/tiers.ts has the serving rule): where the
// cluster says `shareTiers`, a policy plans each network's tiers as one model, the tiers' lead (the tightest
// SLO). That model's memory counts once, its rate is the sum of its tiers' rates, and its batch is sized for the
// tightest SLO at that summed rate: the head of the shared lane is due first, and at worst every task in it is
// of the tight tier. The deployment it returns places workers for the leads only and says which lane serves
// each name (`sharedBy`). inss plans this way (rl/inss.ts); the other policies serve names apart.
import { sharesAny, tierGroups } from '../serving/tiers.js';
import type { ClusterInfo, Deployment, Observation, Policy } from './types.js';

/** The grouping `cluster` shares workers by, or null where it does not (no setting, no two tiers, pipelines). */
export function clusterTiers(cluster: ClusterInfo): number[] | null {
  if (cluster.shareTiers !== true || (cluster.pipelines?.length ?? 0) > 0) return null;
  // A model whose cost depends on its input is planned at its own quantile: it keeps its own lane.
  const apart = new Set(cluster.models.filter((m) => m.cost !== undefined).map((m) => m.index));
  const sharedBy = tierGroups(cluster.models, apart);
  return sharesAny(sharedBy) ? sharedBy : null;
}

/**
 * The policy `create` makes for `cluster`, planning each network's tiers as one model where the cluster shares
 * tiers (`clusterTiers`); `create(cluster)` itself where it does not.
 */
export function withSharedTiers(cluster: ClusterInfo, create: (c: ClusterInfo) => Policy): Policy {
  const sharedBy = clusterTiers(cluster);
  if (!sharedBy) return create(cluster);
  const leads = sharedBy.flatMap((l, m) => (l === m ? [m] : []));
  const collapsedOf = new Map(leads.map((m, i) => [m, i]));
  const to = (m: number) => collapsedOf.get(sharedBy[m]!)!;
  const collapsed: ClusterInfo = {
    gpus: cluster.gpus.map((g) => ({ ...g, profileIndex: leads.map((m) => g.profileIndex[m]!) })),
    models: leads.map((m, i) => ({ ...cluster.models[m]!, index: i })),
  };
  const inner = create(collapsed);
  const sum = (xs: readonly number[]) => leads.map((_, i) => xs.reduce((a, x, m) => (to(m) === i ? a + x : a), 0));
  /** Per lead, the mean of `xs` weighted by `ws` over its tiers (NaN entries left out; NaN: none). */
  const mean = (xs: readonly number[], ws: readonly number[]) =>
    leads.map((_, i) => {
      let [s, w] = [0, 0];
      xs.forEach((x, m) => {
        if (to(m) === i && !Number.isNaN(x) && ws[m]! > 0) [s, w] = [s + x * ws[m]!, w + ws[m]!];
      });
      return w > 0 ? s / w : NaN;
    });
  const fold = (obs: Observation): Observation => {
    const e = obs.lastEpoch;
    return {
      nowMs: obs.nowMs,
      ratePerS: sum(obs.ratePerS),
      ...(obs.meanRatePerS ? { meanRatePerS: sum(obs.meanRatePerS) } : {}),
      ...(obs.arrivalCv2 ? { arrivalCv2: mean(obs.arrivalCv2, obs.ratePerS) } : {}),
      queued: sum(obs.queued),
      lastEpoch: {
        served: sum(e.served),
        violated: sum(e.violated),
        dropped: sum(e.dropped),
        // Batches run under the lead's name: its GPU times are the lane's.
        meanExecMs: leads.map((m) => e.meanExecMs[m] ?? NaN),
        meanLatencyMs: mean(e.meanLatencyMs, e.served),
        ...(e.batches
          ? {
              batches: e.batches.map((b) => ({
                ...b,
                model: to(b.model),
                beside: b.beside.map((x) => ({ ...x, model: to(x.model) })),
              })),
            }
          : {}),
      },
      current: {
        ...(obs.current.gpuModes ? { gpuModes: obs.current.gpuModes } : {}),
        placements: obs.current.placements.map((p) => ({ ...p, model: to(p.model) })),
      },
    };
  };
  return {
    name: inner.name,
    ...(inner.note !== undefined ? { note: `${inner.note}; SLO tiers share workers` } : {}),
    decide(obs: Observation): Deployment {
      const d = inner.decide(fold(obs));
      return { ...d, placements: d.placements.map((p) => ({ ...p, model: leads[p.model]! })), sharedBy };
    },
  };
}

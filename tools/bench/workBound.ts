// The work a scenario asks of its GPUs at its peak rates (docs/results.md, "Why inss leads by less than
// 1.2x"): each model's peak rate times its GPU-seconds per task at the whole GPU at time sharing's batch
// (the largest whose 2 t_inf meets the SLO), averaged over the GPUs whose profile has it, summed over
// models and divided by the GPU count. A load multiplier past 1 / workPerGpu asks more GPU time than
// the cluster has at those batches; MPS co-location gains at most 0-18% over it at batch 4 and above
// (the V100 pairs, data/v100). An upper bound on what any plan carries, not a prediction. Pure.
import { timeshareMaxBatch } from '../../src/policy/policies/timeshare.js';
import type { ClusterInfo } from '../../src/policy/types.js';
import { predictOnGpu } from '../../src/policy/util.js';
import type { Scenario } from '../../src/scenario/schema.js';

/** Each model's highest rate over the run (a trace's is unknown here: NaN). */
export function peakRates(s: Scenario): number[] {
  return s.models.map((m) => {
    const r = m.rate;
    switch (r.kind) {
      case 'constant':
        return r.ratePerS;
      case 'steps':
        return Math.max(...r.steps.map((x) => x.ratePerS));
      case 'triangle':
        return r.maxPerS;
      case 'diurnal':
        return r.meanPerS * (1 + r.amplitude);
      default:
        return NaN;
    }
  });
}

/** GPU-seconds per second per GPU the rates ask at the whole GPU at time sharing's batches (see the header). */
export function workPerGpu(cluster: ClusterInfo, ratePerS: readonly number[]): number {
  let work = 0;
  for (const m of cluster.models) {
    const on = cluster.gpus.filter((g) => (g.profileIndex[m.index] ?? -1) >= 0);
    if (on.length === 0) continue;
    const perTask = on.map((g) => {
      const b = timeshareMaxBatch(g, m.index, m.sloMs);
      return predictOnGpu(g, [{ model: m.index, batch: b, pct: 100 }])[0]! / b / 1000;
    });
    work += ratePerS[m.index]! * (perTask.reduce((a, x) => a + x, 0) / perTask.length);
  }
  return work / cluster.gpus.length;
}

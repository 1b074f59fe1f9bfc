// What a switch between two deployments changes, for inss's hysteresis (inss.ts): the rate of the models
// whose workers it starts or stops, and whether two deployments run the same workers. Pure.
import type { ClusterInfo, Deployment, Placement } from '../src/policy/types.js';

/** Tasks/s of the models whose workers a switch from `a` to `b` changes (a worker started or stopped). */
export function switchRate(cluster: ClusterInfo, a: Deployment, b: Deployment, rates: readonly number[]): number {
  const key = (d: Deployment, p: Placement) => `${p.gpu}:${p.pct}:${d.gpuModes?.[p.gpu] ?? 'mps'}`;
  let sum = 0;
  for (const m of cluster.models) {
    const ka = a.placements
      .filter((p) => p.model === m.index)
      .map((p) => key(a, p))
      .sort()
      .join(',');
    const kb = b.placements
      .filter((p) => p.model === m.index)
      .map((p) => key(b, p))
      .sort()
      .join(',');
    if (ka !== kb) sum += rates[m.index]!;
  }
  return sum;
}

/** The same workers: the same models on the same GPUs at the same shares, in the same GPU modes (batches aside). */
export function sameLayout(a: Deployment, b: Deployment): boolean {
  if (a.placements.length !== b.placements.length) return false;
  const key = (d: Deployment) =>
    d.placements
      .map((p) => `${p.model}@${p.gpu}:${p.pct}:${d.gpuModes?.[p.gpu] ?? 'mps'}`)
      .sort()
      .join(',');
  return key(a) === key(b);
}

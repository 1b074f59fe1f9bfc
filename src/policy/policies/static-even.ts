// static-even: what an operator gets from the Kubernetes NVIDIA device plugin's MPS sharing mode
// (`sharing.mps.resources[].replicas`) with no scheduler of its own. The plugin splits each GPU into
// equal MPS clients: every client gets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = 100 / replicas and a
// pinned device-memory limit of memory / replicas. docs/policies/static-even.md has the details.
//
//  - Placement: balanced by count. Models in index order, each onto the GPU holding the fewest models
//    so far (lowest index on ties) among GPUs whose profile has the model; on a homogeneous cluster
//    this is round-robin. Rates play no part: the operator deploys once.
//  - Shares: each GPU split evenly among the models on it, floored to the GPU's MPS unit.
//  - Batch: the largest b in 1..32 whose predicted t_inf (interference included: the co-location is
//    fixed, so an operator can measure it in place) satisfies 2 * t_inf <= SLO and whose memory fits
//    the client's pinned limit memMb / (models on the GPU); batch 1 when none does.
//  - timeoutMs = SLO/2: the dynamic batcher's queue delay, the half of the SLO the 2x rule leaves.
//  - Never re-placed: decide() returns the same deployment every epoch.
import { BDA_MAX_BATCH } from '../bda.js';
import { deploymentProblem, floorToUnit, memoryOnGpu, predictOnGpu } from '../util.js';
import type { ClusterInfo, Deployment, Placement, Policy, PolicyFactory, PolicyOptions } from '../types.js';
import { runsAnywhere } from '../contract.js';

/** Model -> GPU, balanced by count (see the header). Returns per GPU the models on it, in index order. */
export function staticEvenPlacement(cluster: ClusterInfo): number[][] {
  const onGpu: number[][] = cluster.gpus.map(() => []);
  for (const m of cluster.models) {
    let best = -1;
    for (const gpu of cluster.gpus) {
      if ((gpu.profileIndex[m.index] ?? -1) < 0) continue;
      if (best < 0 || onGpu[gpu.index]!.length < onGpu[best]!.length) best = gpu.index;
    }
    if (best >= 0) onGpu[best]!.push(m.index);
  }
  return onGpu;
}

/** The static deployment (pure; independent of rates). */
export function staticEvenPlan(cluster: ClusterInfo): Deployment {
  const placements: Placement[] = [];
  staticEvenPlacement(cluster).forEach((models, g) => {
    const gpu = cluster.gpus[g]!;
    let kept = [...models];
    // A GPU whose models cannot all fit in memory even at batch 1 drops its last-placed models
    // (the plugin's pods would fail to start); never the case with the shipped profiles.
    while (
      kept.length > 0 &&
      memoryOnGpu(
        gpu,
        kept.map((model) => ({ model, batch: 1 })),
      ) >
        gpu.memMb + 1e-6
    )
      kept = kept.slice(0, -1);
    if (kept.length === 0) return;
    const pct = floorToUnit(gpu, 100 / kept.length);
    const clientMemMb = gpu.memMb / kept.length;
    const batches = kept.map(() => 1);
    // Interference depends on the co-located shares, not on their batches (util.predictOnGpu), so each
    // model's batch is chosen with the others at batch 1 without loss.
    kept.forEach((model, k) => {
      for (let b = BDA_MAX_BATCH; b >= 1; b--) {
        const trial = kept.map((m, j) => ({ model: m, batch: j === k ? b : 1, pct }));
        const tInfMs = predictOnGpu(gpu, trial)[k]!;
        const memOk = gpu.model.memoryMb(gpu.profileIndex[model]!, b) <= clientMemMb + 1e-6;
        if (memOk && 2 * tInfMs <= cluster.models[model]!.sloMs) {
          batches[k] = b;
          break;
        }
      }
    });
    // Per-client limits keep the sum within memMb; if batch-1 fallbacks exceed their limit, shrink the largest batches.
    while (
      memoryOnGpu(
        gpu,
        kept.map((model, k) => ({ model, batch: batches[k]! })),
      ) >
      gpu.memMb + 1e-6
    ) {
      const k = batches.indexOf(Math.max(...batches));
      if (batches[k]! <= 1) break;
      batches[k] = batches[k]! - 1;
    }
    kept.forEach((model, k) => {
      placements.push({ model, gpu: g, pct, batch: batches[k]!, timeoutMs: cluster.models[model]!.sloMs / 2 });
    });
  });
  return { placements };
}

class StaticEvenPolicy implements Policy {
  readonly name = 'static-even';
  private readonly plan: Deployment;

  constructor(cluster: ClusterInfo) {
    const plan = staticEvenPlan(cluster);
    const problem = deploymentProblem(cluster, plan);
    // Cannot happen by construction; a clear error beats emitting an invalid deployment.
    if (problem !== null) throw new RangeError(`static-even: built an invalid deployment: ${problem}`);
    this.plan = plan;
  }

  decide(): Deployment {
    return this.plan;
  }
}

export const staticEvenFactory: PolicyFactory = {
  name: 'static-even',
  description:
    'Kubernetes NVIDIA device plugin MPS sharing: models balanced by count over GPUs, each GPU split evenly, ' +
    'largest batch with 2*t_inf <= SLO, timeout SLO/2; never re-placed',
  supports: runsAnywhere,
  create(cluster: ClusterInfo, _options: PolicyOptions): Policy {
    return new StaticEvenPolicy(cluster);
  },
};

// timeshare: a Triton Inference Server-style deployment with no spatial sharing (the MISSION's
// "time-sharing only" baseline). docs/policies/timeshare.md has the details.
//
//  - Every GPU runs in `timeshare` mode: one batch at a time on the whole GPU, models taking turns
//    (Triton without MPS; the simulator serialises the batches of a GPU's models).
//  - Placement: Triton's default instance group (`count: 1, kind: KIND_GPU` with no `gpus` list)
//    loads one instance of every model on every GPU. All instances of a model pull from the model's
//    one queue (Triton's per-model scheduler). A GPU whose memory cannot hold every model at its max
//    batch keeps the models it can, each model first on the GPU where it fits with the most memory
//    left, so every model is loaded at least once where memory allows.
//  - Dynamic batching: `max_batch_size` = the largest b in 1..32 whose whole-GPU execution latency
//    t_inf satisfies 2 * t_inf <= SLO (what a Model Analyzer run under a latency budget of the SLO
//    picks: a task may wait for one batch, then run in its own); `max_queue_delay_microseconds` = 0,
//    Triton's default: a free instance takes whatever is queued, up to max_batch_size (timeoutMs 0).
//  - Static: Triton serves the configuration it was given; rates play no part and decide() returns
//    the same deployment every epoch.
import { BDA_MAX_BATCH } from '../bda.js';
import { deploymentProblem, predictOnGpu } from '../util.js';
import type {
  ClusterInfo,
  Deployment,
  GpuInfo,
  GpuMode,
  Placement,
  Policy,
  PolicyFactory,
  PolicyOptions,
} from '../types.js';
import { runsAnywhere } from '../contract.js';

/** Triton's default max_queue_delay (ms). */
export const TIMESHARE_MAX_QUEUE_DELAY_MS = 0;

/** `max_batch_size` of a model on a GPU: the largest b with 2 * t_inf(b, whole GPU) <= SLO (1 when none). */
export function timeshareMaxBatch(gpu: GpuInfo, model: number, sloMs: number): number {
  for (let b = BDA_MAX_BATCH; b >= 1; b--)
    if (2 * predictOnGpu(gpu, [{ model, batch: b, pct: 100 }])[0]! <= sloMs) return b;
  return 1;
}

/** The static Triton-style deployment (pure; independent of rates). */
export function timesharePlan(cluster: ClusterInfo, maxQueueDelayMs = TIMESHARE_MAX_QUEUE_DELAY_MS): Deployment {
  const gpus = cluster.gpus;
  const batch = (g: GpuInfo, m: number) => timeshareMaxBatch(g, m, cluster.models[m]!.sloMs);
  const memOf = (g: GpuInfo, m: number) => g.model.memoryMb(g.profileIndex[m]!, batch(g, m));
  const usedMb = gpus.map(() => 0);
  const onGpu: number[][] = gpus.map(() => []);
  const load = (g: GpuInfo, m: number) => {
    onGpu[g.index]!.push(m);
    usedMb[g.index]! += memOf(g, m);
  };
  const fits = (g: GpuInfo, m: number) =>
    (g.profileIndex[m] ?? -1) >= 0 && !onGpu[g.index]!.includes(m) && usedMb[g.index]! + memOf(g, m) <= g.memMb + 1e-6;
  // Pass 1: every model once, largest memory first, on the GPU with the most memory left.
  const byMem = cluster.models
    .map((m) => m.index)
    .sort((a, b) => {
      const ma = Math.max(...gpus.map((g) => ((g.profileIndex[a] ?? -1) >= 0 ? memOf(g, a) : 0)));
      const mb = Math.max(...gpus.map((g) => ((g.profileIndex[b] ?? -1) >= 0 ? memOf(g, b) : 0)));
      return mb - ma || a - b;
    });
  for (const m of byMem) {
    const best = gpus
      .filter((g) => fits(g, m))
      .sort((a, b) => a.memMb - usedMb[a.index]! - (b.memMb - usedMb[b.index]!) || b.index - a.index)
      .pop();
    if (best) load(best, m);
  }
  // Pass 2: Triton's default instance group, one instance on every GPU, where memory allows.
  for (const m of cluster.models) for (const g of gpus) if (fits(g, m.index)) load(g, m.index);
  const placements: Placement[] = [];
  for (const g of gpus) {
    for (const m of onGpu[g.index]!)
      placements.push({ model: m, gpu: g.index, pct: 100, batch: batch(g, m), timeoutMs: maxQueueDelayMs });
  }
  placements.sort((a, b) => a.gpu - b.gpu || a.model - b.model);
  const gpuModes: GpuMode[] = gpus.map(() => 'timeshare');
  return { placements, gpuModes };
}

class TimesharePolicy implements Policy {
  readonly name = 'timeshare';
  private readonly plan: Deployment;

  constructor(cluster: ClusterInfo) {
    const plan = timesharePlan(cluster);
    const problem = deploymentProblem(cluster, plan);
    // Cannot happen by construction; a clear error beats emitting an invalid deployment.
    if (problem !== null) throw new RangeError(`timeshare: built an invalid deployment: ${problem}`);
    this.plan = plan;
  }

  decide(): Deployment {
    return this.plan;
  }
}

export const timeshareFactory: PolicyFactory = {
  name: 'timeshare',
  description:
    'Triton-style time sharing: no MPS, every model on every GPU (memory permitting), one batch at a time per GPU, ' +
    'dynamic batching with max batch 2*t_inf <= SLO and no queue delay; static',
  supports: runsAnywhere,
  create(cluster: ClusterInfo, _options: PolicyOptions): Policy {
    return new TimesharePolicy(cluster);
  },
};

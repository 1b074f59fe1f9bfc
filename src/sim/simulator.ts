// The digital twin: a discrete-event simulation of a GPU cluster serving DNN models under a policy.
// Pure: time is simulated; the only outside input is an optional `clock` used to time the policy's
// decisions (for the decision-time figure), which never influences the simulation itself.
//
// Task buffer (paper section 3.1, taskBuffer.ts): per model an on-time FIFO and a delayed one, under the
// model's queue policy (src/serving/queuePolicy.ts). When a worker takes a batch, and which tasks time
// out, is the dispatch rule, stated in the head of src/serving/dispatch.ts and shared with the
// scheduler; at every epoch on-time tasks already past their deadline time out too. A model's tasks
// held never exceed its policy's `maxQueueSize`, so no queue grows without bound.
//
// Execution: each batch takes the ground truth's time (groundTruth.ts) for the models running on
// its GPU when it starts. On a `timeshare` (pooled) GPU, the GPU's own mode (GpuInfo.pooled) says
// whether batches of different models overlap or run one at a time (src/model/pooledGpu.ts).
//
// Reconfiguration (paper section 5.5): a new batch size or timeout applies at once. A new share or
// GPU is a shadow-process swap: the new worker starts and warms up for `swapMs` while the old one
// keeps serving (both hold GPU memory), then the old one finishes its batch and stops. The first
// deployment at time 0 is ready at once (the system starts warm).
//
// Worker failures (`failures`, for the conformance suite and what-if runs): at the given time the
// serving worker of a model on a GPU dies; the batch it runs is lost (its tasks count as dropped, as
// the scheduler answers them `worker-failed`), and it serves nothing until its agent has restarted it
// `downMs` later. It keeps its place in the deployment meanwhile, as the scheduler keeps a failed worker.
//
// The parts: types.ts (inputs and results), engine.ts (the event loop, dispatch and the policy loop),
// taskBuffer.ts, gpus.ts (workers on GPUs, batch times), requests.ts (arrivals and transport), worker.ts,
// stats.ts; the per-epoch figures a policy observes are src/serving/epochStats.ts, the scheduler's too.
import { throughputPerS } from '../model/latency.js';
import type { ClusterInfo, Deployment } from '../policy/types.js';
import { Simulation } from './engine.js';
import type { SimInput, SimResult } from './types.js';

export {
  DEFAULT_SIM_SETTINGS,
  type ModelStats,
  type SimInput,
  type SimResult,
  type SimSettings,
  type SimTrace,
  type Summary,
  type TimelinePoint,
  type WorkerFailure,
} from './types.js';

/** Runs one simulation to `input.settings.durationMs`. Deterministic for a given input (seeds included). */
export function simulate(input: SimInput): SimResult {
  return new Simulation(input).run();
}

/** Predicted capacity (tasks/s) of a deployment's workers per model, for reports. */
export function predictedCapacityPerS(cluster: ClusterInfo, d: Deployment): number[] {
  const cap = new Array<number>(cluster.models.length).fill(0);
  for (let g = 0; g < cluster.gpus.length; g++) {
    const gpu = cluster.gpus[g]!;
    // A model the GPU's profile lacks (unprofiled) has no predicted capacity.
    const on = d.placements.filter((p) => p.gpu === g && (gpu.profileIndex[p.model] ?? -1) >= 0);
    if (on.length === 0) continue;
    const ts = d.gpuModes?.[g] === 'timeshare';
    const out = new Array<number>(on.length).fill(0);
    gpu.model.predictGpu(
      on.map((p) => gpu.profileIndex[p.model]!),
      on.map((p) => p.batch),
      on.map((p) => (ts ? 100 : p.pct)),
      ts ? 1 : on.length,
      out,
    );
    if (ts) {
      for (const p of on) {
        const o = [0];
        gpu.model.predictGpu([gpu.profileIndex[p.model]!], [p.batch], [100], 1, o);
        cap[p.model]! += throughputPerS(p.batch, o[0]!) / on.length;
      }
    } else {
      on.forEach((p, i) => (cap[p.model]! += throughputPerS(p.batch, out[i]!)));
    }
  }
  return cap;
}

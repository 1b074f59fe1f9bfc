// How an agent launches its workers: the simulated worker (dist/agent/simWorker.js under this Node), the
// PyTorch worker (native/torch_worker.py) and, for a model repository's models, the worker of the model's
// backend; each with the GPU and share it runs on in its environment.
import { join } from 'node:path';
import { onnxWorkerCommand } from '../../agent/onnxWorker.js';
import { resolvePython, torchAvailable, torchWorkerCommand } from '../../agent/torchWorker.js';
import type { WorkerLaunch } from '../../agent/workerProcess.js';
import { InvalidInputError } from '../../src/profile/schema.js';
import type { AgentGpu, DesiredWorker } from '../../src/protocol/agent.js';
import type { RepositoryModel, WorkerSignature } from '../../src/repository/types.js';
import { PACKAGE_ROOT } from '../profiles.js';
import type { AgentFlags } from './options.js';

/**
 * V8's heap sizing for the simulated worker. A worker reads every batch from its data socket, where
 * Node allocates a new 64 KB buffer per read, and V8's default sizing, taken from the worker's small
 * live heap, then runs a full collection every few batches. Starting the heap large moves the
 * collector's limit, not what is kept (docs/serving.md, "The worker's heap", has the figures).
 */
export const SIM_WORKER_V8_FLAGS: readonly string[] = ['--initial-heap-size=256'];

export function simWorkerLaunch(
  profilePaths: Map<string, string>,
  flags: AgentFlags,
): (w: DesiredWorker, gpu: AgentGpu) => WorkerLaunch {
  const script = join(PACKAGE_ROOT, 'dist', 'agent', 'simWorker.js');
  return (w, gpu) => {
    const path = gpu.profile === null ? undefined : profilePaths.get(gpu.profile);
    if (!path) throw new InvalidInputError(`GPU ${gpu.index} has no profile to simulate`);
    // The agent's profiling flags go to its workers too (a profile of the whole path: `inss up` under
    // `node --cpu-prof`, benchmarks/system.ts); no other flag, as one that prints to stdout (--trace-gc)
    // would break the worker protocol on its stdout.
    const args = [
      ...SIM_WORKER_V8_FLAGS,
      ...process.execArgv.filter((a) => a.startsWith('--cpu-prof') || a.startsWith('--heap-prof')),
      script,
      '--model',
      w.model,
      '--profile',
      path,
      '--pct',
      String(w.pct),
      '--pooled',
      gpu.pooled,
      '--seed',
      String(flags.seed),
    ];
    if (flags.zeroTime) args.push('--zero-time');
    return {
      command: process.execPath,
      args,
      env: { CUDA_VISIBLE_DEVICES: String(gpu.index), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(w.pct) },
    };
  };
}

/**
 * The PyTorch worker (native/torch_worker.py). On a simulated GPU it runs the real model on the CPU:
 * the scheduler plans with the simulated GPU's profile while the answers are the model's real outputs.
 */
export function torchWorkerLaunch(): (w: DesiredWorker, gpu: AgentGpu) => WorkerLaunch {
  return (w, gpu) => {
    const c = torchWorkerCommand({ model: w.model, device: gpu.simulated ? 'cpu' : 'cuda' });
    return {
      command: c.command,
      args: c.args,
      env: gpu.simulated
        ? cpuWorkerEnv(w)
        : { CUDA_VISIBLE_DEVICES: String(gpu.index), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(w.pct) },
    };
  };
}

/**
 * What a repository model's worker is told of it (`--signature`, docs/worker-protocol.md): its tensors
 * in the configuration's order, shapes without the batch dimension, and whether the model takes one
 * (max_batch_size > 0).
 */
export function repositoryWorkerSignature(model: RepositoryModel): WorkerSignature {
  return {
    inputs: model.signature.inputs.map((s) => ({ name: s.name, datatype: s.datatype, shape: [...s.shape] })),
    outputs: model.signature.outputs.map((s) => ({ name: s.name, datatype: s.datatype, shape: [...s.shape] })),
    batchDim: model.maxBatchSize > 0,
  };
}

type Launcher = (w: DesiredWorker, gpu: AgentGpu) => WorkerLaunch;

/**
 * Launches a repository model's worker by its backend: ONNX Runtime's worker (agent/onnxWorker.ts) for
 * model.onnx, the PyTorch worker with the TorchScript file for model.pt; any other model by `zoo`. On a
 * simulated GPU the model runs on the CPU (as `--worker torch` runs the zoo there), on a real one on
 * CUDA; `env` gives the GPU and share (CUDA_VISIBLE_DEVICES, the MPS client's environment).
 */
export function repositoryLaunch(
  repository: ReadonlyMap<string, RepositoryModel>,
  zoo: Launcher,
  env: (w: DesiredWorker, gpu: AgentGpu) => Record<string, string>,
): Launcher {
  return (w, gpu) => {
    const model = repository.get(w.model);
    if (!model) return zoo(w, gpu);
    const c = repositoryWorkerCommand(model, { device: gpu.simulated ? 'cpu' : 'cuda' });
    return { command: c.command, args: c.args, env: env(w, gpu) };
  };
}

/**
 * The command line of a repository model's worker (the agent's launch and `inss profile measure`'s):
 * the ONNX Runtime worker for model.onnx, the PyTorch worker with the TorchScript file for model.pt.
 * `maxBatch` defaults to the model's max_batch_size.
 */
export function repositoryWorkerCommand(
  model: RepositoryModel,
  o: { readonly device: 'cpu' | 'cuda' | 'auto'; readonly maxBatch?: number },
): { command: string; args: string[] } {
  const maxBatch = o.maxBatch ?? (model.maxBatchSize > 0 ? model.maxBatchSize : undefined);
  const opts = {
    model: model.name,
    modelFile: model.file,
    signature: repositoryWorkerSignature(model),
    device: o.device,
    ...(maxBatch !== undefined ? { maxBatch } : {}),
  };
  return model.backend === 'onnxruntime' ? onnxWorkerCommand(opts) : torchWorkerCommand(opts);
}

/** The environment of a worker on a simulated GPU that runs a real model on the CPU. */
export function cpuWorkerEnv(w: DesiredWorker): Record<string, string> {
  return { CUDA_VISIBLE_DEVICES: '', CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(w.pct) };
}

export async function requireTorch(): Promise<void> {
  if (!(await torchAvailable())) {
    throw new InvalidInputError(
      `--worker torch: ${resolvePython()} cannot import torch and torchvision (install Debian's python3-torch ` +
        `and python3-torchvision, or point INSS_PYTHON at a Python that has them)`,
    );
  }
}

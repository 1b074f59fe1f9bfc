// The models `inss profile measure --model` starts workers of, and their command lines: a repository
// model's worker as the agent launches it (ONNX: `node dist/agent/onnxWorker.js`, TorchScript: the
// PyTorch worker with --model-file and --signature), or a zoo model's PyTorch worker.
import { torchWorkerCommand } from '../../agent/torchWorker.js';
import { InvalidInputError } from '../../src/profile/schema.js';
import { modelSignature } from '../../src/protocol/tensor.js';
import type { RepositoryModel, WorkerSignature } from '../../src/repository/types.js';
import { repositoryWorkerCommand, repositoryWorkerSignature } from '../serve/workers.js';
import { loadRepository } from '../repository.js';

/** What the driver needs to start one model's workers, less the environment (the GPU and share). */
export interface ModelWorker {
  readonly name: string;
  readonly signature: WorkerSignature;
  /** The largest batch the model takes (Triton's max_batch_size; the zoo: 32, the PyTorch worker's). */
  readonly maxBatch: number;
  /** Which worker runs it, for notes and messages. */
  readonly worker: string;
  readonly command: (maxBatch: number) => { command: string; args: string[] };
}

/** The zoo's image classifiers: FP32 [3, 224, 224] in, FP32 [1000] out. */
export const ZOO_SIGNATURE: WorkerSignature = { ...modelSignature(4 * 3 * 224 * 224, 4 * 1000), batchDim: true };

export function zooWorker(name: string): ModelWorker {
  return {
    name,
    signature: ZOO_SIGNATURE,
    maxBatch: 32,
    worker: 'PyTorch (zoo model)',
    command: (maxBatch) => torchWorkerCommand({ model: name, device: 'auto', maxBatch }),
  };
}

/** A repository model's worker, launched as the agent launches it (cli/serve/workers.ts). */
export function repositoryWorker(m: RepositoryModel): ModelWorker {
  return {
    name: m.name,
    signature: repositoryWorkerSignature(m),
    maxBatch: Math.max(1, m.maxBatchSize),
    worker: m.backend === 'pytorch' ? 'PyTorch (TorchScript)' : 'ONNX Runtime',
    command: (maxBatch) => repositoryWorkerCommand(m, { device: 'auto', maxBatch }),
  };
}

/**
 * The models of a model repository (cli/repository.ts, the one reader of config.pbtxt); a model the
 * repository could not load is an error naming it and why, when it is the one asked for.
 */
export function loadRepositoryModels(dir: string, want: string): readonly RepositoryModel[] {
  const repo = loadRepository(dir);
  const failed = repo.failures.find((f) => f.name === want);
  if (failed) throw new InvalidInputError(`--model ${want}: ${dir} cannot serve it: ${failed.reason}`);
  return repo.models;
}

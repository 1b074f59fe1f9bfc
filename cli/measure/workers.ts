// The models `inss profile measure --model` starts workers of, and their command lines: a repository
// model's worker as the agent launches it (ONNX: `node dist/agent/onnxWorker.js`, TorchScript: the
// PyTorch worker with --model-file and --signature), or a zoo model's PyTorch worker.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { torchWorkerCommand } from '../../agent/torchWorker.js';
import { InvalidInputError } from '../../src/profile/schema.js';
import { modelSignature } from '../../src/protocol/tensor.js';
import type { RepositoryModel, WorkerSignature } from '../../src/repository/types.js';
import { PACKAGE_ROOT } from '../profiles.js';

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

/**
 * A repository model's worker: the command line of the model repository's worker launch (the same flags
 * for both workers: --model, --model-file, --signature, --device, --max-batch). It builds the line from
 * torchWorkerCommand and the ONNX worker's script path; once agent/onnxWorker.ts's onnxWorkerCommand and
 * TorchWorkerOptions' modelFile/signature are in the tree, this is where they replace it.
 */
export function repositoryWorker(m: RepositoryModel): ModelWorker {
  const signature: WorkerSignature = { ...m.signature, batchDim: m.maxBatchSize > 0 };
  const extra = ['--model-file', m.file, '--signature', JSON.stringify(signature)];
  if (m.backend === 'pytorch')
    return {
      name: m.name,
      signature,
      maxBatch: Math.max(1, m.maxBatchSize),
      worker: 'PyTorch (TorchScript)',
      command: (maxBatch) => {
        const c = torchWorkerCommand({ model: m.name, device: 'auto', maxBatch });
        return { command: c.command, args: [...c.args, ...extra] };
      },
    };
  const script = join(PACKAGE_ROOT, 'dist', 'agent', 'onnxWorker.js');
  return {
    name: m.name,
    signature,
    maxBatch: Math.max(1, m.maxBatchSize),
    worker: 'ONNX Runtime',
    command: (maxBatch) => {
      if (!existsSync(script))
        throw new InvalidInputError(`model '${m.name}' (onnxruntime): the ONNX worker ${script} is not built`);
      return {
        command: process.execPath,
        args: [script, '--model', m.name, ...extra, '--device', 'auto', '--max-batch', String(maxBatch)],
      };
    },
  };
}

type Loader = (dir: string) => readonly RepositoryModel[] | Promise<readonly RepositoryModel[]>;

/**
 * The models of a model repository, through cli/repository.ts's `loadRepository(dir)` (the one reader of
 * config.pbtxt). Imported when called, by a computed specifier, so that this command builds in a tree
 * without that loader and says so when asked for a repository; a static import replaces it once the
 * loader is in the tree.
 */
export async function loadRepositoryModels(dir: string): Promise<readonly RepositoryModel[]> {
  const specifier = ['..', 'repository.js'].join('/');
  let loader: Loader | undefined;
  try {
    loader = ((await import(specifier)) as { loadRepository?: Loader }).loadRepository;
  } catch {
    loader = undefined;
  }
  if (!loader)
    throw new InvalidInputError(
      '--model-repository: this build of inss has no model repository loader (cli/repository.ts loadRepository)',
    );
  return loader(dir);
}

// The ONNX Runtime worker (docs/worker-protocol.md; agent/README.md "The ONNX Runtime worker"): how to
// launch it, and its entry point. The agent and the tests import this module for `onnxWorkerCommand`
// and `onnxAvailable`; importing it starts nothing. Run as a script it is the worker:
//
//   node dist/agent/onnxWorker.js --model NAME --model-file PATH --signature JSON
//     [--device cpu|cuda|auto] [--threads N] [--max-batch N] [--warmup-batches N]
//
// The worker itself lives in agent/onnxWorkerMain.ts, loaded only when this file is the process's main
// module (onnxruntime-node's native binding is then loaded by the worker, never by an importer).
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { WorkerSignature } from '../src/repository/types.js';

export interface OnnxWorkerOptions {
  /** The model's name (the repository's): every batch names it. */
  readonly model: string;
  /** The model.onnx file. */
  readonly modelFile: string;
  readonly signature: WorkerSignature;
  /** cpu, cuda or auto (the worker's default: cuda when its execution provider loads, else cpu). */
  readonly device?: 'cpu' | 'cuda' | 'auto';
  /** Intra-op threads of the CPU execution provider (ONNX Runtime's default: one per core). */
  readonly threads?: number;
  readonly maxBatch?: number;
  readonly warmupBatches?: number;
  /** The Node binary; this process's otherwise. */
  readonly node?: string;
}

/**
 * The compiled worker script: this file when it runs compiled (dist/agent/onnxWorker.js), else the
 * build's copy beside the package root (vitest runs agent/onnxWorker.ts; the worker is dist's).
 */
export function onnxWorkerScript(): string {
  const self = fileURLToPath(import.meta.url);
  if (self.endsWith('.js')) return self;
  return fileURLToPath(new URL('../dist/agent/onnxWorker.js', import.meta.url));
}

/** The command line that starts an ONNX Runtime worker. The environment (CUDA_VISIBLE_DEVICES, MPS) is the caller's. */
export function onnxWorkerCommand(opts: OnnxWorkerOptions): { command: string; args: string[] } {
  const args = [
    onnxWorkerScript(),
    '--model',
    opts.model,
    '--model-file',
    opts.modelFile,
    '--signature',
    JSON.stringify(opts.signature),
  ];
  if (opts.device !== undefined) args.push('--device', opts.device);
  if (opts.threads !== undefined) args.push('--threads', String(opts.threads));
  if (opts.maxBatch !== undefined) args.push('--max-batch', String(opts.maxBatch));
  if (opts.warmupBatches !== undefined) args.push('--warmup-batches', String(opts.warmupBatches));
  return { command: opts.node ?? process.execPath, args };
}

let availability: Promise<boolean> | null = null;

/**
 * Whether onnxruntime-node loads here with its CPU execution provider (its native binding is in the
 * package for linux, macOS and Windows on x64 and arm64). Loads it into this process once; never rejects.
 */
export function onnxAvailable(): Promise<boolean> {
  availability ??= import('onnxruntime-node').then(
    (ort) => ort.listSupportedBackends().some((b) => b.name === 'cpu'),
    () => false,
  );
  return availability;
}

function isMain(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) await import('./onnxWorkerMain.js');

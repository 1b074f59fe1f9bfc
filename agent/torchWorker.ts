// How to launch the PyTorch worker (native/torch_worker.py, docs/worker-protocol.md): which Python
// interpreter and which script path. Used by the agent when it builds a WorkerLaunch for a real GPU,
// and by the tests. The one external effect here is `torchAvailable`, which runs the interpreter once.
//
// The interpreter: INSS_PYTHON when set, else /usr/bin/python3 when it exists (Debian's
// python3-torch and python3-torchvision install into its dist-packages, which a pyenv or venv
// `python3` earlier on PATH does not see), else `python3` from PATH.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { WorkerSignature } from '../src/repository/types.js';

export const SYSTEM_PYTHON = '/usr/bin/python3';

/**
 * The script, looked up from this module: `agent/torchWorker.ts` (vitest, tsx) is one level below the
 * package root, the compiled `dist/agent/torchWorker.js` two. The first that exists wins.
 */
const SCRIPT_CANDIDATES = [
  new URL('../native/torch_worker.py', import.meta.url),
  new URL('../../native/torch_worker.py', import.meta.url),
];

export interface TorchWorkerOptions {
  /** inss model name (resnet50, mobilenet, ...) or a torchvision builder name; any name with `modelFile`. */
  readonly model: string;
  /**
   * A TorchScript module (torch.jit.save) to serve instead of a torchvision model (`--model-file`); it
   * takes its inputs positionally in `signature`'s order. Given together with `signature`.
   */
  readonly modelFile?: string;
  /** The TorchScript module's tensors (`--signature`, JSON). */
  readonly signature?: WorkerSignature;
  /** cpu, cuda or auto (the worker's default: cuda when torch sees one). */
  readonly device?: string;
  /** A state_dict .pth file; random init (seeded) otherwise. */
  readonly weights?: string;
  /** The interpreter; resolvePython() otherwise. */
  readonly python?: string;
  readonly maxBatch?: number;
  readonly warmupBatches?: number;
  readonly seed?: number;
  /** CPU threads for torch. */
  readonly threads?: number;
}

/** The Python interpreter that runs the worker (see the file header). Reads the environment. */
export function resolvePython(): string {
  const fromEnv = process.env['INSS_PYTHON'];
  if (fromEnv) return fromEnv;
  return existsSync(SYSTEM_PYTHON) ? SYSTEM_PYTHON : 'python3';
}

/** Absolute path of native/torch_worker.py. Throws when the package was installed without it. */
export function torchWorkerScript(): string {
  for (const url of SCRIPT_CANDIDATES) {
    const path = fileURLToPath(url);
    if (existsSync(path)) return path;
  }
  throw new Error(
    `native/torch_worker.py not found (looked at ${SCRIPT_CANDIDATES.map((u) => fileURLToPath(u)).join(', ')})`,
  );
}

/**
 * The command line that starts a PyTorch worker. The environment (CUDA_VISIBLE_DEVICES, the MPS share) is the caller's.
 */
export function torchWorkerCommand(opts: TorchWorkerOptions): { command: string; args: string[] } {
  const args = [torchWorkerScript(), '--model', opts.model];
  if (opts.modelFile !== undefined) args.push('--model-file', opts.modelFile);
  if (opts.signature !== undefined) args.push('--signature', JSON.stringify(opts.signature));
  if (opts.device !== undefined) args.push('--device', opts.device);
  if (opts.weights !== undefined) args.push('--weights', opts.weights);
  if (opts.maxBatch !== undefined) args.push('--max-batch', String(opts.maxBatch));
  if (opts.warmupBatches !== undefined) args.push('--warmup-batches', String(opts.warmupBatches));
  if (opts.seed !== undefined) args.push('--seed', String(opts.seed));
  if (opts.threads !== undefined) args.push('--threads', String(opts.threads));
  return { command: opts.python ?? resolvePython(), args };
}

const availability = new Map<string, Promise<boolean>>();

/**
 * Whether `python` (resolvePython() by default) can import torch and torchvision. Runs it once per
 * interpreter per process (a few seconds: importing torch is slow) and caches the answer; never rejects.
 */
export function torchAvailable(python: string = resolvePython()): Promise<boolean> {
  let known = availability.get(python);
  if (!known) {
    known = new Promise<boolean>((resolve) => {
      execFile(python, ['-c', 'import torch, torchvision'], { timeout: 120_000 }, (err) => resolve(err === null));
    });
    availability.set(python, known);
  }
  return known;
}

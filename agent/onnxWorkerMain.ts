// The ONNX Runtime worker process (started by agent/onnxWorker.ts when run as a script; flags there):
// the worker protocol's plumbing is agent/nodeWorker.ts's, the model runs in a inference thread
// (agent/onnxWorkerThread.ts) so the event loop reads the next batch while one runs. At start: the
// flags validated (a bad one is a `fatal` naming it), the model loaded with the execution provider
// --device asks for (auto: CUDA when its provider loads, else the CPU with the reason in `ready`'s
// device), its inputs and outputs checked by name against --signature (element types, shapes), and
// --warmup-batches batches run; then `ready`. Each batch is one `InferenceSession.run`: its inputs' bytes go to
// the thread in the frame's own buffer, moved (postMessage's transfer list: no copy), or, for an image
// input whose samples come encoded or in shared-memory slots, as the FP32 tensor the decode step makes
// (agent/decode.ts). Outputs go back in signature order, their bytes one after another.
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import type { FailedSample, TensorRef } from '../src/protocol/tensor.js';
import type { WorkerSignature } from '../src/repository/types.js';
import { decodeBatchInput } from './decode.js';
import { type Batch, type BatchAnswer, type BatchInput, NodeWorkerHost } from './nodeWorker.js';
import type { SessionInit, SessionReply, SessionRequest } from './onnxWorkerThread.js';
import { parseWorkerSignature } from './onnxWorkerSignature.js';

const host = new NodeWorkerHost('onnxWorker');
function die(message: string): never {
  return host.die(message);
}

function flags() {
  try {
    return parseArgs({
      options: {
        model: { type: 'string' },
        'model-file': { type: 'string' },
        signature: { type: 'string' },
        device: { type: 'string', default: 'auto' },
        threads: { type: 'string' },
        'max-batch': { type: 'string', default: '32' },
        'warmup-batches': { type: 'string', default: '3' },
      },
      strict: true,
    }).values;
  } catch (e) {
    return die((e as Error).message);
  }
}
const opts = flags();

function int(name: 'threads' | 'max-batch' | 'warmup-batches', min: number, max: number): number | null {
  const raw = opts[name];
  if (raw === undefined) return null;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < min || v > max)
    die(`--${name}: expected an integer in [${min}, ${max}], got '${raw}'`);
  return v;
}

const model = opts.model;
if (!model) die('--model is required');
const modelFile = opts['model-file'];
if (!modelFile) die('--model-file is required');
if (!existsSync(modelFile) || !statSync(modelFile).isFile()) die(`--model-file ${modelFile}: no such file`);
if (opts.signature === undefined) die('--signature is required');
const parsed = parseWorkerSignature(opts.signature);
if (typeof parsed === 'string') die(parsed);
const signature: WorkerSignature = parsed;
const device = opts.device;
if (device !== 'cpu' && device !== 'cuda' && device !== 'auto')
  die(`--device: expected cpu, cuda or auto, got '${device}'`);
const threads = int('threads', 1, 1024);
const maxBatch = int('max-batch', 1, 1 << 20)!;
const warmupBatches = int('warmup-batches', 0, 1000)!;
host.readEnvironment(model);

/** Where onnxruntime-node keeps the CUDA execution provider once installed, and whether it is there. */
function cudaLibrary(): SessionInit['cudaLibrary'] {
  const root = dirname(dirname(createRequire(import.meta.url).resolve('onnxruntime-node')));
  const path = join(root, 'bin', 'napi-v6', process.platform, process.arch, 'libonnxruntime_providers_cuda.so');
  return { path, installed: existsSync(path) };
}

const thread = new Worker(new URL('./onnxWorkerThread.js', import.meta.url));
// One request at a time: `init`, then one `run` per batch (the host runs batches one after another).
let waiting: ((r: SessionReply) => void) | null = null;
thread.on('message', (r: SessionReply) => {
  const w = waiting;
  waiting = null;
  thread.unref();
  w?.(r);
});
thread.on('error', (e) => die(`the inference thread failed: ${e.message}`));
// Held only while a request is out: the worker exits when its protocol side is done (stdin closed or
// SIGTERM, every batch received answered), whatever the idle thread is doing.
thread.unref();
function ask(req: SessionRequest, transfer: ArrayBuffer[] = []): Promise<SessionReply> {
  return new Promise((resolve) => {
    waiting = resolve;
    thread.ref();
    thread.postMessage(req, transfer);
  });
}

async function run(msg: Batch, input: BatchInput, release: () => void): Promise<BatchAnswer> {
  let inputs: Uint8Array[];
  let transfer: ArrayBuffer[] = [];
  let failed: FailedSample[] = [];
  if (input.kind === 'image') {
    // The decode step (also FP32 samples in slots: one tensor for the one run), before the device's time.
    const decoded = decodeBatchInput(input.ref, input.bytes, msg.size, signature.inputs[0]!);
    release();
    failed = decoded.failed;
    inputs = [new Uint8Array(decoded.x.buffer, decoded.x.byteOffset, decoded.x.byteLength)];
    transfer = [decoded.x.buffer as ArrayBuffer];
  } else {
    // The frame's own buffer moves to the thread (no copy; detached here, so never reused); views of a
    // chunk other frames share are copied (frames under 64 KB: structured clone copies what they view).
    inputs = [...input.tensors];
    const whole = inputs[0]!;
    if (host.ownsBuffer(whole)) transfer = [whole.buffer as ArrayBuffer];
    else {
      inputs = inputs.map((t) => new Uint8Array(t));
      transfer = inputs.map((t) => t.buffer as ArrayBuffer);
    }
  }
  const r = await ask({ type: 'run', size: msg.size, inputs }, transfer);
  release();
  if (r.type !== 'done')
    throw new Error(r.type === 'failed' || r.type === 'fatal' ? r.message : `unexpected ${r.type}`);
  const outputs: TensorRef[] = signature.outputs.map((spec, k) => ({
    name: spec.name,
    datatype: spec.datatype,
    shape: [...r.outputs[k]!.dims],
    byteLength: r.outputs[k]!.bytes.byteLength,
    ...(failed.length > 0 ? { failed } : {}),
  }));
  const parts = r.outputs.map((o) => o.bytes);
  return { outputs, payload: parts.length === 1 ? parts[0]! : Buffer.concat(parts), latencyMs: r.latencyMs };
}

await host.start({
  model,
  signature,
  maxBatch,
  load: async () => {
    const init: SessionInit = {
      type: 'init',
      modelFile,
      device,
      threads,
      signature,
      maxBatch,
      warmupBatches,
      cudaLibrary: cudaLibrary(),
    };
    const r = await ask(init);
    if (r.type !== 'ready') throw new Error(r.type === 'fatal' || r.type === 'failed' ? r.message : r.type);
    return r.device;
  },
  run,
});

// The ONNX Runtime worker's inference thread (node:worker_threads): it owns the InferenceSession, so
// that a batch's `InferenceSession.run`, which onnxruntime-node runs synchronously on its calling
// thread, never blocks the worker's event loop: the main thread (agent/onnxWorkerMain.ts) reads the
// next frames (pipelining) and sees SIGTERM while a batch runs. Messages (SessionRequest /
// SessionReply): one `init` (load the model with its execution provider, check it against the
// signature, warm up), then `run`s, one at a time. Inputs arrive as byte views of a buffer moved here
// (a frame's payload: a frame pads its header so the payload starts 8-byte aligned); each becomes a
// tensor over those bytes without a copy where its offset is aligned to its element size (a copy
// where not). onnxruntime-node takes no SharedArrayBuffer-backed data ("Invalid argument"), so
// buffers are moved, not shared. Tensors are little-endian (the protocol's), as on every host
// onnxruntime-node ships for.
import { parentPort } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import type { Datatype } from '../src/protocol/tensor.js';
import type { WorkerSignature } from '../src/repository/types.js';
import { ARRAY_OF, checkSessionSignature, ORT_TYPE } from './onnxWorkerSignature.js';

export interface SessionInit {
  readonly type: 'init';
  readonly modelFile: string;
  readonly device: 'cpu' | 'cuda' | 'auto';
  readonly threads: number | null;
  readonly signature: WorkerSignature;
  readonly maxBatch: number;
  readonly warmupBatches: number;
  /** The CUDA execution provider's library, and whether it is installed. */
  readonly cudaLibrary: { readonly path: string; readonly installed: boolean };
}

export interface SessionRun {
  readonly type: 'run';
  readonly size: number;
  /** Each input of the signature, in its order: its bytes. */
  readonly inputs: readonly Uint8Array[];
}

export type SessionRequest = SessionInit | SessionRun;

export type SessionReply =
  | { readonly type: 'ready'; readonly device: string }
  | { readonly type: 'fatal'; readonly message: string }
  | {
      readonly type: 'done';
      readonly latencyMs: number;
      /** Each output of the signature, in its order: its dims and bytes. */
      readonly outputs: readonly { readonly dims: readonly number[]; readonly bytes: Uint8Array }[];
    }
  | { readonly type: 'failed'; readonly message: string };

/** A tensor over `bytes` (a view where aligned, else over a copy). */
function tensorOf(datatype: Datatype, bytes: Uint8Array, dims: readonly number[]): ort.Tensor {
  const C = ARRAY_OF[datatype];
  const aligned = bytes.byteOffset % C.BYTES_PER_ELEMENT === 0 ? bytes : new Uint8Array(bytes);
  const data = new C(aligned.buffer, aligned.byteOffset, aligned.byteLength / C.BYTES_PER_ELEMENT);
  return new ort.Tensor(ORT_TYPE[datatype] as 'float32', data as Float32Array, dims);
}

let inference: ort.InferenceSession | null = null;
let signature: WorkerSignature | null = null;

const dimsOf = (sig: WorkerSignature, shape: readonly number[], size: number): number[] =>
  sig.batchDim ? [size, ...shape] : [...shape];

/** The InferenceSession with the device's execution provider, and the device string `ready` reports. */
async function createSession(init: SessionInit): Promise<{ s: ort.InferenceSession; device: string }> {
  const base: ort.InferenceSession.SessionOptions = {
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    ...(init.threads !== null ? { intraOpNumThreads: init.threads } : {}),
  };
  const version = `onnxruntime ${ort.env.versions.common}`;
  const cpu = async (why: string) => ({
    s: await ort.InferenceSession.create(init.modelFile, { ...base, executionProviders: ['cpu'] }),
    device: `cpu (${version}, ${init.threads ?? 'default'} intra-op threads${why})`,
  });
  if (init.device === 'cpu') return cpu('');
  const notInstalled =
    `the CUDA execution provider is not installed (${init.cudaLibrary.path} is missing: ` +
    'ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node)';
  let why = notInstalled;
  if (init.cudaLibrary.installed) {
    try {
      const s = await ort.InferenceSession.create(init.modelFile, {
        ...base,
        executionProviders: [{ name: 'cuda', deviceId: 0 }],
      });
      return { s, device: `cuda:0 (${version}, CUDA execution provider)` };
    } catch (e) {
      why = `the CUDA execution provider failed: ${(e as Error).message}`;
    }
  }
  if (init.device === 'cuda') throw new Error(`--device cuda: ${why}`);
  return cpu(`; not cuda: ${why}`);
}

async function runBatch(s: ort.InferenceSession, sig: WorkerSignature, size: number, inputs: readonly Uint8Array[]) {
  const feeds: Record<string, ort.Tensor> = {};
  sig.inputs.forEach((spec, k) => {
    feeds[spec.name] = tensorOf(spec.datatype, inputs[k]!, dimsOf(sig, spec.shape, size));
  });
  const started = performance.now();
  const results = await s.run(
    feeds,
    sig.outputs.map((o) => o.name),
  );
  const latencyMs = performance.now() - started;
  const outputs = sig.outputs.map((spec) => {
    const r = results[spec.name];
    if (!r) throw new Error(`output '${spec.name}': the model did not answer it`);
    const want = dimsOf(sig, spec.shape, size);
    if (r.type !== ORT_TYPE[spec.datatype])
      throw new Error(`output '${spec.name}': the model answered ${r.type}, the signature says ${spec.datatype}`);
    if (r.dims.length !== want.length || r.dims.some((d, i) => d !== want[i]))
      throw new Error(
        `output '${spec.name}': the model answered shape [${r.dims.join(',')}], expected [${want.join(',')}]`,
      );
    const data = r.data as Uint8Array;
    return { dims: want, bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
  });
  return { latencyMs, outputs };
}

/** Loads, checks and warms up: batches of 1, the last of --max-batch on a GPU (its memory pool sized for it). */
async function init(msg: SessionInit): Promise<string> {
  const { s, device } = await createSession(msg);
  const problems = checkSessionSignature(msg.signature, s.inputMetadata, s.outputMetadata);
  if (problems.length > 0)
    throw new Error(`--model-file ${msg.modelFile} does not fit --signature: ${problems.join('; ')}`);
  const gpu = device.startsWith('cuda');
  for (let i = 0; i < msg.warmupBatches; i++) {
    const size = msg.signature.batchDim && gpu && i === msg.warmupBatches - 1 ? msg.maxBatch : 1;
    const zeros = msg.signature.inputs.map(
      (spec) =>
        new Uint8Array(
          dimsOf(msg.signature, spec.shape, size).reduce((a, b) => a * b, 1) *
            ARRAY_OF[spec.datatype].BYTES_PER_ELEMENT,
        ),
    );
    await runBatch(s, msg.signature, size, zeros);
  }
  inference = s;
  signature = msg.signature;
  return device;
}

const port = parentPort;
if (port === null) throw new Error('agent/onnxWorkerThread.js runs as a worker thread of agent/onnxWorker.js');
const reply = (m: SessionReply) => port.postMessage(m);
port.on('message', (msg: SessionRequest) => {
  if (msg.type === 'init') {
    init(msg).then(
      (device) => reply({ type: 'ready', device }),
      (e: unknown) => reply({ type: 'fatal', message: (e as Error).message }),
    );
    return;
  }
  if (inference === null || signature === null) {
    reply({ type: 'failed', message: 'the model is not loaded' });
    return;
  }
  runBatch(inference, signature, msg.size, msg.inputs).then(
    (r) => reply({ type: 'done', ...r }),
    (e: unknown) => reply({ type: 'failed', message: (e as Error).message }),
  );
});

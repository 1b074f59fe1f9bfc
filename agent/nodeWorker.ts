// The worker protocol's plumbing shared by the Node workers (the simulated worker, agent/simWorker.ts;
// the ONNX Runtime worker, agent/onnxWorkerMain.ts), so the two cannot drift: `fatal` and exit on a
// bad start, frames on stdin/stdout, the data socket (INSS_WORKER_LISTEN, agent/workerData.ts) with its
// secret and shared-memory attach, identity and model checks, each batch's inputs checked against the
// signature, and the run queue. A worker gives only what it computes: how a checked batch becomes its
// outputs (`BatchRunner`) and how its model is loaded and warmed up (`load`).
// Contract (docs/worker-protocol.md): batches run one at a time in arrival order, from stdin and from
// the data socket, each answered where it came from; the next batch is read while one runs
// (pipelining). A batch naming another model, or another worker identity (INSS_WORKER_IDENTITY), is
// refused, the latter with reason `wrong-worker`. SIGTERM or stdin closing: answer what was received,
// exit 0. `ready` goes out once `load` resolves and the data socket listens.
import { describeWorker, sameWorker, type WorkerIdentity, WorkerIdentitySchema } from '../src/protocol/agent.js';
import { BufferPool, encodeFrame, FrameDecoder } from '../src/protocol/frames.js';
import { sampleViews } from '../src/protocol/shm.js';
import { loadShmAddon } from '../src/protocol/shmMap.js';
import { type TensorRef, type TensorSpec, tensorBytes } from '../src/protocol/tensor.js';
import {
  type DataAddress,
  type FromWorker,
  parseDataAddress,
  type ToWorker,
  ToWorkerSchema,
  WORKER_ENV,
  WORKER_PROTOCOL_VERSION,
} from '../src/protocol/worker.js';
import type { WorkerSignature } from '../src/repository/types.js';
import { checkBatchInput } from './decode.js';
import { badMessage, type DataServer, listenData, type MapRegion, type Reply, wallMs } from './workerData.js';

export type Batch = Extract<ToWorker, { type: 'batch' }>;

/**
 * A batch's inputs once checked. `tensors`: each input's bytes in signature order (views of the
 * payload, at any byte offset). `image`: the one image input of a batch whose samples come in their own
 * encodings (TensorRef.samples) or as shared-memory slots: its ref and its bytes (the payload, or each
 * sample's own view of the region or the payload, when the batch has slots).
 */
export type BatchInput =
  | { readonly kind: 'tensors'; readonly tensors: readonly Buffer[] }
  | { readonly kind: 'image'; readonly ref: TensorRef; readonly bytes: Buffer | readonly Buffer[] };

/** What a worker answers a batch with: the outputs in signature order, their bytes one after another. */
export interface BatchAnswer {
  readonly outputs: readonly TensorRef[];
  readonly payload: Uint8Array;
  /** The device's time for the batch (ms): what the scheduler learns as t_inf. */
  readonly latencyMs: number;
  /** The most GPU memory the process used while it ran the batch (MB), where the worker measures it. */
  readonly memoryMb?: number;
}

/**
 * Computes one batch. Called one batch at a time, never concurrently. `release` gives the payload (and
 * any view of it or of the region) back: call it once the inputs are read (the host calls it after, too).
 * A throw answers the batch with an `error` carrying the message; the worker goes on.
 */
export type BatchRunner = (batch: Batch, input: BatchInput, release: () => void) => Promise<BatchAnswer>;

/** The environment's direct path (docs/worker-protocol.md "The data socket"): all three variables or none. */
interface DirectPath {
  readonly listenAt: string | undefined;
  readonly listenAddr: DataAddress | null;
  readonly secret: string | undefined;
  readonly identity: WorkerIdentity | null;
}

export interface WorkerStart {
  readonly model: string;
  readonly signature: WorkerSignature;
  /** Largest batch taken; larger ones are refused. Absent: any size. */
  readonly maxBatch?: number;
  /** Loads and warms up the model (a rejection is a `fatal`); resolves to the device `ready` names. */
  readonly load: () => Promise<string>;
  readonly run: BatchRunner;
}

/**
 * One worker process's protocol side. Construct it first (it reads the environment, so a bad one is a
 * `fatal` before anything loads), then `start`.
 */
export class NodeWorkerHost {
  private readonly pool = new BufferPool();
  /** The buffers `frameBuffer` gave out: each holds one frame alone. */
  private readonly wholeFrames = new WeakSet<ArrayBufferLike>();
  private readonly frameBuffer = (bytes: number): Buffer => {
    const b = this.pool.take(bytes);
    this.wholeFrames.add(b.buffer);
    return b;
  };
  private readonly pending: {
    msg: Batch;
    payload: Buffer;
    receivedAtMs: number;
    reply: Reply;
    region: Buffer | null;
  }[] = [];
  private serving = false;
  private closing = false;
  private ready = false;
  private dataServer: DataServer | null = null;
  private direct: DirectPath | null = null;

  /** `logName`: the prefix of its stderr lines (simWorker, onnxWorker). */
  constructor(readonly logName: string) {}

  /**
   * Whether `view`'s ArrayBuffer holds one frame alone (read from a stream in pieces into a buffer of
   * its own), so a worker may transfer it to another thread (postMessage's transfer list) rather than
   * copy it. A frame that came whole in one chunk is a view of that chunk, which other frames share.
   */
  ownsBuffer(view: Uint8Array): boolean {
    return this.wholeFrames.has(view.buffer);
  }

  send(msg: FromWorker, payload?: Uint8Array): void {
    process.stdout.write(encodeFrame(msg, payload));
  }

  /** A `fatal` on stdout and stderr, then exit 1 once stdout has flushed. Throws, so callers stop. */
  die(message: string): never {
    this.send({ v: WORKER_PROTOCOL_VERSION, type: 'fatal', message });
    process.stderr.write(`${this.logName}: ${message}\n`);
    process.exitCode = 1;
    setImmediate(() => process.exit(1));
    throw new Error(message);
  }

  log(line: string): void {
    process.stderr.write(`${this.logName}: ${line}\n`);
  }

  /** Reads and checks the direct path's environment for a worker of `model` (a `fatal` when it is wrong). */
  readEnvironment(model: string): void {
    const listenAt = process.env[WORKER_ENV.listen];
    const secret = process.env[WORKER_ENV.secret];
    const identityJson = process.env[WORKER_ENV.identity];
    const listenAddr = listenAt === undefined ? null : parseDataAddress(listenAt);
    if (typeof listenAddr === 'string') this.die(`${WORKER_ENV.listen}: ${listenAddr}`);
    if (listenAddr !== null && !secret) this.die(`${WORKER_ENV.listen} is set but ${WORKER_ENV.secret} is not`);
    let identity: WorkerIdentity | null = null;
    if (identityJson !== undefined) {
      let raw: unknown;
      try {
        raw = JSON.parse(identityJson);
      } catch (e) {
        this.die(`${WORKER_ENV.identity}: not JSON (${(e as Error).message})`);
      }
      const parsed = WorkerIdentitySchema.safeParse(raw);
      if (!parsed.success)
        this.die(
          `${WORKER_ENV.identity}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
        );
      identity = parsed.data;
      if (identity.model !== model)
        this.die(`${WORKER_ENV.identity} names model '${identity.model}' but --model is '${model}'`);
    }
    this.direct = { listenAt, listenAddr, secret, identity };
  }

  /** Takes batches from stdin now, loads the model, listens on the data socket, then says `ready`. */
  async start(w: WorkerStart): Promise<void> {
    if (this.direct === null) this.readEnvironment(w.model);
    const direct = this.direct!;
    const decoder = new FrameDecoder(this.frameBuffer);
    process.stdin.on('data', (chunk: Buffer) => {
      let frames;
      try {
        frames = decoder.push(chunk);
      } catch (e) {
        this.die(`stdin is not a frame stream: ${(e as Error).message}`);
      }
      const at = wallMs();
      for (const f of frames) this.onFrame(f.header, f.payload, at, (m, p) => this.send(m, p), null);
      if (this.ready) void this.serve(w);
    });
    const finish = () => this.finish();
    process.stdin.on('end', finish);
    process.on('SIGTERM', finish);
    process.on('SIGINT', finish);

    const t0 = performance.now();
    let device: string;
    try {
      device = await w.load();
    } catch (e) {
      this.die((e as Error).message);
    }
    if (direct.listenAddr !== null) {
      try {
        this.dataServer = await listenData(
          direct.listenAddr,
          direct.secret!,
          (header, payload, at, reply, region) => {
            this.onFrame(header, payload, at, reply, region);
            if (this.ready) void this.serve(w);
          },
          (line) => this.log(line),
          this.frameBuffer,
          mapRegion,
        );
      } catch (e) {
        this.die(`${WORKER_ENV.listen}=${direct.listenAt}: cannot listen: ${(e as Error).message}`);
      }
    }
    this.ready = true;
    this.send({
      v: WORKER_PROTOCOL_VERSION,
      type: 'ready',
      model: w.model,
      pid: process.pid,
      warmupMs: performance.now() - t0,
      device,
      ...(this.dataServer ? { listen: this.dataServer.address } : {}),
    });
    void this.serve(w);
  }

  private finish(): void {
    this.closing = true;
    this.dataServer?.close();
    if (!this.serving) process.exit(0);
  }

  /** One whole frame from stdin or a data connection: a batch is queued, anything else answered with an error. */
  private onFrame(header: unknown, payload: Buffer, receivedAtMs: number, reply: Reply, region: Buffer | null): void {
    const parsed = ToWorkerSchema.safeParse(header);
    if (!parsed.success) {
      reply(badMessage(header, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')));
      return;
    }
    if (parsed.data.type !== 'batch') {
      reply(badMessage(header, `'${parsed.data.type}' is only the first frame of a data connection`));
      return;
    }
    this.pending.push({ msg: parsed.data, payload, receivedAtMs, reply, region });
  }

  /** A batch that is not this worker's: another model, or (when it names one) another whole identity. */
  private notMine(b: Batch, model: string): string | null {
    const identity = this.direct?.identity ?? null;
    if (b.model !== model) return `batch for model '${b.model}' refused: this worker runs '${model}'`;
    if (b.worker && identity && !sameWorker(b.worker, identity))
      return `batch for worker ${describeWorker(b.worker)} refused: this worker is ${describeWorker(identity)}`;
    if (b.worker && b.worker.model !== model)
      return `batch for worker ${describeWorker(b.worker)} refused: this worker runs '${model}'`;
    return null;
  }

  private async serve(w: WorkerStart): Promise<void> {
    if (this.serving) return;
    this.serving = true;
    while (this.pending.length > 0) {
      const { msg, payload, receivedAtMs, reply, region } = this.pending.shift()!;
      let given = false;
      const release = () => {
        // A buffer transferred to another thread is detached here: nothing to give back.
        if (!given && payload.buffer.byteLength > 0) this.pool.give(payload);
        given = true;
      };
      const refused = this.notMine(msg, w.model);
      if (refused) {
        release();
        reply({ v: WORKER_PROTOCOL_VERSION, type: 'error', id: msg.id, message: refused, reason: 'wrong-worker' });
        continue;
      }
      const input = batchInput(msg, payload, region, w.signature, w.maxBatch);
      if (typeof input === 'string') {
        release();
        reply({ v: WORKER_PROTOCOL_VERSION, type: 'error', id: msg.id, message: input });
        continue;
      }
      let answer: BatchAnswer;
      try {
        answer = await w.run(msg, input, release);
      } catch (e) {
        reply({ v: WORKER_PROTOCOL_VERSION, type: 'error', id: msg.id, message: (e as Error).message });
        continue;
      } finally {
        release();
      }
      reply(
        {
          v: WORKER_PROTOCOL_VERSION,
          type: 'result',
          id: msg.id,
          latencyMs: answer.latencyMs,
          outputs: [...answer.outputs],
          ...(answer.memoryMb !== undefined ? { memoryMb: answer.memoryMb } : {}),
          receivedAtMs,
          answeredAtMs: wallMs(),
        },
        answer.payload,
      );
    }
    this.serving = false;
    if (this.closing) process.exit(0);
  }
}

/**
 * Maps a scheduler's region read-only, anew for each connection that names one (a path seen before may
 * name a new file: a restarted scheduler with the same pid); unmapped once the connection's batches are done with.
 */
const mapRegion: MapRegion = (shm) => {
  if (process.env[WORKER_ENV.shm] === 'off') return `${WORKER_ENV.shm}=off`;
  const addon = loadShmAddon();
  if (!addon.ok) return `the shared-memory addon is ${addon.why}`;
  try {
    const region = Buffer.from(addon.map(shm.path, false));
    if (region.length !== shm.bytes) return `${shm.path} has ${region.length} bytes, attach says ${shm.bytes}`;
    return region;
  } catch (e) {
    return (e as Error).message;
  }
};

/** What is wrong with one plain tensor input (no samples) of `bytes` bytes, or null. */
function checkTensor(t: TensorRef, size: number, spec: TensorSpec, batchDim: boolean): string | null {
  if (t.name !== spec.name) return `input '${t.name}': expected '${spec.name}'`;
  if (t.datatype !== spec.datatype) return `input '${t.name}': datatype ${t.datatype}, expected ${spec.datatype}`;
  if (t.samples !== undefined) return `input '${t.name}': samples are taken only for a model's one image input`;
  const want = batchDim ? [size, ...spec.shape] : spec.shape;
  if (t.shape.length !== want.length || t.shape.some((d, i) => d !== want[i]))
    return `input '${t.name}': shape [${t.shape.join(',')}], expected [${want.join(',')}]`;
  const bytes = tensorBytes(t.datatype, t.shape);
  return t.byteLength === bytes ? null : `input '${t.name}': ${t.byteLength} bytes, expected ${bytes}`;
}

/**
 * The batch's inputs checked against the signature (contract: docs/worker-protocol.md "Batches of any
 * signature"), or a string naming what is wrong (the batch is refused). A one-input batch-dim model
 * is checked by the image path's rule (agent/decode.ts), which also takes encoded samples and slots.
 */
export function batchInput(
  b: Batch,
  payload: Buffer,
  region: Buffer | null,
  sig: WorkerSignature,
  maxBatch?: number,
): BatchInput | string {
  const n = sig.inputs.length;
  if (b.inputs.length !== n) return `expected ${n} input${n === 1 ? '' : 's'}, got ${b.inputs.length}`;
  if (maxBatch !== undefined && b.size > maxBatch)
    return `size: ${b.size} is over this worker's --max-batch ${maxBatch}`;
  if (!sig.batchDim && b.size !== 1) return `size: ${b.size}, but the model takes no batch dimension (size 1 only)`;
  // Encoded samples and shared-memory slots are the one-input FP32 (image) path's (agent/decode.ts).
  if (n === 1 && sig.batchDim && sig.inputs[0]!.datatype === 'FP32') {
    const spec = sig.inputs[0]!;
    const t = b.inputs[0]!;
    if (b.slots === undefined) {
      const problem = checkBatchInput(t, payload, b.size, spec);
      if (problem) return problem;
      return t.samples === undefined
        ? { kind: 'tensors', tensors: [payload] }
        : { kind: 'image', ref: t, bytes: payload };
    }
    const problem = checkBatchInput(t, { length: t.byteLength }, b.size, spec);
    if (problem) return problem;
    const sampleBytes =
      t.samples?.map((s) => s.byteLength) ?? Array.from({ length: b.size }, () => t.byteLength / b.size);
    const views = sampleViews(b.slots, sampleBytes, payload, region);
    return typeof views === 'string' ? `input '${t.name}': ${views}` : { kind: 'image', ref: t, bytes: views };
  }
  if (b.slots !== undefined) return 'slots: taken only for a model of one FP32 input with a batch dimension';
  const tensors: Buffer[] = [];
  let at = 0;
  for (const [k, t] of b.inputs.entries()) {
    const problem = checkTensor(t, b.size, sig.inputs[k]!, sig.batchDim);
    if (problem) return problem;
    tensors.push(payload.subarray(at, at + t.byteLength));
    at += t.byteLength;
  }
  return at === payload.length ? { kind: 'tensors', tensors } : `${payload.length} payload bytes, the inputs say ${at}`;
}

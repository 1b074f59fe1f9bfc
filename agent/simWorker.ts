// The simulated worker: a real child process that speaks the worker protocol
// (src/protocol/worker.ts, docs/worker-protocol.md) and answers each batch after the time the
// simulator's ground truth gives for its GPU, its share and the batches running beside it, so the
// whole system runs end to end without a GPU. The agent launches it as
//
// node dist/agent/simWorker.js --model NAME --profile FILE --pct PCT [--pooled overlap|serial] [--zero-time] [--seed N]
//
// Timing: t = t_inf(predicted for this batch and the `running` neighbours the agent reports)
//   x GroundTruth.batchFactor (systematic error per configuration, per-batch noise, DRAM contention),
// the same formula the discrete-event simulator uses (src/sim/simulator.ts). On a pooled GPU (this
// worker and the batches beside it all at 100%: a pool's workers run at the whole GPU), the batch is
// timed by the GPU's pooled mode (--pooled, its agent's; src/model/pooledGpu.ts, the simulator's rule). With
// --zero-time it
// answers at once (the system-overhead benchmark).
// Output: a deterministic function of the input and of the model (src/serving/standIn.ts), so tests can
// check that every answer belongs to its request and comes from its own model:
// output[k] = input[k] + input[N - 1 - k] + modelOffset(model), `input` being the FP32 tensor after the
// decode step (agent/decode.ts: UINT8 and JPEG/PNG samples decoded and preprocessed with real decoders;
// a sample that fails to decode is reported in the output's `failed`). A batch naming another model is refused.
// Batches run one at a time in arrival order, from stdin (the agent's relay) and from its data socket
// (the direct path: INSS_WORKER_LISTEN, agent/workerData.ts), each answered where it came from; the next
// batch is read while one runs (pipelining). A batch naming another worker identity
// (INSS_WORKER_IDENTITY) is refused with reason `wrong-worker`. SIGTERM or stdin closing: answer what
// was received, exit 0.
// Shared memory (docs/worker-protocol.md "Shared memory"): a scheduler on this host names its region
// in `attach`; the worker maps it read-only through the addon (src/protocol/shmMap.ts) unless
// INSS_WORKER_SHM=off, and reads the samples a batch gives as slots in place (FP32 samples as
// Float32Array views, no copy). Without the addon it answers that it cannot, and gets bytes. It keeps
// no view of a slot once its batch is answered.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { DEFAULT_POOLED_GPU_MODE, parsePooledGpuMode } from '../src/model/pooledGpu.js';
import { LatencyModel } from '../src/model/predictor.js';
import { parseProfile } from '../src/profile/schema.js';
import { describeWorker, sameWorker, type WorkerIdentity, WorkerIdentitySchema } from '../src/protocol/agent.js';
import { BufferPool, encodeFrame, FrameDecoder } from '../src/protocol/frames.js';
import { elementCount, modelSignature, type TensorRef } from '../src/protocol/tensor.js';
import {
  type FromWorker,
  parseDataAddress,
  type ToWorker,
  ToWorkerSchema,
  WORKER_ENV,
  WORKER_PROTOCOL_VERSION,
} from '../src/protocol/worker.js';
import { badMessage, type DataServer, listenData, type MapRegion, type Reply, wallMs } from './workerData.js';
import { sampleViews } from '../src/protocol/shm.js';
import { loadShmAddon } from '../src/protocol/shmMap.js';
import { standInForward } from '../src/serving/standIn.js';
import { DEFAULT_GROUND_TRUTH, GroundTruth, gpuTypeIndex, profileModelIndex } from '../src/sim/groundTruth.js';
import { checkBatchInput, decodeBatchInput } from './decode.js';

const { values: opts } = parseArgs({
  options: {
    model: { type: 'string' },
    profile: { type: 'string' },
    pct: { type: 'string' },
    pooled: { type: 'string', default: DEFAULT_POOLED_GPU_MODE },
    seed: { type: 'string', default: '1' },
    'zero-time': { type: 'boolean', default: false },
    'warmup-ms': { type: 'string', default: '300' },
    'systematic-error-pct': { type: 'string', default: String(DEFAULT_GROUND_TRUTH.systematicErrorPct) },
    'noise-pct': { type: 'string', default: String(DEFAULT_GROUND_TRUTH.noisePct) },
    'dram-alpha': { type: 'string', default: String(DEFAULT_GROUND_TRUTH.dramAlpha) },
  },
  strict: true,
});

function send(msg: FromWorker, payload?: Uint8Array): void {
  process.stdout.write(encodeFrame(msg, payload));
}

function die(message: string): never {
  send({ v: WORKER_PROTOCOL_VERSION, type: 'fatal', message });
  process.stderr.write(`simWorker: ${message}\n`);
  process.exitCode = 1;
  // Let stdout flush before exiting.
  setImmediate(() => process.exit(1));
  throw new Error(message);
}

function num(name: keyof typeof opts, min: number, max: number): number {
  const raw = opts[name];
  const v = Number(raw);
  if (typeof raw !== 'string' || !Number.isFinite(v) || v < min || v > max)
    die(`--${name}: expected a number in [${min}, ${max}], got '${String(raw)}'`);
  return v;
}

if (!opts.model) die('--model is required');
if (!opts.profile) die('--profile is required');
const pct = num('pct', 0.5, 100);
let pooled: ReturnType<typeof parsePooledGpuMode> = DEFAULT_POOLED_GPU_MODE;
try {
  pooled = parsePooledGpuMode(opts.pooled ?? DEFAULT_POOLED_GPU_MODE, '--pooled');
} catch (e) {
  die((e as Error).message);
}
const seed = num('seed', 0, 2 ** 32 - 1);
const warmupMs = num('warmup-ms', 0, 600_000);
const zeroTime = opts['zero-time'];

let profileText: string;
try {
  profileText = readFileSync(opts.profile, 'utf8');
} catch (e) {
  die(`--profile ${opts.profile}: cannot read: ${(e as Error).message}`);
}
const profile = parseProfile(JSON.parse(profileText) as unknown, opts.profile);
const latency = LatencyModel.compile(profile);
const modelName = opts.model;
const modelFound = latency.modelIndex(modelName);
if (modelFound < 0) die(`--model ${modelName}: not in profile ${profile.id} (has ${latency.modelNames.join(', ')})`);
const modelIdx = profileModelIndex(modelFound);
// The same GPU type index as the simulator's (a hash of the profile id): the same configuration draws the same error.
const gpuType = gpuTypeIndex(profile.id);
const mp = profile.models[modelName]!;
const signature = modelSignature(mp.inputBytes, mp.outputBytes);
const input = signature.inputs[0]!;
const output = signature.outputs[0]!;
const inPerSample = elementCount(input.shape);
const outPerSample = elementCount(output.shape);
// The direct path (docs/worker-protocol.md, "The data socket"): all three variables or none.
const listenAt = process.env[WORKER_ENV.listen];
const secret = process.env[WORKER_ENV.secret];
const identityJson = process.env[WORKER_ENV.identity];
const listenAddr = listenAt === undefined ? null : parseDataAddress(listenAt);
if (typeof listenAddr === 'string') die(`${WORKER_ENV.listen}: ${listenAddr}`);
if (listenAddr !== null && !secret) die(`${WORKER_ENV.listen} is set but ${WORKER_ENV.secret} is not`);
let identity: WorkerIdentity | null = null;
if (identityJson !== undefined) {
  let raw: unknown;
  try {
    raw = JSON.parse(identityJson);
  } catch (e) {
    die(`${WORKER_ENV.identity}: not JSON (${(e as Error).message})`);
  }
  const parsed = WorkerIdentitySchema.safeParse(raw);
  if (!parsed.success)
    die(`${WORKER_ENV.identity}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  identity = parsed.data;
  if (identity.model !== modelName)
    die(`${WORKER_ENV.identity} names model '${identity.model}' but --model is '${modelName}'`);
}
const truth = new GroundTruth({
  seed,
  systematicErrorPct: num('systematic-error-pct', 0, 100),
  noisePct: num('noise-pct', 0, 100),
  dramAlpha: num('dram-alpha', 0, 10),
});

/** Ground-truth time of a batch with the given neighbours (ms). */
function batchMs(size: number, running: NonNullable<Extract<ToWorker, { type: 'batch' }>['running']>): number {
  if (zeroTime) return 0;
  const models = [modelIdx];
  const batches = [size];
  const pcts = [pct];
  for (const r of running) {
    const j = latency.modelIndex(r.model);
    if (j < 0) continue; // a model this profile does not know cannot be timed; it adds no interference
    models.push(profileModelIndex(j));
    batches.push(r.batch);
    pcts.push(r.pct);
  }
  const out = new Array<number>(models.length).fill(0);
  return truth.batchMs(
    latency,
    gpuType,
    models.length > 1 && pcts.every((p) => p === 100) ? pooled : null,
    models,
    batches,
    pcts,
    models.length,
    out,
  );
}

/** The decode step, then the deterministic stand-in for a forward pass (see the header; O(outputs)). */
function forward(
  ref: TensorRef,
  payload: Buffer | readonly Buffer[],
  size: number,
): { out: Buffer; failed: ReturnType<typeof decodeBatchInput>['failed'] } {
  let x: Float32Array | Float32Array[];
  let failed: ReturnType<typeof decodeBatchInput>['failed'] = [];
  if (Array.isArray(payload) && ref.samples === undefined) {
    // Samples in place (shared memory): a view of each where it starts 4-byte aligned (the scheduler
    // places a body's tensor on a cache line), a copy where not.
    x = (payload as readonly Buffer[]).map((b) =>
      b.byteOffset % 4 === 0
        ? new Float32Array(b.buffer, b.byteOffset, inPerSample)
        : new Float32Array(new Uint8Array(b).buffer, 0, inPerSample),
    );
  } else if (!Array.isArray(payload) && ref.samples === undefined) {
    const p = payload as Buffer;
    // A frame's payload starts at any byte offset; Float32Array needs 4-byte alignment.
    const aligned = p.byteOffset % 4 === 0 ? p : Buffer.from(p);
    x = new Float32Array(aligned.buffer, aligned.byteOffset, size * inPerSample);
  } else {
    ({ x, failed } = decodeBatchInput(ref, payload, size, input));
  }
  return { out: Buffer.from(standInForward(modelName, x, size, inPerSample, outPerSample).buffer), failed };
}

type Batch = Extract<ToWorker, { type: 'batch' }>;

/** A batch that is not this worker's: another model, or (when it names one) another whole identity. */
function notMine(b: Batch): string | null {
  if (b.model !== modelName) return `batch for model '${b.model}' refused: this worker runs '${modelName}'`;
  if (b.worker && identity && !sameWorker(b.worker, identity))
    return `batch for worker ${describeWorker(b.worker)} refused: this worker is ${describeWorker(identity)}`;
  if (b.worker && b.worker.model !== modelName)
    return `batch for worker ${describeWorker(b.worker)} refused: this worker runs '${modelName}'`;
  return null;
}

/**
 * The batch's input bytes: the payload, or, for a batch with slots, each sample's own view (of the
 * region or of the payload); a string when the batch is refused.
 */
function batchInput(b: Batch, payload: Buffer, region: Buffer | null): Buffer | Buffer[] | string {
  if (b.inputs.length !== 1) return `expected 1 input, got ${b.inputs.length}`;
  const t = b.inputs[0]!;
  if (b.slots === undefined) return checkBatchInput(t, payload, b.size, input) ?? payload;
  const problem = checkBatchInput(t, { length: t.byteLength }, b.size, input);
  if (problem) return problem;
  const sampleBytes =
    t.samples?.map((s) => s.byteLength) ?? Array.from({ length: b.size }, () => t.byteLength / b.size);
  const views = sampleViews(b.slots, sampleBytes, payload, region);
  return typeof views === 'string' ? `input '${t.name}': ${views}` : views;
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

// Batches are read into recycled buffers (frames.ts BufferPool): each goes back to the pool once its
// batch is computed (the answer is a new buffer), so a 19 MB batch does not cost a fresh allocation.
const pool = new BufferPool();

// Batches are served one at a time, in order of arrival, whichever connection they came on.
const pending: { msg: Batch; payload: Buffer; receivedAtMs: number; reply: Reply; region: Buffer | null }[] = [];
let serving = false;
let closing = false;

async function serve(): Promise<void> {
  if (serving) return;
  serving = true;
  while (pending.length > 0) {
    const { msg, payload, receivedAtMs, reply, region } = pending.shift()!;
    const refused = notMine(msg);
    if (refused) {
      pool.give(payload);
      reply({ v: WORKER_PROTOCOL_VERSION, type: 'error', id: msg.id, message: refused, reason: 'wrong-worker' });
      continue;
    }
    const bytes = batchInput(msg, payload, region);
    if (typeof bytes === 'string') {
      pool.give(payload);
      reply({ v: WORKER_PROTOCOL_VERSION, type: 'error', id: msg.id, message: bytes });
      continue;
    }
    // The decode step runs before the GPU time starts, as in the PyTorch worker: latencyMs stays t_inf,
    // and the decoding's cost shows in the transport time the scheduler learns.
    const { out, failed } = forward(msg.inputs[0]!, bytes, msg.size);
    pool.give(payload); // read no more (nor the region's slots): `out` is a new buffer
    const started = performance.now();
    const t = batchMs(msg.size, msg.running ?? []);
    // At least t: Node truncates a timer's delay to whole ms and fires it by a loop clock that can be
    // a millisecond stale, so one timer ends anywhere from ~1 ms before to ~1 ms after t, by how t's
    // fraction falls (alexnet's 1.29 ms ran long, resnet50's 4.69 short). Whole ms rounded up, again
    // until t has passed: always late, by the same 0-1 ms whatever the model.
    for (let left = t; left > 0; left = t - (performance.now() - started)) await sleep(Math.ceil(left));
    const shape = [msg.size, ...output.shape];
    // The simulated GPU's time is t: what the timer and this event loop add to it (a real GPU has no
    // timer) is this host's overhead, which the scheduler learns as the worker's transport (the answer
    // still leaves when it leaves), as the twin runs it.
    const latencyMs = t;
    const ref: TensorRef = {
      name: output.name,
      datatype: output.datatype,
      shape,
      byteLength: out.length,
      ...(failed.length > 0 ? { failed } : {}),
    };
    reply(
      {
        v: WORKER_PROTOCOL_VERSION,
        type: 'result',
        id: msg.id,
        latencyMs,
        outputs: [ref],
        receivedAtMs,
        answeredAtMs: wallMs(),
      },
      out,
    );
  }
  serving = false;
  if (closing) process.exit(0);
}

let dataServer: DataServer | null = null;

function finish(): void {
  closing = true;
  dataServer?.close();
  if (!serving) process.exit(0);
}

/** One whole frame from stdin or a data connection: a batch is queued, anything else answered with an error. */
function onFrame(header: unknown, payload: Buffer, receivedAtMs: number, reply: Reply, region: Buffer | null): void {
  const parsed = ToWorkerSchema.safeParse(header);
  if (!parsed.success) {
    reply(badMessage(header, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')));
    return;
  }
  if (parsed.data.type !== 'batch') {
    reply(badMessage(header, `'${parsed.data.type}' is only the first frame of a data connection`));
    return;
  }
  pending.push({ msg: parsed.data, payload, receivedAtMs, reply, region });
}

const decoder = new FrameDecoder(pool.take);
let ready = false;
process.stdin.on('data', (chunk: Buffer) => {
  let frames;
  try {
    frames = decoder.push(chunk);
  } catch (e) {
    die(`stdin is not a frame stream: ${(e as Error).message}`);
  }
  const at = wallMs();
  for (const f of frames) onFrame(f.header, f.payload, at, send, null);
  if (ready) void serve();
});
process.stdin.on('end', finish);
process.on('SIGTERM', finish);
process.on('SIGINT', finish);

// "Loading and warming up the model": the time a real worker needs before its first batch.
const t0 = performance.now();
await sleep(warmupMs);
if (listenAddr !== null) {
  try {
    dataServer = await listenData(
      listenAddr,
      secret!,
      (header, payload, at, reply, region) => {
        onFrame(header, payload, at, reply, region);
        if (ready) void serve();
      },
      (line) => process.stderr.write(`simWorker: ${line}\n`),
      pool.take,
      mapRegion,
    );
  } catch (e) {
    die(`${WORKER_ENV.listen}=${listenAt}: cannot listen: ${(e as Error).message}`);
  }
}
ready = true;
send({
  v: WORKER_PROTOCOL_VERSION,
  type: 'ready',
  model: modelName,
  pid: process.pid,
  warmupMs: performance.now() - t0,
  device: `simulated ${profile.gpu.name} at ${pct}%`,
  ...(dataServer ? { listen: dataServer.address } : {}),
});
void serve();

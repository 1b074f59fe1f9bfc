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
// a sample that fails to decode is reported in the output's `failed`).
// The protocol side, shared with the ONNX Runtime worker (agent/nodeWorker.ts): batches run one at a
// time in arrival order, from stdin (the agent's relay) and from its data socket (the direct path:
// INSS_WORKER_LISTEN, agent/workerData.ts), each answered where it came from; the next batch is read
// while one runs (pipelining). A batch naming another model is refused, one naming another worker
// identity (INSS_WORKER_IDENTITY) with reason `wrong-worker`. SIGTERM or stdin closing: answer what was
// received, exit 0. Shared memory (docs/worker-protocol.md "Shared memory"): a scheduler on this host
// names its region in `attach`; the worker maps it read-only through the addon (src/protocol/shmMap.ts)
// unless INSS_WORKER_SHM=off, and reads the samples a batch gives as slots in place (FP32 samples as
// Float32Array views, no copy). Without the addon it answers that it cannot, and gets bytes. It keeps
// no view of a slot once its batch is answered.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { DEFAULT_POOLED_GPU_MODE, parsePooledGpuMode } from '../src/model/pooledGpu.js';
import { LatencyModel } from '../src/model/predictor.js';
import { parseProfile } from '../src/profile/schema.js';
import { elementCount, modelSignature, type TensorRef } from '../src/protocol/tensor.js';
import { standInForward } from '../src/serving/standIn.js';
import { DEFAULT_GROUND_TRUTH, GroundTruth, gpuTypeIndex, profileModelIndex } from '../src/sim/groundTruth.js';
import { decodeBatchInput } from './decode.js';
import { type Batch, type BatchInput, NodeWorkerHost } from './nodeWorker.js';

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

const host = new NodeWorkerHost('simWorker');
function die(message: string): never {
  return host.die(message);
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
const inputSpec = signature.inputs[0]!;
const output = signature.outputs[0]!;
const inPerSample = elementCount(inputSpec.shape);
const outPerSample = elementCount(output.shape);
host.readEnvironment(modelName);
const truth = new GroundTruth({
  seed,
  systematicErrorPct: num('systematic-error-pct', 0, 100),
  noisePct: num('noise-pct', 0, 100),
  dramAlpha: num('dram-alpha', 0, 10),
});

/** Ground-truth time of a batch with the given neighbours (ms). */
function batchMs(size: number, running: NonNullable<Batch['running']>): number {
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
  input: BatchInput,
  size: number,
): { out: Buffer; failed: ReturnType<typeof decodeBatchInput>['failed'] } {
  let x: Float32Array | Float32Array[];
  let failed: ReturnType<typeof decodeBatchInput>['failed'] = [];
  if (input.kind === 'image' && Array.isArray(input.bytes) && input.ref.samples === undefined) {
    // Samples in place (shared memory): a view of each where it starts 4-byte aligned (the scheduler
    // places a body's tensor on a cache line), a copy where not.
    x = (input.bytes as readonly Buffer[]).map((b) =>
      b.byteOffset % 4 === 0
        ? new Float32Array(b.buffer, b.byteOffset, inPerSample)
        : new Float32Array(new Uint8Array(b).buffer, 0, inPerSample),
    );
  } else if (input.kind === 'tensors') {
    const p = input.tensors[0]!;
    // A frame's payload starts at any byte offset; Float32Array needs 4-byte alignment.
    const aligned = p.byteOffset % 4 === 0 ? p : Buffer.from(p);
    x = new Float32Array(aligned.buffer, aligned.byteOffset, size * inPerSample);
  } else {
    ({ x, failed } = decodeBatchInput(input.ref, input.bytes, size, inputSpec));
  }
  return { out: Buffer.from(standInForward(modelName, x, size, inPerSample, outPerSample).buffer), failed };
}

/** One batch: decode and stand-in output, then the ground-truth time on the simulated GPU. */
async function run(msg: Batch, input: BatchInput, release: () => void) {
  // The decode step runs before the GPU time starts, as in the PyTorch worker: latencyMs stays t_inf,
  // and the decoding's cost shows in the transport time the scheduler learns.
  const { out, failed } = forward(input, msg.size);
  release(); // read no more (nor the region's slots): `out` is a new buffer
  const started = performance.now();
  const t = batchMs(msg.size, msg.running ?? []);
  // At least t: Node truncates a timer's delay to whole ms and fires it by a loop clock that can be
  // a millisecond stale, so one timer ends anywhere from ~1 ms before to ~1 ms after t, by how t's
  // fraction falls (alexnet's 1.29 ms ran long, resnet50's 4.69 short). Whole ms rounded up, again
  // until t has passed: always late, by the same 0-1 ms whatever the model.
  for (let left = t; left > 0; left = t - (performance.now() - started)) await sleep(Math.ceil(left));
  // The simulated GPU's time is t: what the timer and this event loop add to it (a real GPU has no
  // timer) is this host's overhead, which the scheduler learns as the worker's transport (the answer
  // still leaves when it leaves), as the twin runs it.
  const ref: TensorRef = {
    name: output.name,
    datatype: output.datatype,
    shape: [msg.size, ...output.shape],
    byteLength: out.length,
    ...(failed.length > 0 ? { failed } : {}),
  };
  // Its process's GPU memory at this batch, the profile's (a real worker measures it: torchWorker's peak).
  return { outputs: [ref], payload: out, latencyMs: t, memoryMb: latency.memoryMb(modelIdx, msg.size) };
}

// "Loading and warming up the model": the time a real worker needs before its first batch.
await host.start({
  model: modelName,
  signature: { ...signature, batchDim: true },
  load: async () => {
    await sleep(warmupMs);
    return `simulated ${profile.gpu.name} at ${pct}%`;
  },
  run,
});

// Models of any signature through the serving core: two inputs and two outputs of mixed datatypes
// (FP32 [4] and INT64 [3] in; FP32 [2] and BOOL [3] out), and the same model without a batch
// dimension (max_batch_size 0). Requests parsed from HTTP JSON, binary and mixed bodies and from gRPC
// typed and raw contents; then served end to end by the control plane (test/support/control.ts) with
// an agent that computes every output row from that row's inputs, so a row or tensor mixed up between
// requests, samples or inputs shows in the answers.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskAnswer } from '../../scheduler/control.js';
import { inferFieldsOf, type ModelInferRequestMessage } from '../../scheduler/grpcCodec.js';
import { InferFront, type InferOutcome } from '../../scheduler/infer.js';
import { encodeInferResponse, type InferRequest, parseInferFields } from '../../scheduler/kserve.js';
import { SharedMemoryRegistry } from '../../scheduler/sharedMemory.js';
import { AGENT_PROTOCOL_VERSION, type FromAgent, type ToAgent, workerKey } from '../../src/protocol/agent.js';
import type { ModelSignature, TensorRef } from '../../src/protocol/tensor.js';
import { loadProfileFile } from '../support/clusters.js';
import { controlHarness, type Harness, simGpus } from '../support/control.js';
import { FakeDirectLink, FixedPolicy } from '../support/fakes.js';
import { accepted, binary, json, type Model, parse, rejected } from '../support/kserve.js';

const SIG: ModelSignature = {
  inputs: [
    { name: 'x', datatype: 'FP32', shape: [4] },
    { name: 'n', datatype: 'INT64', shape: [3] },
  ],
  outputs: [
    { name: 'sums', datatype: 'FP32', shape: [2] },
    { name: 'more', datatype: 'BOOL', shape: [3] },
  ],
};
const MIXED: Model = { name: 'mixed', signature: SIG, maxBatchSize: 4 };
const FLAT: Model = { name: 'flat', signature: SIG, maxBatchSize: 0 };

const f32 = (xs: readonly number[]) => Buffer.from(Float32Array.from(xs).buffer);
const i64 = (xs: readonly number[]) => Buffer.from(BigInt64Array.from(xs, (x) => BigInt(x)).buffer);

/** One sample's inputs. */
interface Sample {
  readonly x: readonly number[];
  readonly n: readonly number[];
}

/** What the model computes of a sample: the sums of x and of n, and whether n[j] > x[j]. */
function expected(s: Sample): { sums: number[]; more: boolean[] } {
  return {
    sums: [s.x.reduce((a, b) => a + b, 0), s.n.reduce((a, b) => a + b, 0)],
    more: s.n.map((v, j) => v > s.x[j]!),
  };
}

/** Sample number `i`, its values distinct from every other's. */
const sample = (i: number): Sample => ({
  x: [i, i + 0.5, -i, 2 * i],
  n: [i + 1, -i, 3 * i - 7],
});

const jsonRequest = (samples: readonly Sample[], batched = true) => ({
  inputs: [
    { name: 'x', datatype: 'FP32', shape: batched ? [samples.length, 4] : [4], data: samples.map((s) => s.x) },
    { name: 'n', datatype: 'INT64', shape: batched ? [samples.length, 3] : [3], data: samples.map((s) => s.n) },
  ],
});

describe('requests to a model of two inputs and two outputs, mixed datatypes', () => {
  const two = [sample(1), sample(2)];
  const X = f32(two.flatMap((s) => s.x));
  const N = i64(two.flatMap((s) => s.n));
  const bytesOf = (r: InferRequest) => r.inputs.map((i) => i.data.toString('hex'));

  it('reads JSON, binary and mixed bodies into the same tensors, in signature order', () => {
    const fromJson = accepted(parse(json(jsonRequest(two)), {}, MIXED));
    expect(fromJson.inputs.map((i) => [i.name, i.datatype, i.shape])).toEqual([
      ['x', 'FP32', [2, 4]],
      ['n', 'INT64', [2, 3]],
    ]);
    expect(bytesOf(fromJson)).toEqual([X.toString('hex'), N.toString('hex')]);
    // Binary, the inputs named in the other order: the request's order does not matter.
    const bin = binary(
      {
        inputs: [
          { name: 'n', datatype: 'INT64', shape: [2, 3], parameters: { binary_data_size: N.length } },
          { name: 'x', datatype: 'FP32', shape: [2, 4], parameters: { binary_data_size: X.length } },
        ],
      },
      N,
      X,
    );
    expect(bytesOf(accepted(parse(bin.body, bin.headers, MIXED)))).toEqual(bytesOf(fromJson));
    const mixed = binary(
      {
        inputs: [
          jsonRequest(two).inputs[0],
          { name: 'n', datatype: 'INT64', shape: [2, 3], parameters: { binary_data_size: N.length } },
        ],
      },
      N,
    );
    expect(bytesOf(accepted(parse(mixed.body, mixed.headers, MIXED)))).toEqual(bytesOf(fromJson));
  });

  it('reads gRPC typed contents and raw contents into the same tensors', () => {
    const grpc = (over: Partial<ModelInferRequestMessage>): InferRequest => {
      const f = inferFieldsOf({
        model_name: 'mixed',
        inputs: [
          { name: 'x', datatype: 'FP32', shape: ['2', '4'] },
          { name: 'n', datatype: 'INT64', shape: ['2', '3'] },
        ],
        ...over,
      });
      if (!f.ok) throw new Error(f.error);
      const r = parseInferFields(f.json, f.binary, MIXED);
      if (!r.ok) throw new Error(r.error);
      return r.request;
    };
    const typed = grpc({
      inputs: [
        { name: 'x', datatype: 'FP32', shape: ['2', '4'], contents: { fp32_contents: two.flatMap((s) => s.x) } },
        {
          name: 'n',
          datatype: 'INT64',
          shape: ['2', '3'],
          contents: { int64_contents: two.flatMap((s) => s.n).map(String) },
        },
      ],
    });
    const raw = grpc({ raw_input_contents: [X, N] });
    expect(bytesOf(typed)).toEqual([X.toString('hex'), N.toString('hex')]);
    expect(bytesOf(raw)).toEqual(bytesOf(typed));
  });

  it('takes inputs of one batch dimension only, and no image forms', () => {
    const uneven = jsonRequest(two);
    uneven.inputs[1] = { ...uneven.inputs[1]!, shape: [1, 3], data: [two[0]!.n] };
    expect(rejected(parse(json(uneven), {}, MIXED))).toMatch(/inputs\[1\]\.shape: batch dimension 1, but .* 2/);
    const bytes = { ...jsonRequest(two) };
    bytes.inputs = [{ ...bytes.inputs[0]!, datatype: 'UINT8' }, bytes.inputs[1]!];
    expect(rejected(parse(json(bytes), {}, MIXED))).toMatch(/inputs\[0\]\.datatype: expected FP32, got UINT8$/);
  });

  it('without a batch dimension (max_batch_size 0) takes exactly the spec shapes, one sample', () => {
    const r = accepted(parse(json(jsonRequest([sample(3)], false)), {}, FLAT));
    expect(r.batchDim).toBe(false);
    expect(r.inputs.map((i) => i.shape)).toEqual([[4], [3]]);
    expect(r.inputs[1]!.data.equals(i64(sample(3).n))).toBe(true);
    expect(rejected(parse(json(jsonRequest([sample(3)])), {}, FLAT))).toBe(
      'inputs[0].shape: expected [4], got [1,4] (the model has no batch dimension, max_batch_size 0: leave it out)',
    );
    const region = jsonRequest([sample(3)], false);
    const out = { name: 'sums', parameters: { shared_memory_region: 'r', shared_memory_byte_size: 4 } };
    expect(rejected(parse(json({ ...region, outputs: [out] }), {}, FLAT))).toBe(
      "outputs[0].parameters.shared_memory_byte_size: 4 bytes, but output 'sums' is 8 bytes",
    );
  });
});

// ---------------------------------------------------------------------------------------------------
// End to end through the control plane

const rtx = loadProfileFile('rtx2060s');
const harnesses: Harness[] = [];
afterEach(() => {
  for (const h of harnesses.splice(0)) h.control.stop();
});

/** The control plane serving `model` (as resnet50, whose profile places it) on one worker of batch 8. */
function serving(
  model: Model,
  regions = new SharedMemoryRegistry(),
  direct?: FakeDirectLink,
): { h: Harness; front: InferFront } {
  const h = controlHarness({
    ...(direct ? { direct } : {}),
    models: [{ name: 'resnet50', sloMs: 1000, signature: model.signature, maxBatchSize: model.maxBatchSize ?? 8 }],
    profiles: new Map([[rtx.id, rtx]]),
    // Timeout 0: each batch leaves with what is queued, up to the placement's 8.
    policy: () => new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 8, timeoutMs: 0 }] }),
    gpus: simGpus('rtx2060s', 1),
  });
  harnesses.push(h);
  return { h, front: new InferFront(h.control, h.control.models, regions, () => h.now) };
}

type BatchMsg = Extract<ToAgent, { type: 'batch' }>;

/**
 * The agent's answer to a batch: each row's outputs computed from that row's inputs, read from the
 * payload as the batch's TensorRefs lay it out; `batched` false: the model has no batch dimension.
 */
function compute(b: BatchMsg, payload: Buffer, batched: boolean): { outputs: TensorRef[]; payload: Buffer } {
  const [xRef, nRef] = b.inputs as [TensorRef, TensorRef];
  expect([xRef.name, nRef.name]).toEqual(['x', 'n']);
  expect(xRef.byteLength + nRef.byteLength).toBe(payload.length);
  const xs = new Float32Array(payload.buffer.slice(payload.byteOffset, payload.byteOffset + xRef.byteLength));
  const ns = new BigInt64Array(
    payload.buffer.slice(payload.byteOffset + xRef.byteLength, payload.byteOffset + payload.length),
  );
  const sums: number[] = [];
  const more: number[] = [];
  for (let r = 0; r < b.size; r++) {
    const e = expected({ x: [...xs.slice(4 * r, 4 * r + 4)], n: [...ns.slice(3 * r, 3 * r + 3)].map(Number) });
    sums.push(...e.sums);
    more.push(...e.more.map((m) => (m ? 1 : 0)));
  }
  const lead = batched ? [b.size] : [];
  return {
    outputs: [
      { name: 'sums', datatype: 'FP32', shape: [...lead, 2], byteLength: 8 * b.size },
      // Without a batch dimension a worker may also write the leading 1: the control plane takes both.
      { name: 'more', datatype: 'BOOL', shape: batched ? [b.size, 3] : [1, 3], byteLength: 3 * b.size },
    ],
    payload: Buffer.concat([f32(sums), Buffer.from(more)]),
  };
}

/** Answers every batch sent, as they come (answering one lets the worker take the next). */
function answerAll(h: Harness, batched: boolean, tweak?: (r: Extract<FromAgent, { type: 'result' }>) => void): void {
  for (let i = 0; i < h.batches().length; i++) {
    const b = h.batches()[i]!;
    const { outputs, payload } = compute(b, h.payloadOf(b.batchId), batched);
    const msg: Extract<FromAgent, { type: 'result' }> = {
      v: AGENT_PROTOCOL_VERSION,
      type: 'result',
      batchId: b.batchId,
      workerId: b.workerId,
      latencyMs: 1,
      outputs,
    };
    tweak?.(msg);
    h.control.batchResult('a1', msg, payload);
  }
}

type JsonOutput = { name: string; shape: readonly number[]; data?: unknown[]; parameters?: object };

function responseOf(o: InferOutcome): JsonOutput[] {
  if (!o.ok) throw new Error(o.error);
  const body = JSON.parse(encodeInferResponse(o.response).body.toString()) as { outputs: JsonOutput[] };
  return body.outputs;
}

describe('the control plane serving a model of any signature', () => {
  it('batches concurrent requests, at most maxBatchSize a batch, and answers each its own rows', async () => {
    const { h, front } = serving(MIXED);
    // Seven requests of 1 to 3 samples (13 samples), queued before the worker is ready.
    const requests = Array.from({ length: 7 }, (_, r) =>
      Array.from({ length: 1 + (r % 3) }, (_, k) => sample(10 * r + k)),
    );
    const pending = requests.map((samples) =>
      front.infer(0, accepted(parse(json(jsonRequest(samples)), {}, MIXED)), { local: true }),
    );
    h.report('ready');
    answerAll(h, true);
    const outcomes = await Promise.all(pending);
    // The placement asks for 8; the model takes 4 at most. Every sample went exactly once.
    const sizes = h.batches().map((b) => b.size);
    expect(Math.max(...sizes)).toBe(4);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(13);
    for (const b of h.batches()) {
      expect(b.inputs.map((i) => [i.name, i.datatype, i.shape, i.byteLength])).toEqual([
        ['x', 'FP32', [b.size, 4], 16 * b.size],
        ['n', 'INT64', [b.size, 3], 24 * b.size],
      ]);
      expect(b.inputs.every((i) => i.samples === undefined)).toBe(true);
    }
    outcomes.forEach((o, r) => {
      const samples = requests[r]!;
      const want = samples.map(expected);
      expect(responseOf(o)).toEqual([
        { name: 'sums', datatype: 'FP32', shape: [samples.length, 2], data: want.flatMap((e) => e.sums) },
        { name: 'more', datatype: 'BOOL', shape: [samples.length, 3], data: want.flatMap((e) => e.more) },
      ]);
    });
  });

  it('runs each request of a model without a batch dimension alone, its tensors exactly the spec shapes', async () => {
    const { h, front } = serving(FLAT);
    const samples = [sample(4), sample(5), sample(6)];
    const pending = samples.map((s) =>
      front.infer(0, accepted(parse(json(jsonRequest([s], false)), {}, FLAT)), { local: true }),
    );
    h.report('ready');
    answerAll(h, false);
    const outcomes = await Promise.all(pending);
    expect(h.batches().map((b) => [b.size, b.inputs.map((i) => i.shape)])).toEqual(samples.map(() => [1, [[4], [3]]]));
    outcomes.forEach((o, i) => {
      const want = expected(samples[i]!);
      expect(responseOf(o)).toEqual([
        { name: 'sums', datatype: 'FP32', shape: [2], data: want.sums },
        { name: 'more', datatype: 'BOOL', shape: [3], data: want.more },
      ]);
    });
  });

  it('reads each input from its shared-memory region and writes an output into one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-mio-'));
    try {
      const s = [sample(7), sample(8)];
      const X = f32(s.flatMap((x) => x.x));
      const N = i64(s.flatMap((x) => x.n));
      writeFileSync(join(dir, 'mio_in'), Buffer.concat([X, Buffer.alloc(64 - X.length), N]));
      writeFileSync(join(dir, 'mio_out'), Buffer.alloc(64));
      const regions = new SharedMemoryRegistry(dir);
      expect(regions.register('in', '/mio_in', 0, 64 + N.length).ok).toBe(true);
      expect(regions.register('out', '/mio_out', 0, 64).ok).toBe(true);
      const { h, front } = serving(MIXED, regions);
      const shm = (region: string, offset: number, size: number) => ({
        shared_memory_region: region,
        shared_memory_offset: offset,
        shared_memory_byte_size: size,
      });
      const request = {
        inputs: [
          { name: 'x', datatype: 'FP32', shape: [2, 4], parameters: shm('in', 0, X.length) },
          { name: 'n', datatype: 'INT64', shape: [2, 3], parameters: shm('in', 64, N.length) },
        ],
        outputs: [{ name: 'sums', parameters: shm('out', 8, 16) }, { name: 'more' }],
      };
      const pending = front.infer(0, accepted(parse(json(request), {}, MIXED)), { local: true });
      h.report('ready');
      answerAll(h, true);
      const out = responseOf(await pending);
      const want = s.map(expected);
      expect(out[0]).toMatchObject({ name: 'sums', shape: [2, 2], parameters: { shared_memory_region: 'out' } });
      expect(out[1]).toMatchObject({ name: 'more', data: want.flatMap((e) => e.more) });
      const written = readFileSync(join(dir, 'mio_out')).subarray(8, 24);
      expect([...new Float32Array(written.buffer.slice(written.byteOffset, written.byteOffset + 16))]).toEqual(
        want.flatMap((e) => e.sums),
      );
      regions.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("sends a batch of several inputs on a worker's data socket with every byte inline, never by slot", () => {
    const direct = new FakeDirectLink();
    const { h, front } = serving(MIXED, new SharedMemoryRegistry(), direct);
    const w = h.desired()[0]!;
    const data = { address: 'unix:/tmp/x.sock', secret: 's' };
    h.control.workersReported('a1', [{ ...w, state: 'ready', pid: 1, data }]);
    direct.connect(workerKey(w));
    void front.infer(0, accepted(parse(json(jsonRequest([sample(1)])), {}, MIXED)), { local: true });
    expect(direct.sent.map((s) => [s.bySlot, s.bytes, (s.header as { size: number }).size])).toEqual([
      [false, 16 + 24, 1],
    ]);
  });

  it("fails the batch's tasks when the worker's outputs are not the signature's", async () => {
    const { h, front } = serving(MIXED);
    const pending = front.infer(0, accepted(parse(json(jsonRequest([sample(1)])), {}, MIXED)), { local: true });
    h.report('ready');
    answerAll(h, true, (r) => {
      r.outputs[1] = { ...r.outputs[1]!, datatype: 'UINT8' };
    });
    const o = await pending;
    expect(o).toMatchObject({ ok: false, status: 503, reason: 'worker-failed' });
    expect(!o.ok && o.error).toMatch(/malformed result: output 'more' is UINT8, expected BOOL/);
  });

  it('keeps the batch as the placement says for a model with no maxBatchSize (the zoo)', () => {
    const h = controlHarness({
      models: [{ name: 'resnet50', sloMs: 1000 }],
      profiles: new Map([[rtx.id, rtx]]),
      policy: () => new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 8, timeoutMs: 0 }] }),
      gpus: simGpus('rtx2060s', 1),
    });
    harnesses.push(h);
    const tasks: { answer: TaskAnswer | null }[] = [];
    for (let i = 0; i < 8; i++) tasks.push(h.submit(0));
    h.report('ready');
    expect(h.batches().map((b) => [b.size, b.inputs[0]!.shape])).toEqual([[8, [8, 3, 224, 224]]]);
    h.result(h.batches()[0]!.batchId);
    expect(tasks.every((t) => t.answer?.ok === true)).toBe(true);
  });
});

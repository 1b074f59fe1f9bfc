// tritonclient.http's everyday calls beyond infer, against `inss up` started as a user starts it. Each
// request is the HTTP that tritonclient.http (src/python/library/tritonclient/http/_client.py) sends:
// the same method, path and body, no Content-Type, and for a compressed infer the gzip'd body with
// Content-Encoding, Accept-Encoding and Inference-Header-Content-Length (the uncompressed JSON's
// length). Answers are read raw (node:http does not decompress) and parsed the way tritonclient does.
//
// Over 400 lines because every case runs against one `inss up` started once in beforeAll (a system
// test: starting the system per file costs more than the cases), and the system test list in
// vitest.config.ts names this one file.
import { Agent, request } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { decodeBatchInput } from '../../agent/decode.js';
import { modelSignature, type TensorRef } from '../../src/protocol/tensor.js';
import { encodeJpeg, encodePng, imageRequest, syntheticPicture, uint8Chw } from '../../tools/loadgen/images.js';
import { bytesTensor, IMAGENET, inceptionBatch, jpegFile, parseModel, topClasses } from '../support/imageClient.js';
import { REPO_ROOT } from '../support/paths.js';
import { binaryInferRequest, simForward, stopAll, startUp } from '../support/system.js';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One HTTP request with exactly these headers (plus Host and Content-Length), answer bytes as sent. */
function raw(method: 'GET' | 'POST', url: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, headers: { ...headers, ...(body !== undefined ? { 'content-length': String(body.length) } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * tritonclient's _raise_if_error + json.loads, then the shape Triton's protocol docs give (zod: a field missing or of
 * the wrong type fails).
 */
function jsonOf<T>(r: Raw, schema: z.ZodType<T>): T {
  expect(r.status, r.body.toString().slice(0, 500)).toBe(200);
  return schema.parse(JSON.parse(r.body.toString('utf8')));
}

/** A non-200 answer carries {"error": text} (tritonclient raises InferenceServerException with it). */
function errorOf(r: Raw): string {
  return z.object({ error: z.string() }).parse(JSON.parse(r.body.toString('utf8'))).error;
}

// Triton's JSON, from its protocol docs (extension_statistics.md, extension_model_configuration.md,
// extension_model_repository.md): uint64 fields are integers.
const U64 = z.number().int().nonnegative();
const Dur = z.object({ count: U64, ns: U64 });
const ModelStat = z.object({
  name: z.string(),
  version: z.string(),
  last_inference: U64,
  inference_count: U64,
  execution_count: U64,
  inference_stats: z.object({
    success: Dur,
    fail: Dur,
    queue: Dur,
    compute_input: Dur,
    compute_infer: Dur,
    compute_output: Dur,
  }),
  batch_stats: z.array(z.object({ batch_size: U64, compute_input: Dur, compute_infer: Dur, compute_output: Dur })),
});
const Stats = z.object({ model_stats: z.array(ModelStat) });
const Tensor = z.object({
  name: z.string(),
  data_type: z.string().regex(/^TYPE_[A-Z0-9]+$/),
  format: z.string().optional(),
  dims: z.array(z.number().int()),
});
const OutputTensor = Tensor.extend({ label_filename: z.string() });
const Param = z.object({ string_value: z.string() });
const Config = z
  .object({
    name: z.string(),
    platform: z.string(),
    max_batch_size: z.number().int(),
    input: z.array(Tensor),
    output: z.array(OutputTensor),
    dynamic_batching: z.object({
      preferred_batch_size: z.array(z.number().int()),
      max_queue_delay_microseconds: z.number().int().nonnegative(),
    }),
    instance_group: z.array(
      z.object({ name: z.string(), kind: z.string(), count: z.number().int(), gpus: z.array(z.number().int()) }),
    ),
    parameters: z.record(z.string(), Param),
  })
  .transform((c) => ({
    ...c,
    // The fields each test compares (zod keeps only the keys the schema names).
    input: c.input.map(({ name, data_type, format, dims }) => ({ name, data_type, format, dims })),
    output: c.output.map(({ name, data_type, dims }) => ({ name, data_type, dims })),
    label_filenames: c.output.map((o) => o.label_filename),
  }));
const Index = z.array(z.object({ name: z.string(), version: z.string(), state: z.string(), reason: z.string() }));
const Meta = z.object({ name: z.string(), version: z.string(), extensions: z.array(z.string()) });

const IMAGE_SPEC = modelSignature(4 * 3 * 224 * 224, 4000).inputs[0]!;

const state = mkdtempSync(join(tmpdir(), 'inss-triton-'));
let base = '';
beforeAll(async () => {
  // The paper's six models with 10 s SLOs, so that no request of these tests is dropped for its SLO
  // however loaded the machine is (they check the protocol, not the latency); a policy that runs on any scenario.
  const scenario = JSON.parse(readFileSync(join(REPO_ROOT, 'scenarios', 'paper-6.json'), 'utf8')) as {
    name: string;
    models: { sloMs: number }[];
  };
  scenario.name = 'triton-e2e';
  for (const m of scenario.models) m.sloMs = 10_000;
  writeFileSync(join(state, 'scenario.json'), JSON.stringify(scenario));
  ({ base } = await startUp(state, ['--scenario', join(state, 'scenario.json'), '--policy', 'static-even']));
}, 180_000);
afterAll(async () => {
  await stopAll();
  rmSync(state, { recursive: true, force: true });
});

it('a gzip-compressed binary infer with a gzip answer (request/response_compression_algorithm="gzip")', async () => {
  const x = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => ((i * 7) % 13) / 13);
  // _get_inference_request for InferInput.set_data_from_numpy(x) (binary) and InferRequestedOutput('output',
  // binary_data=True).
  const header = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', parameters: { binary_data_size: x.byteLength } },
      ],
      outputs: [{ name: 'output', parameters: { binary_data: true } }],
    }),
  );
  const body = gzipSync(Buffer.concat([header, Buffer.from(x.buffer)]));
  const r = await raw(
    'POST',
    `${base}/v2/models/resnet50/infer`,
    { 'Content-Encoding': 'gzip', 'Accept-Encoding': 'gzip', 'Inference-Header-Content-Length': String(header.length) },
    body,
  );
  expect(r.status, r.body.toString().slice(0, 500)).toBe(200);
  expect(r.headers['content-encoding']).toBe('gzip');
  // InferResult.from_response_body: decompress by Content-Encoding, then split at Inference-Header-Content-Length.
  const plain = gunzipSync(r.body);
  const jsonLen = Number(r.headers['inference-header-content-length']);
  const res = JSON.parse(plain.subarray(0, jsonLen).toString()) as {
    model_name: string;
    outputs: { name: string; datatype: string; shape: number[]; parameters: { binary_data_size: number } }[];
  };
  expect(res.model_name).toBe('resnet50');
  expect(res.outputs[0]).toMatchObject({
    name: 'output',
    datatype: 'FP32',
    shape: [1, 1000],
    parameters: { binary_data_size: 4000 },
  });
  const y = new Float32Array(plain.buffer.slice(plain.byteOffset + jsonLen, plain.byteOffset + jsonLen + 4000));
  expect(Array.from(y)).toEqual(Array.from(simForward(x, 'resnet50')));
});

it('a deflate-compressed JSON infer with a deflate answer; bad codings and a zip bomb are refused', async () => {
  const data = new Array<number>(150528).fill(0.5);
  const body = deflateSync(
    Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', data }],
        outputs: [{ name: 'output', parameters: { binary_data: false } }],
      }),
    ),
  );
  const r = await raw(
    'POST',
    `${base}/v2/models/vgg16/infer`,
    { 'Content-Encoding': 'deflate', 'Accept-Encoding': 'deflate' },
    body,
  );
  expect(r.status, r.body.toString().slice(0, 300)).toBe(200);
  expect(r.headers['content-encoding']).toBe('deflate');
  const res = JSON.parse(inflateSync(r.body).toString()) as { outputs: { data: number[] }[] };
  expect(res.outputs[0]!.data).toEqual(Array.from(simForward(Float32Array.from(data), 'vgg16')));

  const notGzip = await raw(
    'POST',
    `${base}/v2/models/vgg16/infer`,
    { 'Content-Encoding': 'gzip' },
    Buffer.from('{"inputs":[]}'),
  );
  expect(notGzip.status).toBe(400);
  expect(errorOf(notGzip)).toContain('not valid gzip data');
  const br = await raw('POST', `${base}/v2/models/vgg16/infer`, { 'Content-Encoding': 'br' }, Buffer.from('x'));
  expect(br.status).toBe(415);
  expect(errorOf(br)).toBe("Content-Encoding 'br' is not supported (gzip, deflate or identity)");
  // 65 MiB of zeros is about 65 KB of gzip: past the 64 MiB body limit once decompressed.
  const bomb = gzipSync(Buffer.alloc(65 * 1024 * 1024));
  const big = await raw('POST', `${base}/v2/models/vgg16/infer`, { 'Content-Encoding': 'gzip' }, bomb);
  expect(big.status).toBe(413);
  expect(errorOf(big)).toContain('decompresses to more than the limit');
});

it('get_inference_statistics: all models, one model, one version; "stats" is not a model name', async () => {
  const all = jsonOf(await raw('GET', `${base}/v2/models/stats`), Stats);
  const names = all.model_stats.map((s) => s.name);
  expect(names).toContain('resnet50');
  expect(names).toContain('vgg16');
  const one = jsonOf(await raw('GET', `${base}/v2/models/resnet50/stats`), Stats);
  expect(one.model_stats).toHaveLength(1);
  const s = one.model_stats[0]!;
  expect(s).toMatchObject({ name: 'resnet50', version: '1' });
  // The gzip infer above was answered (other tests in this file may add more).
  expect(s.inference_count).toBeGreaterThanOrEqual(1);
  expect(s.execution_count).toBeGreaterThanOrEqual(1);
  expect(s.last_inference).toBeGreaterThan(Date.now() - 10 * 60_000);
  expect(s.inference_stats.success.count).toBeGreaterThanOrEqual(1);
  expect(s.inference_stats.compute_infer.ns).toBeGreaterThan(0);
  expect(s.inference_stats.queue.count).toBeGreaterThanOrEqual(1);
  expect(s.batch_stats.length).toBeGreaterThanOrEqual(1);
  expect(s.batch_stats[0]!.batch_size).toBeGreaterThanOrEqual(1);
  const v = jsonOf(await raw('GET', `${base}/v2/models/resnet50/versions/1/stats`), Stats);
  expect(v.model_stats[0]!.name).toBe('resnet50');
  const unknown = await raw('GET', `${base}/v2/models/nope/stats`);
  expect(unknown.status).toBe(404);
  expect(errorOf(unknown)).toContain("unknown model 'nope'");
  expect((await raw('GET', `${base}/v2/models/resnet50/versions/9/stats`)).status).toBe(404);
});

it('get_model_config: tensors, max batch, SLO, shares and batch in force', async () => {
  const c = jsonOf(await raw('GET', `${base}/v2/models/resnet50/config`), Config);
  expect(c).toMatchObject({ name: 'resnet50', platform: 'inss', max_batch_size: 8 });
  // The image input is channel-first, its dims without the batch dimension (max_batch_size > 0).
  expect(c.input).toEqual([{ name: 'input', data_type: 'TYPE_FP32', format: 'FORMAT_NCHW', dims: [3, 224, 224] }]);
  expect(c.output).toEqual([{ name: 'output', data_type: 'TYPE_FP32', dims: [1000] }]);
  expect(c.label_filenames).toEqual(['data/imagenet/labels.txt']);
  expect(c.dynamic_batching.preferred_batch_size.length).toBeGreaterThanOrEqual(1);
  expect(c.parameters.slo_ms?.string_value).toBe('10000');
  // The system is ready: at least one serving worker, with its share (percent) and batch size.
  const shares = (c.parameters.share_pct?.string_value ?? '').split(',').map(Number);
  expect(shares.length).toBeGreaterThanOrEqual(1);
  for (const p of shares) expect(p > 0 && p <= 100).toBe(true);
  expect(
    (c.parameters.batch?.string_value ?? '')
      .split(',')
      .map(Number)
      .every((b) => b >= 1),
  ).toBe(true);
  expect(c.instance_group.length).toBeGreaterThanOrEqual(1);
  expect(jsonOf(await raw('GET', `${base}/v2/models/resnet50/versions/1/config`), Config).name).toBe('resnet50');
  expect((await raw('GET', `${base}/v2/models/nope/config`)).status).toBe(404);
});

it('get_model_repository_index (POST, empty body) and refused load/unload', async () => {
  const idx = jsonOf(await raw('POST', `${base}/v2/repository/index`, {}, Buffer.alloc(0)), Index);
  expect(idx.map((e) => e.name)).toEqual(expect.arrayContaining(['resnet50', 'vgg16']));
  for (const e of idx) expect(e).toEqual({ name: e.name, version: '1', state: 'READY', reason: '' });
  const ready = jsonOf(await raw('POST', `${base}/v2/repository/index`, {}, Buffer.from('{"ready":true}')), Index);
  expect(ready).toHaveLength(idx.length);
  expect((await raw('POST', `${base}/v2/repository/index`, {}, Buffer.from('{"ready":1}'))).status).toBe(400);
  // load_model / unload_model bodies as tritonclient sends them.
  const load = await raw('POST', `${base}/v2/repository/models/resnet50/load`, {}, Buffer.from('{}'));
  expect(load.status).toBe(403);
  expect(errorOf(load)).toContain("cannot load model 'resnet50'");
  const unload = await raw(
    'POST',
    `${base}/v2/repository/models/resnet50/unload`,
    {},
    Buffer.from('{"parameters":{"unload_dependents":false}}'),
  );
  expect(unload.status).toBe(403);
  expect(errorOf(unload)).toContain("cannot unload model 'resnet50'");
});

it(
  'server metadata lists exactly the extensions served; ' + '/metrics has Triton-named series, gzip on request',
  async () => {
    const meta = jsonOf(await raw('GET', `${base}/v2`), Meta);
    expect(meta.extensions).toEqual([
      'binary_tensor_data',
      'classification',
      'statistics',
      'model_configuration',
      'model_repository',
      'system_shared_memory',
    ]);
    const m = await raw('GET', `${base}/metrics`, { 'Accept-Encoding': 'gzip' });
    expect(m.status).toBe(200);
    expect(m.headers['content-encoding']).toBe('gzip');
    const text = gunzipSync(m.body).toString();
    expect(text).toMatch(/^nv_inference_request_success\{model="resnet50",version="1"\} [1-9]/m);
    expect(text).toMatch(/^nv_inference_exec_count\{model="resnet50",version="1"\} [1-9]/m);
    expect(text).toMatch(/^inss_model_share_percent\{model="resnet50",gpu="\d+",worker="[^"]+",role="active"\} \d/m);
    const plain = await raw('GET', `${base}/metrics`);
    expect(plain.headers['content-encoding']).toBeUndefined();
  },
);

// ---- images as clients send them -------------------------------------------------------------------

/** The tensor the workers make of an image (the rule of src/serving/image.ts, with the simulated worker's decoders). */
function preprocessed(encoding: 'UINT8' | 'JPEG' | 'PNG', bytes: Buffer): Float32Array {
  const ref: TensorRef = {
    name: 'input',
    datatype: 'FP32',
    shape: [1, 3, 224, 224],
    byteLength: bytes.length,
    samples: [{ encoding, byteLength: bytes.length }],
  };
  return decodeBatchInput(ref, bytes, 1, IMAGE_SPEC).x;
}

/** The binary output of an answer (binary_data_output), as FP32 values. */
function binaryOutput(r: Raw): Float32Array {
  expect(r.status, r.body.toString().slice(0, 500)).toBe(200);
  const n = Number(r.headers['inference-header-content-length']);
  const copy = Buffer.from(r.body.subarray(n));
  return new Float32Array(copy.buffer, copy.byteOffset, copy.length / 4);
}

it('UINT8 pixels, a JPEG and a PNG (resized) are each answered from their own decoded image', async () => {
  const pic = syntheticPicture(224, 224, 31);
  const wide = syntheticPicture(300, 200, 32);
  const cases = [
    { form: 'uint8' as const, pic, tensor: preprocessed('UINT8', uint8Chw(pic)) },
    { form: 'jpeg' as const, pic, tensor: preprocessed('JPEG', encodeJpeg(pic)) },
    { form: 'png' as const, pic: wide, tensor: preprocessed('PNG', encodePng(wide)) },
  ];
  const answers = await Promise.all(
    cases.map((c) => {
      const req = imageRequest('input', c.form, c.pic);
      return raw('POST', `${base}/v2/models/mobilenet/infer`, req.headers, req.body);
    }),
  );
  answers.forEach((r, k) =>
    expect(Array.from(binaryOutput(r)), cases[k]!.form).toEqual(Array.from(simForward(cases[k]!.tensor, 'mobilenet'))),
  );
});

it(
  "a request that carries a batch: k samples in, k rows out in order, each its own sample's answer (FP32 binary " +
    'k=4, BYTES images k=2)',
  async () => {
    const xs = [0, 1, 2, 3].map((s) =>
      Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => ((i * (s + 3)) % 17) / 17),
    );
    const data = Buffer.concat(xs.map((x) => Buffer.from(x.buffer)));
    const head = Buffer.from(
      JSON.stringify({
        inputs: [
          { name: 'input', shape: [4, 3, 224, 224], datatype: 'FP32', parameters: { binary_data_size: data.length } },
        ],
        outputs: [{ name: 'output', parameters: { binary_data: true } }],
      }),
    );
    const r = await raw(
      'POST',
      `${base}/v2/models/resnet50/infer`,
      { 'inference-header-content-length': String(head.length) },
      Buffer.concat([head, data]),
    );
    const out = binaryOutput(r);
    const header = JSON.parse(r.body.subarray(0, Number(r.headers['inference-header-content-length'])).toString()) as {
      outputs: { shape: number[] }[];
    };
    expect(header.outputs[0]!.shape).toEqual([4, 1000]);
    xs.forEach((x, k) =>
      expect(Array.from(out.subarray(k * 1000, (k + 1) * 1000)), `row ${k}`).toEqual(
        Array.from(simForward(x, 'resnet50')),
      ),
    );

    const a = syntheticPicture(224, 224, 41);
    const b = syntheticPicture(320, 240, 42);
    const el = (img: Buffer) => Buffer.concat([Buffer.from(Uint32Array.of(img.length).buffer), img]);
    const images = Buffer.concat([el(encodeJpeg(a)), el(encodePng(b))]);
    const h2 = Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'input', shape: [2, 1], datatype: 'BYTES', parameters: { binary_data_size: images.length } }],
        parameters: { binary_data_output: true },
      }),
    );
    const r2 = await raw(
      'POST',
      `${base}/v2/models/mobilenet/infer`,
      { 'inference-header-content-length': String(h2.length) },
      Buffer.concat([h2, images]),
    );
    const out2 = binaryOutput(r2);
    expect(Array.from(out2.subarray(0, 1000))).toEqual(
      Array.from(simForward(preprocessed('JPEG', encodeJpeg(a)), 'mobilenet')),
    );
    expect(Array.from(out2.subarray(1000, 2000))).toEqual(
      Array.from(simForward(preprocessed('PNG', encodePng(b)), 'mobilenet')),
    );

    // Past max_batch_size (8): a 400 naming it.
    const nine = Buffer.from(
      JSON.stringify({
        inputs: [
          { name: 'input', shape: [9, 3, 224, 224], datatype: 'FP32', parameters: { binary_data_size: 9 * 602112 } },
        ],
      }),
    );
    const r3 = await raw(
      'POST',
      `${base}/v2/models/resnet50/infer`,
      { 'inference-header-content-length': String(nine.length) },
      Buffer.concat([nine, Buffer.alloc(9 * 602112)]),
    );
    expect(r3.status).toBe(400);
    expect(errorOf(r3)).toMatch(/batch dimension 9 is larger than the model's max_batch_size 8/);
  },
);

it('the model metadata and config list the forms an image input takes', async () => {
  const meta = JSON.parse((await raw('GET', `${base}/v2/models/resnet50`)).body.toString()) as {
    parameters: { input_forms: { input: { datatype: string }[] } };
  };
  expect(meta.parameters.input_forms.input.map((f) => f.datatype)).toEqual(['FP32', 'UINT8', 'BYTES']);
  const config = jsonOf(await raw('GET', `${base}/v2/models/resnet50/config`), Config);
  expect(JSON.parse(config.parameters.input_forms!.string_value)).toEqual(meta.parameters.input_forms);
});

it(
  'BYTES that are not an image get a 400 before they become a task; an image that fails to decode fails its task ' +
    'alone',
  async () => {
    const text = Buffer.from('this is not an image');
    const header = Buffer.from(
      JSON.stringify({
        inputs: [
          { name: 'input', datatype: 'BYTES', shape: [1, 1], parameters: { binary_data_size: 4 + text.length } },
        ],
      }),
    );
    const len = Buffer.alloc(4);
    len.writeUInt32LE(text.length);
    const refused = await raw(
      'POST',
      `${base}/v2/models/resnet50/infer`,
      { 'Inference-Header-Content-Length': String(header.length) },
      Buffer.concat([header, len, text]),
    );
    expect(refused.status).toBe(400);
    expect(errorOf(refused)).toMatch(/^inputs\[0\] \('input'\): not a JPEG or PNG image/);

    // A PNG whose header reads but whose image data is broken: the worker answers that task with a 400.
    const pic = syntheticPicture(224, 224, 33);
    const broken = Buffer.from(encodePng(pic));
    broken.fill(0x55, 40, 400);
    const badHeader = Buffer.from(
      JSON.stringify({
        inputs: [
          { name: 'input', datatype: 'BYTES', shape: [1, 1], parameters: { binary_data_size: 4 + broken.length } },
        ],
      }),
    );
    const badLen = Buffer.alloc(4);
    badLen.writeUInt32LE(broken.length);
    const good = imageRequest('input', 'uint8', pic);
    const [failed, ok] = await Promise.all([
      raw(
        'POST',
        `${base}/v2/models/resnet50/infer`,
        { 'Inference-Header-Content-Length': String(badHeader.length) },
        Buffer.concat([badHeader, badLen, broken]),
      ),
      raw('POST', `${base}/v2/models/resnet50/infer`, good.headers, good.body),
    ]);
    expect(failed.status).toBe(400);
    expect(errorOf(failed)).toMatch(/^input 'input': the PNG image could not be decoded: /);
    expect(Array.from(binaryOutput(ok))).toEqual(
      Array.from(simForward(preprocessed('UINT8', uint8Chw(pic)), 'resnet50')),
    );
  },
);

// ---- Triton's system shared-memory extension --------------------------------------------------------

it(
  'a client on this host: creates a /dev/shm region, registers it, infers with the input and output in it, reads ' +
    'the answer there, unregisters',
  async () => {
    // What tritonclient.utils.shared_memory.create_shared_memory_region does: shm_open("/<key>") = /dev/shm/<key>.
    const key = `inss_e2e_${process.pid}`;
    const path = `/dev/shm/${key}`;
    const x = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => ((i * 11) % 17) / 17);
    const inBytes = x.byteLength;
    writeFileSync(path, Buffer.concat([Buffer.from(x.buffer), Buffer.alloc(4000 + 64)]));
    try {
      // register_system_shared_memory(name, key, byte_size, offset): POST with {key, offset, byte_size}.
      const reg = await raw(
        'POST',
        `${base}/v2/systemsharedmemory/region/io/register`,
        {},
        Buffer.from(JSON.stringify({ key: `/${key}`, offset: 0, byte_size: inBytes + 4000 + 64 })),
      );
      expect(reg.status, reg.body.toString()).toBe(200);
      const again = await raw(
        'POST',
        `${base}/v2/systemsharedmemory/region/io/register`,
        {},
        Buffer.from(JSON.stringify({ key: `/${key}`, offset: 0, byte_size: 8 })),
      );
      expect(again.status).toBe(409);
      const traversal = await raw(
        'POST',
        `${base}/v2/systemsharedmemory/region/evil/register`,
        {},
        Buffer.from(JSON.stringify({ key: '/../../etc/passwd', offset: 0, byte_size: 8 })),
      );
      expect(traversal.status).toBe(400);
      expect(errorOf(traversal)).toMatch(/expected a POSIX shared-memory name/);
      const status = jsonOf(
        await raw('GET', `${base}/v2/systemsharedmemory/region/io/status`),
        z.array(z.object({ name: z.string(), key: z.string(), offset: z.number(), byte_size: z.number() })),
      );
      expect(status).toEqual([{ name: 'io', key: `/${key}`, offset: 0, byte_size: inBytes + 4000 + 64 }]);

      // infer with InferInput.set_shared_memory('io', byte_size) and InferRequestedOutput.set_shared_memory('io', 4000,
      // offset).
      const body = Buffer.from(
        JSON.stringify({
          inputs: [
            {
              name: 'input',
              shape: [1, 3, 224, 224],
              datatype: 'FP32',
              parameters: { shared_memory_region: 'io', shared_memory_byte_size: inBytes },
            },
          ],
          outputs: [
            {
              name: 'output',
              parameters: {
                shared_memory_region: 'io',
                shared_memory_byte_size: 4000,
                shared_memory_offset: inBytes + 64,
              },
            },
          ],
        }),
      );
      const r = await raw('POST', `${base}/v2/models/resnet50/infer`, {}, body);
      expect(r.status, r.body.toString().slice(0, 300)).toBe(200);
      expect(r.body.length).toBeLessThan(1000); // no tensor bytes over HTTP
      expect(JSON.parse(r.body.toString())).toMatchObject({
        outputs: [
          {
            name: 'output',
            datatype: 'FP32',
            shape: [1, 1000],
            parameters: { shared_memory_region: 'io', shared_memory_byte_size: 4000 },
          },
        ],
      });
      const out = readFileSync(path).subarray(inBytes + 64, inBytes + 64 + 4000);
      const copy = Buffer.from(out); // a small Buffer may lie inside Node's pool: read it at its own offset
      const y = new Float32Array(copy.buffer, copy.byteOffset, 1000);
      expect(Array.from(y)).toEqual(Array.from(simForward(x, 'resnet50')));

      // A range past the region, and a region that is not registered: 400 before any task.
      const past = await raw(
        'POST',
        `${base}/v2/models/resnet50/infer`,
        {},
        Buffer.from(
          JSON.stringify({
            inputs: [
              {
                name: 'input',
                shape: [1, 3, 224, 224],
                datatype: 'FP32',
                parameters: {
                  shared_memory_region: 'io',
                  shared_memory_byte_size: inBytes,
                  shared_memory_offset: 4096,
                },
              },
            ],
          }),
        ),
      );
      expect(past.status).toBe(400);
      expect(errorOf(past)).toMatch(/runs past region 'io'/);

      const unreg = await raw('POST', `${base}/v2/systemsharedmemory/region/io/unregister`);
      expect(unreg.status).toBe(200);
      expect(jsonOf(await raw('GET', `${base}/v2/systemsharedmemory/status`), z.array(z.unknown()))).toEqual([]);
      const gone = await raw('POST', `${base}/v2/models/resnet50/infer`, {}, body);
      expect(gone.status).toBe(400);
      expect(errorOf(gone)).toBe("inputs[0] ('input'): no shared memory region 'io' is registered");
      expect((await raw('GET', `${base}/v2/systemsharedmemory/region/io/status`)).status).toBe(404);
      const meta = jsonOf(await raw('GET', `${base}/v2`), Meta);
      expect(meta.extensions).toContain('system_shared_memory');
    } finally {
      rmSync(path, { force: true });
    }
  },
);

// ---- Triton's classification extension, compression, CUDA shared memory, unknown models, non-finite values

it(
  'classification over HTTP (class_count=3): 3 "score:index:label" strings with ImageNet labels, as JSON or ' +
    'binary',
  async () => {
    const x = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => ((i * 13) % 29) / 29);
    const want = topClasses(simForward(x, 'resnet50'), 3);
    // InferRequestedOutput('output', binary_data=False, class_count=3), then binary_data=True (the default).
    for (const binaryData of [false, true]) {
      const header = Buffer.from(
        JSON.stringify({
          inputs: [
            {
              name: 'input',
              shape: [1, 3, 224, 224],
              datatype: 'FP32',
              parameters: { binary_data_size: x.byteLength },
            },
          ],
          outputs: [{ name: 'output', parameters: { classification: 3, binary_data: binaryData } }],
        }),
      );
      const r = await raw(
        'POST',
        `${base}/v2/models/resnet50/infer`,
        { 'Inference-Header-Content-Length': String(header.length) },
        Buffer.concat([header, Buffer.from(x.buffer)]),
      );
      expect(r.status, r.body.toString().slice(0, 300)).toBe(200);
      const n =
        r.headers['inference-header-content-length'] === undefined
          ? r.body.length
          : Number(r.headers['inference-header-content-length']);
      const res = JSON.parse(r.body.subarray(0, n).toString()) as {
        outputs: {
          name: string;
          datatype: string;
          shape: number[];
          data?: string[];
          parameters?: { binary_data_size: number };
        }[];
      };
      expect(res.outputs[0]).toMatchObject({ name: 'output', datatype: 'BYTES', shape: [1, 3] });
      const strings = binaryData ? bytesTensor(r.body.subarray(n)) : res.outputs[0]!.data!;
      expect(strings).toEqual(want);
      for (const s of strings) expect(s).toMatch(/^-?\d+\.\d{6}:\d+:[^:]+$/);
    }
    const tooMany = await raw(
      'POST',
      `${base}/v2/models/resnet50/infer`,
      {},
      Buffer.from(
        JSON.stringify({
          inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', data: Array.from(x) }],
          outputs: [{ name: 'output', parameters: { classification: 1001 } }],
        }),
      ),
    );
    expect(tooMany.status).toBe(400);
    expect(errorOf(tooMany)).toBe(
      "outputs[0].parameters.classification: 1001 classes asked, but output 'output' has 1000 a sample",
    );
  },
);

it(
  'statistics, config, metadata and index answers are never compressed, even with Accept-Encoding: gzip; infer ' +
    'answers are',
  async () => {
    const gets = [
      '/v2',
      '/v2/models/resnet50',
      '/v2/models/resnet50/config',
      '/v2/models/stats',
      '/v2/models/resnet50/versions/1/stats',
      '/v2/health/ready',
      '/v2/cudasharedmemory/status',
      '/v2/systemsharedmemory/status',
    ];
    for (const path of gets) {
      const r = await raw('GET', `${base}${path}`, { 'Accept-Encoding': 'gzip, deflate' });
      expect(r.status, path).toBe(200);
      expect(r.headers['content-encoding'], path).toBeUndefined();
      expect(() => JSON.parse(r.body.toString('utf8')) as unknown, path).not.toThrow();
    }
    const idx = await raw('POST', `${base}/v2/repository/index`, { 'Accept-Encoding': 'gzip' }, Buffer.alloc(0));
    expect(idx.headers['content-encoding']).toBeUndefined();
    expect(Array.isArray(JSON.parse(idx.body.toString()))).toBe(true);
    const x = new Float32Array(3 * 224 * 224).fill(0.25);
    const req = binaryInferRequest(x);
    const infer = await raw(
      'POST',
      `${base}/v2/models/resnet50/infer`,
      { ...req.headers, 'Accept-Encoding': 'gzip' },
      req.body,
    );
    expect(infer.status).toBe(200);
    expect(infer.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(infer.body).length).toBeGreaterThan(4000);
  },
);

it(
  'CUDA shared memory answers as a Triton without GPU support: status [], unregister succeeds, register is a 400 ' +
    'naming system shared memory',
  async () => {
    // Triton's simple_http_shm_client.py starts with unregister_system_shared_memory() and
    // unregister_cuda_shared_memory().
    expect((await raw('POST', `${base}/v2/systemsharedmemory/unregister`)).status).toBe(200);
    const all = await raw('POST', `${base}/v2/cudasharedmemory/unregister`);
    expect(all.status).toBe(200);
    expect(all.body.length).toBe(0);
    expect((await raw('POST', `${base}/v2/cudasharedmemory/region/output_data/unregister`)).status).toBe(200);
    expect(jsonOf(await raw('GET', `${base}/v2/cudasharedmemory/status`), z.array(z.unknown()))).toEqual([]);
    // register_cuda_shared_memory(name, raw_handle, device_id, byte_size): {raw_handle: {b64}, device_id, byte_size}.
    const reg = await raw(
      'POST',
      `${base}/v2/cudasharedmemory/region/input_data/register`,
      {},
      Buffer.from(
        JSON.stringify({ raw_handle: { b64: Buffer.alloc(64).toString('base64') }, device_id: 0, byte_size: 64 }),
      ),
    );
    expect(reg.status).toBe(400);
    expect(errorOf(reg)).toContain("failed to register CUDA shared memory region: 'input_data', GPUs not supported");
    expect(errorOf(reg)).toContain('use system shared memory');
    expect((await raw('GET', `${base}/v2/cudasharedmemory/region/input_data/status`)).status).toBe(404);
  },
);

it(
  'an unknown model (or version) with a 3 MB body is a 404 before the body is read, and the connection stays ' +
    'usable',
  async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const body = Buffer.alloc(3 * 1024 * 1024, 7);
    /**
     * One request over the agent's one connection; `port`: the connection's local port (the same port: the same
     * connection).
     */
    const send = (method: 'GET' | 'POST', path: string, data?: Buffer) =>
      new Promise<{ status: number; text: string; connection: string | undefined; port: number }>((resolve, reject) => {
        let port = 0;
        const req = request(
          `${base}${path}`,
          { method, agent, headers: data ? { 'content-length': String(data.length) } : {} },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            // Answered and the whole body sent: the connection is free for the next request.
            let left = 2;
            const done = () =>
              --left === 0 &&
              resolve({
                status: res.statusCode ?? 0,
                text: Buffer.concat(chunks).toString(),
                connection: res.headers.connection,
                port,
              });
            res.on('end', done);
            if (req.writableFinished) done();
            else req.once('finish', done);
          },
        );
        req.once('socket', (s) => {
          if (s.localPort) port = s.localPort;
          else s.once('connect', () => (port = s.localPort ?? 0));
        });
        req.on('error', reject);
        req.end(data);
      });
    try {
      const first = await send('POST', '/v2/models/nope/infer', body);
      expect(first.status, first.text).toBe(404);
      expect(first.text).toContain("unknown model 'nope'");
      // Under every model's body limit: the body is discarded unread and the connection kept.
      expect(first.connection).toBe('keep-alive');
      const version = await send('POST', '/v2/models/resnet50/versions/9/infer', body);
      expect(version.status).toBe(404);
      expect(version.text).toContain("model 'resnet50' has no version '9'");
      const again = await send('GET', '/v2/health/live');
      expect(again.status).toBe(200);
      expect([version.port, again.port]).toEqual([first.port, first.port]);
    } finally {
      agent.destroy();
    }
  },
);

it(
  "NaN and infinities in a worker's output are written in JSON as " + 'Triton writes them: NaN, Infinity, -Infinity',
  async () => {
    // The stand-in output[k] = x[k] + x[N-1-k] + c: NaN, +inf and -inf inputs give such outputs.
    const x = new Float32Array(3 * 224 * 224).fill(0.5);
    x[0] = NaN;
    x[1] = Infinity;
    x[2] = -Infinity;
    const header = Buffer.from(
      JSON.stringify({
        inputs: [
          { name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', parameters: { binary_data_size: x.byteLength } },
        ],
        outputs: [{ name: 'output', parameters: { binary_data: false } }],
      }),
    );
    const r = await raw(
      'POST',
      `${base}/v2/models/resnet50/infer`,
      { 'Inference-Header-Content-Length': String(header.length) },
      Buffer.concat([header, Buffer.from(x.buffer)]),
    );
    expect(r.status, r.body.toString().slice(0, 300)).toBe(200);
    const text = r.body.toString();
    expect(text).toContain('"data":[NaN,Infinity,-Infinity,');
    // Python's json.loads (tritonclient) reads these tokens as floats; here they are mapped to strings to read them.
    const data = (
      JSON.parse(text.replace(/(-?Infinity|NaN)/g, '"$1"')) as { outputs: { data: (number | string)[] }[] }
    ).outputs[0]!.data.map(Number);
    expect(data.slice(0, 3)).toEqual([NaN, Infinity, -Infinity]);
    expect(data.slice(3)).toEqual(Array.from(simForward(x, 'resnet50').subarray(3)));
  },
);

// ---- a client written as Triton's image_client.py works (triton-inference-server/client src/python/examples)

it(
  'image_client.py -s INCEPTION -c 3 -b 2: metadata and config pass parse_model; a batch of 2 JPEGs in one ' +
    'binary request gives 2 x 3 classes',
  async () => {
    const meta = JSON.parse((await raw('GET', `${base}/v2/models/resnet50`)).body.toString()) as {
      inputs: { name: string; datatype: string; shape: number[] }[];
      outputs: { name: string; datatype: string; shape: number[] }[];
    };
    const config = JSON.parse((await raw('GET', `${base}/v2/models/resnet50/config`)).body.toString()) as {
      max_batch_size: number;
      input: { format: string }[];
    };
    const { inputName, outputName, c, h, w, format } = parseModel({
      inputs: meta.inputs,
      outputs: meta.outputs,
      maxBatchSize: config.max_batch_size,
      inputFormats: config.input.map((i) => i.format),
    });
    expect(format).toBe('FORMAT_NCHW');
    expect([c, h, w]).toEqual([3, 224, 224]);
    const batchSize = 2;
    expect(batchSize).toBeLessThanOrEqual(config.max_batch_size);
    const { samples, batch } = inceptionBatch(
      [syntheticPicture(320, 240, 41), syntheticPicture(200, 260, 42)].map(jpegFile),
      c,
      h,
      w,
    );

    // InferInput(input_name, [2, 3, 224, 224], 'FP32').set_data_from_numpy(batch); InferRequestedOutput(output_name,
    // class_count=3).
    const header = Buffer.from(
      JSON.stringify({
        inputs: [
          {
            name: inputName,
            shape: [batchSize, c, h, w],
            datatype: 'FP32',
            parameters: { binary_data_size: batch.byteLength },
          },
        ],
        outputs: [{ name: outputName, parameters: { classification: 3, binary_data: true } }],
      }),
    );
    const r = await raw(
      'POST',
      `${base}/v2/models/resnet50/infer`,
      { 'Inference-Header-Content-Length': String(header.length) },
      Buffer.concat([header, Buffer.from(batch.buffer)]),
    );
    expect(r.status, r.body.toString().slice(0, 300)).toBe(200);

    // postprocess: as_numpy(output_name) is BYTES of shape [batch, 3]; each element splits into value, index, label.
    const n = Number(r.headers['inference-header-content-length']);
    const res = JSON.parse(r.body.subarray(0, n).toString()) as { outputs: { datatype: string; shape: number[] }[] };
    expect(res.outputs[0]).toMatchObject({ datatype: 'BYTES', shape: [batchSize, 3] });
    const strings = bytesTensor(r.body.subarray(n));
    expect(strings).toHaveLength(batchSize * 3);
    for (const s of strings) {
      const cls = s.split(':');
      expect(cls).toHaveLength(3);
      expect(IMAGENET[Number(cls[1])]).toBe(cls[2]);
    }
    expect(strings).toEqual(samples.flatMap((s) => topClasses(simForward(s, 'resnet50'), 3)));
  },
);

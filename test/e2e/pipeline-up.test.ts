// A Triton ensemble served live: `inss up --model-repository DIR` with three ONNX models written here (real
// weights; test/support/onnxModel.ts) and an ensemble chaining them (pre -> mid -> post, post also reading the
// ensemble's input), on their real ONNX Runtime workers on the CPU behind simulated GPUs. The ensemble answers
// over HTTP (binary and JSON) and gRPC as running its three steps by hand does (each step model called
// directly, its outputs fed to the next), within 1e-4; its metadata and configuration answer as Triton's do
// for an ensemble; an ensemble whose steps are listed out of order is refused with the field named while the
// others serve. A scenario's own pipeline (over the zoo's models, simulated workers) is served the same way: its
// answer, its classes (the classification extension, ImageNet labels) and its answer through a system shared-memory
// region are vgg16's (its last step's) own.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inferenceService } from '../../scheduler/grpcProto.js';
import { ScenarioSchema } from '../../src/scenario/schema.js';
import { binaryInferBody, fp32ImageRequest } from '../../tools/loadgen/binary.js';
import { type OnnxGraph, randomFloats, writeOnnxModel } from '../support/onnxModel.js';
import { startUp, stopAll } from '../support/system.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-pipeline-up-'));
const repo = join(dir, 'models');
let base = '';
let client: grpc.Client;

const fp32 = (name: string, n: number) => ({ name, datatype: 'FP32' as const, dims: ['N', n] });
const weights = (name: string, rows: number, cols: number, seed: number) => ({
  name,
  datatype: 'FP32' as const,
  dims: [rows, cols],
  bytes: randomFloats(rows * cols, seed),
});

/** pre: y = Tanh(x W + B), [N,4] -> [N,6]. */
const PRE: OnnxGraph = {
  inputs: [fp32('x', 4)],
  outputs: [fp32('y', 6)],
  initializers: [weights('W', 4, 6, 31), { ...weights('B', 1, 6, 32), dims: [6] }],
  nodes: [
    { op: 'MatMul', inputs: ['x', 'W'], outputs: ['xw'] },
    { op: 'Add', inputs: ['xw', 'B'], outputs: ['s'] },
    { op: 'Tanh', inputs: ['s'], outputs: ['y'] },
  ],
};
/** mid: y = Relu(x W), [N,6] -> [N,5]. */
const MID: OnnxGraph = {
  inputs: [fp32('x', 6)],
  outputs: [fp32('y', 5)],
  initializers: [weights('W', 6, 5, 33)],
  nodes: [
    { op: 'MatMul', inputs: ['x', 'W'], outputs: ['xw'] },
    { op: 'Relu', inputs: ['xw'], outputs: ['y'] },
  ],
};
/** post: y = a Wa + b Wb, [N,5] and [N,4] -> [N,3]. */
const POST: OnnxGraph = {
  inputs: [fp32('a', 5), fp32('b', 4)],
  outputs: [fp32('y', 3)],
  initializers: [weights('Wa', 5, 3, 34), weights('Wb', 4, 3, 35)],
  nodes: [
    { op: 'MatMul', inputs: ['a', 'Wa'], outputs: ['aw'] },
    { op: 'MatMul', inputs: ['b', 'Wb'], outputs: ['bw'] },
    { op: 'Add', inputs: ['aw', 'bw'], outputs: ['y'] },
  ],
};

const modelConfig = (inputs: [string, number][], output: number) =>
  `platform: "onnxruntime_onnx"
max_batch_size: 8
input [ ${inputs.map(([n, d]) => `{ name: "${n}" data_type: TYPE_FP32 dims: [ ${d} ] }`).join(', ')} ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ ${output} ] } ]
`;

const STEP_PRE =
  '{ model_name: "pre" model_version: -1 input_map { key: "x" value: "IN" } output_map { key: "y" value: "t1" } }';
const STEP_MID =
  '{ model_name: "mid" model_version: -1 input_map { key: "x" value: "t1" } output_map { key: "y" value: "t2" } }';
const STEP_POST =
  `{ model_name: "post" model_version: -1 input_map [ { key: "a" value: "t2" }, { key: "b" value: "IN" } ] ` +
  `output_map { key: "y" value: "OUT" } }`;

const ensemble = (name: string, steps: string[]) => `name: "${name}"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 3 ] } ]
parameters { key: "slo_ms" value: { string_value: "6000" } }
ensemble_scheduling { step [ ${steps.join(',\n')} ] }
`;

function entry(name: string, config: string, graph?: OnnxGraph): void {
  mkdirSync(join(repo, name, '1'), { recursive: true });
  writeFileSync(join(repo, name, 'config.pbtxt'), config);
  if (graph) writeOnnxModel(join(repo, name, '1', 'model.onnx'), graph);
}

beforeAll(async () => {
  entry('pre', modelConfig([['x', 4]], 6), PRE);
  entry('mid', modelConfig([['x', 6]], 5), MID);
  entry(
    'post',
    modelConfig(
      [
        ['a', 5],
        ['b', 4],
      ],
      3,
    ),
    POST,
  );
  entry('chain', ensemble('chain', [STEP_PRE, STEP_MID, STEP_POST]));
  // post before mid: post reads t2 before any step wrote it.
  entry('tangle', ensemble('tangle', [STEP_PRE, STEP_POST, STEP_MID]));
  const { address } = ({ base } = await startUp(
    join(dir, 'state'),
    ['--model-repository', repo, '--simulate', 'rtx2060s:2'],
    { readyPath: '/v2/models/chain/ready', grpc: true },
  ));
  const Service = inferenceService();
  client = new Service(address, grpc.credentials.createInsecure());
}, 240_000);

afterAll(async () => {
  client?.close();
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

const floats = (b: Buffer) => Array.from(new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)));
const bytes = (v: readonly number[]) => Buffer.from(Float32Array.from(v).buffer);

/** POSTs a binary infer request and returns its outputs' values (FP32), by name. */
async function inferBinary(
  name: string,
  inputs: readonly { name: string; shape: number[]; values: readonly number[] }[],
): Promise<Map<string, number[]>> {
  const r = binaryInferBody(
    {
      inputs: inputs.map((i) => ({
        name: i.name,
        datatype: 'FP32',
        shape: i.shape,
        parameters: { binary_data_size: i.values.length * 4 },
      })),
      outputs: [{ name: name === 'chain' ? 'OUT' : 'y', parameters: { binary_data: true } }],
    },
    inputs.map((i) => bytes(i.values)),
  );
  const res = await fetch(`${base}/v2/models/${name}/infer`, { method: 'POST', headers: r.headers, body: r.body });
  const body = Buffer.from(await res.arrayBuffer());
  expect(res.status, body.toString('utf8', 0, 300)).toBe(200);
  const headerLength = Number(res.headers.get('inference-header-content-length'));
  const header = JSON.parse(body.subarray(0, headerLength).toString('utf8')) as {
    outputs: { name: string; parameters: { binary_data_size: number } }[];
  };
  const out = new Map<string, number[]>();
  let at = headerLength;
  for (const o of header.outputs) {
    out.set(o.name, floats(body.subarray(at, at + o.parameters.binary_data_size)));
    at += o.parameters.binary_data_size;
  }
  return out;
}

/** The three steps run by hand: each step model called directly, its output fed to the next. */
async function byHand(k: number, input: readonly number[]): Promise<number[]> {
  const t1 = (await inferBinary('pre', [{ name: 'x', shape: [k, 4], values: input }])).get('y')!;
  const t2 = (await inferBinary('mid', [{ name: 'x', shape: [k, 6], values: t1 }])).get('y')!;
  const post = await inferBinary('post', [
    { name: 'a', shape: [k, 5], values: t2 },
    { name: 'b', shape: [k, 4], values: input },
  ]);
  return post.get('y')!;
}

function expectClose(got: readonly number[], want: readonly number[]): void {
  expect(got.length).toBe(want.length);
  got.forEach((v, i) => expect(Math.abs(v - want[i]!)).toBeLessThan(1e-4 * Math.max(1, Math.abs(want[i]!))));
}

const sample = (k: number, seed: number) => floats(Buffer.from(randomFloats(4 * k, seed)));

function grpcCall(method: string, req: object): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const c = client as unknown as Record<
      string,
      (r: object, cb: (e: grpc.ServiceError | null, v?: Record<string, unknown>) => void) => void
    >;
    c[method]!.call(client, req, (e, v) => (e ? reject(e) : resolve(v!)));
  });
}
const grpcInfer = (req: object) => grpcCall('ModelInfer', req);

describe('inss up --model-repository: a three-step ensemble', () => {
  it('answers a 3-sample request over HTTP binary as its steps run by hand', async () => {
    const input = sample(3, 41);
    const got = await inferBinary('chain', [{ name: 'IN', shape: [3, 4], values: input }]);
    expectClose(got.get('OUT')!, await byHand(3, input));
  });

  it('answers JSON with JSON outputs as its steps run by hand', async () => {
    const input = sample(2, 42);
    const res = await fetch(`${base}/v2/models/chain/infer`, {
      method: 'POST',
      body: JSON.stringify({ id: 'j1', inputs: [{ name: 'IN', datatype: 'FP32', shape: [2, 4], data: input }] }),
    });
    const body = (await res.json()) as {
      id: string;
      model_name: string;
      outputs: { name: string; datatype: string; shape: number[]; data: number[] }[];
    };
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ id: 'j1', model_name: 'chain' });
    expect(body.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([['OUT', 'FP32', [2, 3]]]);
    expectClose(body.outputs[0]!.data, await byHand(2, input));
  });

  it('answers ModelInfer over gRPC with raw contents as its steps run by hand', async () => {
    const input = sample(2, 43);
    const r = await grpcInfer({
      model_name: 'chain',
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [2, 4] }],
      outputs: [{ name: 'OUT' }],
      raw_input_contents: [bytes(input)],
    });
    const names = (r['outputs'] as { name: string }[]).map((o) => o.name);
    expect(names).toEqual(['OUT']);
    expectClose(floats((r['raw_output_contents'] as Buffer[])[0]!), await byHand(2, input));
  });

  it("answers its metadata and configuration as Triton's for an ensemble", async () => {
    const meta = (await (await fetch(`${base}/v2/models/chain`)).json()) as Record<string, unknown>;
    expect(meta).toMatchObject({
      name: 'chain',
      versions: ['1'],
      platform: 'ensemble',
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [-1, 4] }],
      outputs: [{ name: 'OUT', datatype: 'FP32', shape: [-1, 3] }],
    });
    const config = (await (await fetch(`${base}/v2/models/chain/config`)).json()) as Record<string, unknown>;
    expect(config).toMatchObject({
      name: 'chain',
      platform: 'ensemble',
      max_batch_size: 8,
      ensemble_scheduling: {
        step: [
          { model_name: 'pre', model_version: -1, input_map: { x: 'IN' }, output_map: { y: 't1' } },
          { model_name: 'mid', model_version: -1, input_map: { x: 't1' }, output_map: { y: 't2' } },
          { model_name: 'post', model_version: -1, input_map: { a: 't2', b: 'IN' }, output_map: { y: 'OUT' } },
        ],
      },
    });
  });

  it('answers ModelMetadata, ModelConfig and ModelReady over gRPC as for an ensemble', async () => {
    expect(await grpcCall('ModelMetadata', { name: 'chain' })).toMatchObject({ platform: 'ensemble', versions: ['1'] });
    const { config } = (await grpcCall('ModelConfig', { name: 'chain' })) as { config: Record<string, unknown> };
    expect(config).toMatchObject({ platform: 'ensemble', max_batch_size: 8 });
    const steps = (config['ensemble_scheduling'] as { step: Record<string, unknown>[] }).step;
    expect(steps.map((s) => [s['model_name'], String(s['model_version']), s['input_map'], s['output_map']])).toEqual([
      ['pre', '-1', { x: 'IN' }, { y: 't1' }],
      ['mid', '-1', { x: 't1' }, { y: 't2' }],
      ['post', '-1', { a: 't2', b: 'IN' }, { y: 'OUT' }],
    ]);
    expect(await grpcCall('ModelReady', { name: 'chain' })).toMatchObject({ ready: true });
  });

  it('refuses an ensemble whose steps are out of order, naming the field, and serves the others', async () => {
    const res = await fetch(`${base}/v2/repository/index`, { method: 'POST', body: '{}' });
    const index = (await res.json()) as { name: string; state: string; reason: string }[];
    const tangle = index.find((e) => e.name === 'tangle')!;
    expect(tangle.state).toBe('UNAVAILABLE');
    expect(tangle.reason).toMatch(/tangle\/config.pbtxt: ensemble_scheduling.step: .*step 1 \(post\): input 'a'/);
    expect(index.find((e) => e.name === 'chain')).toMatchObject({ state: 'READY' });
    const infer = await fetch(`${base}/v2/models/tangle/infer`, { method: 'POST', body: '{}' });
    expect(infer.status).toBe(404);
  });
});

describe('inss up --scenario: a scenario pipeline over simulated workers', () => {
  it("answers the last step's outputs, as its model answers the same input", async () => {
    const file = join(dir, 'twostep.json');
    const scenario = {
      name: 'twostep',
      description: 'two zoo models in sequence, each reading the image',
      gpus: [{ profile: 'rtx2060s', count: 1 }],
      models: ['resnet50', 'vgg16'].map((name) => ({ name, sloMs: 100, rate: { kind: 'constant', ratePerS: 0 } })),
      pipelines: [
        {
          name: 'twostep',
          sloMs: 400,
          rate: { kind: 'constant', ratePerS: 5 },
          steps: [
            { model: 'resnet50', inputMap: { input: 'IMAGE' }, outputMap: { output: 'f1' } },
            { model: 'vgg16', inputMap: { input: 'IMAGE' }, outputMap: { output: 'SCORES' } },
          ],
          inputs: ['IMAGE'],
          outputs: ['SCORES'],
        },
      ],
      durationS: 10,
      epochS: 1,
      swapS: 1,
      monitorWindowS: 3,
      seed: 1,
    };
    writeFileSync(file, JSON.stringify(ScenarioSchema.parse(scenario)));
    const { base: url } = await startUp(
      join(dir, 'scenario-state'),
      ['--scenario', file, '--policy', 'static-even', '--no-grpc'],
      { readyPath: '/v2/models/twostep/ready' },
    );
    const image = Float32Array.from(floats(Buffer.from(randomFloats(3 * 224 * 224, 44))));
    const direct = fp32ImageRequest(image);
    const viaPipeline = binaryInferBody(
      {
        inputs: [
          {
            name: 'IMAGE',
            shape: [1, 3, 224, 224],
            datatype: 'FP32',
            parameters: { binary_data_size: image.byteLength },
          },
        ],
        outputs: [{ name: 'SCORES', parameters: { binary_data: true } }],
      },
      [Buffer.from(image.buffer)],
    );
    const answer = async (model: string, r: { headers: Record<string, string>; body: Buffer }) => {
      const res = await fetch(`${url}/v2/models/${model}/infer`, { method: 'POST', headers: r.headers, body: r.body });
      const body = Buffer.from(await res.arrayBuffer());
      expect(res.status, body.toString('utf8', 0, 300)).toBe(200);
      return floats(body.subarray(Number(res.headers.get('inference-header-content-length'))));
    };
    const got = await answer('twostep', viaPipeline);
    expect(got).toHaveLength(1000);
    expect(got).toEqual(await answer('vgg16', direct));
    // The classification extension on the pipeline's output: the classes (with ImageNet labels) vgg16 answers.
    const classes = async (model: string, input: string, output: string) => {
      const header = Buffer.from(
        JSON.stringify({
          inputs: [
            { name: input, shape: [1, 3, 224, 224], datatype: 'FP32', parameters: { binary_data_size: 602112 } },
          ],
          outputs: [{ name: output, parameters: { classification: 3, binary_data: false } }],
        }),
      );
      const res = await fetch(`${url}/v2/models/${model}/infer`, {
        method: 'POST',
        headers: { 'inference-header-content-length': String(header.length) },
        body: Buffer.concat([header, Buffer.from(image.buffer)]),
      });
      const body = (await res.json()) as { outputs: { name: string; datatype: string; data: string[] }[] };
      expect(res.status, JSON.stringify(body).slice(0, 300)).toBe(200);
      expect(body.outputs[0]).toMatchObject({ name: output, datatype: 'BYTES' });
      return body.outputs[0]!.data;
    };
    const labelled = await classes('vgg16', 'input', 'output');
    for (const s of labelled) expect(s).toMatch(/^-?\d+\.\d{6}:\d+:[^:]+$/);
    expect(await classes('twostep', 'IMAGE', 'SCORES')).toEqual(labelled);
    // Input and output in a system shared-memory region of this host: no tensor crosses HTTP, and the region
    // holds what vgg16 answers.
    const key = `inss_pipeline_${process.pid}`;
    writeFileSync(`/dev/shm/${key}`, Buffer.concat([Buffer.from(image.buffer), Buffer.alloc(4000)]));
    try {
      const post = (path: string, body: object) =>
        fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({
          status: r.status,
          text: await r.text(),
        }));
      const region = { key: `/${key}`, offset: 0, byte_size: 606112 };
      expect((await post('/v2/systemsharedmemory/region/io/register', region)).status).toBe(200);
      const shm = (size: number, offset: number) => ({
        shared_memory_region: 'io',
        shared_memory_byte_size: size,
        shared_memory_offset: offset,
      });
      const r = await post('/v2/models/twostep/infer', {
        inputs: [{ name: 'IMAGE', shape: [1, 3, 224, 224], datatype: 'FP32', parameters: shm(602112, 0) }],
        outputs: [{ name: 'SCORES', parameters: shm(4000, 602112) }],
      });
      expect(r.status, r.text.slice(0, 300)).toBe(200);
      expect(r.text.length).toBeLessThan(1000);
      const inRegion = { shared_memory_region: 'io', shared_memory_byte_size: 4000 };
      expect(JSON.parse(r.text)).toMatchObject({
        outputs: [{ name: 'SCORES', datatype: 'FP32', shape: [1, 1000], parameters: inRegion }],
      });
      expect(floats(readFileSync(`/dev/shm/${key}`).subarray(602112))).toEqual(got);
    } finally {
      rmSync(`/dev/shm/${key}`, { force: true });
    }
  }, 240_000);
});

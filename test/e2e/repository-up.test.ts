// `inss up --model-repository DIR` as an operator runs it, with Triton's config.pbtxt for each model: an
// ONNX model of two inputs and two outputs (written here, real weights) and, where /usr/bin/python3 has
// Debian's torch, a TorchScript network of another input shape (scripted here). Neither has a latency
// profile: both are served from the first request (docs/online-profiling.md) by their real workers on
// the CPU behind a simulated GPU, over HTTP (JSON and binary) and gRPC, and every answer equals the
// framework's own output (an onnxruntime InferenceSession in this process; torch in Python) within 1e-4. A
// model whose config inss cannot honour is refused with the field named, and the others serve.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvePython, torchAvailable } from '../../agent/torchWorker.js';
import { inferenceService } from '../../scheduler/grpcProto.js';
import { binaryInferBody } from '../../tools/loadgen/binary.js';
import { difference, reference, testBatch } from '../support/onnxData.js';
import { twoInTwoOut, writeOnnxModel } from '../support/onnxModel.js';
import { stopAll, waitHttp200, startUp } from '../support/system.js';

const python = resolvePython();
const torchOk = await torchAvailable(python);
const dir = mkdtempSync(join(tmpdir(), 'inss-repository-up-'));
const repo = join(dir, 'models');
const pair = twoInTwoOut();
let inference: ort.InferenceSession;
let base = '';
let client: grpc.Client;

const PAIR_CONFIG = `# Triton's form, as a Triton user writes it
name: "pair"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  { name: "k" data_type: TYPE_INT64 dims: [ 3 ] },
  { name: "x" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [
  { name: "y" data_type: TYPE_FP32 dims: [ 2 ] },
  { name: "z" data_type: TYPE_BOOL dims: [ 3 ] }
]
instance_group [ { count: 1 kind: KIND_GPU } ]
dynamic_batching { max_queue_delay_microseconds: 100 }
parameters { key: "slo_ms" value: { string_value: "5000" } }
`;

const TINY_CONFIG = `name: "tiny"
backend: "pytorch"
max_batch_size: 4
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 3, 32, 32 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 10 ] } ]
parameters { key: "slo_ms" value: { string_value: "5000" } }
`;

// A variable dimension of an ONNX model: Triton takes it, inss serves it with the pytorch backend only
// (docs/model-repository.md).
const BROKEN_CONFIG = `name: "broken"
platform: "onnxruntime_onnx"
max_batch_size: 4
input [ { name: "t" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "u" data_type: TYPE_FP32 dims: [ 1 ] } ]
`;

// The TorchScript network and torch's own answer to an input file (FP32, [n, 3, 32, 32]).
const TINY_SCRIPT = `
import json, sys, torch
torch.manual_seed(3)
net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                          torch.nn.Flatten(), torch.nn.Linear(8, 10)).eval()
if sys.argv[1] == 'save':
    torch.jit.script(net).save(sys.argv[2])
else:
    m = torch.jit.load(sys.argv[2])
    x = torch.frombuffer(bytearray(open(sys.argv[3], 'rb').read()), dtype=torch.float32).view(-1, 3, 32, 32)
    with torch.inference_mode():
        print(json.dumps(m(x).flatten().tolist()))
`;

function model(name: string, config: string, file?: { name: string; write: (path: string) => unknown }): string {
  mkdirSync(join(repo, name, '1'), { recursive: true });
  writeFileSync(join(repo, name, 'config.pbtxt'), config);
  const path = join(repo, name, '1', file?.name ?? 'model.onnx');
  if (file) file.write(path);
  else writeFileSync(path, 'not a model');
  return path;
}

beforeAll(async () => {
  const pairFile = model('pair', PAIR_CONFIG, { name: 'model.onnx', write: (p) => writeOnnxModel(p, pair.graph) });
  model('broken', BROKEN_CONFIG);
  writeFileSync(join(dir, 'tiny.py'), TINY_SCRIPT);
  if (torchOk) {
    const path = join(repo, 'tiny', '1', 'model.pt');
    model('tiny', TINY_CONFIG, { name: 'model.pt', write: () => undefined });
    await promisify(execFile)(python, [join(dir, 'tiny.py'), 'save', path]);
  }
  inference = await ort.InferenceSession.create(pairFile);
  const { address } = ({ base } = await startUp(
    join(dir, 'state'),
    ['--model-repository', repo, '--simulate', 'rtx2060s:2'],
    {
      readyPath: '/v2/models/pair/ready',
      grpc: true,
    },
  ));
  if (torchOk) await waitHttp200(`${base}/v2/models/tiny/ready`, 120_000);
  const Service = inferenceService();
  client = new Service(address, grpc.credentials.createInsecure());
}, 240_000);

afterAll(async () => {
  client?.close();
  await inference?.release();
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

/** POSTs a binary infer request of `parts` (one per input of `names`) and returns its outputs' bytes. */
async function inferBinary(
  name: string,
  inputs: readonly { name: string; datatype: string; shape: number[]; bytes: Buffer }[],
  outputs: readonly string[],
): Promise<Map<string, Buffer>> {
  const r = binaryInferBody(
    {
      inputs: inputs.map((i) => ({
        name: i.name,
        datatype: i.datatype,
        shape: i.shape,
        parameters: { binary_data_size: i.bytes.length },
      })),
      outputs: outputs.map((o) => ({ name: o, parameters: { binary_data: true } })),
    },
    inputs.map((i) => i.bytes),
  );
  const res = await fetch(`${base}/v2/models/${name}/infer`, { method: 'POST', headers: r.headers, body: r.body });
  const body = Buffer.from(await res.arrayBuffer());
  expect(res.status, body.toString('utf8', 0, 300)).toBe(200);
  const headerLength = Number(res.headers.get('inference-header-content-length'));
  const header = JSON.parse(body.subarray(0, headerLength).toString('utf8')) as {
    outputs: { name: string; parameters: { binary_data_size: number } }[];
  };
  const out = new Map<string, Buffer>();
  let at = headerLength;
  for (const o of header.outputs) {
    out.set(o.name, body.subarray(at, at + o.parameters.binary_data_size));
    at += o.parameters.binary_data_size;
  }
  return out;
}

function grpcInfer(req: object): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const c = client as unknown as Record<
      string,
      (r: object, cb: (e: grpc.ServiceError | null, v?: Record<string, unknown>) => void) => void
    >;
    c['ModelInfer']!.call(client, req, (e, v) => (e ? reject(e) : resolve(v!)));
  });
}

describe('inss up --model-repository: an ONNX model of two inputs and two outputs', () => {
  it('answers a batch over HTTP binary as onnxruntime does', async () => {
    const b = testBatch(pair.signature, 3, 7);
    const want = await reference(inference, pair.signature, 3, b);
    const got = await inferBinary(
      'pair',
      pair.signature.inputs.map((s, k) => ({
        name: s.name,
        datatype: s.datatype,
        shape: [3, ...s.shape],
        bytes: b.parts[k]!,
      })),
      ['y', 'z'],
    );
    pair.signature.outputs.forEach((s, k) =>
      expect(difference(s.datatype, got.get(s.name)!, want[k]!)).toBeLessThan(1e-4),
    );
  });

  it('answers JSON data with JSON outputs (INT64 in, BOOL out)', async () => {
    const k = [1, 2, 3, 4, 0, 5];
    const x = [0.5, -1, 2, 0.25, 3, 1, -2, 0.125];
    const res = await fetch(`${base}/v2/models/pair/infer`, {
      method: 'POST',
      body: JSON.stringify({
        inputs: [
          { name: 'x', datatype: 'FP32', shape: [2, 4], data: x },
          { name: 'k', datatype: 'INT64', shape: [2, 3], data: k },
        ],
      }),
    });
    const body = (await res.json()) as {
      outputs: { name: string; datatype: string; shape: number[]; data: unknown[] }[];
    };
    expect(res.status, JSON.stringify(body)).toBe(200);
    const out = await inference.run({
      x: new ort.Tensor('float32', Float32Array.from(x), [2, 4]),
      k: new ort.Tensor('int64', BigInt64Array.from(k.map(BigInt)), [2, 3]),
    });
    const y = body.outputs.find((o) => o.name === 'y')!;
    const z = body.outputs.find((o) => o.name === 'z')!;
    expect(y).toMatchObject({ datatype: 'FP32', shape: [2, 2] });
    expect(z).toEqual({
      name: 'z',
      datatype: 'BOOL',
      shape: [2, 3],
      data: Array.from(out['z']!.data as Uint8Array, Boolean),
    });
    const ref = Array.from(out['y']!.data as Float32Array);
    (y.data as number[]).forEach((v, i) =>
      expect(Math.abs(v - ref[i]!)).toBeLessThan(1e-4 * Math.max(1, Math.abs(ref[i]!))),
    );
  });

  it('answers ModelInfer over gRPC with raw contents as onnxruntime does', async () => {
    const b = testBatch(pair.signature, 2, 11);
    const want = await reference(inference, pair.signature, 2, b);
    const r = await grpcInfer({
      model_name: 'pair',
      inputs: pair.signature.inputs.map((s) => ({ name: s.name, datatype: s.datatype, shape: [2, ...s.shape] })),
      outputs: [{ name: 'y' }, { name: 'z' }],
      raw_input_contents: b.parts,
    });
    const names = (r['outputs'] as { name: string }[]).map((o) => o.name);
    const raw = r['raw_output_contents'] as Buffer[];
    pair.signature.outputs.forEach((s, k) =>
      expect(difference(s.datatype, raw[names.indexOf(s.name)]!, want[k]!)).toBeLessThan(1e-4),
    );
  });

  it('returns the configuration as loaded; the broken model is refused with its field named', async () => {
    const config = (await (await fetch(`${base}/v2/models/pair/config`)).json()) as Record<string, unknown>;
    expect(config).toMatchObject({ name: 'pair', platform: 'onnxruntime_onnx', max_batch_size: 8 });
    expect((config['input'] as { name: string }[]).map((i) => i.name)).toEqual(['k', 'x']);
    const ready = await fetch(`${base}/v2/models/broken/ready`);
    expect(ready.status).toBe(503);
    expect(await ready.text()).toMatch(/input\[0\]\.dims\[0\]/);
    const index = (await (await fetch(`${base}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as {
      name: string;
      state: string;
    }[];
    expect(index.find((m) => m.name === 'broken')?.state).toBe('UNAVAILABLE');
    expect(index.find((m) => m.name === 'pair')?.state).toBe('READY');
  });
});

describe.skipIf(!torchOk)(`a TorchScript model of another input shape (${python} with torch)`, () => {
  async function torchReference(x: Buffer): Promise<number[]> {
    writeFileSync(join(dir, 'x.f32'), x);
    const r = await promisify(execFile)(python, [
      join(dir, 'tiny.py'),
      'run',
      join(repo, 'tiny', '1', 'model.pt'),
      join(dir, 'x.f32'),
    ]);
    return JSON.parse(r.stdout) as number[];
  }

  function closeTo(got: Float32Array, want: readonly number[]): void {
    expect(got).toHaveLength(want.length);
    const scale = Math.max(...want.map(Math.abs));
    for (let i = 0; i < want.length; i++) expect(Math.abs(got[i]! - want[i]!) / scale).toBeLessThan(1e-4);
  }

  const floats = (b: Buffer) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));

  it('answers over HTTP and gRPC as torch does', async () => {
    const x = Buffer.from(Float32Array.from({ length: 3 * 3 * 32 * 32 }, (_, i) => Math.sin(i * 0.37)).buffer);
    const want = await torchReference(x);
    const http = await inferBinary(
      'tiny',
      [{ name: 'INPUT__0', datatype: 'FP32', shape: [3, 3, 32, 32], bytes: x }],
      ['OUTPUT__0'],
    );
    closeTo(floats(http.get('OUTPUT__0')!), want);
    const r = await grpcInfer({
      model_name: 'tiny',
      inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [3, 3, 32, 32] }],
      raw_input_contents: [x],
    });
    closeTo(floats((r['raw_output_contents'] as Buffer[])[0]!), want);
  });
});

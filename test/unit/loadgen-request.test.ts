// `inss loadgen`'s requests, checked with the scheduler's own codec, and how their answers are judged.
import { describe, expect, it } from 'vitest';
import { fromHalf, parseInferRequest } from '../../scheduler/kserve.js';
import {
  encodeInferRequest,
  type InputTensor,
  judgeInferAnswer,
  type ModelMetadata,
  metadataSloMs,
  parseModelMetadata,
  randomInputs,
  requestInputs,
} from '../../tools/loadgen/request.js';
import type { ModelSignature } from '../../src/protocol/tensor.js';
import { Rng } from '../../src/workload/random.js';

const resnetMeta: ModelMetadata = {
  name: 'resnet50',
  versions: ['1'],
  platform: 'inss',
  inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 3, 224, 224] }],
  outputs: [{ name: 'output', datatype: 'FP32', shape: [-1, 1000] }],
  parameters: { slo_ms: 80 },
};

/** The signature the scheduler's codec checks against (shapes without the batch dimension). */
function signatureOf(meta: ModelMetadata): ModelSignature {
  const spec = (t: { name: string; datatype: string; shape: number[] }) => ({
    name: t.name,
    datatype: t.datatype as 'FP32',
    shape: t.shape.slice(1),
  });
  return { inputs: meta.inputs.map(spec), outputs: meta.outputs.map(spec) };
}

function inputsOf(meta: ModelMetadata, seed = 1): InputTensor[] {
  const specs = requestInputs(meta);
  if (!specs.ok) throw new Error(specs.error);
  return randomInputs(specs.value, new Rng(seed));
}

describe('requests', () => {
  it('reads the metadata: batch dimension 1, the SLO from parameters.slo_ms', () => {
    const parsed = parseModelMetadata(JSON.parse(JSON.stringify(resnetMeta)));
    expect(parsed.ok).toBe(true);
    expect(requestInputs(resnetMeta)).toEqual({
      ok: true,
      value: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224] }],
    });
    expect(metadataSloMs(resnetMeta)).toBe(80);
    expect(metadataSloMs({ ...resnetMeta, parameters: {} })).toBeUndefined();
    expect(metadataSloMs({ ...resnetMeta, parameters: { slo_ms: 'fast' } })).toBeUndefined();
  });

  it.each([
    [{ name: 'x', datatype: 'FP32', shape: [-1, -1, 3] }, /dimension 1 .* is variable/],
    [{ name: 'x', datatype: 'FP32', shape: [8, 3] }, /batch and must be -1 or 1, got 8/],
    [{ name: 'x', datatype: 'BYTES', shape: [-1, 3] }, /datatype BYTES is not supported/],
    [{ name: 'x', datatype: 'FP32', shape: [] }, /no batch dimension/],
  ])('refuses an input it cannot fill: %j', (input, message) => {
    const r = requestInputs({ ...resnetMeta, inputs: [input] });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(message);
  });

  it('says which metadata field is wrong', () => {
    const r = parseModelMetadata({ name: 'm', inputs: [{ name: 'x', datatype: 'FP32', shape: 'big' }], outputs: [] });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toContain('inputs.0.shape');
  });

  it('binary: the header length, binary_data_size and body add up, and the scheduler codec accepts it', () => {
    const req = encodeInferRequest(inputsOf(resnetMeta), 'binary');
    const h = Number(req.headers['inference-header-content-length']);
    const header = JSON.parse(req.body.subarray(0, h).toString('utf8')) as {
      inputs: { shape: number[]; parameters: { binary_data_size: number } }[];
      parameters: { binary_data_output: boolean };
    };
    expect(header.inputs[0]!.shape).toEqual([1, 3, 224, 224]);
    expect(header.inputs[0]!.parameters.binary_data_size).toBe(602_112);
    expect(header.parameters.binary_data_output).toBe(true);
    expect(req.body.length).toBe(h + 602_112);
    expect(req.headers['content-length']).toBe(String(req.body.length));
    const parsed = parseInferRequest(
      req.body,
      { inferenceHeaderLength: req.headers['inference-header-content-length'] },
      { name: 'resnet50', signature: signatureOf(resnetMeta) },
    );
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(parsed.request.outputs).toEqual([{ name: 'output', binary: true }]);
  });

  it('JSON and binary carry the same tensor in every datatype (several inputs)', () => {
    const datatypes = [
      'BOOL',
      'UINT8',
      'UINT16',
      'UINT32',
      'UINT64',
      'INT8',
      'INT16',
      'INT32',
      'INT64',
      'FP16',
      'FP32',
      'FP64',
    ];
    const meta: ModelMetadata = {
      name: 'all',
      inputs: datatypes.map((d) => ({ name: d.toLowerCase(), datatype: d, shape: [-1, 2, 5] })),
      outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 3] }],
    };
    const inputs = inputsOf(meta, 9);
    const sig = signatureOf(meta);
    const bin = encodeInferRequest(inputs, 'binary');
    const json = encodeInferRequest(inputs, 'json');
    expect(json.headers['inference-header-content-length']).toBeUndefined();
    expect(json.headers['content-type']).toBe('application/json');
    const a = parseInferRequest(
      bin.body,
      { inferenceHeaderLength: bin.headers['inference-header-content-length'] },
      { name: 'all', signature: sig },
    );
    const b = parseInferRequest(json.body, {}, { name: 'all', signature: sig });
    expect(a.ok && b.ok).toBe(true);
    if (!a.ok || !b.ok) return;
    for (let i = 0; i < datatypes.length; i++)
      expect(a.request.inputs[i]!.data.equals(b.request.inputs[i]!.data)).toBe(true);
    // Floats are k/256 with k in 0..127: exact in FP16 too.
    const fp16 = a.request.inputs[datatypes.indexOf('FP16')]!.data;
    const fp32 = a.request.inputs[datatypes.indexOf('FP32')]!.data;
    for (let k = 0; k < 10; k++) {
      expect(fromHalf(fp16.readUInt16LE(2 * k)) * 256).toBe(Math.round(fromHalf(fp16.readUInt16LE(2 * k)) * 256));
      expect(fp32.readFloatLE(4 * k)).toBeLessThan(0.5);
    }
  });

  it('the input depends on the seed only', () => {
    expect(
      encodeInferRequest(inputsOf(resnetMeta, 3), 'binary').body.equals(
        encodeInferRequest(inputsOf(resnetMeta, 3), 'binary').body,
      ),
    ).toBe(true);
    expect(
      encodeInferRequest(inputsOf(resnetMeta, 3), 'binary').body.equals(
        encodeInferRequest(inputsOf(resnetMeta, 4), 'binary').body,
      ),
    ).toBe(false);
  });
});

describe('judging answers', () => {
  const jsonBody = (o: unknown) => Buffer.from(JSON.stringify(o));
  const out = { name: 'output', datatype: 'FP32', shape: [1, 3] };

  it('ok: a JSON answer with outputs whose data fits the shape', () => {
    expect(
      judgeInferAnswer({ status: 200, body: jsonBody({ model_name: 'm', outputs: [{ ...out, data: [0, 1, 2] }] }) }),
    ).toEqual({ outcome: 'ok' });
  });

  it('ok: a binary answer whose sizes add up', () => {
    const header = jsonBody({ outputs: [{ ...out, parameters: { binary_data_size: 12 } }] });
    expect(
      judgeInferAnswer({
        status: 200,
        inferenceHeaderLength: String(header.length),
        body: Buffer.concat([header, Buffer.alloc(12)]),
      }),
    ).toEqual({ outcome: 'ok' });
  });

  it.each([
    ['no outputs', { status: 200, body: jsonBody({ outputs: [] }) }, /outputs/],
    [
      'too few values',
      { status: 200, body: jsonBody({ outputs: [{ ...out, data: [0] }] }) },
      /1 values for shape \[1,3\]/,
    ],
    ['not JSON', { status: 200, body: Buffer.from('<html>') }, /malformed JSON/],
    [
      'binary without the header',
      { status: 200, body: jsonBody({ outputs: [{ ...out, parameters: { binary_data_size: 12 } }] }) },
      /no Inference-Header-Content-Length/,
    ],
    ['short binary data', { status: 200, inferenceHeaderLength: '60', body: Buffer.alloc(10) }, /larger than the body/],
    ['another status', { status: 204, body: Buffer.alloc(0) }, /unexpected HTTP status 204/],
  ])('bad-response: %s', (_what, answer, message) => {
    const j = judgeInferAnswer(answer);
    expect(j.outcome).toBe('bad-response');
    if (j.outcome !== 'ok') expect(j.error).toMatch(message);
  });

  it("4xx and 5xx carry the protocol's error text", () => {
    expect(
      judgeInferAnswer({ status: 503, body: jsonBody({ error: 'dropped: the task cannot meet its 80 ms SLO' }) }),
    ).toEqual({ outcome: 'http-5xx', error: 'HTTP 503: dropped: the task cannot meet its 80 ms SLO' });
    expect(judgeInferAnswer({ status: 400, body: Buffer.from('plain text\nerror') })).toEqual({
      outcome: 'http-4xx',
      error: 'HTTP 400: plain text error',
    });
    const long = judgeInferAnswer({ status: 500, body: Buffer.from('x'.repeat(1000)) });
    if (long.outcome !== 'ok') expect(long.error.length).toBe(200);
  });
});

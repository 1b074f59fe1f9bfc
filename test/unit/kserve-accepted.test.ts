// The KServe v2 codec (scheduler/kserve.ts): every request form it accepts (JSON and binary data,
// mixed, with a batch dimension), and the outputs a request names.
import { describe, expect, it } from 'vitest';
import { inputSamples, requestBatch } from '../../scheduler/kserve.js';
import {
  type Model,
  type Headers,
  A,
  B,
  f32,
  i64,
  A_BYTES,
  B_BYTES,
  json,
  binary,
  inA,
  inB,
  binA,
  binB,
  parse,
  accepted,
} from '../support/kserve.js';

describe('parseInferRequest: accepted forms', () => {
  const cases: [string, { body: Buffer; headers: Headers }][] = [
    ['flat JSON data', { body: json({ inputs: [inA(), inB()] }), headers: {} }],
    [
      'nested JSON data (as the shape nests)',
      { body: json({ inputs: [inA({ data: [[A.slice(0, 3), A.slice(3)]] }), inB({ data: [B] })] }), headers: {} },
    ],
    [
      'nested JSON data (partly nested)',
      { body: json({ inputs: [inA({ data: [[1, 2], [3, [4, [5]]], 6] }), inB({ data: [[7], [-8]] })] }), headers: {} },
    ],
    ['inputs in another order than the signature', { body: json({ inputs: [inB(), inA()] }), headers: {} }],
    ['binary data for every input', binary({ inputs: [binA(), binB()] }, A_BYTES, B_BYTES)],
    ['binary data in request order, not signature order', binary({ inputs: [binB(), binA()] }, B_BYTES, A_BYTES)],
    ['mixed: a binary, b JSON', binary({ inputs: [binA(), inB()] }, A_BYTES)],
    ['mixed: a JSON, b binary', binary({ inputs: [inA(), binB()] }, B_BYTES)],
    ['header length given, no binary input', binary({ inputs: [inA(), inB()] })],
    [
      'JSON with content type application/octet-stream',
      { body: json({ inputs: [inA(), inB()] }), headers: { contentType: 'application/octet-stream' } },
    ],
    [
      'binary with content type application/json',
      {
        ...binary({ inputs: [binA(), binB()] }, A_BYTES, B_BYTES),
        headers: { ...binary({ inputs: [binA(), binB()] }).headers, contentType: 'application/json' },
      },
    ],
    [
      'header length with spaces around it',
      {
        ...binary({ inputs: [binA(), binB()] }, A_BYTES, B_BYTES),
        headers: { inferenceHeaderLength: ` ${json({ inputs: [binA(), binB()] }).length} ` },
      },
    ],
    [
      'fields inss does not use (KServe model_name, Triton priority/timeout, input parameters)',
      {
        body: json({
          model_name: 'two',
          parameters: { priority: 1, timeout: 5 },
          inputs: [inA({ parameters: { content_type: 'np' } }), inB()],
        }),
        headers: {},
      },
    ],
  ];
  it.each(cases)('%s', (_what, { body, headers }) => {
    const req = accepted(parse(body, headers));
    expect(req.inputs.map((i) => [i.name, i.datatype, i.shape])).toEqual([
      ['a', 'FP32', [1, 2, 3]],
      ['b', 'INT64', [1, 2]],
    ]);
    expect(req.inputs[0]!.data.equals(A_BYTES)).toBe(true);
    expect(req.inputs[1]!.data.equals(B_BYTES)).toBe(true);
    expect(req.outputs).toEqual([
      { name: 'y', binary: false },
      { name: 'z', binary: false },
    ]);
    expect(req).not.toHaveProperty('id');
  });

  it('binary input data is a view of the body, not a copy', () => {
    const { body, headers } = binary({ inputs: [binA(), binB()] }, A_BYTES, B_BYTES);
    const req = accepted(parse(body, headers));
    expect(req.inputs[0]!.data.buffer).toBe(body.buffer);
  });

  it('echoes the id', () => {
    expect(accepted(parse(json({ id: 'req-7', inputs: [inA(), inB()] }))).id).toBe('req-7');
    expect(accepted(parse(json({ id: '', inputs: [inA(), inB()] }))).id).toBe('');
  });

  it('accepts a zero-element tensor', () => {
    const m: Model = {
      name: 'e',
      signature: {
        inputs: [{ name: 'x', datatype: 'FP32', shape: [0] }],
        outputs: [{ name: 'y', datatype: 'FP32', shape: [1] }],
      },
    };
    expect(
      accepted(parse(json({ inputs: [{ name: 'x', shape: [1, 0], datatype: 'FP32', data: [] }] }), {}, m)).inputs[0]!
        .data.length,
    ).toBe(0);
  });
});

describe('parseInferRequest: requests that carry a batch', () => {
  it('takes k samples (JSON and binary), splits them in order, and checks shared-memory outputs for k rows', () => {
    const two = [...A, ...A.map((x) => x + 10)];
    const req = accepted(
      parse(json({ inputs: [inA({ shape: [2, 2, 3], data: two }), inB({ shape: [2, 2], data: [...B, 1, 2] })] })),
    );
    expect(req.inputs.map((i) => i.shape)).toEqual([
      [2, 2, 3],
      [2, 2],
    ]);
    const samples = inputSamples(req.inputs[0]!);
    expect(
      samples.map((x) =>
        Array.from(new Float32Array(x.data.buffer.slice(x.data.byteOffset, x.data.byteOffset + x.data.length))),
      ),
    ).toEqual([A, A.map((x) => x + 10)]);
    const bin = binary(
      { inputs: [binA(48), { ...binB(32), shape: [2, 2] }].map((x, k) => (k === 0 ? { ...x, shape: [2, 2, 3] } : x)) },
      f32(two),
      i64([...B, 1, 2]),
    );
    const b = accepted(parse(bin.body, bin.headers));
    expect(inputSamples(b.inputs[1]!).map((x) => x.data.length)).toEqual([16, 16]);
    expect(requestBatch(b)).toBe(2);
    // An output region must hold all k rows of it.
    const small = parse(
      json({
        inputs: [inA({ shape: [2, 2, 3], data: two }), inB({ shape: [2, 2], data: [...B, 1, 2] })],
        outputs: [{ name: 'y', parameters: { shared_memory_region: 'r', shared_memory_byte_size: 4 } }],
      }),
    );
    expect(small.ok).toBe(false);
  });
});

describe('parseInferRequest: requested outputs', () => {
  const cases: [string, object, { name: string; binary: boolean; classCount?: number }[]][] = [
    [
      'none named: all, as JSON',
      {},
      [
        { name: 'y', binary: false },
        { name: 'z', binary: false },
      ],
    ],
    [
      'none named, binary_data_output: all binary',
      { parameters: { binary_data_output: true } },
      [
        { name: 'y', binary: true },
        { name: 'z', binary: true },
      ],
    ],
    [
      'none named, binary_data_output false',
      { parameters: { binary_data_output: false } },
      [
        { name: 'y', binary: false },
        { name: 'z', binary: false },
      ],
    ],
    [
      'an empty list means all',
      { outputs: [] },
      [
        { name: 'y', binary: false },
        { name: 'z', binary: false },
      ],
    ],
    ['one named, JSON', { outputs: [{ name: 'z' }] }, [{ name: 'z', binary: false }]],
    [
      'named in request order, binary_data per output',
      { outputs: [{ name: 'z', parameters: { binary_data: true } }, { name: 'y' }] },
      [
        { name: 'z', binary: true },
        { name: 'y', binary: false },
      ],
    ],
    [
      'binary_data_output applies where binary_data is absent',
      { parameters: { binary_data_output: true }, outputs: [{ name: 'y' }, { name: 'z' }] },
      [
        { name: 'y', binary: true },
        { name: 'z', binary: true },
      ],
    ],
    [
      'binary_data false overrides binary_data_output',
      {
        parameters: { binary_data_output: true },
        outputs: [{ name: 'y', parameters: { binary_data: false } }, { name: 'z' }],
      },
      [
        { name: 'y', binary: false },
        { name: 'z', binary: true },
      ],
    ],
    // tritonclient.http InferRequestedOutput('y', class_count=2): {"classification": 2, "binary_data": true}.
    [
      'classification: the top classes, binary or not',
      { outputs: [{ name: 'y', parameters: { classification: 2, binary_data: true } }, { name: 'z' }] },
      [
        { name: 'y', binary: true, classCount: 2 },
        { name: 'z', binary: false },
      ],
    ],
  ];
  it.each(cases)('%s', (_what, extra, outputs) => {
    expect(accepted(parse(json({ inputs: [inA(), inB()], ...extra }))).outputs).toEqual(outputs);
  });
});

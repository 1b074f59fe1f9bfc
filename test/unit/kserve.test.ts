// The KServe v2 codec (scheduler/kserve.ts): every accepted request form, every rejection with the
// field it names, each datatype both ways, and the wire bytes of tritonclient.http and KServe's client.
import { describe, expect, it } from 'vitest';
import {
  decodeValues,
  encodeInferResponse,
  errorBody,
  fromHalf,
  type InferParse,
  type InferRequest,
  inputSamples,
  modelMetadata,
  parseInferRequest,
  requestBatch,
  resolveRegionInput,
  serverMetadata,
  toHalf,
} from '../../scheduler/kserve.js';
import { type Datatype, type ModelSignature } from '../../src/protocol/tensor.js';
import { serializeBytes } from '../../src/serving/classification.js';

type Model = { name: string; signature: ModelSignature; maxBatchSize?: number };
type Headers = { contentType?: string; inferenceHeaderLength?: string };

/** Two inputs of different datatypes and two outputs: enough to tell order, mixing and per-output choices apart. */
const TWO: Model = {
  name: 'two',
  signature: {
    inputs: [
      { name: 'a', datatype: 'FP32', shape: [2, 3] },
      { name: 'b', datatype: 'INT64', shape: [2] },
    ],
    outputs: [
      { name: 'y', datatype: 'FP32', shape: [2] },
      { name: 'z', datatype: 'BOOL', shape: [3] },
    ],
  },
};
const RESNET: Model = {
  name: 'resnet50',
  signature: {
    inputs: [{ name: 'input', datatype: 'FP32', shape: [3, 224, 224] }],
    outputs: [{ name: 'output', datatype: 'FP32', shape: [1000] }],
  },
};

const A = [1, 2, 3, 4, 5, 6];
const B = [7, -8];
const f32 = (xs: readonly number[]) => Buffer.from(Float32Array.from(xs).buffer);
const i64 = (xs: readonly number[]) => Buffer.from(BigInt64Array.from(xs, (x) => BigInt(x)).buffer);
const A_BYTES = f32(A);
const B_BYTES = i64(B);

const json = (x: unknown) => Buffer.from(JSON.stringify(x));

/** A binary-extension body: JSON header, then the blocks; and the header that says where the JSON ends. */
function binary(header: unknown, ...blocks: Buffer[]): { body: Buffer; headers: Headers } {
  const h = json(header);
  return { body: Buffer.concat([h, ...blocks]), headers: { inferenceHeaderLength: String(h.length) } };
}

const inA = (extra: object = {}) => ({ name: 'a', shape: [1, 2, 3], datatype: 'FP32', data: A, ...extra });
const inB = (extra: object = {}) => ({ name: 'b', shape: [1, 2], datatype: 'INT64', data: B, ...extra });
const binA = (size = 24) => ({ name: 'a', shape: [1, 2, 3], datatype: 'FP32', parameters: { binary_data_size: size } });
const binB = (size = 16) => ({ name: 'b', shape: [1, 2], datatype: 'INT64', parameters: { binary_data_size: size } });

function parse(body: Buffer, headers: Headers = {}, model: Model = TWO): InferParse {
  return parseInferRequest(body, headers, model);
}

function accepted(r: InferParse): InferRequest {
  if (!r.ok) throw new Error(`expected the request to be accepted, got: ${r.error}`);
  return r.request;
}

function rejected(r: InferParse): string {
  if (r.ok) throw new Error('expected the request to be rejected');
  expect(r.status).toBe(400);
  return r.error;
}

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

describe('parseInferRequest: rejections name what is wrong', () => {
  const withBody = (n: number): Buffer =>
    Buffer.concat([json({ inputs: [inA(), inB()] }), Buffer.alloc(n)]).subarray(0, 300);
  const header = json({ inputs: [binA(), binB()] });
  const cases: [string, Buffer, Headers, Model, string[]][] = [
    ['malformed JSON', Buffer.from('{"inputs": ['), {}, TWO, ['malformed JSON: ']],
    ['an empty body', Buffer.alloc(0), {}, TWO, ['malformed JSON: ']],
    ['a JSON array, not an object', json([1]), {}, TWO, ['invalid inference request: (body): expected a JSON object']],
    ['no inputs field', json({}), {}, TWO, ['invalid inference request: inputs: ']],
    [
      'an input without a name',
      json({ inputs: [{ shape: [1, 2, 3], datatype: 'FP32', data: A }] }),
      {},
      TWO,
      ['inputs[0].name: '],
    ],
    [
      'a negative dimension',
      json({ inputs: [inA({ shape: [1, -2, 3] }), inB()] }),
      {},
      TWO,
      ['inputs[0].shape[1]: expected a dimension >= 0'],
    ],
    [
      'a fractional dimension',
      json({ inputs: [inA(), inB({ shape: [1, 2.5] })] }),
      {},
      TWO,
      ['inputs[1].shape[1]: expected an integer'],
    ],
    [
      'data that is not an array',
      json({ inputs: [inA({ data: 5 }), inB()] }),
      {},
      TWO,
      ['inputs[0].data: expected an array'],
    ],
    ['an id that is not a string', json({ id: 5, inputs: [inA(), inB()] }), {}, TWO, ['id: ']],
    [
      'an unknown input',
      json({ inputs: [{ name: 'x', shape: [1, 3, 224, 224], datatype: 'FP32', data: [] }] }),
      {},
      RESNET,
      ["input 'x' is not an input of model 'resnet50' (inputs: input)"],
    ],
    [
      'a duplicate input',
      json({ inputs: [inA(), inB(), inA()] }),
      {},
      TWO,
      ["inputs[2].name: input 'a' is given twice"],
    ],
    ['a missing input', json({ inputs: [inA()] }), {}, TWO, ["inputs: missing 'b' (model 'two' takes a, b)"]],
    ['no inputs at all', json({ inputs: [] }), {}, TWO, ["inputs: missing 'a', 'b'"]],
    [
      'a wrong datatype',
      json({ inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'INT64', data: [] }] }),
      {},
      RESNET,
      ['inputs[0].datatype: expected FP32, got INT64'],
    ],
    [
      'BYTES (not served)',
      json({ inputs: [inA({ datatype: 'BYTES' }), inB()] }),
      {},
      TWO,
      ['inputs[0].datatype: expected FP32, got BYTES'],
    ],
    [
      'a wrong shape',
      json({ inputs: [{ name: 'input', shape: [1, 3, 224], datatype: 'FP32', data: [] }] }),
      {},
      RESNET,
      ['inputs[0].shape: expected [k,3,224,224] with 1 <= k <= 8, got [1,3,224]'],
    ],
    [
      'batch dimension 9 (over max_batch_size)',
      json({ inputs: [inA(), inB({ shape: [9, 2] })] }),
      {},
      TWO,
      ["inputs[1].shape: batch dimension 9 is larger than the model's max_batch_size 8"],
    ],
    [
      'batch dimensions that differ',
      json({ inputs: [inA(), inB({ shape: [2, 2], data: [1, 2, 3, 4] })] }),
      {},
      TWO,
      ['inputs[1].shape: batch dimension 2, but the inputs before it have 1'],
    ],
    [
      'batch dimension 4 with one sample of data',
      json({ inputs: [inA(), inB({ shape: [4, 2] })] }),
      {},
      { ...TWO, maxBatchSize: 4 },
      ['inputs[1].data: expected 8 values, got 2'],
    ],
    [
      'batch dimension 0',
      json({ inputs: [inA({ shape: [0, 2, 3] }), inB()] }),
      {},
      TWO,
      ['inputs[0].shape: batch dimension 0: a request carries at least one sample'],
    ],
    [
      'no batch dimension',
      json({ inputs: [inA({ shape: [2, 3] }), inB()] }),
      {},
      TWO,
      [
        'inputs[0].shape: expected [k,2,3] with 1 <= k <= 8, got [2,3] (the first dimension is the batch dimension: add it)',
      ],
    ],
    [
      'too few values',
      json({ inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', data: [1, 2, 3] }] }),
      {},
      RESNET,
      ['inputs[0].data: expected 150528 values, got 3'],
    ],
    [
      'too many values (nested)',
      json({ inputs: [inA({ data: [A, [7]] }), inB()] }),
      {},
      TWO,
      ['inputs[0].data: expected 6 values, got 7'],
    ],
    ['missing data', json({ inputs: [inA({ data: undefined }), inB()] }), {}, TWO, ['inputs[0].data: missing']],
    [
      'a string in FP32 data',
      json({ inputs: [inA({ data: [1, 2, 'x', 4, 5, 6] }), inB()] }),
      {},
      TWO,
      ['inputs[0].data: element 2 (row-major) of input \'a\': expected a number, got "x"'],
    ],
    [
      'null in nested data',
      json({
        inputs: [
          inA({
            data: [
              [1, 2, 3],
              [4, null, 6],
            ],
          }),
          inB(),
        ],
      }),
      {},
      TWO,
      ["inputs[0].data: element 4 (row-major) of input 'a'", 'got null'],
    ],
    [
      'an object in data',
      json({ inputs: [inA({ data: [1, 2, 3, 4, 5, { v: 6 }] }), inB()] }),
      {},
      TWO,
      ['element 5', 'expected a number, got an object'],
    ],
    [
      'a boolean in INT64 data',
      json({ inputs: [inA(), inB({ data: [true, 1] })] }),
      {},
      TWO,
      ["inputs[1].data: element 0 (row-major) of input 'b': expected a number, got true"],
    ],
    [
      'a fraction in INT64 data',
      json({ inputs: [inA(), inB({ data: [1, 1.5] })] }),
      {},
      TWO,
      ["inputs[1].data: element 1 (row-major) of input 'b': expected an integer (INT64), got 1.5"],
    ],
    [
      'INT64 beyond 2^53 in JSON',
      json({ inputs: [inA(), inB({ data: [2 ** 53, 0] })] }),
      {},
      TWO,
      ['inputs[1].data: element 0', 'is out of range for INT64', 'send them as binary data'],
    ],
    [
      'FP32 beyond its range',
      json({ inputs: [inA({ data: [1, 2, 3, 1e39, 5, 6] }), inB()] }),
      {},
      TWO,
      ['inputs[0].data: element 3', '1e+39 is out of range for FP32'],
    ],
    [
      'header length that is not a number',
      header,
      { inferenceHeaderLength: 'abc' },
      TWO,
      ['Inference-Header-Content-Length "abc" is not a non-negative integer'],
    ],
    [
      'negative header length',
      header,
      { inferenceHeaderLength: '-5' },
      TWO,
      ['Inference-Header-Content-Length "-5" is not a non-negative integer'],
    ],
    ['fractional header length', header, { inferenceHeaderLength: '1.5' }, TWO, ['is not a non-negative integer']],
    ['two header values joined', header, { inferenceHeaderLength: '10, 10' }, TWO, ['is not a non-negative integer']],
    [
      'header length beyond the body',
      withBody(300),
      { inferenceHeaderLength: '500' },
      TWO,
      ['Inference-Header-Content-Length 500 is larger than the body (300 bytes)'],
    ],
    [
      'header length that cuts the JSON',
      header,
      { inferenceHeaderLength: String(header.length - 1) },
      TWO,
      ['malformed JSON'],
    ],
    [
      'binary_data_size without the header',
      header,
      {},
      TWO,
      ['inputs[0].parameters.binary_data_size is set, but the request has no Inference-Header-Content-Length header'],
    ],
    [
      'binary data without the header',
      Buffer.concat([header, A_BYTES, B_BYTES]),
      {},
      TWO,
      ['malformed JSON: ', 'needs the Inference-Header-Content-Length header'],
    ],
    [
      'binary_data_size that is not an integer',
      binary({ inputs: [binA(), { ...binB(), parameters: { binary_data_size: '16' } }] }, A_BYTES, B_BYTES).body,
      binary({ inputs: [binA(), { ...binB(), parameters: { binary_data_size: '16' } }] }).headers,
      TWO,
      ['inputs[1].parameters.binary_data_size: expected a non-negative integer, got "16"'],
    ],
    [
      'binary_data_size that does not match the shape',
      binary({ inputs: [binA(20), binB()] }, A_BYTES.subarray(0, 20), B_BYTES).body,
      binary({ inputs: [binA(20), binB()] }).headers,
      TWO,
      ['inputs[0].parameters.binary_data_size: 20 bytes, but shape [1,2,3] of FP32 is 24 bytes'],
    ],
    [
      'binary data shorter than the sizes',
      binary({ inputs: [binA(), binB()] }, A_BYTES, B_BYTES.subarray(0, 12)).body,
      binary({ inputs: [binA(), binB()] }).headers,
      TWO,
      [
        'inputs[1].parameters.binary_data_size: the binary data runs past the end of the body',
        'need 40 bytes',
        'there are 36',
      ],
    ],
    [
      'binary data longer than the sizes',
      binary({ inputs: [binA(), binB()] }, A_BYTES, B_BYTES, Buffer.alloc(4)).body,
      binary({ inputs: [binA(), binB()] }).headers,
      TWO,
      ["the binary data after the JSON header is 44 bytes, but the inputs' binary_data_size add up to 40"],
    ],
    [
      'bytes after a JSON-only header',
      binary({ inputs: [inA(), inB()] }, Buffer.alloc(3)).body,
      binary({ inputs: [inA(), inB()] }).headers,
      TWO,
      ["the binary data after the JSON header is 3 bytes, but the inputs' binary_data_size add up to 0"],
    ],
    [
      'both data and binary_data_size',
      binary({ inputs: [{ ...binA(), data: A }, binB()] }, A_BYTES, B_BYTES).body,
      binary({ inputs: [{ ...binA(), data: A }, binB()] }).headers,
      TWO,
      ['inputs[0]: has both data and parameters.binary_data_size'],
    ],
    [
      'shared memory input with data too',
      json({ inputs: [inA({ parameters: { shared_memory_region: 'r', shared_memory_byte_size: 24 } }), inB()] }),
      {},
      TWO,
      ['inputs[0]: has both parameters.shared_memory_region and data'],
    ],
    [
      'shared memory input of the wrong size',
      json({
        inputs: [
          inA({ data: undefined, parameters: { shared_memory_region: 'r', shared_memory_byte_size: 20 } }),
          inB(),
        ],
      }),
      {},
      TWO,
      ['inputs[0].parameters.shared_memory_byte_size: 20 bytes, but the input is 24 bytes'],
    ],
    [
      'shared memory size without a region',
      json({ inputs: [inA({ data: undefined, parameters: { shared_memory_byte_size: 24 } }), inB()] }),
      {},
      TWO,
      ['inputs[0].parameters.shared_memory_byte_size: given without shared_memory_region'],
    ],
    [
      'a region name with a path in it',
      json({
        inputs: [
          inA({ data: undefined, parameters: { shared_memory_region: '../x', shared_memory_byte_size: 24 } }),
          inB(),
        ],
      }),
      {},
      TWO,
      ['inputs[0].parameters.shared_memory_region: expected a region name'],
    ],
    [
      'a negative shared memory offset',
      json({
        inputs: [
          inA({
            data: undefined,
            parameters: { shared_memory_region: 'r', shared_memory_byte_size: 24, shared_memory_offset: -1 },
          }),
          inB(),
        ],
      }),
      {},
      TWO,
      ['inputs[0].parameters.shared_memory_offset: expected a non-negative integer, got -1'],
    ],
    [
      'an unknown requested output',
      json({ inputs: [inA(), inB()], outputs: [{ name: 'nope' }] }),
      {},
      TWO,
      ["outputs[0].name: 'nope' is not an output of model 'two' (outputs: y, z)"],
    ],
    [
      'a duplicate requested output',
      json({ inputs: [inA(), inB()], outputs: [{ name: 'y' }, { name: 'y' }] }),
      {},
      TWO,
      ["outputs[1].name: output 'y' is requested twice"],
    ],
    [
      'binary_data that is not a boolean',
      json({ inputs: [inA(), inB()], outputs: [{ name: 'y', parameters: { binary_data: 'true' } }] }),
      {},
      TWO,
      ['outputs[0].parameters.binary_data: expected true or false, got "true"'],
    ],
    [
      'binary_data_output that is not a boolean',
      json({ inputs: [inA(), inB()], parameters: { binary_data_output: 1 } }),
      {},
      TWO,
      ['parameters.binary_data_output: expected true or false, got 1'],
    ],
    [
      'shared memory output without its size',
      json({
        inputs: [inA(), inB()],
        outputs: [{ name: 'y', parameters: { binary_data: false, shared_memory_region: 'r' } }],
      }),
      {},
      TWO,
      ['outputs[0].parameters.shared_memory_byte_size: expected a non-negative integer, got nothing'],
    ],
    [
      'shared memory output too small for it',
      json({
        inputs: [inA(), inB()],
        outputs: [{ name: 'y', parameters: { shared_memory_region: 'r', shared_memory_byte_size: 4 } }],
      }),
      {},
      TWO,
      ["outputs[0].parameters.shared_memory_byte_size: 4 bytes, but output 'y' is 8 bytes"],
    ],
    [
      'classification that is not a number',
      json({ inputs: [inA(), inB()], outputs: [{ name: 'y', parameters: { classification: '2' } }] }),
      {},
      TWO,
      ['outputs[0].parameters.classification: expected an integer >= 1 (the number of top classes to return), got "2"'],
    ],
    [
      'classification 0',
      json({ inputs: [inA(), inB()], outputs: [{ name: 'y', parameters: { classification: 0 } }] }),
      {},
      TWO,
      ['outputs[0].parameters.classification: expected an integer >= 1', 'got 0'],
    ],
    [
      'classification 1.5',
      json({ inputs: [inA(), inB()], outputs: [{ name: 'y', parameters: { classification: 1.5 } }] }),
      {},
      TWO,
      ['outputs[0].parameters.classification: expected an integer >= 1', 'got 1.5'],
    ],
    [
      'more classes than the output has',
      json({ inputs: [inA(), inB()], outputs: [{ name: 'y', parameters: { classification: 3 } }] }),
      {},
      TWO,
      ["outputs[0].parameters.classification: 3 classes asked, but output 'y' has 2 a sample"],
    ],
    [
      'classification of a BOOL output',
      json({ inputs: [inA(), inB()], outputs: [{ name: 'z', parameters: { classification: 1 } }] }),
      {},
      TWO,
      ["outputs[0].parameters.classification: output 'z' is BOOL, which has no class order"],
    ],
    [
      'classification into a shared-memory region',
      json({
        inputs: [inA(), inB()],
        outputs: [
          { name: 'y', parameters: { classification: 1, shared_memory_region: 'r', shared_memory_byte_size: 8 } },
        ],
      }),
      {},
      TWO,
      ['outputs[0].parameters.classification: cannot be set with shared_memory_region'],
    ],
  ];
  it.each(cases)('%s', (_what, body, headers, model, texts) => {
    const error = rejected(parse(body, headers, model));
    for (const t of texts) expect(error).toContain(t);
  });

  const SCALARS: [Datatype, unknown, string][] = [
    ['BOOL', 1, 'expected true or false, got 1'],
    ['BOOL', 'true', 'expected true or false, got "true"'],
    ['UINT8', 256, '256 is out of range for UINT8 (0 to 255)'],
    ['UINT8', -1, '-1 is out of range for UINT8 (0 to 255)'],
    ['INT8', 128, '128 is out of range for INT8 (-128 to 127)'],
    ['UINT16', 65536, 'out of range for UINT16'],
    ['INT16', -32769, 'out of range for INT16'],
    ['UINT32', 2 ** 32, 'out of range for UINT32'],
    ['INT32', 2 ** 31, 'out of range for INT32'],
    ['UINT64', -1, 'out of range for UINT64'],
    ['UINT64', 2 ** 60, 'out of range for UINT64'],
    ['INT32', 0.5, 'expected an integer (INT32), got 0.5'],
    ['FP16', 70000, '70000 is out of range for FP16 (largest magnitude 65504)'],
    ['FP16', 65520, '65520 is out of range for FP16'],
    ['FP64', '1.0', 'expected a number, got "1.0"'],
  ];
  it.each(SCALARS)('%s value %j is refused', (datatype, value, text) => {
    const m: Model = {
      name: 'one',
      signature: {
        inputs: [{ name: 'x', datatype, shape: [2] }],
        outputs: [{ name: 'y', datatype: 'FP32', shape: [1] }],
      },
    };
    const ok = datatype === 'BOOL' ? true : 0;
    const error = rejected(parse(json({ inputs: [{ name: 'x', shape: [1, 2], datatype, data: [ok, value] }] }), {}, m));
    expect(error.startsWith("inputs[0].data: element 1 (row-major) of input 'x': ")).toBe(true);
    expect(error).toContain(text);
  });
});

describe('parseInferRequest never throws', () => {
  it('on data nested deeper than the call stack', () => {
    const deep = `{"inputs":[{"name":"a","shape":[1,2,3],"datatype":"FP32","data":${'['.repeat(200_000)}${']'.repeat(200_000)}},${JSON.stringify(inB())}]}`;
    expect(rejected(parse(Buffer.from(deep)))).toBe('inputs[0].data: expected 6 values, got 0');
  });

  it('on a deeply nested object inside the data', () => {
    const deep = `{"inputs":[{"name":"a","shape":[1,2,3],"datatype":"FP32","data":[1,2,3,4,5,${'{"v":'.repeat(100_000)}1${'}'.repeat(100_000)}]},${JSON.stringify(inB())}]}`;
    expect(rejected(parse(Buffer.from(deep)))).toContain(
      "element 5 (row-major) of input 'a': expected a number, got an object",
    );
  });

  it('and keeps error texts short when the client sends long strings', () => {
    const long = 'x'.repeat(1_000_000);
    for (const body of [
      json({ inputs: [{ name: long, shape: [1], datatype: 'FP32', data: [1] }] }),
      json({ inputs: [inA({ datatype: long }), inB()] }),
      json({ inputs: [inA({ data: [long, 2, 3, 4, 5, 6] }), inB()] }),
    ]) {
      expect(rejected(parse(body)).length).toBeLessThan(300);
    }
  });

  it('on truncated, corrupted and mis-framed bodies', () => {
    // A fixed LCG: the same 600 variants every run.
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const good = binary(
      { id: 'x', inputs: [binA(), inB()], outputs: [{ name: 'z', parameters: { binary_data: true } }] },
      A_BYTES,
    );
    const headerLength = Number(good.headers.inferenceHeaderLength);
    for (let i = 0; i < 600; i++) {
      const body = Buffer.from(good.body);
      let headers: Headers = good.headers;
      switch (i % 3) {
        case 0:
          body[rand(body.length)] = rand(256);
          break;
        case 1:
          headers = { inferenceHeaderLength: String(rand(body.length + 10)) };
          break;
        case 2:
          headers = { inferenceHeaderLength: String(Math.min(headerLength, body.length)) };
          break;
      }
      const cut = i % 3 === 2 ? body.subarray(0, rand(body.length + 1)) : body;
      const r = parse(cut, headers);
      if (!r.ok) {
        expect(r.status).toBe(400);
        expect(r.error.length).toBeGreaterThan(0);
      } else {
        expect(r.request.inputs.map((x) => x.data.length)).toEqual([24, 16]);
      }
    }
  });
});

/** One value list per datatype, the bytes they must become, and the JSON values they come back as. */
const ROUND_TRIP: [Datatype, unknown[], Buffer, unknown[]][] = [
  ['BOOL', [true, false, false, true], Buffer.from([1, 0, 0, 1]), [true, false, false, true]],
  ['UINT8', [0, 1, 128, 255], Buffer.from(Uint8Array.from([0, 1, 128, 255]).buffer), [0, 1, 128, 255]],
  ['INT8', [-128, -1, 0, 127], Buffer.from(Int8Array.from([-128, -1, 0, 127]).buffer), [-128, -1, 0, 127]],
  ['UINT16', [0, 1, 40000, 65535], Buffer.from(Uint16Array.from([0, 1, 40000, 65535]).buffer), [0, 1, 40000, 65535]],
  [
    'INT16',
    [-32768, -1, 0, 32767],
    Buffer.from(Int16Array.from([-32768, -1, 0, 32767]).buffer),
    [-32768, -1, 0, 32767],
  ],
  [
    'UINT32',
    [0, 1, 3e9, 4294967295],
    Buffer.from(Uint32Array.from([0, 1, 3e9, 4294967295]).buffer),
    [0, 1, 3e9, 4294967295],
  ],
  [
    'INT32',
    [-2147483648, -1, 0, 2147483647],
    Buffer.from(Int32Array.from([-2147483648, -1, 0, 2147483647]).buffer),
    [-2147483648, -1, 0, 2147483647],
  ],
  [
    'UINT64',
    [0, 1, 2 ** 40, Number.MAX_SAFE_INTEGER],
    Buffer.from(BigUint64Array.from([0n, 1n, 2n ** 40n, 2n ** 53n - 1n]).buffer),
    [0, 1, 2 ** 40, Number.MAX_SAFE_INTEGER],
  ],
  [
    'INT64',
    [-Number.MAX_SAFE_INTEGER, -1, 0, Number.MAX_SAFE_INTEGER],
    Buffer.from(BigInt64Array.from([-(2n ** 53n) + 1n, -1n, 0n, 2n ** 53n - 1n]).buffer),
    [-Number.MAX_SAFE_INTEGER, -1, 0, Number.MAX_SAFE_INTEGER],
  ],
  [
    'FP16',
    [1, -2, 0.5, 65504],
    Buffer.from(Uint16Array.from([0x3c00, 0xc000, 0x3800, 0x7bff]).buffer),
    [1, -2, 0.5, 65504],
  ],
  [
    'FP16',
    [0.1, 2 ** -24, -65504, 1 / 3],
    Buffer.from(Uint16Array.from([0x2e66, 0x0001, 0xfbff, 0x3555]).buffer),
    [fromHalf(0x2e66), 2 ** -24, -65504, fromHalf(0x3555)],
  ],
  [
    'FP32',
    [0.1, -1.5, 3.4e38, 1e-45],
    Buffer.from(Float32Array.from([0.1, -1.5, 3.4e38, 1e-45]).buffer),
    [Math.fround(0.1), -1.5, Math.fround(3.4e38), Math.fround(1e-45)],
  ],
  [
    'FP64',
    [0.1, -1e308, 5e-324, 1 / 3],
    Buffer.from(Float64Array.from([0.1, -1e308, 5e-324, 1 / 3]).buffer),
    [0.1, -1e308, 5e-324, 1 / 3],
  ],
];

describe('each datatype both ways', () => {
  const modelOf = (datatype: Datatype): Model => ({
    name: 'one',
    signature: { inputs: [{ name: 'x', datatype, shape: [4] }], outputs: [{ name: 'y', datatype, shape: [4] }] },
  });

  it.each(ROUND_TRIP)('%s %j', (datatype, values, bytes, back) => {
    // JSON in -> the datatype's bytes.
    const fromJson = accepted(
      parse(json({ inputs: [{ name: 'x', shape: [1, 4], datatype, data: values }] }), {}, modelOf(datatype)),
    );
    expect(fromJson.inputs[0]!.data.equals(bytes)).toBe(true);
    // Binary in -> the same bytes.
    const bin = binary(
      { inputs: [{ name: 'x', shape: [1, 4], datatype, parameters: { binary_data_size: bytes.length } }] },
      bytes,
    );
    expect(accepted(parse(bin.body, bin.headers, modelOf(datatype))).inputs[0]!.data.equals(bytes)).toBe(true);
    // Bytes out as JSON -> the values; as binary -> the bytes unchanged.
    const asJson = encodeInferResponse({
      modelName: 'one',
      outputs: [{ name: 'y', datatype, shape: [1, 4], data: bytes, binary: false }],
    });
    expect((JSON.parse(asJson.body.toString()) as { outputs: { data: unknown[] }[] }).outputs[0]!.data).toEqual(back);
    expect(decodeValues(bytes, datatype)).toEqual(back);
    const asBinary = encodeInferResponse({
      modelName: 'one',
      outputs: [{ name: 'y', datatype, shape: [1, 4], data: bytes, binary: true }],
    });
    expect(asBinary.body.subarray(Number(asBinary.headers['inference-header-content-length'])).equals(bytes)).toBe(
      true,
    );
  });

  it('writes INT64 and UINT64 outputs beyond 2^53 digit for digit', () => {
    const r = encodeInferResponse({
      modelName: 'm',
      outputs: [
        {
          name: 'i',
          datatype: 'INT64',
          shape: [1, 2],
          data: Buffer.from(BigInt64Array.from([2n ** 63n - 1n, -(2n ** 63n)]).buffer),
          binary: false,
        },
        {
          name: 'u',
          datatype: 'UINT64',
          shape: [1, 1],
          data: Buffer.from(BigUint64Array.from([2n ** 64n - 1n]).buffer),
          binary: false,
        },
      ],
    });
    const text = r.body.toString();
    expect(text).toContain('"data":[9223372036854775807,-9223372036854775808]');
    expect(text).toContain('"data":[18446744073709551615]');
    expect(() => JSON.parse(text) as unknown).not.toThrow();
  });

  it("writes NaN and infinities of JSON outputs as Triton's writer does: bare NaN, Infinity, -Infinity", () => {
    const r = encodeInferResponse({
      modelName: 'm',
      outputs: [
        { name: 'y', datatype: 'FP32', shape: [1, 4], data: f32([NaN, Infinity, -Infinity, 1.5]), binary: false },
        {
          name: 'd',
          datatype: 'FP64',
          shape: [1, 2],
          data: Buffer.from(Float64Array.from([-Infinity, NaN]).buffer),
          binary: false,
        },
        {
          name: 'h',
          datatype: 'FP16',
          shape: [1, 2],
          data: Buffer.from(Uint16Array.from([0x7c00, 0x7e00]).buffer),
          binary: false,
        },
      ],
    });
    const text = r.body.toString();
    expect(text).toContain('"name":"y","datatype":"FP32","shape":[1,4],"data":[NaN,Infinity,-Infinity,1.5]');
    expect(text).toContain('"data":[-Infinity,NaN]');
    expect(text).toContain('"data":[Infinity,NaN]');
    // What Python's json.loads (tritonclient) accepts, read here by mapping the tokens to strings.
    const read = JSON.parse(text.replace(/(-?Infinity|NaN)/g, '"$1"')) as { outputs: { data: unknown[] }[] };
    expect(read.outputs[0]!.data.map(Number)).toEqual([NaN, Infinity, -Infinity, 1.5]);
  });

  it('writes a BYTES output (a classification) as strings in JSON, and as length-prefixed elements in binary', () => {
    const strings = ['15.346230:504:coffee mug', '4.000000:7:é'];
    const data = serializeBytes(strings);
    const asJson = encodeInferResponse({
      modelName: 'm',
      outputs: [{ name: 'c', datatype: 'BYTES', shape: [1, 2], data, binary: false }],
    });
    expect(JSON.parse(asJson.body.toString())).toEqual({
      model_name: 'm',
      outputs: [{ name: 'c', datatype: 'BYTES', shape: [1, 2], data: strings }],
    });
    const asBinary = encodeInferResponse({
      modelName: 'm',
      outputs: [{ name: 'c', datatype: 'BYTES', shape: [1, 2], data, binary: true }],
    });
    const n = Number(asBinary.headers['inference-header-content-length']);
    expect(JSON.parse(asBinary.body.subarray(0, n).toString())).toEqual({
      model_name: 'm',
      outputs: [{ name: 'c', datatype: 'BYTES', shape: [1, 2], parameters: { binary_data_size: data.length } }],
    });
    expect(asBinary.body.subarray(n).equals(data)).toBe(true);
    // tritonclient's deserialize_bytes_tensor: a 4-byte little-endian length, then that many bytes, to the end.
    const back: string[] = [];
    for (let o = n; o < asBinary.body.length; o += 4 + asBinary.body.readUInt32LE(o))
      back.push(asBinary.body.subarray(o + 4, o + 4 + asBinary.body.readUInt32LE(o)).toString('utf8'));
    expect(back).toEqual(strings);
  });
});

describe('FP16 conversion', () => {
  const KNOWN: [number, number][] = [
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3c00],
    [-2, 0xc000],
    [65504, 0x7bff],
    [65519.99, 0x7bff], // rounds down to the largest half
    [65520, 0x7c00], // the tie rounds to even: infinity
    [2 ** -14, 0x0400], // smallest normal
    [2 ** -24, 0x0001], // smallest subnormal
    [2 ** -25, 0x0000], // tie between 0 and 2^-24: even is 0
    [3 * 2 ** -25, 0x0002], // tie between 1 and 2 subnormal steps: even is 2
    [2 ** -14 - 2 ** -25, 0x0400], // subnormal rounding up into the smallest normal
    [2049, 0x6800], // tie: even is 2048
    [2051, 0x6802], // tie: even is 2052
    [1 + 2 ** -11 + 2 ** -40, 0x3c01], // just above a tie: up (a float32 detour would round twice and give 0x3c00)
    [0.1, 0x2e66],
    [Infinity, 0x7c00],
    [-Infinity, 0xfc00],
  ];
  it.each(KNOWN)('toHalf(%d) = %i', (v, bits) => {
    expect(toHalf(v)).toBe(bits);
  });

  it('NaN stays NaN', () => {
    expect(Number.isNaN(fromHalf(toHalf(NaN)))).toBe(true);
  });

  it('every half bit pattern survives fromHalf then toHalf', () => {
    for (let h = 0; h < 0x10000; h++) {
      const v = fromHalf(h);
      if (Number.isNaN(v)) expect((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0).toBe(true);
      else if (toHalf(v) !== h) expect.fail(`half 0x${h.toString(16)} -> ${v} -> 0x${toHalf(v).toString(16)}`);
    }
  });
});

describe('encodeInferResponse', () => {
  const Y = f32([0.5, -1]);
  const Z = Buffer.from([1, 0, 1]);

  it('all JSON: application/json, no header length, model_version and id only when given', () => {
    const r = encodeInferResponse({
      modelName: 'two',
      outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 2], data: Y, binary: false }],
    });
    expect(r.headers).toEqual({ 'content-type': 'application/json' });
    expect(JSON.parse(r.body.toString())).toEqual({
      model_name: 'two',
      outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 2], data: [0.5, -1] }],
    });
  });

  it('binary outputs after the JSON, in output order, with the header length', () => {
    const r = encodeInferResponse({
      modelName: 'two',
      modelVersion: '1',
      id: 'req-7',
      outputs: [
        { name: 'z', datatype: 'BOOL', shape: [1, 3], data: Z, binary: true },
        { name: 'y', datatype: 'FP32', shape: [1, 2], data: Y, binary: true },
      ],
    });
    expect(r.headers['content-type']).toBe('application/octet-stream');
    const n = Number(r.headers['inference-header-content-length']);
    expect(JSON.parse(r.body.subarray(0, n).toString())).toEqual({
      model_name: 'two',
      model_version: '1',
      id: 'req-7',
      outputs: [
        { name: 'z', datatype: 'BOOL', shape: [1, 3], parameters: { binary_data_size: 3 } },
        { name: 'y', datatype: 'FP32', shape: [1, 2], parameters: { binary_data_size: 8 } },
      ],
    });
    expect(r.body.subarray(n).equals(Buffer.concat([Z, Y]))).toBe(true);
  });

  it('the header length counts bytes, not characters', () => {
    const r = encodeInferResponse({
      modelName: 'modèle-ü',
      id: '日本',
      outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 2], data: Y, binary: true }],
    });
    const n = Number(r.headers['inference-header-content-length']);
    expect(n).toBe(r.body.length - 8);
    expect((JSON.parse(r.body.subarray(0, n).toString()) as { id: string }).id).toBe('日本');
  });
});

describe('the clients as they are', () => {
  /**
   * tritonclient.http InferenceServerClient.infer(model, inputs, outputs=..., request_id='42') with
   * InferInput('input', [1,3,224,224], 'FP32').set_data_from_numpy(x) (binary_data=True by default) and
   * InferRequestedOutput('output') (binary_data=True by default): _get_inference_request builds the
   * dict in this key order, python-rapidjson dumps it without spaces, json_size = len(request_json),
   * the body is the JSON then x.tobytes(), and the header is Inference-Header-Content-Length: json_size.
   */
  it('tritonclient.http: binary input, binary output requested, request id', () => {
    const x = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => (i % 251) / 251);
    const requestJson =
      '{"id":"42","inputs":[{"name":"input","shape":[1,3,224,224],"datatype":"FP32","parameters":{"binary_data_size":602112}}],"outputs":[{"name":"output","parameters":{"binary_data":true}}]}';
    const body = Buffer.concat([Buffer.from(requestJson), Buffer.from(x.buffer)]);
    const req = accepted(
      parseInferRequest(body, { contentType: undefined, inferenceHeaderLength: String(requestJson.length) }, RESNET),
    );
    expect(req.id).toBe('42');
    expect(req.inputs[0]!.shape).toEqual([1, 3, 224, 224]);
    expect(req.inputs[0]!.data.equals(Buffer.from(x.buffer))).toBe(true);
    expect(req.outputs).toEqual([{ name: 'output', binary: true }]);
  });

  /** tritonclient.http with no outputs named: it adds parameters.binary_data_output = true; one input sent with binary_data=False. */
  it('tritonclient.http: mixed binary and JSON inputs, no outputs named', () => {
    const requestJson =
      '{"inputs":[{"name":"a","shape":[1,2,3],"datatype":"FP32","parameters":{"binary_data_size":24}},{"name":"b","shape":[1,2],"datatype":"INT64","data":[7,-8]}],"parameters":{"binary_data_output":true}}';
    const body = Buffer.concat([Buffer.from(requestJson), A_BYTES]);
    const req = accepted(parseInferRequest(body, { inferenceHeaderLength: String(requestJson.length) }, TWO));
    expect(req.inputs[0]!.data.equals(A_BYTES)).toBe(true);
    expect(req.inputs[1]!.data.equals(B_BYTES)).toBe(true);
    expect(req.outputs).toEqual([
      { name: 'y', binary: true },
      { name: 'z', binary: true },
    ]);
  });

  /** KServe's InferRequest.to_rest(): always an id (a uuid), the model_name, orjson without spaces. */
  it("KServe's REST client: binary input with id and model_name", () => {
    const x = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => i / 7);
    const requestJson =
      '{"id":"5b0a3c8e-7d0e-4b8e-9f55-0c2b1a6f9e21","model_name":"resnet50","inputs":[{"name":"input","shape":[1,3,224,224],"datatype":"FP32","parameters":{"binary_data_size":602112}}]}';
    const body = Buffer.concat([Buffer.from(requestJson), Buffer.from(x.buffer)]);
    const req = accepted(
      parseInferRequest(
        body,
        { contentType: 'application/json', inferenceHeaderLength: String(requestJson.length) },
        RESNET,
      ),
    );
    expect(req.id).toBe('5b0a3c8e-7d0e-4b8e-9f55-0c2b1a6f9e21');
    expect(req.inputs[0]!.data.equals(Buffer.from(x.buffer))).toBe(true);
    expect(req.outputs).toEqual([{ name: 'output', binary: false }]);
  });

  /**
   * tritonclient.http InferResult: header_length = int(response "Inference-Header-Content-Length");
   * result = json.loads(body[:header_length]); buffer = body[header_length:]; each output with
   * parameters.binary_data_size takes the next that many bytes of buffer, in output order;
   * as_numpy(name) = np.frombuffer(slice, dtype) for those, np.array(output["data"], dtype) for the
   * others, then .reshape(output["shape"]).
   */
  function tritonAsNumpy(
    body: Buffer,
    headers: Record<string, string>,
    name: string,
  ): { shape: number[]; bytes?: Buffer; data?: unknown[] } {
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    const headerLength = lower['inference-header-content-length'];
    const n = headerLength === undefined ? body.length : Number.parseInt(headerLength, 10);
    const result = JSON.parse(body.subarray(0, n).toString('utf8')) as {
      outputs: {
        name: string;
        datatype: string;
        shape: number[];
        parameters?: { binary_data_size?: number };
        data?: unknown[];
      }[];
    };
    const buffer = body.subarray(n);
    const start = new Map<string, number>();
    let index = 0;
    for (const o of result.outputs) {
      const size = o.parameters?.binary_data_size;
      if (size !== undefined) {
        start.set(o.name, index);
        index += size;
      }
    }
    const o = result.outputs.find((x) => x.name === name)!;
    const size = o.parameters?.binary_data_size;
    const from = start.get(name) ?? 0;
    if (size !== undefined) return { shape: o.shape, bytes: buffer.subarray(from, from + size) };
    return { shape: o.shape, data: o.data! };
  }

  it('tritonclient.http decodes a response with binary and JSON outputs', () => {
    const fp16 = Buffer.from(Uint16Array.from([0x3c00, 0xc000]).buffer);
    const y = f32([0.25, -4]);
    const r = encodeInferResponse({
      modelName: 'm',
      modelVersion: '1',
      id: '42',
      outputs: [
        { name: 'h', datatype: 'FP16', shape: [1, 2], data: fp16, binary: true },
        { name: 'z', datatype: 'BOOL', shape: [1, 3], data: Buffer.from([0, 1, 1]), binary: false },
        { name: 'y', datatype: 'FP32', shape: [1, 2], data: y, binary: true },
        { name: 'i', datatype: 'INT64', shape: [1, 2], data: i64([7, -8]), binary: false },
      ],
    });
    const h = tritonAsNumpy(r.body, r.headers, 'h');
    expect(h.shape).toEqual([1, 2]);
    expect(h.bytes!.equals(fp16)).toBe(true);
    expect(tritonAsNumpy(r.body, r.headers, 'y').bytes!.equals(y)).toBe(true);
    expect(tritonAsNumpy(r.body, r.headers, 'z')).toEqual({ shape: [1, 3], data: [false, true, true] });
    expect(tritonAsNumpy(r.body, r.headers, 'i')).toEqual({ shape: [1, 2], data: [7, -8] });
  });

  it('tritonclient.http decodes an all-JSON response (no header length)', () => {
    const r = encodeInferResponse({
      modelName: 'm',
      outputs: [
        {
          name: 'h',
          datatype: 'FP16',
          shape: [1, 2],
          data: Buffer.from(Uint16Array.from([0x3555, 0x7bff]).buffer),
          binary: false,
        },
      ],
    });
    expect(r.headers['inference-header-content-length']).toBeUndefined();
    expect(tritonAsNumpy(r.body, r.headers, 'h')).toEqual({ shape: [1, 2], data: [fromHalf(0x3555), 65504] });
  });
});

describe('errors and metadata', () => {
  it('errorBody is the protocol error object', () => {
    expect(JSON.parse(errorBody('inputs[0].shape: expected [1,2], got "x"').toString())).toEqual({
      error: 'inputs[0].shape: expected [1,2], got "x"',
    });
  });

  it('server metadata lists only the extensions inss implements', () => {
    // Triton's extension names (its server metadata spells system_shared_memory with underscores).
    expect(serverMetadata('0.1.0')).toEqual({
      name: 'inss',
      version: '0.1.0',
      extensions: [
        'binary_tensor_data',
        'classification',
        'statistics',
        'model_configuration',
        'model_repository',
        'system_shared_memory',
      ],
    });
  });

  it('model metadata: batch dimension -1, slo_ms under parameters, versions when given', () => {
    expect(modelMetadata({ name: 'resnet50', signature: RESNET.signature, sloMs: 80, versions: ['1'] })).toEqual({
      name: 'resnet50',
      versions: ['1'],
      platform: 'inss',
      inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 3, 224, 224] }],
      outputs: [{ name: 'output', datatype: 'FP32', shape: [-1, 1000] }],
      parameters: {
        slo_ms: 80,
        input_forms: { input: [{ datatype: 'FP32', shape: [-1, 3, 224, 224], content: 'tensor' }] },
      },
    });
    expect(modelMetadata({ name: 'two', signature: TWO.signature, sloMs: 25 })).not.toHaveProperty('versions');
  });
});

describe("shared memory parameters (Triton's system shared-memory extension)", () => {
  it('an input and an output by region: the input waits for its bytes, the output is answered by name, without data', () => {
    const req = accepted(
      parse(
        json({
          inputs: [
            inA({
              data: undefined,
              parameters: { shared_memory_region: 'in', shared_memory_byte_size: 24, shared_memory_offset: 8 },
            }),
            inB(),
          ],
          outputs: [{ name: 'y', parameters: { shared_memory_region: 'out', shared_memory_byte_size: 64 } }],
        }),
      ),
    );
    expect(req.inputs[0]).toMatchObject({
      name: 'a',
      region: { name: 'in', offset: 8, byteSize: 24 },
      encoding: 'FP32',
    });
    expect(req.inputs[0]!.data.length).toBe(0);
    expect(req.outputs).toEqual([{ name: 'y', binary: false, region: { name: 'out', offset: 0, byteSize: 64 } }]);
    const r = resolveRegionInput(0, req.inputs[0]!, A_BYTES);
    expect(r.ok && r.input.data.equals(A_BYTES) && r.input.region === undefined).toBe(true);
    const body = encodeInferResponse({
      modelName: 'two',
      outputs: [
        {
          name: 'y',
          datatype: 'FP32',
          shape: [1, 2],
          data: Buffer.alloc(8),
          binary: false,
          region: { name: 'out', offset: 0, byteSize: 64 },
        },
      ],
    });
    expect(JSON.parse(body.body.toString())).toEqual({
      model_name: 'two',
      outputs: [
        {
          name: 'y',
          datatype: 'FP32',
          shape: [1, 2],
          parameters: { shared_memory_region: 'out', shared_memory_byte_size: 8 },
        },
      ],
    });
  });
});

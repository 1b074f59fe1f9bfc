// The KServe v2 codec (scheduler/kserve.ts): rejections of binary data (the framing header and each
// input's binary_data_size), shared-memory parameters and requested outputs, each naming the field.
import { describe, expect, it } from 'vitest';
import {
  type Model,
  type Headers,
  TWO,
  A,
  A_BYTES,
  B_BYTES,
  json,
  binary,
  inA,
  inB,
  binA,
  binB,
  parse,
  rejected,
} from '../support/kserve.js';

describe('parseInferRequest: rejections of binary data, shared memory and outputs name what is wrong', () => {
  const withBody = (n: number): Buffer =>
    Buffer.concat([json({ inputs: [inA(), inB()] }), Buffer.alloc(n)]).subarray(0, 300);
  const header = json({ inputs: [binA(), binB()] });
  const cases: [string, Buffer, Headers, Model, string[]][] = [
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
});

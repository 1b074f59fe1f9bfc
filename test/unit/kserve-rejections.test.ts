// The KServe v2 codec (scheduler/kserve.ts): rejections of the JSON, the inputs, their shapes and their
// values, each naming the field that is wrong.
import { describe, expect, it } from 'vitest';
import type { Datatype } from '../../src/protocol/tensor.js';
import { type Model, type Headers, TWO, RESNET, A, json, inA, inB, parse, rejected } from '../support/kserve.js';

describe('parseInferRequest: rejections name what is wrong', () => {
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
        'inputs[0].shape: expected [k,2,3] with 1 <= k <= 8, got [2,3] (the first dimension is the batch ' +
          'dimension: add it)',
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

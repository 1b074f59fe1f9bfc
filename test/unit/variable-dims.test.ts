// Inputs of variable length (Triton's dims -1; docs/model-repository.md, "Variable dimensions"): the
// codec takes any length from 1 to the input's longest and refuses others naming the input; a batch of
// tasks of different lengths is padded with zeros to its longest (src/serving/padding.ts), each sample's
// values first in its rows; the request limits allow for the longest.
import { describe, expect, it } from 'vitest';
import { batchInputs, padded, taskShapes } from '../../scheduler/control/batchInputs.js';
import { splitOutputs } from '../../scheduler/control/outputs.js';
import { runBatchSize } from '../../src/serving/padding.js';
import type { Task } from '../../scheduler/control/records.js';
import type { ServedModelConfig } from '../../scheduler/control/types.js';
import { parseInferRequest } from '../../scheduler/kserve.js';
import { requestBudget } from '../../scheduler/limits.js';
import { fitsSpec, type ModelSignature } from '../../src/protocol/tensor.js';
import { longestOf, padSample } from '../../src/serving/padding.js';

const TEXT: ModelSignature = {
  inputs: [
    { name: 'input_ids', datatype: 'INT64', shape: [-1], maxDim: 16 },
    { name: 'attention_mask', datatype: 'INT64', shape: [-1], maxDim: 16 },
  ],
  outputs: [{ name: 'logits', datatype: 'FP32', shape: [4] }],
};
const model: ServedModelConfig = { name: 'text', sloMs: 100, signature: TEXT, maxBatchSize: 8 };

const i64 = (xs: readonly number[]) => Buffer.from(BigInt64Array.from(xs.map(BigInt)).buffer);
const values = (b: Buffer) =>
  Array.from(new BigInt64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)), Number);

function parse(inputs: object[]) {
  return parseInferRequest(Buffer.from(JSON.stringify({ inputs })), {}, model);
}

const ids = (shape: number[], data: number[]) => ({ name: 'input_ids', datatype: 'INT64', shape, data });
const mask = (shape: number[], data: number[]) => ({ name: 'attention_mask', datatype: 'INT64', shape, data });

describe('the codec: a variable dimension', () => {
  it.each([1, 5, 16])('takes a length of %i', (n) => {
    const r = parse([ids([1, n], new Array<number>(n).fill(3)), mask([1, n], new Array<number>(n).fill(1))]);
    expect(r.ok && r.request.inputs.map((i) => i.shape)).toEqual([
      [1, n],
      [1, n],
    ]);
  });

  it('takes k samples of one length', () => {
    const r = parse([ids([2, 3], [1, 2, 3, 4, 5, 6]), mask([2, 3], [1, 1, 1, 1, 1, 0])]);
    expect(r.ok).toBe(true);
  });

  const expected =
    "inputs[0].shape: expected [k,-1] with 1 <= k <= 8 (-1 in input 'input_ids': any length from 1 to 16)";
  it.each([
    [[1, 17], `${expected}, got [1,17]`],
    [[1, 0], `${expected}, got [1,0]`],
    [[4], `${expected}, got [4] (the first dimension is the batch dimension: add it)`],
  ])('refuses shape %j, naming the input', (shape, error) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const r = parse([ids(shape, new Array<number>(n).fill(1)), mask([1, 1], [1])]);
    expect(r).toEqual({ ok: false, status: 400, error });
  });

  it('checks a fixed dimension beside a variable one', () => {
    const spec = { shape: [-1, 3], maxDim: 4 };
    expect(fitsSpec([2, 3], spec)).toBe(true);
    expect(fitsSpec([2, 4], spec)).toBe(false);
    expect(fitsSpec([5, 3], spec)).toBe(false);
    expect(fitsSpec([2], spec)).toBe(false);
  });

  it('allows the request body for the longest length', () => {
    const fixed = requestBudget({ ...TEXT, inputs: TEXT.inputs.map((s) => ({ ...s, shape: [16] })) }, 2, 8);
    expect(requestBudget(TEXT, 2, 8)).toEqual(fixed);
  });
});

describe('the padding rule', () => {
  it('pads a row to the longest with zeros after its values', () => {
    expect(values(padSample(i64([1, 2, 3]), [3], [5], 8))).toEqual([1, 2, 3, 0, 0]);
  });

  it('pads every dimension of a 2-d sample, row by row', () => {
    const x = Buffer.from([1, 2, 3, 4, 5, 6]); // [2, 3]
    expect([...padSample(x, [2, 3], [3, 4], 1)]).toEqual([1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0, 0]);
  });

  it('returns the sample itself at the longest', () => {
    const x = i64([1, 2]);
    expect(padSample(x, [2], [2], 8)).toBe(x);
    expect(
      longestOf([
        [2, 5],
        [4, 1],
        [3, 3],
      ]),
    ).toEqual([4, 5]);
  });
});

describe("a batch of different lengths (the dispatcher's tensors)", () => {
  const task = (seq: number[]): Task => {
    const n = seq.length;
    const input = [
      { name: 'input_ids', datatype: 'INT64' as const, shape: [1, n], data: i64(seq) },
      { name: 'attention_mask', datatype: 'INT64' as const, shape: [1, n], data: i64(seq.map(() => 1)) },
    ];
    return {
      model: 0,
      arrivalMs: 0,
      inputs: input.map((i) => i.data),
      ...taskShapes(model, input),
      encoding: undefined,
      answer: () => {},
      submittedMs: 0,
      dispatchedMs: NaN,
    };
  };

  it('pads each input to the longest of the batch', () => {
    const b = batchInputs(model, [task([5, 6]), task([7, 8, 9, 10]), task([11])]);
    expect(b.inputs).toEqual([
      { name: 'input_ids', datatype: 'INT64', shape: [3, 4], byteLength: 96 },
      { name: 'attention_mask', datatype: 'INT64', shape: [3, 4], byteLength: 96 },
    ]);
    expect(b.bytes).toBe(192);
    const all = values(Buffer.concat(b.parts));
    expect(all.slice(0, 12)).toEqual([5, 6, 0, 0, 7, 8, 9, 10, 11, 0, 0, 0]);
    expect(all.slice(12)).toEqual([1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0]);
  });

  it('copies nothing when every sample has the longest length', () => {
    const t = [task([1, 2]), task([3, 4])];
    const b = batchInputs(model, t);
    expect(b.inputs[0]!.shape).toEqual([2, 2]);
    expect(b.parts[0]).toBe(t[0]!.inputs[0]);
  });

  it('pads a batch to its placed size with copies of its first task, answering the tasks alone', () => {
    // A worker whose placement pads (Placement.padBatch): every other batch runs at its placed batch, at
    // most the model's max_batch_size.
    const w = { padBatch: true, batch: 6, padTurn: false };
    expect([runBatchSize(w, 2), runBatchSize(w, 2), runBatchSize(w, 7), runBatchSize(w, 3, 4)]).toEqual([6, 2, 7, 3]);
    expect(runBatchSize(w, 2, 4)).toBe(4);
    expect(runBatchSize({ padBatch: false, batch: 6, padTurn: false }, 2)).toBe(2);
    const t = [task([5, 6]), task([7])];
    const list = padded(t, 4);
    expect(list).toEqual([t[0], t[1], t[0], t[0]]);
    expect(padded(t, 2)).toBe(t);
    const b = batchInputs(model, list);
    expect(b.inputs[0]!.shape).toEqual([4, 2]);
    expect(values(Buffer.concat(b.parts)).slice(0, 8)).toEqual([5, 6, 7, 0, 5, 6, 5, 6]);
    // The worker answers 4 rows; the tasks take the first 2.
    const logits = Buffer.from(Float32Array.from({ length: 16 }, (_, i) => i).buffer);
    const split = splitOutputs(4, [{ name: 'logits', datatype: 'FP32', shape: [4, 4], byteLength: 64 }], logits, {
      outputs: TEXT.outputs,
      batchDim: true,
    });
    expect(split.problem).toBeNull();
    const row = (i: number) => {
      const d = split.outputsOf(i)[0]!.data;
      return Array.from(new Float32Array(d.buffer.slice(d.byteOffset, d.byteOffset + d.length)));
    };
    expect([row(0), row(1)]).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
    ]);
  });

  it('gives a model without variable dimensions no shapes', () => {
    const fixed = { ...model, signature: { ...TEXT, inputs: TEXT.inputs.map((s) => ({ ...s, shape: [2] })) } };
    const input = { name: 'input_ids', datatype: 'INT64' as const, shape: [1, 2], data: i64([1, 2]) };
    expect(taskShapes(fixed, [input, input])).toEqual({});
  });
});

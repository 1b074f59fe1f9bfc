// The ONNX Runtime worker's start-up checks (agent/onnxWorkerSignature.ts), table-driven: `--signature`
// parsed with the field at fault named, and a model's inputs and outputs (as onnxruntime reports them)
// held to the signature by name, type and shape.
import { describe, expect, it } from 'vitest';
import { checkSessionSignature, parseWorkerSignature, type SessionTensor } from '../../agent/onnxWorkerSignature.js';
import type { WorkerSignature } from '../../src/repository/types.js';

const SIG: WorkerSignature = {
  inputs: [
    { name: 'k', datatype: 'INT64', shape: [3] },
    { name: 'x', datatype: 'FP32', shape: [4] },
  ],
  outputs: [{ name: 'y', datatype: 'FP16', shape: [2] }],
  batchDim: true,
};

const t = (name: string, type: string, shape: (number | string)[]): SessionTensor => ({
  name,
  isTensor: true,
  type,
  shape,
});

describe('parseWorkerSignature', () => {
  it('takes a signature and gives it back as TensorSpecs', () => {
    expect(parseWorkerSignature(JSON.stringify(SIG))).toEqual(SIG);
    const image = { ...SIG, inputs: [{ name: 'i', datatype: 'FP32', shape: [3, 8, 8], image: true }] };
    expect(parseWorkerSignature(JSON.stringify(image))).toEqual(image);
  });

  it.each([
    ['{', /^--signature: not JSON/],
    [JSON.stringify({ ...SIG, batchDim: 1 }), /^--signature batchDim: /],
    [JSON.stringify({ ...SIG, inputs: [] }), /^--signature inputs: /],
    [JSON.stringify({ ...SIG, inputs: [{ name: 'k', datatype: 'BF16', shape: [3] }] }), /inputs\.0\.datatype: /],
    [JSON.stringify({ ...SIG, outputs: [{ name: 'y', datatype: 'FP32', shape: [-1] }] }), /outputs\.0\.shape\.0: /],
    [JSON.stringify({ ...SIG, inputs: [SIG.inputs[0], SIG.inputs[0]] }), /inputs\.1\.name: 'k' twice/],
    [JSON.stringify({ ...SIG, extra: 1 }), /Unrecognized key/],
    [
      JSON.stringify({ ...SIG, inputs: [{ name: 'i', datatype: 'UINT8', shape: [3, 8, 8], image: true }] }),
      /inputs\.0\.image: only an FP32 input of shape \[3, H, W\] is an image/,
    ],
    [
      JSON.stringify({
        ...SIG,
        inputs: [{ name: 'i', datatype: 'FP32', shape: [3, 8, 8], image: true }, SIG.inputs[1]],
      }),
      /inputs: an image input must be the model's only input/,
    ],
  ])('refuses %s', (json, why) => {
    const got = parseWorkerSignature(json);
    expect(typeof got).toBe('string');
    expect(got).toMatch(why);
  });
});

describe('checkSessionSignature', () => {
  const out = [t('y', 'float16', ['N', 2])];
  it.each([
    ['symbolic batch dims', [t('x', 'float32', ['N', 4]), t('k', 'int64', ['N', 3])]],
    ['unnamed and -1 batch dims', [t('x', 'float32', ['', 4]), t('k', 'int64', [-1, 3])]],
    ['symbolic sample dims', [t('x', 'float32', ['N', 'w']), t('k', 'int64', ['N', 3])]],
    ['a rank the model does not know', [t('x', 'float32', []), t('k', 'int64', ['N', 3])]],
  ])('fits: %s, inputs in another order than the signature', (_what, inputs) => {
    expect(checkSessionSignature(SIG, inputs, out)).toEqual([]);
  });

  it.each([
    [
      [t('x', 'float32', ['N', 4]), t('k', 'int32', ['N', 3])],
      "input 'k': the model's element type is int32, the signature's INT64",
    ],
    [
      [t('x', 'float32', ['N', 5]), t('k', 'int64', ['N', 3])],
      "input 'x': dim 1 is 5 in the model's shape [N,5], 4 in the signature's [batch,4]",
    ],
    [
      [t('x', 'float32', [1, 4]), t('k', 'int64', ['N', 3])],
      "input 'x': dim 0 is 1 in the model's shape [1,4], but it is the batch dimension",
    ],
    [[t('x', 'float32', [4]), t('k', 'int64', ['N', 3])], "input 'x': the model's shape [4] has rank 1"],
    [[t('k', 'int64', ['N', 3])], "input 'x': the model has no input of that name (it has k)"],
    [
      [t('x', 'float32', ['N', 4]), t('k', 'int64', ['N', 3]), t('mask', 'bool', ['N'])],
      "input 'mask': the model takes it, the signature does not list it",
    ],
    [[t('x', 'float32', ['N', 4]), { name: 'k', isTensor: false }], "input 'k': the model's is not a tensor"],
  ])('refuses %j', (inputs, why) => {
    const problems = checkSessionSignature(SIG, inputs, out);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(why);
  });

  it('checks outputs by name too, and without a batch dimension the shapes are exact', () => {
    const ins = [t('x', 'float32', [4]), t('k', 'int64', [3])];
    expect(checkSessionSignature({ ...SIG, batchDim: false }, ins, [t('y', 'float16', [2])])).toEqual([]);
    expect(checkSessionSignature({ ...SIG, batchDim: false }, ins, [t('z', 'float16', [2])])).toEqual([
      "output 'y': the model has no output of that name (it has z)",
    ]);
    expect(
      checkSessionSignature(
        SIG,
        [t('x', 'float32', ['N', 4]), t('k', 'int64', ['N', 3])],
        [t('y', 'float32', ['N', 2])],
      ),
    ).toEqual(["output 'y': the model's element type is float32, the signature's FP16"]);
  });
});

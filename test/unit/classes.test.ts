// The classification extension's shell (scheduler/classes.ts): the ImageNet label file the project
// carries, which outputs get labels, and an answer's outputs turned into classes, on the simulated
// worker's stand-in scores as `inss up` serves them.
import { describe, expect, it } from 'vitest';
import { classifyAnswer, labelFile, modelLabels } from '../../scheduler/classes.js';
import { modelSignature } from '../../src/protocol/tensor.js';
import { outputLabelSet } from '../../src/serving/classification.js';
import { standInForward } from '../../src/serving/standIn.js';

const IMAGE_MODEL = modelSignature(4 * 3 * 224 * 224, 4000);

describe('label files', () => {
  it("data/imagenet/labels.txt: 1000 unique names in torchvision's order, none with ':'", () => {
    const names = labelFile('imagenet');
    expect(names).toHaveLength(1000);
    expect(new Set(names).size).toBe(1000);
    expect(names.some((n) => n.includes(':') || n.trim() !== n || n === '')).toBe(false);
    expect([names[0], names[1], names[504], names[999]]).toEqual(['tench', 'goldfish', 'coffee mug', 'toilet tissue']);
  });

  it('ImageNet labels for the 1000-score output of an image model, none otherwise', () => {
    expect(outputLabelSet(IMAGE_MODEL, 'output')).toBe('imagenet');
    expect(modelLabels(IMAGE_MODEL).get('output')).toHaveLength(1000);
    expect(outputLabelSet(modelSignature(4 * 3 * 224 * 224, 4 * 91), 'output')).toBeNull();
    expect(outputLabelSet(modelSignature(4 * 100, 4000), 'output')).toBeNull();
    expect(modelLabels(modelSignature(4 * 100, 4000)).size).toBe(0);
  });
});

describe('classifyAnswer', () => {
  it("turns the stand-in scores of two samples into each one's top 3 with ImageNet labels", () => {
    const x = Float32Array.from({ length: 2 * 3 * 224 * 224 }, (_, i) => ((i * 7919) % 1009) / 1009);
    const y = standInForward('resnet50', x, 2, 3 * 224 * 224, 1000);
    const names = labelFile('imagenet');
    const expected: string[] = [];
    for (let s = 0; s < 2; s++) {
      const row = Array.from(y.subarray(s * 1000, (s + 1) * 1000));
      const top = row
        .map((v, k) => ({ v, k }))
        .sort((a, b) => b.v - a.v || a.k - b.k)
        .slice(0, 3);
      expected.push(...top.map(({ v, k }) => `${v.toFixed(6)}:${k}:${names[k]}`));
    }
    const r = classifyAnswer(
      [{ name: 'output', datatype: 'FP32', shape: [2, 1000], data: Buffer.from(y.buffer), binary: false }],
      [{ name: 'output', binary: false, classCount: 3 }],
      modelLabels(IMAGE_MODEL),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.outputs[0]).toMatchObject({ name: 'output', datatype: 'BYTES', shape: [2, 3], binary: false });
    const strings: string[] = [];
    const d = r.outputs[0]!.data;
    for (let o = 0; o < d.length; o += 4 + d.readUInt32LE(o))
      strings.push(d.subarray(o + 4, o + 4 + d.readUInt32LE(o)).toString());
    expect(strings).toEqual(expected);
  });

  it('leaves outputs not asked for classes as they are, and names an output that does not fill its shape', () => {
    const raw = { name: 'output', datatype: 'FP32' as const, shape: [1, 1000], data: Buffer.alloc(4000), binary: true };
    const same = classifyAnswer([raw], [{ name: 'output', binary: true }], new Map());
    expect(same.ok && same.outputs[0]).toBe(raw);
    const short = classifyAnswer(
      [{ ...raw, data: Buffer.alloc(40) }],
      [{ name: 'output', binary: true, classCount: 1 }],
      new Map(),
    );
    expect(short).toEqual({
      ok: false,
      error: "output 'output': the output is 40 bytes, but shape [1,1000] of FP32 is 4000",
    });
  });
});

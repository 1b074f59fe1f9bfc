// The pure parts of `inss profile measure --model`: batch inputs made from a signature, and fitting one
// measured model into an existing profile with the fit of `inss profile fit`.
import { describe, expect, it } from 'vitest';
import { batchInputs, sampleBytes } from '../../cli/measure/inputs.js';
import { fitIntoProfile, memoryLine } from '../../cli/measure/fitInto.js';
import { median } from '../../cli/measure/driver.js';
import { loadProfile } from '../../cli/profiles.js';
import { LatencyModel } from '../../src/model/predictor.js';
import type { WorkerSignature } from '../../src/repository/types.js';

const SIG: WorkerSignature = {
  batchDim: true,
  inputs: [
    { name: 'ids', datatype: 'INT64', shape: [4] },
    { name: 'mask', datatype: 'BOOL', shape: [4] },
    { name: 'x', datatype: 'FP16', shape: [2, 3] },
    { name: 'y', datatype: 'FP32', shape: [5] },
  ],
  outputs: [{ name: 'out', datatype: 'FP32', shape: [7] }],
};

describe('batchInputs', () => {
  it('lays every input out in signature order with the batch dimension, deterministically', () => {
    const a = batchInputs(SIG, 3, 7);
    expect(a.inputs.map((t) => [t.name, t.datatype, t.shape, t.byteLength])).toEqual([
      ['ids', 'INT64', [3, 4], 96],
      ['mask', 'BOOL', [3, 4], 12],
      ['x', 'FP16', [3, 2, 3], 36],
      ['y', 'FP32', [3, 5], 60],
    ]);
    expect(a.payload.length).toBe(96 + 12 + 36 + 60);
    expect(batchInputs(SIG, 3, 7).payload.equals(a.payload)).toBe(true);
    expect(batchInputs(SIG, 3, 8).payload.equals(a.payload)).toBe(false);
    for (let i = 0; i < 12; i++) {
      const v = a.payload.readBigInt64LE(i * 8);
      expect(v >= 0n && v < 10n).toBe(true);
    }
    for (let i = 0; i < 12; i++) expect([0, 1]).toContain(a.payload[96 + i]);
    for (let i = 0; i < 18; i++) {
      const h = a.payload.readUInt16LE(108 + i * 2);
      const exp = (h >> 10) & 0x1f;
      expect([13, 14]).toContain(exp); // finite, magnitude in [0.25, 1)
    }
    for (let i = 0; i < 15; i++) expect(Math.abs(a.payload.readFloatLE(144 + i * 4))).toBeLessThanOrEqual(1);
    expect(sampleBytes(SIG.inputs)).toBe(32 + 4 + 12 + 20);
    expect(sampleBytes(SIG.outputs)).toBe(28);
  });

  it('gives exactly the shapes, batch 1, to a model without a batch dimension, and refuses more', () => {
    const sig = { ...SIG, batchDim: false };
    expect(batchInputs(sig, 1, 1).inputs[0]!.shape).toEqual([4]);
    expect(() => batchInputs(sig, 2, 1)).toThrow(/batch 1, not 2/);
  });
});

describe('median and memoryLine', () => {
  it('takes the middle value, or the mean of the two middle ones', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });
  it('fits memory as a line in the batch, never negative', () => {
    expect(memoryLine([1, 2, 4].map((b) => ({ batch: b, mb: 300 + 20 * b })))).toEqual({
      baseMb: 300,
      perBatchMb: 20,
    });
    expect(memoryLine([{ batch: 4, mb: 100 }])).toEqual({ baseMb: 100, perBatchMb: 0 });
    expect(memoryLine([1, 2].map((b) => ({ batch: b, mb: 10 - b }))).perBatchMb).toBe(0);
  });
});

describe('fitIntoProfile', () => {
  const base = loadProfile('rtx2060s');
  const truth = LatencyModel.compile(base);
  const provenance = { kind: 'measured' as const, source: 'test', command: 'inss test', notes: [] };
  // resnet18 "measured" as the profile predicts it, alone (at the pairs' shares too, so that its LWR need not
  // interpolate there) and beside vgg16, then fitted back in as a new model.
  const solo = [10, 30, 50, 70, 100].flatMap((pct) =>
    [1, 4, 16].map((batch) => ({
      batch,
      pct,
      latencyMs: truth.predict([{ model: 'resnet18', batch, pct }]).latencyMs[0]!,
    })),
  );
  const colocated = [30, 50, 70].flatMap((split) =>
    [4, 16].map((batch) => {
      const runs = [
        { model: 'resnet18', batch, pct: split },
        { model: 'vgg16', batch, pct: 100 - split },
      ];
      const t = truth.predict(runs).latencyMs;
      return { runs: runs.map((r, i) => ({ ...r, latencyMs: t[i]! })) };
    }),
  );
  const meas = {
    name: 'resnet18',
    inputBytes: base.models['resnet18']!.inputBytes,
    outputBytes: base.models['resnet18']!.outputBytes,
    kernels: 1,
    memory: { baseMb: 500, perBatchMb: 30 },
    notes: ['measured in a test'],
    solo,
    colocated,
  };

  it('adds the model, leaves the GPU, the LWR settings and every other model as they were', () => {
    const { profile, report } = fitIntoProfile(base, meas, provenance, 'rtx2060s-test');
    expect(profile.id).toBe('rtx2060s-test');
    expect(profile.gpu).toEqual(base.gpu);
    expect(profile.lwr).toEqual(base.lwr);
    expect(profile.provenance).toEqual(provenance);
    for (const [n, m] of Object.entries(base.models)) if (n !== 'resnet18') expect(profile.models[n]).toEqual(m);
    const r18 = profile.models['resnet18']!;
    expect(r18.kernels).toBe(1);
    expect(r18.memory).toEqual({ baseMb: 500, perBatchMb: 30 });
    expect(r18.runSamples).toHaveLength(15);
    expect(report.lwr.samples).toBe(15);
    // Its L2 line, read off vgg16's latencies beside it, and its alpha^cache are the profile's own.
    const own = base.models['resnet18']!;
    expect(r18.l2.alphaU).toBeCloseTo(own.l2.alphaU, 3);
    expect(r18.l2.betaU).toBeCloseTo(own.l2.betaU, 3);
    expect(r18.alphaCache).toBeCloseTo(own.alphaCache, 2);
    // Alone: the samples themselves. Beside vgg16: what the profile it came from says.
    const fitted = LatencyModel.compile(profile);
    for (const p of solo)
      expect(fitted.predict([{ model: 'resnet18', ...p }]).latencyMs[0]! / p.latencyMs).toBeCloseTo(1, 2);
    expect(report.colocatedMeanRelErr!).toBeLessThan(0.005);
    const unfitted = fitIntoProfile(base, { ...meas, colocated: [] }, provenance);
    expect(unfitted.profile.models['resnet18']!.alphaCache).toBe(0);
    expect(unfitted.report.colocatedMeanRelErr).toBeNull();
    expect(unfitted.profile.models['resnet18']!.l2).toEqual({ alphaU: 1, betaU: 0 }); // the fit's l = share
  });

  it('refuses too few usable samples', () => {
    expect(() => fitIntoProfile(base, { ...meas, solo: solo.slice(0, 3) }, provenance)).toThrow(
      /needs at least 4 usable solo measurements/,
    );
  });
});

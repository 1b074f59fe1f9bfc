import { describe, expect, it } from 'vitest';
import { LatencyModel } from '../../src/model/predictor.js';
import { lwrRunMs, toLwrPoints } from '../../src/model/lwr.js';
import { ProfileSchema } from '../../src/profile/schema.js';
import { makeProfile, syntheticRunMs } from '../support/builders.js';

const resnet = { runAtB1Full: 2, batchExp: 0.8, pctExp: 0.9, alphaCache: 0.4, alphaU: 0.25, betaU: 0.03, kernels: 80 };
const vgg = { runAtB1Full: 3, batchExp: 0.9, pctExp: 1.0, alphaCache: 0.3, alphaU: 0.2, betaU: 0.07, kernels: 29 };
const profile = ProfileSchema.parse(
  makeProfile().model('resnet50', resnet).model('vgg19', vgg).cacheSelfWeight(0.5).build(),
);
const model = LatencyModel.compile(profile);

describe('LatencyModel', () => {
  it('LWR in log space reproduces a power-law running time between its samples', () => {
    for (const [b, p] of [
      [3, 30],
      [12, 50],
      [5, 70],
      [24, 90],
    ] as const) {
      expect(model.soloRunMs(model.modelIndex('resnet50'), b, p) / syntheticRunMs(resnet, b, p)).toBeCloseTo(1, 2);
    }
  });

  it('the compiled table agrees with LWR evaluated directly', () => {
    const pts = toLwrPoints(profile.models.vgg19!.runSamples);
    for (const [b, p] of [
      [1, 10],
      [7, 33.5],
      [32, 100],
      [16, 47.25],
    ] as const) {
      const direct = lwrRunMs(pts, profile.lwr, b, p);
      expect(model.soloRunMs(model.modelIndex('vgg19'), b, p) / direct).toBeCloseTo(1, 4);
    }
  });

  it('a model alone pays no interference; t_inf is transfer + scheduling + running', () => {
    const [t] = model.predict([{ model: 'resnet50', batch: 4, pct: 50 }]).latencyMs;
    const m = profile.models.resnet50!;
    const expected =
      (4 * (m.inputBytes + m.outputBytes)) / profile.gpu.pcieBytesPerMs +
      m.schedPerKernelMs * m.kernels +
      model.soloRunMs(0, 4, 50);
    expect(t).toBeCloseTo(expected, 9);
  });

  it('co-located models slow each other by the cache and scheduling terms', () => {
    const together = model.predict([
      { model: 'resnet50', batch: 4, pct: 50 },
      { model: 'vgg19', batch: 4, pct: 50 },
    ]);
    const alone = model.predict([{ model: 'resnet50', batch: 4, pct: 50 }]);
    const lR = 0.25 * 0.5 + 0.03;
    const lV = 0.2 * 0.5 + 0.07;
    const soloRun = model.soloRunMs(0, 4, 50);
    const sched = (0.002 + (0.001 * 2 + 0.0005)) * 80;
    const transfer = (4 * (602112 + 4000)) / 1e7;
    expect(together.latencyMs[0]).toBeCloseTo(transfer + sched + soloRun * (1 + 0.4 * (lV + 0.5 * lR)), 9);
    expect(together.latencyMs[0]!).toBeGreaterThan(alone.latencyMs[0]!);
    const ignoring = model.predict(
      [
        { model: 'resnet50', batch: 4, pct: 50 },
        { model: 'vgg19', batch: 4, pct: 50 },
      ],
      { interference: false },
    );
    expect(ignoring.latencyMs[0]).toBeCloseTo(alone.latencyMs[0]!, 12);
  });

  it('more of the GPU for a neighbour means more interference', () => {
    const at = (p: number) =>
      model.predict([
        { model: 'vgg19', batch: 4, pct: 18 },
        { model: 'resnet50', batch: 4, pct: p },
      ]).latencyMs[0]!;
    expect(at(60)).toBeGreaterThan(at(24));
  });

  it('throughput is batch / latency', () => {
    const r = model.predict([{ model: 'vgg19', batch: 8, pct: 40 }]);
    expect(r.throughputPerS[0]).toBeCloseTo((8 * 1000) / r.latencyMs[0]!, 9);
  });

  it.each([
    { placements: [{ model: 'nope', batch: 1, pct: 10 }], reason: /unknown model 'nope'/ },
    { placements: [{ model: 'vgg19', batch: 0, pct: 10 }], reason: /batch: must be an integer >= 1/ },
    { placements: [{ model: 'vgg19', batch: 1.5, pct: 10 }], reason: /batch: must be an integer >= 1/ },
    { placements: [{ model: 'vgg19', batch: 1, pct: 0 }], reason: /pct: must be in \(0, 100\]/ },
    { placements: [{ model: 'vgg19', batch: 1, pct: 101 }], reason: /pct: must be in \(0, 100\]/ },
    {
      placements: [
        { model: 'vgg19', batch: 1, pct: 60 },
        { model: 'resnet50', batch: 1, pct: 50 },
      ],
      reason: /sum to 110%/,
    },
    {
      placements: [
        { model: 'vgg19', batch: 1, pct: 30 },
        { model: 'vgg19', batch: 1, pct: 30 },
      ],
      reason: /placed twice/,
    },
    { placements: [], reason: /no models/ },
  ])('rejects a bad placement: $reason', ({ placements, reason }) => {
    const r = model.checkPlacement(placements);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
    expect(() => model.predict(placements)).toThrow(reason);
  });

  it('batches beyond the table and shares off the grid still predict (slow path)', () => {
    const big = model.predict([{ model: 'vgg19', batch: 64, pct: 100 }]).latencyMs[0]!;
    const b32 = model.predict([{ model: 'vgg19', batch: 32, pct: 100 }]).latencyMs[0]!;
    expect(big).toBeGreaterThan(b32);
    expect(Number.isFinite(model.predict([{ model: 'vgg19', batch: 3, pct: 0.3 }]).latencyMs[0])).toBe(true);
  });
});

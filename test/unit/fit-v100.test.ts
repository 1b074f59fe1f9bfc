// The V100 profile fitted from iGniter's real measurements (data/v100): the fit is
// reproducible from the data, and the latency model meets its accuracy targets.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fitProfile } from '../../tools/fit/fit.js';
import { igniterToMeasurements } from '../../tools/fit/igniter.js';
import { MeasurementsSchema } from '../../tools/fit/measurements.js';
import { LatencyModel } from '../../src/model/predictor.js';
import { parseProfile } from '../../src/profile/schema.js';
import { REPO_ROOT, V100_DATA_DIR } from '../support/paths.js';

const read = (f: string): unknown => JSON.parse(readFileSync(join(V100_DATA_DIR, f), 'utf8'));
const measurements = MeasurementsSchema.parse(
  igniterToMeasurements(read('solo.json'), read('colocated-calibration.json'), read('model-facts.json')),
);
const provenance = { kind: 'fitted' as const, source: 'test', command: 'test', notes: [] };
const { profile, report } = fitProfile(measurements, { id: 'v100', provenance });

describe('V100 profile fitted from data/v100', () => {
  it('LWR predicts each solo point left out of its own fit within 3% on average', () => {
    expect(report.lwrMeanRelErr).toBeLessThan(0.03);
    for (const e of Object.values(report.lwrLeaveOneOut)) expect(e.meanRelErr).toBeLessThan(0.03);
  });

  it('predicts the co-located calibration pairs several times better than ignoring interference', () => {
    const c = report.colocated!;
    expect(c.count).toBe(72);
    expect(c.leaveOneOutMeanRelErr).toBeLessThan(0.04);
    expect(c.ignoringInterferenceMeanRelErr).toBeGreaterThan(2 * c.leaveOneOutMeanRelErr);
  });

  it('the committed profiles/v100.json is what the fit produces from the data', () => {
    const committed = parseProfile(
      JSON.parse(readFileSync(join(REPO_ROOT, 'profiles', 'v100.json'), 'utf8')),
      'profiles/v100.json',
    );
    expect(committed.models).toEqual(profile.models);
    expect(committed.gpu).toEqual(profile.gpu);
    expect(committed.lwr).toEqual(profile.lwr);
    expect(committed.provenance.kind).toBe('fitted');
  });

  it('the fitted model reproduces a solo measurement it was fitted on', () => {
    const model = LatencyModel.compile(profile);
    const point = measurements.solo.find((p) => p.model === 'resnet50' && p.batch === 8 && p.pct === 50)!;
    const [t] = model.predict([{ model: 'resnet50', batch: 8, pct: 50 }]).latencyMs;
    expect(Math.abs(t! / point.latencyMs - 1)).toBeLessThan(0.03);
  });

  it('the paper form (no self weight) is also fitted and is worse on these pairs', () => {
    const paperForm = fitProfile(measurements, { id: 'v100', provenance, cacheSelfWeight: 0 }).report.colocated!;
    expect(paperForm.leaveOneOutMeanRelErr).toBeGreaterThanOrEqual(report.colocated!.leaveOneOutMeanRelErr);
  });
});

describe('measurement validation', () => {
  it('rejects points for a model that is not declared, naming the path', () => {
    const bad = {
      ...igniterToMeasurements(read('solo.json'), read('colocated-calibration.json'), read('model-facts.json')),
    };
    bad.solo = [...bad.solo, { model: 'ghost', batch: 1, pct: 50, latencyMs: 1 }];
    const r = MeasurementsSchema.safeParse(bad);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path.join('.')).toMatch(/^solo\.\d+\.model$/);
  });

  it('rejects a co-located run whose shares pass 100%', () => {
    const m = igniterToMeasurements(read('solo.json'), read('colocated-calibration.json'), read('model-facts.json'));
    m.colocated = [
      {
        runs: [
          { model: 'alexnet', batch: 1, pct: 60, latencyMs: 1 },
          { model: 'vgg19', batch: 1, pct: 60, latencyMs: 1 },
        ],
      },
    ];
    expect(MeasurementsSchema.safeParse(m).error?.message).toMatch(/more than 100%/);
  });

  it('the importer rejects a source file of the wrong shape', () => {
    expect(() =>
      igniterToMeasurements({ models: 3 }, read('colocated-calibration.json'), read('model-facts.json')),
    ).toThrow(/solo.json/);
  });
});

describe('a fit without L2 measurements (as on a GPU where Nsight Compute cannot profile MPS clients)', () => {
  const noL2 = { ...measurements, solo: measurements.solo.map(({ l2Util: _l2, ...p }) => p) };
  const fit = fitProfile(noL2, { id: 'v100-no-l2', provenance });
  it('uses the share as the L2 utilisation and still learns interference from the pairs', () => {
    for (const m of Object.values(fit.profile.models)) expect(m.l2).toEqual({ alphaU: 1, betaU: 0 });
    expect(fit.report.warnings.some((w) => w.includes('the share stands in for it'))).toBe(true);
    const c = fit.report.colocated!;
    expect(c.leaveOneOutMeanRelErr).toBeLessThan(c.ignoringInterferenceMeanRelErr);
    // Measured L2 does at least as well as the proxy on the same pairs.
    expect(report.colocated!.inSampleMeanRelErr).toBeLessThanOrEqual(c.inSampleMeanRelErr + 1e-9);
  });
});

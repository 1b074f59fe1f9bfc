// The derived profiles' share curves against the V100's measured shape (tools/fit/paperCluster/shareShape.ts,
// docs/profiles-paper-cluster.md): what the document claims, checked on the committed profiles and data.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LatencyModel } from '../../src/model/predictor.js';
import { parseProfile } from '../../src/profile/schema.js';
import {
  allPairGains,
  measuredPairGains,
  measuredSoloShape,
  profileSoloShape,
} from '../../tools/fit/paperCluster/shareShape.js';

const REPO = resolve(import.meta.dirname, '../..');
const json = (p: string): unknown => JSON.parse(readFileSync(resolve(REPO, p), 'utf8')) as unknown;
const load = (id: string) => LatencyModel.compile(parseProfile(json(`profiles/${id}.json`), id));
const v100 = load('v100');
const rtx2060s = load('rtx2060s');
const solo = json('data/v100/solo.json');

describe('share curves against the V100', () => {
  it('reads the measured solo curve (resnet50, batch 4: 13.22 / 6.41 / 4.38 ms at 20 / 50 / 80%)', () => {
    const s = measuredSoloShape(solo, 'resnet50', 4);
    expect(s.t20).toBeCloseTo(13.223096 / 4.378796, 6);
    expect(s.t50).toBeCloseTo(6.406525 / 4.378796, 6);
    expect(() => measuredSoloShape(solo, 'resnet50', 99)).toThrow(/no latency row/);
    expect(() => measuredSoloShape({ models: { x: { latency: { 1: { 20: 'a', 50: 1, 80: 1 } } } } }, 'x', 1)).toThrow(
      /positive number/,
    );
  });

  it(
    "the heavy models of the 2060 Super follow the V100 analogue's measured curve within 15% at " + 'batch 4 and 16',
    () => {
      const analogue: Record<string, string> = {
        alexnet: 'alexnet',
        resnet50: 'resnet50',
        vgg16: 'vgg19',
        vgg19: 'vgg19',
      };
      for (const [model, ref] of Object.entries(analogue)) {
        for (const b of [4, 16]) {
          const d = profileSoloShape('rtx2060s', rtx2060s, model, b);
          const m = measuredSoloShape(solo, ref, b);
          expect(Math.abs(d.t20 / m.t20 - 1), `${model} b${b} t20`).toBeLessThan(0.15);
          expect(Math.abs(d.t50 / m.t50 - 1), `${model} b${b} t50`).toBeLessThan(0.15);
        }
      }
    },
  );

  it(
    'MnasNet stays as flat as the paper measured it on the 2060 Super (Table 3: 4.24 ms at 24%, 3.41 ' +
      'at 60%, batch 4)',
    () => {
      const t = (pct: number) => rtx2060s.predict([{ model: 'mnasnet', batch: 4, pct }]).latencyMs[0]!;
      expect(t(24) / t(60)).toBeGreaterThan(1.1);
      expect(t(24) / t(60)).toBeLessThan(1.4);
    },
  );

  it('pairs: the measured V100 pairs at 50/50 and every profile pair are summed relative throughputs', () => {
    const measured = measuredPairGains(json('data/v100/colocated-calibration.json'), v100);
    expect(measured.length).toBe(12); // 6 model pairs x batches 4 and 16
    for (const p of measured) expect(p.gain).toBeGreaterThan(0.9);
    const all = allPairGains('rtx2060s', rtx2060s, [4]);
    expect(all.length).toBe(28);
    expect(() => measuredPairGains({}, v100)).toThrow(/pairs/);
  });
});

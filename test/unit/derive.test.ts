// derivePaperCluster (tools/fit/paperCluster/derive.ts): deterministic, schema-valid, reproduces the
// committed profiles, and the RTX 2060 comes out slower than the RTX 2060 Super.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { PAPER_CLUSTER_DATA_DIR } from '../support/paths.js';
import { describe, expect, it } from 'vitest';
import { parsePaperTables } from '../../tools/fit/paperCluster/anchors.js';
import { derivePaperCluster } from '../../tools/fit/paperCluster/derive.js';
import { LatencyModel } from '../../src/model/predictor.js';
import { parseProfile, ProfileSchema } from '../../src/profile/schema.js';

const REPO = resolve(import.meta.dirname, '../..');
const README = readFileSync(resolve(PAPER_CLUSTER_DATA_DIR, 'README.md'), 'utf8');
const readProfile = (id: string) =>
  parseProfile(JSON.parse(readFileSync(resolve(REPO, 'profiles', `${id}.json`), 'utf8')) as unknown, id);

const v100 = readProfile('v100');
const committed = readProfile('rtx2060s');
const anchors = parsePaperTables(README);
const first = derivePaperCluster(v100, anchors, committed.provenance.command);
const second = derivePaperCluster(v100, anchors, committed.provenance.command);
const PAPER_MODELS = ['alexnet', 'resnet50', 'vgg16', 'mnasnet', 'mobilenet', 'efficientnet', 'resnet18', 'vgg19'];

describe('derivePaperCluster', () => {
  it('is deterministic', () => {
    expect(JSON.stringify(second.rtx2060s)).toBe(JSON.stringify(first.rtx2060s));
    expect(JSON.stringify(second.rtx2060)).toBe(JSON.stringify(first.rtx2060));
  });

  it('emits profiles that pass ProfileSchema as written to disk, with all eight paper models', () => {
    for (const p of [first.rtx2060s, first.rtx2060]) {
      const r = ProfileSchema.safeParse(JSON.parse(JSON.stringify(p)));
      expect(r.success).toBe(true);
      expect(Object.keys(p.models).sort()).toEqual([...PAPER_MODELS].sort());
      expect(p.provenance.kind).toBe('derived');
    }
  });

  it('reproduces the committed profiles/rtx2060s.json and profiles/rtx2060.json', () => {
    expect(first.rtx2060s).toEqual(committed);
    expect(first.rtx2060).toEqual(readProfile('rtx2060'));
  });

  it('reports every cell within 4% and the throughputs within 10%', () => {
    expect(first.report.maxCellRelErr).toBeLessThan(0.04);
    for (const t of first.report.throughputs) expect(Math.abs(t.relErr)).toBeLessThan(0.1);
  });

  it('rtx2060 is slower than rtx2060s at equal batch and share', () => {
    const fast = LatencyModel.compile(first.rtx2060s);
    const slow = LatencyModel.compile(first.rtx2060);
    for (const model of PAPER_MODELS) {
      for (const batch of [1, 2, 4, 8, 16, 32]) {
        for (const pct of [6, 7, 12, 14, 18, 30, 42, 60, 84, 100]) {
          const p = [{ model, batch, pct }];
          expect(slow.predict(p).latencyMs[0]!, `${model} b${batch} ${pct}%`).toBeGreaterThan(
            fast.predict(p).latencyMs[0]!,
          );
        }
      }
    }
  });

  it('rejects a V100 profile that lacks an analogue model', () => {
    const { alexnet: _drop, ...rest } = v100.models;
    expect(() => derivePaperCluster({ ...v100, models: rest }, anchors, 'x')).toThrow(/alexnet/);
  });
});

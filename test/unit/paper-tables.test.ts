// The paper cluster's rtx2060s profile against every published cell of InSS Tables 2 and 3
// (data/paper-cluster/README.md), through the compiled latency model, plus the parser's
// failure mode and the monotonicity of both derived profiles. The cells are what the profile was
// anchored on (docs/profiles-paper-cluster.md): this checks the model form can express them.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { PAPER_CLUSTER_DATA_DIR } from '../support/paths.js';
import { describe, expect, it } from 'vitest';
import { parsePaperTables } from '../../tools/fit/paperCluster/anchors.js';
import { LatencyModel } from '../../src/model/predictor.js';
import { InvalidInputError, parseProfile } from '../../src/profile/schema.js';

const REPO = resolve(import.meta.dirname, '../..');
const README = readFileSync(resolve(PAPER_CLUSTER_DATA_DIR, 'README.md'), 'utf8');
const load = (id: string): LatencyModel =>
  LatencyModel.compile(
    parseProfile(
      JSON.parse(readFileSync(resolve(REPO, 'profiles', `${id}.json`), 'utf8')) as unknown,
      `profiles/${id}.json`,
    ),
  );

const TOLERANCE = 0.04;
const anchors = parsePaperTables(README);
const rtx2060s = load('rtx2060s');
const rtx2060 = load('rtx2060');

const rows = anchors.cells.map((c) => {
  const predictedMs = rtx2060s.predict(c.placements).latencyMs[0]!;
  return {
    name:
      `${c.table} | ${c.row} | ${c.column}: ` +
      `observed ${c.observedMs.toFixed(3)} ms, predicted ${predictedMs.toFixed(3)} ms`,
    observedMs: c.observedMs,
    predictedMs,
  };
});

describe('rtx2060s reproduces the published cells of Tables 2 and 3', () => {
  it('the README yields all 28 cells and 6 throughputs', () => {
    expect(anchors.cells).toHaveLength(28);
    expect(anchors.throughputs).toHaveLength(6);
    const effnet = anchors.cells.find((c) => c.row.startsWith('EfficientNet') && c.column === '42%')!;
    expect(effnet.placements).toEqual([
      { model: 'efficientnet', batch: 4, pct: 18 },
      { model: 'mobilenet', batch: 4, pct: 42 },
    ]);
    const vgg = anchors.cells.find((c) => c.row.startsWith('VGG16') && c.column === 'b=8')!;
    expect(vgg.placements).toEqual([
      { model: 'vgg16', batch: 8, pct: 30 },
      { model: 'alexnet', batch: 4, pct: 30 },
      { model: 'resnet50', batch: 4, pct: 30 },
    ]);
  });

  it.each(rows)('$name', ({ observedMs, predictedMs }) => {
    expect(Math.abs(predictedMs / observedMs - 1)).toBeLessThanOrEqual(TOLERANCE);
  });

  it('the batch-1 throughputs at 100% are matched within 10%', () => {
    for (const t of anchors.throughputs) {
      const rate = rtx2060s.predict([{ model: t.model, batch: t.batch, pct: t.pct }]).throughputPerS[0]!;
      expect(Math.abs(rate / t.ratePerS - 1), t.model).toBeLessThan(0.1);
    }
  });
});

describe('parsePaperTables', () => {
  it('rejects a README missing Table 3 with an error naming it', () => {
    // Drop the caption and the table under it, up to the next blank line.
    const lines = README.split('\n');
    const start = lines.findIndex((l) => l.startsWith('Table 3'));
    const end = lines.findIndex((l, i) => i > start && l.trim() === '');
    const without = [...lines.slice(0, start), ...lines.slice(end)].join('\n');
    expect(without).not.toContain('MnasNet alone');
    expect(() => parsePaperTables(without)).toThrow(InvalidInputError);
    expect(() => parsePaperTables(without)).toThrow(/Table 3.*not found/);
  });

  it('rejects a cell that is not a number, naming row and column', () => {
    const bad = README.replace('| 8.690 |', '| n/a |');
    expect(() => parsePaperTables(bad)).toThrow(/ResNet50 alone.*b=1/);
  });

  it('rejects an unknown model', () => {
    expect(() => parsePaperTables(README.replace('| MnasNet alone', '| SqueezeNet alone'))).toThrow(
      /unknown model 'SqueezeNet'/,
    );
  });
});

describe.each([
  ['rtx2060s', rtx2060s],
  ['rtx2060', rtx2060],
])('%s is physically sane', (_id, model) => {
  const unit = model.profile.gpu.mpsUnitPct;
  const pcts: number[] = [];
  for (let p = unit; p <= 100; p += unit) pcts.push(p);
  pcts.push(100);

  it.each(model.modelNames)('%s: o_r falls with share and rises with batch (batch 1..32, every MPS unit)', (name) => {
    const i = model.modelIndex(name);
    for (let b = 1; b <= 32; b++) {
      for (let j = 1; j < pcts.length; j++)
        expect(model.soloRunMs(i, b, pcts[j]!)).toBeLessThanOrEqual(model.soloRunMs(i, b, pcts[j - 1]!));
      if (b < 32) for (const p of pcts) expect(model.soloRunMs(i, b + 1, p)).toBeGreaterThan(model.soloRunMs(i, b, p));
    }
  });
});

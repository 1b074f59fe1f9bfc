import { describe, expect, it } from 'vitest';
import {
  capacityOf,
  type CurvePoint,
  gridCurve,
  gridLoads,
  parseGrid,
  parseSeeds,
  spread,
} from '../../tools/bench/capacity.js';
import { formatSuiteTable, type SuiteCell, summarizeSuite } from '../../tools/bench/suite.js';

const curve = (pairs: [number, number][]): CurvePoint[] =>
  pairs.map(([loadScale, sloViolationPct]) => ({ loadScale, sloViolationPct, goodputPerS: 0 }));

describe('grid capacity', () => {
  it('grid loads as written, validated', () => {
    expect(gridLoads({ fromX: 0.25, toX: 1, stepX: 0.25 })).toEqual([0.25, 0.5, 0.75, 1]);
    expect(gridLoads({ fromX: 0.1, toX: 0.3, stepX: 0.1 })).toEqual([0.1, 0.2, 0.3]);
    expect(parseGrid('0.5:2:0.5', '--grid')).toEqual({ fromX: 0.5, toX: 2, stepX: 0.5 });
    expect(() => parseGrid('1:0.5:0.1', '--grid')).toThrow(/--grid/);
    expect(() => parseGrid('a:b', '--grid')).toThrow(/from:to:step/);
  });

  it('is the highest load at which it and every lower load keep the attainment, on a non-monotone curve', () => {
    // A curve shaped like inss-ni's on a built-in: within at 0.5, over at 0.75, within again at 1.
    const c = curve([
      [0.25, 0.2],
      [0.5, 0.97],
      [0.75, 3.44],
      [1, 0.5],
      [1.25, 6],
    ]);
    expect(capacityOf(c, 0.99)).toBe(0.5);
    expect(capacityOf(c, 0.95)).toBe(1);
    // A curve failing at its first load has capacity 0; one within everywhere, its last load.
    expect(
      capacityOf(
        curve([
          [0.25, 13.9],
          [0.5, 0.1],
        ]),
        0.99,
      ),
    ).toBe(0);
    expect(
      capacityOf(
        curve([
          [0.25, 0],
          [0.5, 0.99],
        ]),
        0.99,
      ),
    ).toBe(0.5);
  });

  it('the curve runs in increasing load and stops after the first load below the stop attainment', () => {
    const seen: number[] = [];
    const v = new Map([
      [0.25, 0],
      [0.5, 2],
      [0.75, 7],
      [1, 0],
    ]);
    const c = gridCurve(
      (x) => (seen.push(x), { loadScale: x, sloViolationPct: v.get(x)!, goodputPerS: 0 }),
      [1, 0.5, 0.25, 0.75],
      0.95,
    );
    expect(seen).toEqual([0.25, 0.5, 0.75]);
    expect(capacityOf(c, 0.99)).toBe(0.25);
    expect(capacityOf(c, 0.95)).toBe(0.5);
  });

  it('seeds: mean and range; parsed and validated', () => {
    expect(spread([1, 2, 4])).toEqual({ mean: 7 / 3, min: 1, max: 4, n: 3 });
    expect(parseSeeds('1,2,3')).toEqual([1, 2, 3]);
    expect(() => parseSeeds('1,x')).toThrow(/--seeds/);
    expect(() => parseSeeds('1,1')).toThrow(/twice/);
  });
});

describe('suite summary', () => {
  const cell = (
    scenario: string,
    policy: string,
    seed: number,
    c: [number, number][] | null,
    reason?: string,
  ): SuiteCell => ({
    scenario,
    policy,
    seed,
    runnable: c !== null,
    ...(reason ? { reason } : {}),
    curve: c ? curve(c) : [],
    wallMs: 0,
  });
  const cells = [
    cell('a', 'inss', 1, [
      [0.5, 0],
      [1, 0],
      [1.5, 2],
    ]),
    cell('a', 'inss', 2, [
      [0.5, 0],
      [1, 3],
    ]),
    cell('a', 'timeshare', 1, [
      [0.5, 0],
      [1, 0.5],
      [1.5, 0.5],
      [2, 9],
    ]),
    cell('a', 'timeshare', 2, [
      [0.5, 0],
      [1, 0.5],
      [1.5, 6],
    ]),
    cell('b', 'inss', 1, null, 'inss needs a trained policy'),
    cell('b', 'inss', 2, null, 'inss needs a trained policy'),
    cell('b', 'timeshare', 1, [
      [0.5, 0],
      [1, 9],
    ]),
    cell('b', 'timeshare', 2, [
      [0.5, 0],
      [1, 9],
    ]),
  ];

  it('capacity per policy per scenario over seeds, inss against the best other, not-runnable shown', () => {
    const s = summarizeSuite(cells, ['a', 'b'], ['inss', 'timeshare']);
    expect(s[0]!.policies[0]!.capacity['99']).toEqual({ mean: 0.75, min: 0.5, max: 1, n: 2 });
    expect(s[0]!.policies[1]!.capacity['99']).toEqual({ mean: 1.25, min: 1, max: 1.5, n: 2 });
    expect(s[0]!.inssRatio['99']).toEqual({ ratio: 0.6, best: 'timeshare' });
    expect(s[1]!.policies[0]!.runnable).toBe(false);
    expect(s[1]!.inssRatio['99']).toBeNull();
    const table = formatSuiteTable(s, 0.99);
    expect(table).toContain('| a | 0.75 (0.50-1.00) | 1.25 (1.00-1.50) | 0.60 (vs timeshare) |');
    expect(table).toContain('| b | n/r | 0.50 | n/r |');
  });
});

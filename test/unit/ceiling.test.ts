import { describe, expect, it } from 'vitest';
import { loadScenario } from '../../cli/scenarios.js';
import { scenarioCluster } from '../../src/scenario/build.js';
import type { Scenario } from '../../src/scenario/schema.js';
import { ScenarioSchema } from '../../src/scenario/schema.js';
import { ceilingLp, coarserBins, rateBins, scenarioCeiling, solveCeiling } from '../../tools/bench/ceiling.js';
import { spread } from '../../tools/bench/capacity.js';
import { formatSuiteTable, summarizeSuite } from '../../tools/bench/suite.js';
import { formatGapTable, gapRow } from '../../tools/bench/ceilingGap.js';
import { type CeilingGroup, NOISE_TAIL, pooledLowerMs, upperHull } from '../../tools/bench/ceilingRates.js';

const scenario = (models: unknown[], durationS = 60): Scenario =>
  ScenarioSchema.parse({ name: 't', gpus: [{ profile: 'v100', count: 1 }], models, durationS });

const group = (over: Partial<CeilingGroup>): CeilingGroup => ({
  profileId: 'g',
  pooled: 'serial',
  count: 1,
  mps: [],
  pooledPerS: [],
  ...over,
});

describe('capacity ceiling: the pieces', () => {
  it('keeps the upper concave hull of (share, rate) from the origin', () => {
    const pts = [
      { pct: 10, perS: 5 },
      { pct: 20, perS: 6 },
      { pct: 30, perS: 12 },
      { pct: 40, perS: 12.5 },
      { pct: 50, perS: 12 },
    ];
    expect(upperHull(pts)).toEqual([pts[0], pts[2], pts[3]]);
  });

  it('cuts the run where a rate changes, merges stretches shorter than the minimum, counts samples', () => {
    const steps = {
      name: 'a',
      sloMs: 100,
      rate: {
        kind: 'steps',
        steps: [
          { atS: 0, ratePerS: 10 },
          { atS: 30, ratePerS: 20 },
        ],
      },
    };
    const s = scenario([steps]);
    expect(rateBins(s, 0.1)).toEqual([
      { lengthS: 30, ratePerS: [10] },
      { lengthS: 30, ratePerS: [20] },
    ]);
    expect(rateBins(s, 40)).toEqual([{ lengthS: 60, ratePerS: [15] }]);
    expect(rateBins(scenario([{ ...steps, samplesPerRequest: 2 }]), 0.1)[1]!.ratePerS).toEqual([40]);
    const diurnal = { name: 'a', sloMs: 100, rate: { kind: 'diurnal', meanPerS: 10, amplitude: 0.5, periodS: 60 } };
    expect(rateBins(scenario([diurnal]), 0.1)).toHaveLength(60);
    expect(() => rateBins(scenario([{ name: 'a', sloMs: 100, rate: { kind: 'trace', file: 'x' } }]), 0.1)).toThrow(
      /models\[0\]\.rate: a trace has no ceiling/,
    );
  });

  it('merges consecutive stretches, arrivals kept, to at most the LP size', () => {
    const bins = [1, 2, 3, 4, 5].map((r) => ({ lengthS: 1, ratePerS: [r] }));
    expect(coarserBins(bins, 5)).toEqual(bins);
    expect(coarserBins(bins, 2)).toEqual([
      { lengthS: 3, ratePerS: [2] },
      { lengthS: 2, ratePerS: [4.5] },
    ]);
  });

  it('shows in the suite table as a last column', () => {
    const rows = summarizeSuite([], ['a'], ['timeshare']).map((r) => ({
      ...r,
      ceiling: { 99: spread([4.5, 5.5]), 95: spread([6]) },
    }));
    expect(formatSuiteTable(rows, 0.99).split('\n')[0]).toMatch(/\| ceiling \|$/);
    expect(formatSuiteTable(rows, 0.99)).toContain('| 5.00 (4.50-5.50) |');
    expect(formatSuiteTable(rows, 0.95)).toContain('| 6.00 |');
  });

  it("bounds a pooled batch by the overlap rule's smallest term", () => {
    const l = loadScenario('v100-2-tight');
    const gpu = scenarioCluster(l.scenario, l.profiles).gpus[0]!;
    const solo = pooledLowerMs(gpu, 2, 8, 1, []);
    expect(pooledLowerMs(gpu, 2, 8, 2, [0.5])).toBeCloseTo(
      Math.min(2 * solo, solo + 0.5, pooledLowerMs(gpu, 2, 8, 2, [1e9])),
    );
    expect(pooledLowerMs(gpu, 2, 8, 2, [0.5])).toBeLessThan(solo + 0.5 + 1e-9);
  });
});

describe('capacity ceiling: the linear program', () => {
  const L = 100;
  const bin = (rates: number[]) => [{ lengthS: L, ratePerS: rates }];

  it('one model on one GPU: its best rate over its arrival rate, plus what the last SLO may carry', async () => {
    const g = group({ mps: [{ alone: [{ pct: 100, perS: 100 }], beside: [] }] });
    const x = await solveCeiling(ceilingLp([g], bin([50]), [100], 0.99));
    expect(x).toBeCloseTo((100 * L + 0.1 * 100) / ((0.99 - NOISE_TAIL) * 50 * L), 6);
    // At 95% the same GPU carries more load.
    expect(await solveCeiling(ceilingLp([g], bin([50]), [100], 0.95))).toBeGreaterThan(x);
  });

  it('lets the 1% slack drop a model no GPU can serve', async () => {
    const g = group({
      mps: [
        { alone: [{ pct: 100, perS: 100 }], beside: [] },
        { alone: [], beside: [] },
      ],
    });
    const x = await solveCeiling(ceilingLp([g], bin([99, 1]), [1, 1], 0.99));
    expect(x).toBeCloseTo((100 * L + 0.001 * 100) / ((0.99 - NOISE_TAIL) * 100 * L), 6);
    // With 2% of the tasks unservable, no load keeps 99%.
    expect(await solveCeiling(ceilingLp([g], bin([98, 2]), [1, 1], 0.99))).toBeCloseTo(0, 9);
  });

  it('shares one GPU between MPS partitions by share and one worker a model', async () => {
    // 60% of the GPU gives 80/s, 40% 50/s: two models cannot both hold 60%. Each gets half the share-time at
    // best, at 60%'s rate per share: 80 x 50/60 = 66.7/s (60% for five sixths of the time).
    const pts = [
      { pct: 40, perS: 50 },
      { pct: 60, perS: 80 },
    ];
    const g = group({ mps: [0, 1].map(() => ({ alone: [], beside: upperHull(pts) })) });
    const x = await solveCeiling(ceilingLp([g], bin([1, 1]), [1, 1], 0.99));
    expect(x * (0.99 - NOISE_TAIL)).toBeCloseTo(80 * (50 / 60), 2);
  });

  it('counts batches that start with at most j running as never more than j at once', async () => {
    // Two models pooled: 10/s starting alone, 8/s starting beside the other; both always busy is 8 + 8,
    // one alone and one beside 10 + 8: 9 each at most, not 10.
    const g = group({
      pooled: 'overlap',
      pooledPerS: [
        [10, 8],
        [10, 8],
      ],
    });
    const x = await solveCeiling(ceilingLp([g], bin([1, 1]), [1, 1], 0.99));
    expect(x * (0.99 - NOISE_TAIL)).toBeCloseTo(9, 3);
  });
});

describe('capacity ceiling: a scenario', () => {
  it('is higher at 95% than at 99% and higher with overlapping pooled GPUs than with serial ones', async () => {
    const l = loadScenario('v100-2-tight');
    const under = (mode: 'overlap' | 'serial') => {
      const s = { ...l.scenario, timeshareGpu: mode, gpus: l.scenario.gpus.map((g) => ({ ...g, timeshareGpu: mode })) };
      return scenarioCeiling(s, scenarioCluster(s, l.profiles), [1], [0.99, 0.95]);
    };
    const [overlap] = await under('overlap');
    const [serial] = await under('serial');
    expect(serial!.ceiling['95']!).toBeGreaterThan(serial!.ceiling['99']!);
    expect(overlap!.ceiling['99']!).toBeGreaterThanOrEqual(serial!.ceiling['99']!);
    // The recorded capacities on it are 1.25-1.75 (docs/results.md); the bound is above them and finite.
    expect(serial!.ceiling['99']!).toBeGreaterThan(1.75);
    expect(serial!.ceiling['99']!).toBeLessThan(20);
  });
});

describe('capacity ceiling: the gap table', () => {
  const cell = (policy: string, seed: number, ok: number[]) => ({
    scenario: 's',
    policy,
    seed,
    runnable: true,
    curve: [0.5, 1, 1.5].map((x, i) => ({ loadScale: x, sloViolationPct: ok[i]!, goodputPerS: 0 })),
  });

  it("splits inss's gap to the ceiling into the planner's part (up to the best above inss) and the GPUs'", () => {
    // inss 1.0 on both seeds, timeshare 1.25 in the mean (1.5 and 1.0), static-even 0.5.
    const inssFrom = { cells: [cell('inss', 1, [0, 0, 2]), cell('inss', 2, [0, 0, 2])] };
    const others = {
      cells: [cell('timeshare', 1, [0, 0, 0]), cell('timeshare', 2, [0, 0, 2]), cell('static-even', 1, [0, 2, 2])],
    };
    const row = gapRow('s', inssFrom, [others], null, 4);
    expect(row.bestOther).toEqual({ policy: 'timeshare', capacity: 1.25 });
    expect(row.plannerPart).toBeCloseTo(0.25);
    expect(row.gpuPart).toBeCloseTo(2.75);
    // A fixed plan above every policy takes the planner's part up to it.
    expect(gapRow('s', inssFrom, [others], 2, 4).plannerPart).toBeCloseTo(1);
    expect(formatGapTable([row])).toContain('| s | 1.00 | 1.25 timeshare | - | 4.00 | 0.25 (8%) | 2.75 (92%) |');
  });
});

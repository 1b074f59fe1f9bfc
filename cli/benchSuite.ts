// `inss bench --suite`: scenarios x seeds x policies, each cell a capacity curve on the load grid, one
// capacity table (with summary.md, suite.json and plots in --out).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  ATTAINMENTS,
  capacityOf,
  DEFAULT_GRID,
  gridLoads,
  type LoadGrid,
  type Spread,
} from '../tools/bench/capacity.js';
import { attainmentKey, formatSpread, formatSuiteTable, summarizeSuite } from '../tools/bench/suite.js';
import { CeilingError, ceilingSpread, scenarioCeiling, type SeedCeiling } from '../tools/bench/ceiling.js';
import { scenarioCluster } from '../src/scenario/build.js';
import { barChart } from '../tools/report/svg.js';
import { InvalidInputError } from '../src/profile/schema.js';
import type { PooledGpuMode } from '../src/model/pooledGpu.js';
import type { MonitorKind } from '../src/serving/monitor.js';
import type { PolicyRegistry } from './registry.js';
import { type CellJob, cellScenario, inssPolicyData, policyOptionsFor, runCell } from './benchCell.js';
import { startProgress } from './progress.js';
import { listScenarioNames } from './scenarios.js';
import { runInThreads } from './threads.js';
import { unsupportedError, violationChart } from './bench.js';

/** The built-in scenarios the suite runs by default: the V100 ones first (docs/results.md says why). */
export function defaultSuiteScenarios(): string[] {
  const all = listScenarioNames();
  return [...all.filter((n) => n.startsWith('v100')), ...all.filter((n) => !n.startsWith('v100'))];
}

/** The policies the suite runs by default (the oracle and the inss ablations are left to --policies: time). */
export const DEFAULT_SUITE_POLICIES = [
  'inss',
  'timeshare',
  'gpulet',
  'gpulet-h',
  'gslice',
  'gslice-h',
  'igniter',
  'igniter-h',
  'static-even',
  'static-even-h',
];

export interface SuiteOptions {
  /** Scenario names or files; default every built-in scenario. */
  readonly scenarios?: readonly string[];
  readonly policies?: readonly string[];
  readonly seeds: readonly number[];
  readonly grid?: LoadGrid;
  /** Worker threads running cells (1: in this process). */
  readonly jobs: number;
  readonly timeshareGpu?: PooledGpuMode;
  /** The monitor every cell uses (src/serving/monitor.ts); absent: each scenario's. */
  readonly monitor?: MonitorKind;
  /** Front doors every cell uses (src/sim/doors.ts); absent: each scenario's. */
  readonly frontDoors?: number;
  readonly out?: string;
  readonly json?: boolean;
  /**
   * Run the rest when a policy cannot run on a scenario (the cell shows n/r and why) instead of failing before anything
   * runs.
   */
  readonly skipUnsupported?: boolean;
  /** Where progress goes (cli/progress.ts): a TTY gets a bar, anything else one line per cell. */
  readonly progress?: NodeJS.WriteStream;
  /** Print each scenario's capacity ceiling (tools/bench/ceiling.ts) and run no policy. */
  readonly ceilingOnly?: boolean;
}

/** A scenario's ceiling over the suite's seeds, or null and why it has none. */
export interface SuiteCeiling {
  readonly scenario: string;
  readonly ceiling: Readonly<Record<string, Spread>> | null;
  readonly bySeed: readonly SeedCeiling[];
  readonly reason?: string;
}

/** Each scenario's ceiling at the seeds (docs/ceiling.md); a scenario with a trace has none (the reason says). */
export async function suiteCeilings(
  loaded: readonly ReturnType<typeof cellScenario>[],
  seeds: readonly number[],
): Promise<SuiteCeiling[]> {
  const out: SuiteCeiling[] = [];
  for (const l of loaded) {
    try {
      const bySeed = await scenarioCeiling(l.scenario, scenarioCluster(l.scenario, l.profiles), seeds, ATTAINMENTS);
      out.push({ scenario: l.scenario.name, ceiling: ceilingSpread(bySeed), bySeed });
    } catch (err) {
      if (!(err instanceof CeilingError)) throw err;
      out.push({ scenario: l.scenario.name, ceiling: null, bySeed: [], reason: err.message });
    }
  }
  return out;
}

/** The ceilings alone, one row per scenario (`inss bench --suite --ceiling-only`). */
function formatCeilings(ceilings: readonly SuiteCeiling[]): string {
  const head = ['scenario', ...ATTAINMENTS.map((a) => `ceiling@${attainmentKey(a)}% x`)];
  const rows = ceilings.map((c) => [
    c.scenario,
    ...ATTAINMENTS.map((a) => (c.ceiling ? formatSpread(c.ceiling[attainmentKey(a)]) : 'none')),
  ]);
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  const notes = ceilings.filter((c) => c.reason).map((c) => `${c.scenario}: no ceiling: ${c.reason!}`);
  return [line(head), line(head.map(() => '---')), ...rows.map(line), ...notes].join('\n');
}

export async function runSuite(registry: PolicyRegistry, opts: SuiteOptions): Promise<number> {
  const scenarioArgs = opts.scenarios && opts.scenarios.length > 0 ? opts.scenarios : defaultSuiteScenarios();
  const loadedAll = scenarioArgs.map((s) =>
    cellScenario({
      scenario: s,
      ...(opts.timeshareGpu ? { timeshareGpu: opts.timeshareGpu } : {}),
      ...(opts.monitor ? { monitor: opts.monitor } : {}),
      ...(opts.frontDoors ? { frontDoors: opts.frontDoors } : {}),
    }),
  ); // validates every scenario first
  for (const l of loadedAll) scenarioCluster(l.scenario, l.profiles);
  const names = loadedAll.map((l) => l.scenario.name);
  if (new Set(names).size !== names.length)
    throw new InvalidInputError(`--suite: two scenarios share a name (${names.join(', ')})`);
  if (opts.ceilingOnly) {
    const ceilings = await suiteCeilings(loadedAll, opts.seeds);
    const mode = opts.timeshareGpu ?? 'per scenario (default overlap)';
    if (opts.json) console.log(JSON.stringify({ seeds: opts.seeds, timeshareGpu: mode, ceilings }));
    else
      console.log(
        `Capacity ceiling (load x; mean (min-max) over seeds ${opts.seeds.join(',')}; pooled GPUs: ${mode}; ` +
          `docs/ceiling.md)\n\n${formatCeilings(ceilings)}`,
      );
    return 0;
  }
  const policies =
    opts.policies && opts.policies.length > 0
      ? [...opts.policies]
      : DEFAULT_SUITE_POLICIES.filter((p) => registry.names().includes(p));
  for (const p of policies) registry.get(p); // unknown names fail before anything runs
  if (!opts.skipUnsupported) {
    for (const l of loadedAll) {
      const reason = (p: string) =>
        registry.get(p).supports(scenarioCluster(l.scenario, l.profiles), {
          seed: l.scenario.seed,
          ...policyOptionsFor(inssPolicyData(l.scenario.name), l.scenario.attainmentTarget)(p),
        });
      for (const p of policies) {
        const why = reason(p);
        if (why !== null) throw unsupportedError(p, l.scenario.name, why);
      }
    }
  }
  const ceilings = await suiteCeilings(loadedAll, opts.seeds);
  const grid = opts.grid ?? DEFAULT_GRID;
  const loads = gridLoads(grid);
  const stopAt = Math.min(...ATTAINMENTS);
  // inss first: its cells cost most (its decisions), so they should not be the tail of the run.
  const order = [...policies].sort((a, b) => Number(b.startsWith('inss')) - Number(a.startsWith('inss')));
  const jobs: CellJob[] = [];
  for (const p of order)
    for (const s of scenarioArgs)
      for (const seed of opts.seeds)
        jobs.push({
          scenario: s,
          policy: p,
          seed,
          loads,
          stopAtAttainment: stopAt,
          ...(opts.timeshareGpu ? { timeshareGpu: opts.timeshareGpu } : {}),
          ...(opts.monitor ? { monitor: opts.monitor } : {}),
          ...(opts.frontDoors ? { frontDoors: opts.frontDoors } : {}),
        });
  const t0 = performance.now();
  const progress = startProgress({
    total: jobs.length,
    ...(opts.progress ? { stream: opts.progress } : { quiet: true }),
  });
  const cells = await runInThreads(jobs, opts.jobs, runCell, (c) => {
    const capacities = ATTAINMENTS.map((a) => `${Math.round(a * 100)}%: ${capacityOf(c.curve, a).toFixed(2)}x`);
    const what = c.runnable
      ? `capacity ${capacities.join(', ')}, ${c.curve.length} loads, ${(c.wallMs / 1000).toFixed(1)} s`
      : `not runnable: ${c.reason ?? ''}`;
    progress.increment(`${c.scenario} ${c.policy} seed ${c.seed}: ${what}`);
  });
  progress.stop();
  const wallS = (performance.now() - t0) / 1000;
  const summary = summarizeSuite(cells, names, policies).map((row) => ({
    ...row,
    ceiling: ceilings.find((c) => c.scenario === row.scenario)!.ceiling,
  }));
  const result = {
    suite: {
      scenarios: names,
      policies,
      seeds: opts.seeds,
      grid,
      attainments: ATTAINMENTS,
      jobs: opts.jobs,
      wallS,
      timeshareGpu: opts.timeshareGpu ?? 'per scenario (default overlap)',
      monitor: opts.monitor ?? 'per scenario (default mean)',
      frontDoors: opts.frontDoors ?? 'per scenario (default 1)',
      node: process.version,
    },
    summary,
    ceilings,
    cells,
  };
  const tables = ATTAINMENTS.map(
    (a) =>
      `Capacity at >= ${Math.round(a * 100)}% within SLO (load x; mean (min-max) over seeds ` +
      `${opts.seeds.join(',')}; n/r: not runnable)\n\n${formatSuiteTable(summary, a)}`,
  ).join('\n\n');
  if (opts.out) {
    mkdirSync(opts.out, { recursive: true });
    writeFileSync(join(opts.out, 'suite.json'), `${JSON.stringify(result, null, 1)}\n`);
    writeFileSync(
      join(opts.out, 'summary.md'),
      `${tables}\n\nSuite wall time: ${wallS.toFixed(0)} s on ${opts.jobs} thread(s).\n`,
    );
    for (const name of names) {
      const series = policies
        .map((p) => ({ name: p, cells: cells.filter((c) => c.scenario === name && c.policy === p && c.runnable) }))
        .filter((s) => s.cells.length > 0);
      writeFileSync(join(opts.out, `${name}-violation-vs-load.svg`), violationChart(name, series));
    }
    const k = attainmentKey(ATTAINMENTS[0]);
    const ratios = summary
      .filter((s) => s.inssRatio[k])
      .map((s) => ({ name: s.scenario, value: Number.isFinite(s.inssRatio[k]!.ratio) ? s.inssRatio[k]!.ratio : 0 }));
    if (ratios.length > 0)
      writeFileSync(
        join(opts.out, 'inss-ratio.svg'),
        barChart(`inss capacity / best other policy's, at >= ${k}% within SLO`, 'ratio', ratios),
      );
  }
  if (opts.json) console.log(JSON.stringify({ suite: result.suite, summary }));
  else {
    console.log(tables);
    console.log(
      `\nsuite: ${jobs.length} cells in ${wallS.toFixed(0)} s on ${opts.jobs} thread(s)` +
        (opts.out ? `; wrote ${join(opts.out, 'suite.json')}, summary.md and plots` : ''),
    );
  }
  return 0;
}

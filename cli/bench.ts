// `inss bench`: every chosen policy on the same seeded workload, side by side; with --sweep, each
// policy's capacity on the load grid. With --suite, scenarios x seeds x policies in one table
// (cli/benchSuite.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  ATTAINMENTS,
  capacityOf,
  type CurvePoint,
  DEFAULT_GRID,
  gridLoads,
  type LoadGrid,
  type Spread,
  spread,
} from '../tools/bench/capacity.js';
import { type BenchContext, type PolicyResult, policyCurve } from '../tools/bench/run.js';
import { attainmentKey, formatSpread, meanCurve, type SuiteCell } from '../tools/bench/suite.js';
import { scenarioCluster, scenarioSettings } from '../src/scenario/build.js';
import { barChart, lineChart } from '../tools/report/svg.js';
import { InvalidInputError } from '../src/profile/schema.js';
import type { PooledGpuMode } from '../src/model/pooledGpu.js';
import type { MonitorKind } from '../src/serving/monitor.js';
import type { TransportModel } from '../src/serving/transport.js';
import type { PolicyRegistry } from './registry.js';
import {
  cellScenario,
  HEADROOM_VARIANTS,
  inssPolicyData,
  type PolicyJob,
  policyOptionsFor,
  runPolicyJob,
} from './benchCell.js';
import { runInThreads } from './threads.js';

export interface BenchOptions {
  readonly scenario: string;
  readonly policies?: string;
  readonly json?: boolean;
  /** Capacity on the load grid (capacity.ts) per policy, at 99% and 95% within SLO. */
  readonly sweep?: boolean;
  readonly grid?: LoadGrid;
  /** Seeds the capacity is measured over (mean and range); default the scenario's. */
  readonly seeds?: readonly number[];
  readonly timeshareGpu?: PooledGpuMode;
  /** The monitor every run uses (src/serving/monitor.ts); absent: the scenario's. */
  readonly monitor?: MonitorKind;
  /** Front doors every run uses (src/sim/doors.ts); absent: the scenario's. */
  readonly frontDoors?: number;
  /** The transport a running system measured on a host (`inss bench --transport FILE`). */
  readonly transport?: TransportModel;
  readonly out?: string;
  /** Trained policy for inss and its variants (default: the one shipped for the scenario, where it matches). */
  readonly policyFile?: string;
  /** Worker threads running the policies side by side (1: in this process). Each thread times its own decisions. */
  readonly jobs?: number;
  /** Skip a policy that cannot run on the scenario (reported) instead of failing with a non-zero exit. */
  readonly skipUnsupported?: boolean;
}

/** The error for a policy that cannot run where the user asked for it (exit 2 from the CLI). */
export function unsupportedError(policy: string, scenario: string, reason: string): InvalidInputError {
  return new InvalidInputError(
    `${policy} cannot run on scenario ${scenario}: ${reason} (--skip-unsupported skips it and reports why)`,
  );
}

/** Capacity of one policy over the seeds, and its curve at each seed. */
export interface CapacitySummary {
  readonly capacity: Readonly<Record<string, Spread>>;
  readonly curves: readonly { seed: number; points: readonly CurvePoint[] }[];
}

function pad(s: string, n: number, right = false): string {
  return right ? s.padEnd(n) : s.padStart(n);
}

export function formatTable(results: readonly PolicyResult[], sweeps?: ReadonlyMap<string, CapacitySummary>): string {
  const head = [
    'policy',
    'thr/s',
    'goodput/s',
    'SLO viol%',
    'drop%',
    'p50 ms',
    'p99 ms',
    'decide p99 ms',
    'swaps',
    ...(sweeps ? ['capacity@99% x', 'capacity@95% x'] : []),
  ];
  const rows = results.map((r) => [
    r.policy,
    r.throughputPerS.toFixed(1),
    r.goodputPerS.toFixed(1),
    r.sloViolationPct.toFixed(2),
    r.dropPct.toFixed(2),
    r.p50Ms.toFixed(1),
    r.p99Ms.toFixed(1),
    Number.isFinite(r.decisionMsP99) ? r.decisionMsP99.toFixed(3) : '-',
    String(r.sim.swaps),
    ...(sweeps ? ATTAINMENTS.map((a) => formatSpread(sweeps.get(r.policy)?.capacity[attainmentKey(a)])) : []),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => pad(c, widths[i]!, i === 0)).join('  ');
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** A policy's capacity on the grid over the seeds (the curve at each seed runs the whole grid). */
export function capacitySummary(
  ctx: BenchContext,
  factory: Parameters<typeof policyCurve>[1],
  loads: readonly number[],
  seeds: readonly number[],
): CapacitySummary {
  const curves = seeds.map((seed) => ({ seed, points: policyCurve(ctx, factory, loads, seed) }));
  const capacity: Record<string, Spread> = {};
  for (const a of ATTAINMENTS) capacity[attainmentKey(a)] = spread(curves.map((c) => capacityOf(c.points, a)));
  return { capacity, curves };
}

export async function runBench(registry: PolicyRegistry, opts: BenchOptions): Promise<number> {
  const loaded = cellScenario({
    scenario: opts.scenario,
    ...(opts.timeshareGpu ? { timeshareGpu: opts.timeshareGpu } : {}),
    ...(opts.monitor ? { monitor: opts.monitor } : {}),
    ...(opts.frontDoors ? { frontDoors: opts.frontDoors } : {}),
  });
  const names = opts.policies
    ? opts.policies
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : registry.names().filter((n) => !HEADROOM_VARIANTS.includes(n));
  if (names.length === 0) throw new InvalidInputError('--policies: no policy named');
  const factories = names.map((n) => registry.get(n)); // unknown names fail before anything runs
  const policyOptions = policyOptionsFor(
    inssPolicyData(loaded.scenario.name, opts.policyFile),
    loaded.scenario.attainmentTarget,
  );
  const ctx: BenchContext = {
    scenario: loaded.scenario,
    profiles: loaded.profiles,
    traces: loaded.traces,
    clock: () => performance.now(),
    policyOptions,
    ...(opts.transport ? { transport: opts.transport } : {}),
  };
  // validates models against profiles before anything runs
  const cluster = scenarioCluster(loaded.scenario, loaded.profiles);
  const results: PolicyResult[] = [];
  const skipped: { policy: string; reason: string }[] = [];
  const runnable = factories.filter((f) => {
    const reason = f.supports(cluster, { seed: loaded.scenario.seed, ...policyOptions(f.name) });
    if (reason === null) return true;
    // Named policies must run; of the default set (every registered one), those that cannot are skipped and reported.
    if (!opts.skipUnsupported && opts.policies) throw unsupportedError(f.name, loaded.scenario.name, reason);
    // asked for: e.g. inss-paper without a trained policy, the oracle on an instance too large
    skipped.push({ policy: f.name, reason });
    return false;
  });
  const policyJob = (f: (typeof runnable)[number]): PolicyJob => ({
    kind: 'policy',
    scenario: opts.scenario,
    policy: f.name,
    ...(opts.timeshareGpu ? { timeshareGpu: opts.timeshareGpu } : {}),
    ...(opts.monitor ? { monitor: opts.monitor } : {}),
    ...(opts.frontDoors ? { frontDoors: opts.frontDoors } : {}),
    ...(opts.policyFile ? { policyFile: opts.policyFile } : {}),
    ...(opts.transport ? { transport: opts.transport } : {}),
  });
  results.push(...(await runInThreads(runnable.map(policyJob), opts.jobs ?? 1, runPolicyJob)));
  const sweeps = new Map<string, CapacitySummary>();
  const loads = gridLoads(opts.grid ?? DEFAULT_GRID);
  const seeds = opts.seeds ?? [loaded.scenario.seed];
  if (opts.sweep) for (const f of runnable) sweeps.set(f.name, capacitySummary(ctx, f, loads, seeds));
  const summary = {
    scenario: loaded.scenario.name,
    seed: loaded.scenario.seed,
    durationS: loaded.scenario.durationS,
    timeshareGpu: loaded.scenario.timeshareGpu,
    monitor: scenarioSettings(loaded.scenario).monitor,
    frontDoors: loaded.scenario.frontDoors ?? 1,
    ...(opts.sweep ? { grid: opts.grid ?? DEFAULT_GRID, seeds } : {}),
    results: results.map((r) => ({
      policy: r.policy,
      ...(r.note !== undefined ? { note: r.note } : {}),
      throughputPerS: r.throughputPerS,
      goodputPerS: r.goodputPerS,
      sloViolationPct: r.sloViolationPct,
      latePct: r.sim.latePct,
      dropPct: r.dropPct,
      p50Ms: r.p50Ms,
      p99Ms: r.p99Ms,
      decisionMsP99: r.decisionMsP99,
      swaps: r.sim.swaps,
      arrivals: r.sim.arrivals,
      served: r.sim.served,
      dropped: r.sim.dropped,
      unfinished: r.sim.unfinished,
      memoryOvercommits: r.sim.memoryOvercommits,
      gpuSharePct: r.sim.gpuSharePct,
      perModel: r.sim.models,
      ...(sweeps.has(r.policy) ? { sweep: sweeps.get(r.policy) } : {}),
      wallMs: r.wallMs,
    })),
    skipped,
  };
  if (opts.out) {
    mkdirSync(opts.out, { recursive: true });
    writeFileSync(join(opts.out, 'results.json'), `${JSON.stringify(summary, null, 1)}\n`);
    writeFileSync(
      join(opts.out, 'throughput.svg'),
      lineChart(
        `Throughput over time: ${loaded.scenario.name}`,
        'time (s)',
        'tasks served per second',
        results.map((r) => ({
          name: r.policy,
          points: r.sim.timeline.map((p) => [p.tMs / 1000, p.servedPerS] as const),
        })),
      ),
    );
    writeFileSync(
      join(opts.out, 'slo-violations.svg'),
      barChart(
        `SLO violations (late + dropped): ${loaded.scenario.name}`,
        'percent of tasks',
        results.map((r) => ({ name: r.policy, value: r.sloViolationPct })),
      ),
    );
    if (opts.sweep)
      writeFileSync(
        join(opts.out, 'violation-vs-load.svg'),
        violationChart(
          loaded.scenario.name,
          [...sweeps].map(([name, c]) => ({ name, cells: c.curves.map((k) => ({ curve: k.points })) })),
        ),
      );
  }
  if (opts.json) {
    console.log(JSON.stringify(summary));
    for (const s of skipped) console.error(`${s.policy}: skipped: ${s.reason}`); // never silent: stdout is the JSON
  } else {
    console.log(
      `scenario ${loaded.scenario.name}, seed ${loaded.scenario.seed}, ${loaded.scenario.durationS} s simulated`,
    );
    console.log(formatTable(results, opts.sweep ? sweeps : undefined));
    for (const r of results) if (r.note !== undefined) console.log(`${r.policy}: decided with ${r.note}`);
    for (const s of skipped) console.log(`${s.policy}: skipped: ${s.reason}`);
    if (opts.sweep)
      console.log(
        `capacity: the highest load x of the grid ${loads[0]}..${loads[loads.length - 1]} at which it and ` +
          `every lower load keep >= 99% (95%) within SLO; seeds ${seeds.join(',')}: mean (min-max)`,
      );
    if (opts.out)
      console.log(
        `wrote ${join(opts.out, 'results.json')}, throughput.svg, ` +
          `slo-violations.svg${opts.sweep ? ', violation-vs-load.svg' : ''}`,
      );
  }
  return 0;
}

/** Violation-versus-load plot: per policy, the mean over seeds at each load its curves reached. */
export function violationChart(
  scenario: string,
  series: readonly { name: string; cells: readonly Pick<SuiteCell, 'curve'>[] }[],
): string {
  return lineChart(
    `SLO violation vs load: ${scenario}`,
    'load (x the scenario rates)',
    'late + dropped, % of tasks (mean over seeds)',
    series.map((s) => ({
      name: s.name,
      points: meanCurve(s.cells.map((c) => ({ ...c, scenario, policy: s.name, seed: 0, runnable: true, wallMs: 0 }))),
    })),
  );
}

// `inss bench`: every chosen policy on the same seeded workload, side by side.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type BenchContext, type PolicyResult, runPolicy, sweep } from '../src/bench/run.js';
import { scenarioCluster } from '../src/scenario/build.js';
import { barChart, lineChart } from '../src/report/svg.js';
import { InvalidInputError } from '../src/profile/schema.js';
import type { PolicyRegistry } from '../scheduler/registry.js';
import type { PolicyOptions } from '../src/policy/types.js';
import { loadScenario } from './scenarios.js';

export interface BenchOptions {
  readonly scenario: string;
  readonly policies?: string;
  readonly json?: boolean;
  readonly sweep?: boolean;
  readonly out?: string;
  readonly policyOptions?: (name: string) => PolicyOptions;
}

function pad(s: string, n: number, right = false): string {
  return right ? s.padEnd(n) : s.padStart(n);
}

export function formatTable(results: readonly PolicyResult[], sweeps?: ReadonlyMap<string, { maxLoadScale: number; maxGoodputPerS: number }>): string {
  const head = ['policy', 'thr/s', 'goodput/s', 'SLO viol%', 'drop%', 'p50 ms', 'p99 ms', 'decide p99 ms', 'swaps', ...(sweeps ? ['max load x', 'goodput@max'] : [])];
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
    ...(sweeps ? [sweeps.get(r.policy)?.maxLoadScale.toFixed(2) ?? '-', sweeps.get(r.policy)?.maxGoodputPerS.toFixed(1) ?? '-'] : []),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => pad(c, widths[i]!, i === 0)).join('  ');
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export function runBench(registry: PolicyRegistry, opts: BenchOptions): number {
  const loaded = loadScenario(opts.scenario);
  const names = opts.policies ? opts.policies.split(',').map((s) => s.trim()).filter(Boolean) : registry.names();
  if (names.length === 0) throw new InvalidInputError('--policies: no policy named');
  const factories = names.map((n) => registry.get(n)); // unknown names fail before anything runs
  const ctx: BenchContext = { scenario: loaded.scenario, profiles: loaded.profiles, traces: loaded.traces, clock: () => performance.now(), ...(opts.policyOptions ? { policyOptions: opts.policyOptions } : {}) };
  scenarioCluster(loaded.scenario, loaded.profiles); // validates models against profiles before anything runs
  const results: PolicyResult[] = [];
  const skipped: { policy: string; reason: string }[] = [];
  for (const f of factories) {
    try {
      results.push(runPolicy(ctx, f));
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      skipped.push({ policy: f.name, reason: err.message }); // e.g. the oracle refusing an instance too large
    }
  }
  const sweeps = new Map<string, { maxLoadScale: number; maxGoodputPerS: number; points: unknown[] }>();
  if (opts.sweep) for (const f of factories) if (results.some((r) => r.policy === f.name)) sweeps.set(f.name, sweep(ctx, f));
  const summary = {
    scenario: loaded.scenario.name,
    seed: loaded.scenario.seed,
    durationS: loaded.scenario.durationS,
    results: results.map((r) => ({
      policy: r.policy,
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
      lineChart(`Throughput over time: ${loaded.scenario.name}`, 'time (s)', 'tasks served per second', results.map((r) => ({ name: r.policy, points: r.sim.timeline.map((p) => [p.tMs / 1000, p.servedPerS] as const) }))),
    );
    writeFileSync(join(opts.out, 'slo-violations.svg'), barChart(`SLO violations (late + dropped): ${loaded.scenario.name}`, 'percent of tasks', results.map((r) => ({ name: r.policy, value: r.sloViolationPct }))));
  }
  if (opts.json) {
    console.log(JSON.stringify(summary));
  } else {
    console.log(`scenario ${loaded.scenario.name}, seed ${loaded.scenario.seed}, ${loaded.scenario.durationS} s simulated`);
    console.log(formatTable(results, opts.sweep ? sweeps : undefined));
    for (const s of skipped) console.log(`${s.policy}: skipped: ${s.reason}`);
    if (opts.out) console.log(`wrote ${join(opts.out, 'results.json')}, throughput.svg, slo-violations.svg`);
  }
  return 0;
}

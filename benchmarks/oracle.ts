// The oracle sweep of fixed plans (tools/bench/oracle.ts; docs/results.md, "Physics or design: the
// oracle sweep"): the highest capacity any fixed deployment in the searched space reaches on a
// scenario, by the simulator, over seeds. Prints progress to stderr and one JSON line to stdout.
//
//   node dist/benchmarks/oracle.js --scenario v100-2-tight --loads 1.5,1.75,2 [--seeds 1,2,3] [--budget 300]
//
// --loads: the grid loads to climb (those above the best other policy's capacity); the best plan's
// capacity is then measured on the whole suite grid (0.25x to 3x) up to its first failing load.
// Extra seed plans: the five deployments inss itself held for the most decisions in a run at the
// first load (seed 1).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { inssFactory, POOLING_BUDGET, SLO_FRACTION } from '../rl/inss.js';
import { DEFAULT_GRID, gridLoads } from '../tools/bench/capacity.js';
import { oracleSweep, planKey } from '../tools/bench/oracle.js';
import { runPolicy } from '../tools/bench/run.js';
import { peakRates } from '../tools/bench/workBound.js';
import { initialRates, scenarioCluster } from '../src/scenario/build.js';
import type { Deployment, PolicyFactory } from '../src/policy/types.js';
import { BUILTIN_POLICY_DIR, readJsonFile } from '../cli/profiles.js';
import { loadScenario } from '../cli/scenarios.js';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string' },
    loads: { type: 'string' },
    seeds: { type: 'string', default: '1,2,3' },
    budget: { type: 'string', default: '300' },
  },
});
if (!values.scenario || !values.loads)
  throw new RangeError('usage: oracle.js --scenario NAME|FILE --loads 1.5,1.75,2 [--seeds 1,2,3] [--budget 300]');
const numbers = (text: string, flag: string) => {
  const xs = text.split(',').map((x) => Number(x.trim()));
  if (xs.length === 0 || xs.some((x) => !(x > 0) || !Number.isFinite(x)))
    throw new RangeError(`${flag}: expected positive numbers separated by commas, got '${text}'`);
  return xs;
};
const loads = numbers(values.loads, '--loads').sort((a, b) => a - b);
const seeds = numbers(values.seeds, '--seeds');
if (seeds.some((s) => !Number.isInteger(s))) throw new RangeError(`--seeds: expected integers, got '${values.seeds}'`);
const budget = Number(values.budget);
if (!Number.isInteger(budget) || budget < 1)
  throw new RangeError(`--budget: expected a positive integer, got '${values.budget}'`);

const loaded = loadScenario(values.scenario);
const scenario = loaded.scenario;
const cluster = scenarioCluster(scenario, loaded.profiles);
const shipped = join(BUILTIN_POLICY_DIR, `${scenario.name}.json`);
const policyData = existsSync(shipped) ? readJsonFile(shipped) : undefined;
const ctx = {
  scenario,
  profiles: loaded.profiles,
  traces: loaded.traces,
  policyOptions: () => (policyData !== undefined ? { policyData } : {}),
};
// Plan for each model's peak (a trace's: its rate at time 0).
const t0Rates = initialRates(scenario, loaded.traces);
const planRates = peakRates(scenario).map((r, i) => (Number.isFinite(r) ? r : t0Rates[i]!));

// inss's own deployments in a run at the first load, the MOST_USED it held for the most decisions: extra seeds.
const MOST_USED = 5;
const chosen = new Map<string, { plan: Deployment; decisions: number }>();
const recording: PolicyFactory = {
  ...inssFactory,
  create(c, o) {
    const p = inssFactory.create(c, o);
    return {
      name: p.name,
      decide: (obs) => {
        const d = p.decide(obs);
        const key = planKey(cluster, d);
        chosen.set(key, { plan: d, decisions: (chosen.get(key)?.decisions ?? 0) + 1 });
        return d;
      },
    };
  },
};
runPolicy({ ...ctx, scenario: { ...scenario, seed: seeds[0]! } }, recording, loads[0], cluster);

const started = performance.now();
let lastPrint = 0;
const result = oracleSweep(ctx, cluster, {
  loads,
  grid: gridLoads(DEFAULT_GRID),
  seeds,
  budget,
  attainment: 0.99,
  planRates,
  pooling: { sloFraction: SLO_FRACTION, budget: POOLING_BUDGET },
  extraSeeds: [...chosen.values()]
    .sort((a, b) => b.decisions - a.decisions)
    .slice(0, MOST_USED)
    .map((c) => c.plan),
  onStep: (s) => {
    if (s.simulations - lastPrint >= 10 || s.passed) {
      lastPrint = s.simulations;
      process.stderr.write(
        `${scenario.name} ${s.load}x sims ${s.simulations} best ` +
          `${s.bestViolationPct.map((v) => v.toFixed(2)).join('/')}%${s.passed ? ' PASS' : ''} ` +
          `(${((performance.now() - started) / 1000).toFixed(0)} s)\n`,
      );
    }
  },
});
const names = cluster.models.map((m) => m.name);
const plan = result.plan.placements.map(
  (p) =>
    `${names[p.model]}@${p.gpu}${result.plan.gpuModes?.[p.gpu] === 'timeshare' ? ' pooled' : ` ${p.pct}%`} b${p.batch}`,
);
console.log(
  JSON.stringify({
    benchmark: 'oracle',
    scenario: scenario.name,
    loads,
    seeds,
    budget,
    inssPlansHeld: chosen.size,
    inssPlansSeeded: Math.min(MOST_USED, chosen.size),
    ...result,
    planText: plan,
    wallS: Number(((performance.now() - started) / 1000).toFixed(1)),
  }),
);

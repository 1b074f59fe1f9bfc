// Benchmark: one online decision of the InSS policy from a deployment in force, timed over many
// observations; prints p50 and p99 in ms. inss decides with the shipped trained policy where one fits
// the cluster (actor + refinement + pooling planner), else with the model-based pooling planner.
//
//   npm run bench:decide [-- --scenario paper-6 --policy-file policies/paper-6.json --n 2000]
//   npm run bench:decide -- --scenario mixed-32x24 --n 300 --load 2.5
//
// Each decision: random rates, each model's uniform on [0, 1.5 x its scenario rate x --load], against
// a deployment made for other random rates by a second instance. `mixed-32x24` is the scale scenario
// (scenarios/mixed-32x24.json: 16 rtx2060s + 16 rtx2060, 24 served models, the eight profiled networks
// at three SLO tiers through `profileModel`); its rates are 30-50% of what the cluster carries, so
// `--load 2.5` draws rates up to about what the old hand-built benchmark cluster drew (1.5x its peak).
// Generated clusters (`--scenario gen-256x128`: src/scenario/generate.ts) measure it at scale; there
// `--warm` (default min(200, --n)) bounds the warm-up decisions, each a second or more at 1024 GPUs.
//
//   npm run bench:decide -- --scenario gen-1024x512 --n 30 --warm 10
//   npm run bench:decide -- --scenario gen-256x128 --n 20 --warm 5 --whole   (one planner, no pools)
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { ALL_ADDITIONS, inssFactory, InssPolicy } from '../rl/inss.js';
import { quantile } from '../tools/bench/run.js';
import { initialRates, scenarioCluster } from '../src/scenario/build.js';
import type { Observation } from '../src/policy/types.js';
import { Rng } from '../src/workload/random.js';
import { BUILTIN_POLICY_DIR, readJsonFile } from '../cli/profiles.js';
import { loadScenario } from '../cli/scenarios.js';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'paper-6' },
    'policy-file': { type: 'string' },
    n: { type: 'string', default: '2000' },
    load: { type: 'string', default: '1' },
    warm: { type: 'string' },
    /** Plan a cluster past one pool's size whole, as one planner (docs/inss.md, "Large clusters"), to compare. */
    whole: { type: 'boolean', default: false },
  },
});

const load = Number(values.load);
if (!(load > 0) || !Number.isFinite(load))
  throw new RangeError(`--load: expected a positive number, got '${values.load}'`);
const loaded = loadScenario(values.scenario);
const cluster = scenarioCluster(loaded.scenario, loaded.profiles);
const shipped = join(BUILTIN_POLICY_DIR, `${loaded.scenario.name}.json`);
const file = values['policy-file'] ?? (existsSync(shipped) ? shipped : undefined);
const policyData = file ? readJsonFile(file) : undefined;
/** Each model's rate: its scenario rate at time 0, or for a diurnal/triangle rate its peak. */
const baseRates = loaded.scenario.models.map(
  (m, i) =>
    (m.rate.kind === 'triangle'
      ? m.rate.maxPerS
      : m.rate.kind === 'diurnal'
        ? m.rate.meanPerS * (1 + m.rate.amplitude)
        : (initialRates(loaded.scenario, loaded.traces)[i] ?? 0)) * load,
);
const setup = { name: loaded.scenario.name, cluster };
const options = policyData !== undefined ? { policyData } : {};
if (values.whole && policyData !== undefined)
  throw new RangeError('--whole: times the model-based planner, which decides only where no trained policy fits');
const create = () =>
  values.whole
    ? new InssPolicy('inss', cluster, null, null, true, ALL_ADDITIONS, 'model-based planner, whole cluster')
    : inssFactory.create(cluster, options);
const policy = create();
// Deployments in force to decide from, made for other random rates by a second instance.
const maker = create();
const rng = new Rng(7);
const n = Number(values.n);
if (!Number.isInteger(n) || n < 1) throw new RangeError(`--n: expected a positive integer, got '${values.n}'`);
const warm = values.warm === undefined ? Math.min(200, n) : Number(values.warm);
if (!Number.isInteger(warm) || warm < 0)
  throw new RangeError(`--warm: expected a non-negative integer, got '${values.warm}'`);
const times: number[] = [];
// CPU time of the decision (user + system), ms: the machine is shared, wall time includes waiting for a core
const cpuTimes: number[] = [];
const randomRates = () => baseRates.map((p) => p * 1.5 * rng.next());
// Decisions 10 s apart: past inss's dwell after a switch (DWELL_MS), so every decision plans.
const observe = (ratePerS: number[], current: Observation['current'], nowMs: number): Observation => ({
  nowMs,
  ratePerS,
  queued: ratePerS.map(() => 0),
  lastEpoch: { served: [], violated: [], dropped: [], meanExecMs: [], meanLatencyMs: [] },
  current,
});
for (let k = 0; k < n + warm; k++) {
  // Random rates up to 1.5x each model's rate against a deployment made for other rates: every
  // decision re-plans (the rates always changed), the expensive path.
  const current = maker.decide(observe(randomRates(), { placements: [] }, k * 10_000));
  const obs = observe(randomRates(), current, k * 10_000);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  policy.decide(obs);
  const dt = performance.now() - t0;
  const c = process.cpuUsage(c0);
  if (k >= warm) {
    times.push(dt); // the first ones warm the JIT
    cpuTimes.push((c.user + c.system) / 1000);
  }
}
console.log(
  JSON.stringify({
    benchmark: 'decide',
    cluster: setup.name,
    load,
    gpus: setup.cluster.gpus.length,
    models: setup.cluster.models.length,
    decidedWith: policy.note,
    decisions: n,
    p50Ms: Number(quantile(times, 0.5).toFixed(4)),
    p90Ms: Number(quantile(times, 0.9).toFixed(4)),
    p99Ms: Number(quantile(times, 0.99).toFixed(4)),
    maxMs: Number(Math.max(...times).toFixed(4)),
    cpuP50Ms: Number(quantile(cpuTimes, 0.5).toFixed(4)),
    cpuP99Ms: Number(quantile(cpuTimes, 0.99).toFixed(4)),
    // Peak resident memory of the process (the two planners and their memos), MB.
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    node: process.version,
  }),
);

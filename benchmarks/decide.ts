// Benchmark: one online decision of the InSS policy from a deployment in force, timed over many
// observations; prints p50 and p99 in ms. inss decides with the shipped trained policy where one fits
// the cluster (actor + refinement + pooling planner), else with the model-based pooling planner.
//
//   npm run bench:decide [-- --scenario paper-6 --policy-file policies/paper-6.json --n 2000]
//   npm run bench:decide -- --cluster mixed-32x24 --n 300
//
// `--cluster mixed-32x24`: 16 rtx2060s + 16 rtx2060 serving 24 models (the eight profiled models,
// each at three SLO tiers: 1x, 1.5x and 2x its paper SLO), rates random up to about 1.2x what the
// cluster carries. Built as a ClusterInfo directly: a scenario file cannot serve one model name twice.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { inssFactory } from '../rl/inss.js';
import { quantile } from '../tools/bench/run.js';
import { buildCluster } from '../src/policy/cluster.js';
import { scenarioCluster } from '../src/scenario/build.js';
import type { ClusterInfo, Observation } from '../src/policy/types.js';
import { Rng } from '../src/workload/random.js';
import { BUILTIN_POLICY_DIR, loadProfile, readJsonFile } from '../cli/profiles.js';
import { loadScenario } from '../cli/scenarios.js';

const { values } = parseArgs({ options: { scenario: { type: 'string', default: 'paper-6' }, cluster: { type: 'string' }, 'policy-file': { type: 'string' }, n: { type: 'string', default: '2000' } } });

/** The paper's SLOs (ms) of the profiled models. */
const PAPER_SLO: Readonly<Record<string, number>> = { alexnet: 25, resnet50: 80, vgg16: 150, resnet18: 40, vgg19: 150, mnasnet: 50, mobilenet: 60, efficientnet: 40 };

function mixedCluster(): { name: string; cluster: ClusterInfo; peakPerS: number[] } {
  const fast = loadProfile('rtx2060s');
  const slow = loadProfile('rtx2060');
  const models = [1, 1.5, 2].flatMap((x) => Object.entries(PAPER_SLO).map(([name, slo]) => ({ name, sloMs: slo * x })));
  const cluster = buildCluster([...new Array<typeof fast>(16).fill(fast), ...new Array<typeof slow>(16).fill(slow)], models);
  // Peak rate per model: its share of the cluster at the whole-GPU batch-8 throughput of an rtx2060s.
  const g = cluster.gpus[0]!;
  const peakPerS = cluster.models.map((m) => {
    const out = [0];
    g.model.predictGpu([g.profileIndex[m.index]!], [8], [100], 1, out);
    return ((8 * 1000) / out[0]!) * (32 / cluster.models.length);
  });
  return { name: 'mixed-32x24', cluster, peakPerS };
}

function scenarioSetup(): { name: string; cluster: ClusterInfo; peakPerS: number[]; policyData: unknown } {
  const loaded = loadScenario(values.scenario);
  const cluster = scenarioCluster(loaded.scenario, loaded.profiles);
  const shipped = join(BUILTIN_POLICY_DIR, `${loaded.scenario.name}.json`);
  const file = values['policy-file'] ?? (existsSync(shipped) ? shipped : undefined);
  const peakPerS = loaded.scenario.models.map((m) => (m.rate.kind === 'triangle' ? m.rate.maxPerS : m.rate.kind === 'constant' ? m.rate.ratePerS : 200));
  return { name: loaded.scenario.name, cluster, peakPerS, policyData: file ? readJsonFile(file) : undefined };
}

if (values.cluster !== undefined && values.cluster !== 'mixed-32x24') throw new RangeError(`--cluster: only mixed-32x24, got '${values.cluster}'`);
const setup = values.cluster ? { ...mixedCluster(), policyData: undefined } : scenarioSetup();
const options = setup.policyData !== undefined ? { policyData: setup.policyData } : {};
const policy = inssFactory.create(setup.cluster, options);
// Deployments in force to decide from, made for other random rates by a second instance.
const maker = inssFactory.create(setup.cluster, options);
const rng = new Rng(7);
const n = Number(values.n);
if (!Number.isInteger(n) || n < 1) throw new RangeError(`--n: expected a positive integer, got '${values.n}'`);
const warm = Math.min(200, n);
const times: number[] = [];
const cpuTimes: number[] = []; // CPU time of the decision (user + system), ms: the machine is shared, wall time includes waiting for a core
const randomRates = () => setup.peakPerS.map((p) => p * 1.5 * rng.next());
const observe = (ratePerS: number[], current: Observation['current']): Observation => ({ nowMs: 0, ratePerS, queued: ratePerS.map(() => 0), lastEpoch: { served: [], violated: [], dropped: [], meanExecMs: [], meanLatencyMs: [] }, current });
for (let k = 0; k < n + warm; k++) {
  // Random rates up to 1.5x each model's peak against a deployment made for other rates: every
  // decision re-plans (the rates always changed), the expensive path.
  const current = maker.decide(observe(randomRates(), { placements: [] }));
  const obs = observe(randomRates(), current);
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
console.log(JSON.stringify({ benchmark: 'decide', cluster: setup.name, gpus: setup.cluster.gpus.length, models: setup.cluster.models.length, decidedWith: policy.note, decisions: n, p50Ms: Number(quantile(times, 0.5).toFixed(4)), p90Ms: Number(quantile(times, 0.9).toFixed(4)), p99Ms: Number(quantile(times, 0.99).toFixed(4)), maxMs: Number(Math.max(...times).toFixed(4)), cpuP50Ms: Number(quantile(cpuTimes, 0.5).toFixed(4)), cpuP99Ms: Number(quantile(cpuTimes, 0.99).toFixed(4)), node: process.version }));

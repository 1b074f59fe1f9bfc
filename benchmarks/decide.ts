// Benchmark: one online decision of the InSS policy (actor + refinement + BDA) from a deployment in
// force, mostly the case-2 path of section 5.5 (reallocation), timed over many observations;
// prints p50 and p99 in ms.
//
//   npm run bench:decide [-- --scenario paper-6 --policy-file policies/paper-6.json --n 2000]
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { InssPolicy, inssFactory } from '../rl/inss.js';
import { quantile } from '../tools/bench/run.js';
import { scenarioCluster } from '../src/scenario/build.js';
import type { Observation } from '../src/policy/types.js';
import { Rng } from '../src/workload/random.js';
import { BUILTIN_POLICY_DIR, readJsonFile } from '../cli/profiles.js';
import { loadScenario } from '../cli/scenarios.js';

const { values } = parseArgs({ options: { scenario: { type: 'string', default: 'paper-6' }, 'policy-file': { type: 'string' }, n: { type: 'string', default: '2000' } } });
const loaded = loadScenario(values.scenario);
const cluster = scenarioCluster(loaded.scenario, loaded.profiles);
const file = values['policy-file'] ?? join(BUILTIN_POLICY_DIR, `${loaded.scenario.name}.json`);
const policy = inssFactory.create(cluster, { policyData: readJsonFile(file) });
if (!(policy instanceof InssPolicy)) throw new Error('unexpected policy type');
const rng = new Rng(7);
const n = Number(values.n);
const times: number[] = [];
const randomRates = () => loaded.scenario.models.map((m) => (m.rate.kind === 'triangle' ? m.rate.maxPerS : 200) * 1.5 * rng.next());
const observe = (ratePerS: number[], current: Observation['current']): Observation => ({ nowMs: 0, ratePerS, queued: ratePerS.map(() => 0), lastEpoch: { served: [], violated: [], dropped: [], meanExecMs: [], meanLatencyMs: [] }, current });
// Deployments in force to decide from, made for other random rates by a second instance.
const maker = inssFactory.create(cluster, { policyData: readJsonFile(file) });
for (let k = 0; k < n + 200; k++) {
  // Random rates up to 1.5x each model's peak against a deployment made for other rates: mostly
  // case 2 (the actor's reallocation and the repair of the deployment in force, both refined).
  const current = maker.decide(observe(randomRates(), { placements: [] }));
  const obs = observe(randomRates(), current);
  const t0 = performance.now();
  policy.decide(obs);
  const dt = performance.now() - t0;
  if (k >= 200) times.push(dt); // the first 200 warm the JIT
}
console.log(JSON.stringify({ benchmark: 'decide', scenario: loaded.scenario.name, decisions: n, p50Ms: Number(quantile(times, 0.5).toFixed(4)), p99Ms: Number(quantile(times, 0.99).toFixed(4)), maxMs: Number(Math.max(...times).toFixed(4)), node: process.version }));

// Benchmark: simulated tasks per second of wall time, one core.
// A fixed deployment (each model alone on its own GPU at 100%, batch chosen by BDA for its peak
// rate) under the scenario's seeded load; counts every arrival the simulator handles.
//
//   npm run bench:sim [-- --scenario v100-4 --scale 4 --rounds 5]
//   npm run bench:sim -- --scenario gen-1024x512 --rounds 3 --duration 2   (a generated cluster:
//   src/scenario/generate.ts; --duration: simulated seconds, default the scenario's)
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { bda } from '../src/policy/bda.js';
import type { Deployment, Policy } from '../src/policy/types.js';
import { initialRates, scenarioCluster, scenarioSettings, scenarioStreams } from '../src/scenario/build.js';
import { simulate } from '../src/sim/simulator.js';
import { loadScenario } from '../cli/scenarios.js';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'v100-4' },
    scale: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '5' },
    /** Simulated seconds of a run (default: the scenario's), to keep a run on a large cluster short. */
    duration: { type: 'string' },
  },
});
const loaded = loadScenario(values.scenario);
const durationS = values.duration === undefined ? loaded.scenario.durationS : Number(values.duration);
if (!(durationS > 0) || !Number.isFinite(durationS))
  throw new RangeError(`--duration: expected a positive number of seconds, got '${values.duration}'`);
const cluster = scenarioCluster(loaded.scenario, loaded.profiles);
const scale = Number(values.scale);
if (!(scale > 0) || !Number.isFinite(scale))
  throw new RangeError(`--scale: expected a positive number, got '${values.scale}'`);
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1)
  throw new RangeError(`--rounds: expected a positive integer, got '${values.rounds}'`);
if (cluster.gpus.length < cluster.models.length) throw new Error('benchmark needs at least one GPU per model');
const peak = loaded.scenario.models.map(
  (m) => (m.rate.kind === 'triangle' ? m.rate.maxPerS : m.rate.kind === 'constant' ? m.rate.ratePerS : 100) * scale,
);
const inputs = cluster.models.map((m, i) => ({
  placement: { model: i, gpu: i, pct: 100 },
  sloMs: m.sloMs,
  ratePerS: peak[i]!,
}));
const { batches } = bda(cluster.gpus, inputs);
const deployment: Deployment = {
  placements: cluster.models.map((_, i) => ({ model: i, gpu: i, pct: 100, batch: batches[i]! })),
};
const policy: Policy = { name: 'fixed', decide: () => deployment };

const rates: number[] = [];
let last = { arrivals: 0, events: 0, sloViolationPct: 0 };
for (let r = 0; r < rounds; r++) {
  const t0 = performance.now();
  const res = simulate({
    cluster,
    streams: scenarioStreams(loaded.scenario, loaded.traces, scale),
    initialRatePerS: initialRates(loaded.scenario, loaded.traces, scale),
    policy,
    settings: { ...scenarioSettings(loaded.scenario), durationMs: durationS * 1000 },
  });
  const s = (performance.now() - t0) / 1000;
  rates.push(res.arrivals / s);
  last = { arrivals: res.arrivals, events: res.events, sloViolationPct: res.sloViolationPct };
}
rates.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    benchmark: 'sim',
    scenario: loaded.scenario.name,
    loadScale: scale,
    durationS,
    tasksPerRun: last.arrivals,
    eventsPerRun: last.events,
    sloViolationPct: Number(last.sloViolationPct.toFixed(3)),
    tasksPerS: Math.round(rates[Math.floor(rates.length / 2)]!),
    roundsPerS: rates.map(Math.round),
    gpus: cluster.gpus.length,
    models: cluster.models.length,
    // Peak resident memory of the process, MB.
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    node: process.version,
  }),
);

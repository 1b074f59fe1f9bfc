// Benchmark: serving a model with no profile (docs/online-profiling.md), in the simulator.
// (a) Batches to profile: each model of a GPU profile in turn is the unprofiled one, beside one profiled
//     model on two GPUs of that profile; per seed, the usable batches its fit took when it passed the
//     held-out test (mean absolute relative error <= 10% over >= 20 held-out batches), the error of the
//     promoted profile against the model's true profile (t_inf alone at 100%, at the batch sizes it ran alone
//     and over batches 1..32), and the share of its tasks within SLO.
// (b) Capacity: a built-in scenario with one model unprofiled against the same scenario with every profile
//     known, per seed, by the suite's capacity search (tools/bench/capacity.ts through tools/bench/run.ts).
// (c) Share shape: per model of a GPU profile, the error of the prior's share shape (the other models' median,
//     what an unprofiled model's fit has before it runs at a second share) against its own, o_r(b, p) / o_r(b, 100)
//     at batches 1, 4, 8, 16, 32 and shares 10, 25, 50, 75%.
//
//   npm run bench:online-profile [-- --profile rtx2060s --scenario mix-5 --unprofiled resnet50 --seeds 1,2,3
//                                    --policy inss --duration 40 --loads 0.5:2.5:0.1 --part abc]
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { loadProfile } from '../cli/profiles.js';
import { loadScenario } from '../cli/scenarios.js';
import { benchRegistry } from '../cli/benchCell.js';
import { LatencyModel } from '../src/model/predictor.js';
import { withOnlineProfiling } from '../src/policy/online/policy.js';
import { gpuPrior } from '../src/policy/online/prior.js';
import type { LearnerState } from '../src/policy/online/state.js';
import {
  initialRates,
  plannerCluster,
  scenarioCluster,
  scenarioSettings,
  scenarioStreams,
} from '../src/scenario/build.js';
import { type Scenario, ScenarioSchema } from '../src/scenario/schema.js';
import { simulate } from '../src/sim/simulator.js';
import { capacityOf, gridLoads, parseGrid } from '../tools/bench/capacity.js';
import { policyCurve } from '../tools/bench/run.js';

const { values } = parseArgs({
  options: {
    profile: { type: 'string', default: 'rtx2060s' },
    scenario: { type: 'string', default: 'mix-5' },
    unprofiled: { type: 'string', default: 'resnet50' },
    seeds: { type: 'string', default: '1,2,3' },
    policy: { type: 'string', default: 'inss' },
    duration: { type: 'string', default: '40' },
    loads: { type: 'string', default: '0.5:2.5:0.1' },
    part: { type: 'string', default: 'ab' },
  },
});
const seeds = values.seeds.split(',').map((x) => {
  const n = Number(x);
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`--seeds: not a seed: '${x}'`);
  return n;
});
const durationS = Number(values.duration);
if (!(durationS > 0))
  throw new RangeError(`--duration: must be a positive number of seconds, got '${values.duration}'`);
const registry = benchRegistry();
const factory = registry.get(values.policy);

function batchesToProfile(): void {
  const profile = loadProfile(values.profile);
  const truthLm = LatencyModel.compile(profile);
  const names = Object.keys(profile.models);
  console.log(
    `(a) batches to profile on 2 x ${profile.id}, ${values.policy}, ${durationS} s, seeds ${seeds.join(',')}`,
  );
  console.log(
    'model          seed  promoted after  held-out err  true err (seen b)  true err (b 1..32)  ' +
      'true err (p 25-75)  within SLO',
  );
  for (const [i, name] of names.entries()) {
    const other = names[(i + 1) % names.length]!;
    for (const seed of seeds) {
      const s: Scenario = ScenarioSchema.parse({
        name: `online-${name}`,
        gpus: [{ profile: profile.id, count: 2 }],
        models: [
          { name, sloMs: 100, rate: { kind: 'constant', ratePerS: 150 }, unprofiled: true },
          { name: other, sloMs: 100, rate: { kind: 'constant', ratePerS: 150 } },
        ],
        durationS,
        seed,
      });
      const profiles = new Map([[profile.id, profile]]);
      const promoted: LearnerState[] = [];
      const policy = withOnlineProfiling(factory, { onPromote: (l) => promoted.push(structuredClone(l)) }).create(
        plannerCluster(s, profiles),
        { seed },
      );
      const sim = simulate({
        cluster: plannerCluster(s, profiles),
        truthCluster: scenarioCluster(s, profiles),
        streams: scenarioStreams(s, new Map()),
        initialRatePerS: initialRates(s, new Map()),
        policy,
        settings: scenarioSettings(s),
      });
      const p = promoted[0];
      let trueErr = NaN;
      let seenErr = NaN;
      let shareErr = NaN;
      if (p?.profile) {
        const fitted = LatencyModel.compile({ ...profile, models: { [name]: p.profile } });
        const err = (b: number, pct = 100) =>
          Math.abs(
            fitted.predict([{ model: name, batch: b, pct }]).latencyMs[0]! /
              truthLm.predict([{ model: name, batch: b, pct }]).latencyMs[0]! -
              1,
          );
        const all = Array.from({ length: 32 }, (_, k) => k + 1);
        const seen = [...new Set(p.fit.solo.filter((c) => c.pct === 100).map((c) => c.batch))];
        trueErr = all.reduce((a, b) => a + err(b), 0) / all.length;
        seenErr = seen.reduce((a, b) => a + err(b), 0) / seen.length;
        shareErr = [25, 50, 75].reduce((a, pct) => a + all.reduce((x, b) => x + err(b, pct), 0) / all.length, 0) / 3;
      }
      const m = sim.models[0]!;
      const pct = (x: number) => (Number.isNaN(x) ? '   n/a' : `${(100 * x).toFixed(1).padStart(5)}%`);
      console.log(
        `${name.padEnd(14)} ${String(seed).padStart(4)}  ${(p ? String(p.promotedAfter) : 'never').padStart(14)}  ` +
          `${pct(p?.meanRelErr ?? NaN).padStart(12)}  ${pct(seenErr).padStart(17)}  ${pct(trueErr).padStart(18)}  ` +
          `${pct(shareErr).padStart(18)}  ${pct(m.good / m.arrivals).padStart(10)}`,
      );
    }
  }
}

function capacity(): void {
  const loaded = loadScenario(values.scenario);
  const base = { ...loaded.scenario, durationS };
  if (!base.models.some((m) => m.name === values.unprofiled))
    throw new RangeError(`--unprofiled: scenario ${base.name} has no model '${values.unprofiled}'`);
  const variant = (unprofiled: boolean): Scenario =>
    ScenarioSchema.parse({
      ...base,
      models: base.models.map((m) => (m.name === values.unprofiled ? { ...m, unprofiled } : m)),
    });
  const loads = gridLoads(parseGrid(values.loads, '--loads'));
  console.log(
    `(b) capacity at 99% within SLO, ${base.name} (${durationS} s), ${values.policy}, loads ${values.loads}, ` +
      `${values.unprofiled} unprofiled vs known`,
  );
  console.log('seed  known  unprofiled  ratio');
  for (const seed of seeds) {
    const cap = [false, true].map((u) => {
      const ctx = { scenario: variant(u), profiles: loaded.profiles, traces: loaded.traces };
      return capacityOf(policyCurve(ctx, factory, loads, seed, 0.99), 0.99);
    });
    console.log(
      `${String(seed).padStart(4)}  ${cap[0]!.toFixed(2).padStart(5)}  ${cap[1]!.toFixed(2).padStart(10)}  ` +
        `${(cap[1]! / cap[0]!).toFixed(3).padStart(5)}`,
    );
  }
}

function shareShapes(): void {
  const profile = loadProfile(values.profile);
  const lm = LatencyModel.compile(profile);
  console.log(
    `(c) share shape o_r(b, p) / o_r(b, 100) on ${profile.id}: mean |error| of the prior's (the other models')`,
  );
  console.log('model          prior err  truth/prior at b 8: p 10, 25, 50, 75');
  for (const name of lm.modelNames) {
    const { [name]: _own, ...others } = profile.models;
    const prior = gpuPrior(LatencyModel.compile({ ...profile, models: others }));
    const i = lm.modelIndex(name);
    const truth = (b: number, p: number) => lm.soloRunMs(i, b, p) / lm.soloRunMs(i, b, 100);
    let sum = 0;
    let n = 0;
    for (const b of [1, 4, 8, 16, 32])
      for (const p of [10, 25, 50, 75]) {
        sum += Math.abs(prior.shareRatio(b, p) / truth(b, p) - 1);
        n++;
      }
    const at8 = [10, 25, 50, 75].map((p) => `${truth(8, p).toFixed(2)}/${prior.shareRatio(8, p).toFixed(2)}`);
    console.log(`${name.padEnd(14)} ${`${((100 * sum) / n).toFixed(0)}%`.padStart(9)}  ${at8.join('  ')}`);
  }
}

const t0 = performance.now();
if (values.part.includes('a')) batchesToProfile();
if (values.part.includes('b')) capacity();
if (values.part.includes('c')) shareShapes();
console.log(`wall ${((performance.now() - t0) / 1000).toFixed(0)} s`);

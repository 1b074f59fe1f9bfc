// Benchmark: batching a model whose cost depends on the input against its batch time's tail
// (`costBatching: tail`, Orloj) or as if every sample cost the mean (`mean`), on the same workload.
// For each scenario, load, mode and seed it runs one policy on the simulator and prints one JSON line:
// the finish rate (Orloj's measure: tasks finished within SLO / tasks sent) of the models with a cost
// distribution and of all models; and, for those models' batches of their most frequent size, the p99 of
// the measured GPU time over the latency model's mean-cost prediction for that batch against the
// predicted p99 of the batch cost (the max of b draws); and the same tail over the mean, measured against
// predicted (the distribution's shape apart from the latency model's own error on that GPU, which the
// ground truth's unmodelled interference and per-configuration error make). Then a table over the seeds.
//
//   npm run build && npm run bench:cost-batching [-- --scenarios text-6,text-6-relaxed --loads 1,1.5 \
//     --seeds 1,2,3 --policy inss]
import { parseArgs } from 'node:util';
import { maxCostMean, maxCostQuantile } from '../src/model/costDistribution.js';
import { initialRates, scenarioCluster, scenarioSettings, scenarioStreams } from '../src/scenario/build.js';
import type { CostBatching } from '../src/model/costDistribution.js';
import { simulate } from '../src/sim/simulator.js';
import { quantile } from '../tools/bench/run.js';
import { benchRegistry } from '../cli/benchCell.js';
import { PolicyRegistry } from '../cli/registry.js';
import { loadScenario } from '../cli/scenarios.js';

const TAIL_Q = 0.99;
const { values } = parseArgs({
  options: {
    scenarios: { type: 'string', default: 'text-6,text-6-relaxed' },
    loads: { type: 'string', default: '1,1.5' },
    seeds: { type: 'string', default: '1,2,3' },
    policy: { type: 'string', default: 'inss' },
  },
});
const numbers = (flag: string, v: string, ok: (x: number) => boolean): number[] => {
  const xs = v.split(',').map(Number);
  if (xs.length === 0 || !xs.every(ok)) throw new RangeError(`--${flag}: expected a comma-separated list, got '${v}'`);
  return xs;
};
const loads = numbers('loads', values.loads, (x) => Number.isFinite(x) && x > 0);
const seeds = numbers('seeds', values.seeds, (x) => Number.isInteger(x) && x >= 0);
const factory = benchRegistry(new PolicyRegistry()).get(values.policy);

interface Run {
  finishVar: number;
  finishAll: number;
  batch: number;
  predictedP99: number;
  measuredP99: number;
  /** p99 over the mean of the batch cost: predicted, and measured (of the GPU time over the prediction). */
  predictedTailToMean: number;
  measuredTailToMean: number;
}

function run(name: string, mode: CostBatching, load: number, seed: number): Run {
  const loaded = loadScenario(name);
  const s = { ...loaded.scenario, seed, costBatching: mode };
  const cluster = scenarioCluster(s, loaded.profiles);
  const varying = cluster.models.filter((m) => m.cost).map((m) => m.index);
  if (varying.length === 0) throw new RangeError(`scenario '${name}': no model declares a cost distribution`);
  // Per model with a distribution and batch size: measured GPU time over the mean-cost prediction.
  const ratios = new Map<number, number[]>();
  const sim = simulate({
    cluster,
    streams: scenarioStreams(s, loaded.traces, load),
    initialRatePerS: initialRates(s, loaded.traces, load),
    policy: factory.create(cluster, { seed }),
    settings: scenarioSettings(s),
    trace: {
      batchStart: (_t, model, _g, size, durationMs, predictedMs) => {
        const plan = cluster.models[model]!.cost?.plan;
        if (model !== varying[0] || !(predictedMs > 0)) return;
        const base = plan ? predictedMs / plan.latency[Math.min(size, plan.latency.length - 1)]! : predictedMs;
        let list = ratios.get(size);
        if (!list) ratios.set(size, (list = []));
        list.push(durationMs / base);
      },
    },
  });
  const byModel = (ms: readonly number[]) => {
    const x = sim.models.filter((_, i) => ms.includes(i));
    return (
      x.reduce((a, m) => a + m.good, 0) /
      Math.max(
        1,
        x.reduce((a, m) => a + m.arrivals, 0),
      )
    );
  };
  let batch = 0;
  for (const [b, list] of ratios) if (!ratios.get(batch) || list.length > ratios.get(batch)!.length) batch = b;
  const d = cluster.models[varying[0]!]!.cost!.distribution;
  return {
    finishVar: byModel(varying),
    finishAll: sim.good / Math.max(1, sim.arrivals),
    batch,
    predictedP99: batch > 0 ? maxCostQuantile(d, batch, TAIL_Q) : NaN,
    measuredP99: batch > 0 ? quantile(ratios.get(batch)!, TAIL_Q) : NaN,
    predictedTailToMean: batch > 0 ? maxCostQuantile(d, batch, TAIL_Q) / maxCostMean(d, batch) : NaN,
    measuredTailToMean: batch > 0 ? quantile(ratios.get(batch)!, TAIL_Q) / mean(ratios.get(batch)!) : NaN,
  };
}

function mean(xs: readonly number[]): number {
  return xs.reduce((a, x) => a + x, 0) / xs.length;
}

const rows: string[] = [];
const pct = (x: number) => (100 * x).toFixed(1);
for (const name of values.scenarios.split(',')) {
  for (const load of loads) {
    const cells: string[] = [];
    for (const mode of ['tail', 'mean'] as const) {
      const runs = seeds.map((seed) => {
        const r = run(name, mode, load, seed);
        console.log(JSON.stringify({ benchmark: 'cost-batching', scenario: name, load, mode, seed, ...r }));
        return r;
      });
      const over = (f: (r: Run) => number) => mean(runs.map(f));
      const tails = runs.map(
        (r) =>
          `${r.batch}: ${r.measuredP99.toFixed(2)} / ${r.predictedP99.toFixed(2)} ` +
          `(${r.measuredTailToMean.toFixed(2)} / ${r.predictedTailToMean.toFixed(2)})`,
      );
      cells.push(`${pct(over((r) => r.finishVar))} | ${pct(over((r) => r.finishAll))} | ${tails.join(', ')}`);
    }
    rows.push(`| ${name} | ${load} | ${cells.join(' | ')} |`);
  }
}
console.log(
  '\n| scenario | load | tail: finish % (cost model) | tail: finish % (all) | tail: batch: p99 measured / ' +
    'predicted (over the mean) | mean: finish % (cost model) | mean: finish % (all) | mean: batch: p99 measured / ' +
    'predicted (over the mean) |\n' +
    `|---|---|---|---|---|---|---|---|\n${rows.join('\n')}`,
);

// Benchmark: what each of `inss`'s additions to the paper's TS contributes (docs/inss.md). Runs
// `inss` with everything, with each addition left out in turn, and the paper's TS (`inss-paper`) on
// the simulator over several seeds of each scenario, with the shipped trained policy; prints one
// JSON line per run and a table of SLO violation (%) with swaps.
//
//   npm run bench:ablation [-- --scenarios paper-6,paper-8,paper-8x5 --seeds 1,2,3]
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ALL_ADDITIONS, type InssAdditions, inssVariantFactory, PAPER_ONLY } from '../rl/inss.js';
import { runPolicy } from '../tools/bench/run.js';
import { BUILTIN_POLICY_DIR, readJsonFile } from '../cli/profiles.js';
import { loadScenario } from '../cli/scenarios.js';

const { values } = parseArgs({
  options: {
    scenarios: { type: 'string', default: 'paper-6,paper-8,paper-8x5' },
    seeds: { type: 'string', default: '1,2,3' },
  },
});
const variants: { name: string; additions: InssAdditions }[] = [
  { name: 'inss', additions: ALL_ADDITIONS },
  { name: '-pooling', additions: { ...ALL_ADDITIONS, pooling: false } },
  { name: '-replicas', additions: { ...ALL_ADDITIONS, replicas: false } },
  { name: '-repairCurrent', additions: { ...ALL_ADDITIONS, repairCurrent: false } },
  { name: '-capacityCredit', additions: { ...ALL_ADDITIONS, capacityCredit: false } },
  { name: 'inss-paper', additions: PAPER_ONLY },
];
const seeds = values.seeds.split(',').map(Number);
if (seeds.length === 0 || seeds.some((s) => !Number.isInteger(s) || s < 0))
  throw new RangeError(`--seeds: expected non-negative integers separated by commas, got '${values.seeds}'`);
const rows: string[] = [];
for (const name of values.scenarios.split(',')) {
  const loaded = loadScenario(name);
  const policyData = readJsonFile(join(BUILTIN_POLICY_DIR, `${loaded.scenario.name}.json`));
  for (const v of variants) {
    const factory = inssVariantFactory({
      name: v.name,
      interference: true,
      additions: v.additions,
      description: v.name,
    });
    const cells: string[] = [];
    for (const seed of seeds) {
      const r = runPolicy(
        {
          scenario: { ...loaded.scenario, seed },
          profiles: loaded.profiles,
          traces: loaded.traces,
          policyOptions: () => ({ policyData }),
        },
        factory,
      );
      console.log(
        JSON.stringify({
          benchmark: 'ablation',
          scenario: name,
          variant: v.name,
          seed,
          sloViolationPct: Number(r.sloViolationPct.toFixed(3)),
          throughputPerS: Number(r.throughputPerS.toFixed(1)),
          swaps: r.sim.swaps,
        }),
      );
      cells.push(`${r.sloViolationPct.toFixed(2)} (${r.sim.swaps})`);
    }
    rows.push(`| ${name} | ${v.name} | ${cells.join(' | ')} |`);
  }
}
console.log(
  `\n| scenario | variant | ${seeds.map((s) => `seed ${s}: viol% (swaps)`).join(' | ')} |\n| --- | --- | ` +
    `${seeds.map(() => '---').join(' | ')} |\n${rows.join('\n')}`,
);

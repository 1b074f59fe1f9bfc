// Where no plan meets the target (rl/beyondReach.ts): the measured rates, then the plans compared by the
// misses the dispatch rule leaves where the bound's best overloads a model, and a search they guide whose plan
// the bound judges where it does not.
import { describe, expect, it } from 'vitest';
import {
  balancedPartition,
  planPooling,
  PoolingContext,
  type PoolingOptions,
  scoreDeployment,
} from '../../src/policy/pooling/index.js';
import { initialRates } from '../../src/scenario/build.js';
import { planBeyondReach } from '../../rl/beyondReach.js';
import { loadScenario } from '../../cli/scenarios.js';
import { scenarioCluster } from '../../src/scenario/build.js';

const OPTS: PoolingOptions = { sloFraction: 0.85, budget: 40 };
const MEETS = 0.01;

function setUp(name: string, x: number) {
  const loaded = loadScenario(name);
  const cluster = scenarioCluster(loaded.scenario, loaded.profiles);
  const pooling = new PoolingContext(cluster);
  const measured = initialRates(loaded.scenario, loaded.traces, x);
  const rates = measured.map((r) => r * 1.1);
  const mpsPlans = [{ placements: balancedPartition(pooling, rates) }];
  const plan = planPooling(pooling, rates, mpsPlans, OPTS);
  const current = pooling.timeshareDeployment();
  const kept = scoreDeployment(pooling, current, rates, OPTS);
  const input = { pooling, plan, mpsPlans, rates, measured, options: OPTS, meetsMissed: MEETS, current, kept };
  return { cluster, pooling, measured, rates, plan, current, mpsPlans, input };
}

const total = (r: readonly number[]) => r.reduce((a, b) => a + b, 0);

describe('planBeyondReach', () => {
  it('leaves a plan that meets the target as the bound chose it', () => {
    const { plan, rates, input } = setUp('mix-5', 2);
    expect(plan.best.missedPerS).toBeLessThanOrEqual(MEETS * total(rates));
    const out = planBeyondReach(input);
    expect(out.plan).toBe(plan);
    expect(out.planned).toBe(rates);
    expect(out.keptAt).toBe(input.kept);
  });

  it('where no plan meets it and a model is overloaded, ranks the plans by the misses the dispatch rule leaves', () => {
    // mix-5 at 3.5x: the bound, counting an overloaded pool as missing every task, leaves vgg19 out.
    const { cluster, pooling, plan, current, input } = setUp('mix-5', 3.5);
    const vgg19 = cluster.models.findIndex((m) => m.name === 'vgg19');
    expect(plan.best.deployment.placements.some((p) => p.model === vgg19)).toBe(false);
    const out = planBeyondReach(input);
    expect(out.plan.source).toMatch(/\+expected$/);
    const expected = { ...OPTS, expectedMisses: true };
    const boundPlan = scoreDeployment(pooling, plan.best.deployment, out.planned, expected);
    expect(out.plan.best.missedPerS).toBeLessThan(boundPlan.missedPerS);
    // The plan and the deployment in force are scored alike, for the stability rule.
    expect(out.plan.best.missedPerS).toBeCloseTo(
      scoreDeployment(pooling, out.plan.best.deployment, out.planned, expected).missedPerS,
      9,
    );
    expect(out.keptAt!.missedPerS).toBeCloseTo(scoreDeployment(pooling, current, out.planned, expected).missedPerS, 9);
  });

  it('where no model is overloaded, takes a plan the expected misses found only if the bound ranks it better', () => {
    // pool-light-many-tight at 1.5x: the search under the bound stops at a plan it predicts to miss 2.3%; the
    // same search under the expected misses finds one the bound itself predicts to meet the target.
    const { pooling, plan, rates, input } = setUp('docs/results/pooled-gpu/workloads/pool-light-many-tight.json', 1.5);
    expect(plan.best.missedPerS).toBeGreaterThan(MEETS * total(rates));
    expect(plan.best.utilisation.every((u) => u < 1)).toBe(true);
    const out = planBeyondReach({ ...input, measured: null });
    expect(out.plan.source).toMatch(/\+guided$/);
    expect(out.plan.best.score).toBeLessThan(plan.best.score);
    expect(out.plan.best.missedPerS).toBeLessThanOrEqual(MEETS * total(rates));
    // Scored by the bound, as the deployment in force is.
    expect(out.plan.best.score).toBeCloseTo(scoreDeployment(pooling, out.plan.best.deployment, rates, OPTS).score, 9);
    expect(out.keptAt).toBe(input.kept);
  });

  it('where no model is overloaded and the bound ranks nothing better, keeps the plan the bound chose', () => {
    for (const [name, x] of [
      'paper-8x3',
      'paper-8',
      'v100-4',
      'docs/results/pooled-gpu/workloads/pool-heavy-pairs.json',
    ].flatMap((n) => [1.75, 2, 2.5, 3, 3.5, 4].map((k) => [n, k] as const))) {
      const { pooling, plan, rates, mpsPlans, input } = setUp(name, x);
      if (plan.best.missedPerS <= MEETS * total(rates)) continue;
      if (plan.best.utilisation.some((u) => !(u < 1))) continue;
      const guided = planPooling(pooling, rates, [plan.best.deployment, ...mpsPlans], {
        ...OPTS,
        expectedMisses: true,
      });
      if (scoreDeployment(pooling, guided.best.deployment, rates, OPTS).score < plan.best.score) continue;
      expect(planBeyondReach({ ...input, measured: null }).plan).toBe(plan);
      return;
    }
    throw new Error('no load tried misses too many, overloads no model and has no better guided plan');
  });

  it('plans for the measured rates first where they are met and the headroom is not', () => {
    // Find a load where the headroom's rates are not met and the measured ones are, by a better plan.
    for (const [name, x] of ['paper-8', 'paper-8x3', 'mix-5', 'v100-4'].flatMap((n) =>
      [2.5, 1.5, 1.75, 2, 2.25, 2.75, 3, 3.25].map((k) => [n, k] as const),
    )) {
      const { pooling, plan, rates, measured, mpsPlans, input } = setUp(name, x);
      if (plan.best.missedPerS <= MEETS * total(rates)) continue;
      const bare = planPooling(pooling, measured, mpsPlans, OPTS);
      if (bare.best.missedPerS > MEETS * total(measured)) continue;
      // ...and the plan for them is better there than the headroom's plan.
      if (!(bare.best.score < scoreDeployment(pooling, plan.best.deployment, measured, OPTS).score - 1e-9)) continue;
      const out = planBeyondReach(input);
      expect(out.planned).toBe(measured);
      expect(out.plan.source).toMatch(/\+measured$/);
      expect(out.plan.best.missedPerS).toBeLessThanOrEqual(MEETS * total(measured));
      return;
    }
    throw new Error('no load tried is met at the measured rates only');
  });

  it('takes the score as it is when it already counts the expected misses', () => {
    const { plan, input } = setUp('mix-5', 3.5);
    const out = planBeyondReach({ ...input, measured: null, options: { ...OPTS, expectedMisses: true } });
    expect(out.plan).toBe(plan);
  });
});

// The planner's decomposition of a large cluster into pools (src/policy/decompose.ts, rl/inssPools.ts).
import { describe, expect, it } from 'vitest';
import {
  decomposeCluster,
  mergeDeployments,
  modelDemand,
  POOL_MAX_GPUS,
  POOL_MAX_MODELS,
  poolCluster,
  poolCount,
  PoolView,
} from '../../src/policy/decompose.js';
import { GENERATE_DEFAULTS, GENERATED_GPU_PROFILES, generateScenario } from '../../src/scenario/generate.js';
import { scenarioCluster } from '../../src/scenario/build.js';
import type { ClusterInfo, Deployment } from '../../src/policy/types.js';
import { deploymentProblem } from '../../src/policy/util.js';
import { inssFactory, InssPolicy } from '../../rl/inss.js';
import { PooledInssPolicy } from '../../rl/inssPools.js';
import { Rng } from '../../src/workload/random.js';
import { observation } from '../support/builders.js';
import { builtInScenario, loadProfileFile } from '../support/clusters.js';

const profiles = new Map(GENERATED_GPU_PROFILES.map((id) => [id, loadProfileFile(id)] as const));
function generated(gpus: number, models: number): { cluster: ClusterInfo; rates: number[] } {
  const s = generateScenario({ ...GENERATE_DEFAULTS, gpus, models }, profiles);
  return {
    cluster: scenarioCluster(s, profiles),
    rates: s.models.map((m) => (m.rate.kind === 'constant' ? m.rate.ratePerS : 0)),
  };
}

/** Every GPU and every model in exactly one pool, each pool with a GPU and at most its share of models. */
function expectCovers(cluster: ClusterInfo, pools: ReturnType<typeof decomposeCluster>): void {
  const gpus = pools.flatMap((p) => p.gpus).sort((a, b) => a - b);
  const models = pools.flatMap((p) => p.models).sort((a, b) => a - b);
  expect(gpus).toEqual(cluster.gpus.map((g) => g.index));
  expect(models).toEqual(cluster.models.map((m) => m.index));
  for (const p of pools) {
    expect(p.gpus.length).toBeGreaterThan(0);
    expect(p.models.length).toBeLessThanOrEqual(Math.ceil(cluster.models.length / pools.length));
  }
}

describe('decomposeCluster', () => {
  it('plans a cluster of the measured size or smaller whole', () => {
    for (const name of ['paper-6', 'paper-8', 'mixed-32x24']) {
      const { cluster } = builtInScenario(name);
      expect(poolCount(cluster)).toBe(1);
      expect(
        decomposeCluster(
          cluster,
          modelDemand(
            cluster,
            cluster.models.map(() => 100),
          ),
        ),
      ).toEqual([{ gpus: cluster.gpus.map((g) => g.index), models: cluster.models.map((m) => m.index) }]);
      // inss decides there with the single planner, as it does without decomposition.
      expect(inssFactory.create(cluster, {})).toBeInstanceOf(InssPolicy);
    }
  });

  it('plans whole a large cluster where some GPU lacks a served model', () => {
    const { cluster } = generated(64, 8);
    expect(poolCount(cluster)).toBe(2);
    const lacking = {
      ...cluster,
      gpus: cluster.gpus.map((g, i) =>
        i === 5 ? { ...g, profileIndex: g.profileIndex.map((k, m) => (m === 2 ? -1 : k)) } : g,
      ),
    };
    expect(poolCount(lacking)).toBe(1);
    expect(inssFactory.create(lacking, {})).toBeInstanceOf(InssPolicy);
  });

  it('covers every GPU and every model exactly once, with both GPU types in every pool', () => {
    for (const [g, m] of [
      [256, 128],
      [128, 256],
      [1024, 512],
      [40, 10],
    ] as const) {
      const { cluster, rates } = generated(g, m);
      const pools = decomposeCluster(cluster, modelDemand(cluster, rates));
      expect(pools.length).toBe(Math.max(Math.ceil(g / POOL_MAX_GPUS), Math.ceil(m / POOL_MAX_MODELS)));
      expectCovers(cluster, pools);
      for (const p of pools) {
        if (p.gpus.length < 2) continue;
        expect(new Set(p.gpus.map((i) => cluster.gpus[i]!.profileId)).size).toBe(2);
      }
    }
  });

  it('gives a pool GPUs in proportion to its demand, one heavy model included', () => {
    const { cluster, rates } = generated(256, 64);
    const heavy = rates.map((r, i) => (i === 3 ? r * 200 : r));
    const demand = modelDemand(cluster, heavy);
    const pools = decomposeCluster(cluster, demand);
    expectCovers(cluster, pools);
    const total = demand.reduce((a, b) => a + b, 0);
    const withHeavy = pools.find((p) => p.models.includes(3))!;
    const share = withHeavy.models.reduce((a, i) => a + demand[i]!, 0) / total;
    // Each of the 8 pools keeps a floor of a quarter of its even share (8 models: 8 GPUs); the rest goes by demand.
    const spare = 256 - 8 * 8;
    expect(withHeavy.gpus.length).toBeGreaterThanOrEqual(8 + Math.floor(share * spare));
    expect(withHeavy.gpus.length).toBeLessThanOrEqual(8 + Math.ceil(share * spare));
    for (const p of pools) expect(p.gpus.length).toBeGreaterThanOrEqual(8);
  });
});

describe('PoolView and mergeDeployments', () => {
  it('round-trip a deployment whose placements lie within pools, dropping those across them', () => {
    const { cluster, rates } = generated(96, 40);
    const pools = decomposeCluster(cluster, modelDemand(cluster, rates));
    const views = pools.map((p) => new PoolView(p));
    const inside: Deployment = {
      placements: pools.flatMap((p) =>
        p.models.map((m, j) => ({ model: m, gpu: p.gpus[j % p.gpus.length]!, pct: 50, batch: 4 })),
      ),
      gpuModes: cluster.gpus.map((g) => (g.index % 3 === 0 ? 'timeshare' : 'mps')),
    };
    const sorted = (d: Deployment) => [...d.placements].sort((a, b) => a.model - b.model || a.gpu - b.gpu);
    const back = mergeDeployments(
      cluster,
      pools,
      views.map((v) => v.local(inside)),
    );
    expect(sorted(back)).toEqual(sorted(inside));
    expect(back.gpuModes).toEqual(inside.gpuModes);
    const across = { placements: [{ model: pools[0]!.models[0]!, gpu: pools[1]!.gpus[0]!, pct: 50, batch: 4 }] };
    expect(views.every((v) => v.local(across).placements.length === 0)).toBe(true);
    const sub = poolCluster(cluster, pools[1]!);
    expect(sub.gpus.map((g) => g.index)).toEqual(pools[1]!.gpus.map((_, j) => j));
    expect(sub.models.map((m) => m.name)).toEqual(pools[1]!.models.map((m) => cluster.models[m]!.name));
  });
});

describe('inss on a large cluster', () => {
  it('plans it as pools: a valid deployment serving every model, each within its pool', () => {
    const { cluster, rates } = generated(72, 36);
    const policy = inssFactory.create(cluster, {});
    expect(policy).toBeInstanceOf(PooledInssPolicy);
    expect(policy.note).toMatch(/^model-based planner in 3 pools/);
    const rng = new Rng(3);
    let current: Deployment = { placements: [] };
    for (let k = 0; k < 3; k++) {
      const at = rates.map((r) => r * (0.5 + rng.next()));
      current = policy.decide({ ...observation(at, current), nowMs: k * 10_000 });
      expect(deploymentProblem(cluster, current)).toBeNull();
      const pools = (policy as PooledInssPolicy).currentPools;
      const poolOfGpu = new Map(pools.flatMap((p, i) => p.gpus.map((g) => [g, i] as const)));
      const poolOfModel = new Map(pools.flatMap((p, i) => p.models.map((m) => [m, i] as const)));
      for (const p of current.placements) expect(poolOfGpu.get(p.gpu)).toBe(poolOfModel.get(p.model));
      expect(new Set(current.placements.map((p) => p.model)).size).toBe(36);
    }
    expect((policy as PooledInssPolicy).splits).toBe(1);
  });

  it('splits again when the load moves between pools past REBALANCE_FACTOR, and only then', () => {
    const { cluster, rates } = generated(72, 36);
    const policy = inssFactory.create(cluster, {}) as PooledInssPolicy;
    let current = policy.decide(observation(rates, { placements: [] }));
    const first = policy.currentPools;
    // Every model of pool 0 at 1.3x: its share of the demand rises by less than 1.5x its share of the GPUs.
    const up = (f: number) => rates.map((r, i) => (first[0]!.models.includes(i) ? r * f : r));
    current = policy.decide({ ...observation(up(1.3), current), nowMs: 10_000 });
    expect(policy.splits).toBe(1);
    current = policy.decide({ ...observation(up(6), current), nowMs: 20_000 });
    expect(policy.splits).toBe(2);
    expect(deploymentProblem(cluster, current)).toBeNull();
    expect(new Set(current.placements.map((p) => p.model)).size).toBe(36);
  });
});

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bda } from '../../src/policy/bda.js';
import { buildCluster } from '../../src/policy/cluster.js';
import { igniterPlan } from '../../src/policy/policies/igniter.js';
import { oracleFactory } from '../../src/policy/policies/oracle.js';
import { evaluateDeployment, oracleSearch } from '../../src/policy/policies/oracleSearch.js';
import { oracleSize } from '../../src/policy/policies/oracleSize.js';
import { staticEvenPlan } from '../../src/policy/policies/static-even.js';
import type { ClusterInfo, Deployment, Observation, Placement } from '../../src/policy/types.js';
import { deploymentProblem, shareLevels } from '../../src/policy/util.js';
import { parseProfile, type ProfileInput } from '../../src/profile/schema.js';
import { makeProfile } from '../support/builders.js';
import { REPO_ROOT } from '../support/paths.js';

const v100Path = resolve(REPO_ROOT, 'profiles', 'v100.json');
const v100 = parseProfile(JSON.parse(readFileSync(v100Path, 'utf8')), v100Path);

function synthetic(unitPct: number, names = ['a', 'b', 'c']) {
  const builder = makeProfile();
  const shapes = [
    { runAtB1Full: 2, batchExp: 0.8, pctExp: 0.9, alphaCache: 0.4 },
    { runAtB1Full: 4, batchExp: 0.9, pctExp: 1, alphaCache: 0.3 },
    { runAtB1Full: 0.8, batchExp: 0.7, pctExp: 0.8, alphaCache: 0.5 },
  ];
  names.forEach((n, i) => builder.model(n, shapes[i % shapes.length]!));
  const input: ProfileInput = builder.cacheSelfWeight(0.5).build();
  return parseProfile(
    { ...input, id: `synthetic-${unitPct}`, gpu: { ...input.gpu, mpsUnitPct: unitPct } },
    'synthetic',
  );
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function obs(cluster: ClusterInfo, ratePerS: number[], current: Deployment = { placements: [] }): Observation {
  const zeros = cluster.models.map(() => 0);
  const nans = cluster.models.map(() => Number.NaN);
  return {
    nowMs: 0,
    ratePerS,
    queued: zeros,
    lastEpoch: { served: zeros, violated: zeros, dropped: zeros, meanExecMs: nans, meanLatencyMs: nans },
    current,
  };
}

/**
 * Brute force with no pruning at all: every placement (GPUs labelled, no symmetry), every split of
 * share levels, BDA batches; the best problem-(1) objective among splits where BDA is feasible.
 */
function bruteForce(cluster: ClusterInfo, rates: number[]): number {
  const n = cluster.models.length;
  let best = -1;
  const gpuOf = new Array<number>(n).fill(0);
  const place = (i: number): void => {
    if (i === n) {
      const pcts = new Array<number>(n).fill(0);
      const split = (k: number): void => {
        if (k === n) {
          for (const g of cluster.gpus) {
            const sum = pcts.reduce((s, p, m) => s + (gpuOf[m] === g.index ? p : 0), 0);
            if (sum > 100 + 1e-9) return;
          }
          const placements = gpuOf.map((g, m) => ({ model: m, gpu: g, pct: pcts[m]! }));
          const r = bda(
            cluster.gpus,
            placements.map((p) => ({ placement: p, sloMs: cluster.models[p.model]!.sloMs, ratePerS: rates[p.model]! })),
          );
          if (!r.ok) return;
          const d: Deployment = { placements: placements.map((p, k2) => ({ ...p, batch: r.batches[k2]! })) };
          if (deploymentProblem(cluster, d) !== null) return;
          best = Math.max(best, evaluateDeployment(cluster, d, rates).throughputPerS);
          return;
        }
        for (const l of shareLevels(cluster.gpus[gpuOf[k]!]!)) {
          pcts[k] = l;
          split(k + 1);
        }
      };
      split(0);
      return;
    }
    for (const g of cluster.gpus) {
      gpuOf[i] = g.index;
      place(i + 1);
    }
  };
  place(0);
  return best;
}

describe('oracle search', () => {
  it('one model alone on one GPU: the best share is found and batches come from BDA (worked case)', () => {
    const profile = synthetic(10, ['a']);
    const cluster = buildCluster([profile], [{ name: 'a', sloMs: 60 }]);
    const r = oracleSearch(cluster, [100]);
    expect(r.feasible).toBe(true);
    // Throughput b / t_inf grows with share and with batch here, so the whole GPU wins, and its batch is BDA's.
    const [p] = r.deployment.placements as Placement[];
    expect(p!.pct).toBe(100);
    const b = bda(cluster.gpus, [{ placement: { model: 0, gpu: 0, pct: 100 }, sloMs: 60, ratePerS: 100 }]);
    expect(p!.batch).toBe(b.batches[0]);
    expect(r.throughputPerS).toBeCloseTo(evaluateDeployment(cluster, r.deployment, [100]).throughputPerS, 9);
  });

  it('equals a brute force with no pruning on tiny instances', () => {
    const profile = synthetic(20);
    const cluster = buildCluster(
      [profile, profile],
      [
        { name: 'a', sloMs: 40 },
        { name: 'b', sloMs: 100 },
        { name: 'c', sloMs: 30 },
      ],
    );
    const rnd = mulberry32(11);
    let feasibleTrials = 0;
    for (let t = 0; t < 6; t++) {
      const rates = [rnd() * 300, rnd() * 150, rnd() * 400];
      const r = oracleSearch(cluster, rates);
      const brute = bruteForce(cluster, rates);
      if (brute < 0) {
        expect(r.feasible).toBe(false);
      } else {
        feasibleTrials++;
        expect(r.feasible).toBe(true);
        expect(r.throughputPerS).toBeCloseTo(brute, 6);
      }
      expect(deploymentProblem(cluster, r.deployment)).toBeNull();
    }
    expect(feasibleTrials).toBeGreaterThan(2);
  });

  it('finds at least the throughput of iGniter and static-even (2 GPUs, 3 models, V100)', () => {
    const cluster = buildCluster(
      [v100, v100],
      [
        { name: 'alexnet', sloMs: 25 },
        { name: 'resnet50', sloMs: 80 },
        { name: 'vgg19', sloMs: 200 },
      ],
    );
    const rnd = mulberry32(21);
    let comparedFeasible = 0;
    for (let t = 0; t < 12; t++) {
      const scale = [200, 800, 2000][t % 3]!;
      const rates = [rnd() * scale * 2, rnd() * scale, rnd() * scale * 0.3];
      const oracle = oracleSearch(cluster, rates);
      expect(deploymentProblem(cluster, oracle.deployment)).toBeNull();
      const mine = evaluateDeployment(cluster, oracle.deployment, rates);
      expect(mine.feasible).toBe(oracle.feasible);
      for (const other of [igniterPlan(cluster, rates), staticEvenPlan(cluster)]) {
        const v = evaluateDeployment(cluster, other, rates);
        expect(mine.goodputPerS).toBeGreaterThanOrEqual(v.goodputPerS - 1e-6);
        if (v.feasible) {
          comparedFeasible++;
          expect(oracle.feasible).toBe(true);
          expect(mine.throughputPerS).toBeGreaterThanOrEqual(v.throughputPerS - 1e-6);
        }
      }
    }
    expect(comparedFeasible).toBeGreaterThan(0);
  });

  it('is deterministic', () => {
    const cluster = buildCluster(
      [v100, v100],
      [
        { name: 'alexnet', sloMs: 25 },
        { name: 'resnet50', sloMs: 80 },
        { name: 'vgg19', sloMs: 200 },
      ],
    );
    const rates = [700, 300, 40];
    expect(oracleSearch(cluster, rates)).toEqual(oracleSearch(cluster, rates));
  });

  it('under overload maximises goodput and stays valid', () => {
    const cluster = buildCluster(
      [v100, v100],
      [
        { name: 'alexnet', sloMs: 25 },
        { name: 'resnet50', sloMs: 80 },
        { name: 'vgg19', sloMs: 200 },
      ],
    );
    const rates = [50000, 50000, 50000];
    const r = oracleSearch(cluster, rates);
    expect(r.feasible).toBe(false);
    expect(deploymentProblem(cluster, r.deployment)).toBeNull();
    expect(r.goodputPerS).toBeGreaterThan(0);
    for (const other of [igniterPlan(cluster, rates), staticEvenPlan(cluster)]) {
      expect(r.goodputPerS).toBeGreaterThanOrEqual(evaluateDeployment(cluster, other, rates).goodputPerS - 1e-6);
    }
  });

  it('supports() names the size of an instance over its limit; a search or create on one is a RangeError', () => {
    const six = synthetic(2.5, ['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
    const models = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'].map((name) => ({ name, sloMs: 100 }));
    const big = buildCluster([six, six], models);
    expect(oracleSize(big).splits).toBeGreaterThan(2e6);
    expect(() =>
      oracleSearch(
        big,
        models.map(() => 10),
      ),
    ).toThrow(RangeError);
    expect(() =>
      oracleSearch(
        big,
        models.map(() => 10),
      ),
    ).toThrow(/6 models on 2 GPUs/);
    expect(oracleFactory.supports(big, {})).toMatch(/^instance too large: 6 models on 2 GPUs means .* share splits/);
    expect(() => oracleFactory.create(big, {})).toThrow(RangeError);
    const manyGpus = buildCluster(new Array(7).fill(v100), [{ name: 'alexnet', sloMs: 25 }]);
    expect(oracleFactory.supports(manyGpus, {})).toMatch(/1 models on 7 GPUs \(limit 8 models, 6 GPUs\)/);
    expect(
      oracleFactory.supports(buildCluster(new Array(6).fill(v100), [{ name: 'alexnet', sloMs: 25 }]), {}),
    ).toBeNull();
  });
});

describe('oracle policy', () => {
  const cluster = buildCluster(
    [v100, v100],
    [
      { name: 'alexnet', sloMs: 25 },
      { name: 'resnet50', sloMs: 80 },
      { name: 'vgg19', sloMs: 200 },
    ],
  );

  it('re-searches only on a rate change beyond 5%; otherwise only BDA re-picks batches', () => {
    const p = oracleFactory.create(cluster, {});
    const first = p.decide(obs(cluster, [600, 300, 40]));
    expect(deploymentProblem(cluster, first)).toBeNull();
    const small = p.decide(obs(cluster, [620, 290, 41], first));
    expect(small.placements.map((x) => [x.model, x.gpu, x.pct])).toEqual(
      first.placements.map((x) => [x.model, x.gpu, x.pct]),
    );
    const other = oracleFactory.create(cluster, {});
    expect(other.decide(obs(cluster, [600, 300, 40]))).toEqual(first);
  });

  it('every decision over random rate sequences is valid', () => {
    const p = oracleFactory.create(cluster, {});
    const rnd = mulberry32(5);
    let cur: Deployment = { placements: [] };
    for (let t = 0; t < 8; t++) {
      cur = p.decide(obs(cluster, [rnd() * 3000, rnd() * 1000, rnd() * 300], cur));
      expect(deploymentProblem(cluster, cur)).toBeNull();
    }
  });
});

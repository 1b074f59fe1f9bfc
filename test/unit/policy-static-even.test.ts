import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import { staticEvenFactory, staticEvenPlacement, staticEvenPlan } from '../../src/policy/policies/static-even.js';
import type { ClusterInfo, Observation } from '../../src/policy/types.js';
import { deploymentProblem, predictOnGpu } from '../../src/policy/util.js';
import { parseProfile } from '../../src/profile/schema.js';
import { makeProfile } from '../support/builders.js';
import { REPO_ROOT } from '../support/paths.js';

const v100Path = resolve(REPO_ROOT, 'profiles', 'v100.json');
const v100 = parseProfile(JSON.parse(readFileSync(v100Path, 'utf8')), v100Path);
const synthetic = parseProfile(
  makeProfile()
    .model('a', { runAtB1Full: 2, batchExp: 1, pctExp: 1 })
    .model('b', { runAtB1Full: 4, batchExp: 1, pctExp: 1 })
    .model('c', { runAtB1Full: 0.5, batchExp: 1, pctExp: 1 })
    .build(),
  'synthetic',
);

function obs(cluster: ClusterInfo, ratePerS: number[]): Observation {
  const zeros = cluster.models.map(() => 0);
  const nans = cluster.models.map(() => Number.NaN);
  return {
    nowMs: 0,
    ratePerS,
    queued: zeros,
    lastEpoch: { served: zeros, violated: zeros, dropped: zeros, meanExecMs: nans, meanLatencyMs: nans },
    current: { placements: [] },
  };
}

const v100Models = [
  { name: 'alexnet', sloMs: 25 },
  { name: 'resnet50', sloMs: 80 },
  { name: 'vgg19', sloMs: 200 },
  { name: 'ssd', sloMs: 150 },
];

describe('static-even', () => {
  it('balances models by count in index order (round-robin on a homogeneous cluster)', () => {
    expect(staticEvenPlacement(buildCluster([v100, v100], v100Models))).toEqual([
      [0, 2],
      [1, 3],
    ]);
    expect(staticEvenPlacement(buildCluster([v100, v100], v100Models.slice(0, 3)))).toEqual([[0, 2], [1]]);
    expect(staticEvenPlacement(buildCluster([v100, v100, v100], v100Models))).toEqual([[0, 3], [1], [2]]);
  });

  it('splits each GPU evenly, floored to the MPS unit', () => {
    const c3 = buildCluster([v100], v100Models.slice(0, 3)); // 100/3 = 33.3 -> 32.5 (unit 2.5%)
    expect(staticEvenPlan(c3).placements.map((p) => p.pct)).toEqual([32.5, 32.5, 32.5]);
    const c2 = buildCluster([v100, v100], v100Models.slice(0, 3));
    expect(staticEvenPlan(c2).placements.map((p) => [p.model, p.gpu, p.pct])).toEqual([
      [0, 0, 50],
      [2, 0, 50],
      [1, 1, 100],
    ]);
  });

  it('picks the largest batch with 2 * t_inf <= SLO (worked case) and times out at SLO/2', () => {
    // Model a alone at 100%: t_inf(b) = 0.0606 b + 0.02 + 2 b; 2 t_inf <= 40  =>  b <= 9.43  =>  b = 9.
    // Model c alone at 100%: t_inf(b) = 0.0606 b + 0.02 + 0.5 b; 2 t_inf <= 10  =>  b <= 8.88  =>  b = 8.
    const cluster = buildCluster(
      [synthetic, synthetic],
      [
        { name: 'a', sloMs: 40 },
        { name: 'c', sloMs: 10 },
      ],
    );
    const plan = staticEvenPlan(cluster);
    expect(plan.placements.map((p) => [p.model, p.gpu, p.pct, p.batch, p.timeoutMs])).toEqual([
      [0, 0, 100, 9, 20],
      [1, 1, 100, 8, 5],
    ]);
  });

  it('accounts for interference of the fixed co-location in the batch rule', () => {
    const cluster = buildCluster([v100], v100Models.slice(0, 3));
    const plan = staticEvenPlan(cluster);
    const t = predictOnGpu(cluster.gpus[0]!, plan.placements);
    plan.placements.forEach((p, k) => {
      if (p.batch > 1) expect(2 * t[k]!).toBeLessThanOrEqual(cluster.models[p.model]!.sloMs);
      // one more would break the rule (or the per-client memory limit, memMb / 3)
      const more = predictOnGpu(
        cluster.gpus[0]!,
        plan.placements.map((q) => (q === p ? { ...q, batch: q.batch + 1 } : q)),
      )[k]!;
      const memOk =
        cluster.gpus[0]!.model.memoryMb(cluster.gpus[0]!.profileIndex[p.model]!, p.batch + 1) <=
        cluster.gpus[0]!.memMb / 3;
      if (p.batch < 32) expect(2 * more > cluster.models[p.model]!.sloMs || !memOk).toBe(true);
    });
  });

  it('is static, valid and deterministic whatever the rates', () => {
    for (const gpus of [1, 2, 3, 4]) {
      const cluster = buildCluster(new Array(gpus).fill(v100), v100Models);
      const a = staticEvenFactory.create(cluster, {});
      const b = staticEvenFactory.create(cluster, { seed: 5 });
      const first = a.decide(obs(cluster, [1, 1, 1, 1]));
      expect(deploymentProblem(cluster, first)).toBeNull();
      for (let t = 0; t < 50; t++) {
        const rates = v100Models.map((_, i) => ((t * 37 + i * 101) % 997) * 3);
        expect(a.decide(obs(cluster, rates))).toEqual(first);
        expect(b.decide(obs(cluster, rates))).toEqual(first);
      }
      expect(new Set(first.placements.map((p) => p.model)).size).toBe(v100Models.length);
    }
  });
});

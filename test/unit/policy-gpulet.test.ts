import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import { GPULET_LATENCY_RATIO, GpuletPlanner, gpuletFactory, partitionPct } from '../../src/policy/policies/gpulet.js';
import { alignToCurrent } from '../../src/policy/util.js';
import { deploymentProblem, memoryOnGpu, predictOnGpu } from '../../src/policy/util.js';
import type { ClusterInfo, Deployment, GpuInfo, Observation } from '../../src/policy/types.js';
import { parseProfile, ProfileSchema } from '../../src/profile/schema.js';
import { Rng } from '../../src/workload/random.js';
import { makeProfile } from '../support/builders.js';

const load = (p: string) => parseProfile(JSON.parse(readFileSync(p, 'utf8')), p);
const v100 = load('profiles/v100.json');
const paperModels = [
  ['alexnet', 25],
  ['resnet50', 80],
  ['vgg16', 150],
  ['mnasnet', 50],
  ['mobilenet', 60],
  ['efficientnet', 40],
  ['resnet18', 60],
  ['vgg19', 200],
].map(([name, sloMs]) => ({ name: name as string, sloMs: sloMs as number }));

function obs(ratePerS: readonly number[], nowMs = 0, current: Deployment = { placements: [] }): Observation {
  const n = ratePerS.length;
  const zeros = new Array<number>(n).fill(0);
  const nan = new Array<number>(n).fill(Number.NaN);
  return {
    nowMs,
    ratePerS,
    queued: zeros,
    lastEpoch: { served: zeros, violated: zeros, dropped: zeros, meanExecMs: nan, meanLatencyMs: nan },
    current,
  };
}

/** Gpulet's L(b): solo t_inf times the latency ratio. */
const gpuletL = (gpu: GpuInfo, model: number, batch: number, pct: number) =>
  predictOnGpu(gpu, [{ model, batch, pct }])[0]! * GPULET_LATENCY_RATIO;

// Synthetic GPU (MPS unit 5%): running time b * 100/pct ms, so throughput grows linearly with the share.
const synthetic = ProfileSchema.parse(
  makeProfile()
    .model('lin', { runAtB1Full: 1, batchExp: 1, pctExp: 1, alphaCache: 0 })
    .model('hog', { runAtB1Full: 1, batchExp: 1, pctExp: 1, alphaCache: 0 })
    .build(),
);

describe('gpulet: partitions on MPS units', () => {
  it('maps 20/40/50/60/80% to the nearest unit multiple (ties down); 100 stays 100', () => {
    const s = buildCluster(
      [load('profiles/rtx2060s.json'), load('profiles/rtx2060.json')],
      [{ name: 'alexnet', sloMs: 25 }],
    );
    const unit6 = s.gpus[0]!;
    const unit7 = s.gpus[1]!;
    expect(unit6.mpsUnitPct).toBe(6);
    expect(unit7.mpsUnitPct).toBe(7);
    expect([20, 40, 50, 60, 80, 100].map((p) => partitionPct(unit6, p))).toEqual([18, 42, 48, 60, 78, 100]);
    expect([20, 40, 50, 60, 80, 100].map((p) => partitionPct(unit7, p))).toEqual([21, 42, 49, 63, 77, 100]);
  });
});

describe('gpulet: hand-worked decisions', () => {
  const cluster = buildCluster(
    [synthetic, synthetic],
    [
      { name: 'lin', sloMs: 40 },
      { name: 'hog', sloMs: 40 },
    ],
  );
  const gpu = cluster.gpus[0]!;
  const planner = new GpuletPlanner(cluster);

  it('the saturated batch is the largest b with 2 * L(b) <= SLO', () => {
    for (const pct of [20, 40, 100]) {
      const { batch } = planner.saturated(gpu, 0, pct);
      expect(2 * gpuletL(gpu, 0, batch, pct)).toBeLessThanOrEqual(40);
      if (batch < 32) expect(2 * gpuletL(gpu, 0, batch + 1, pct)).toBeGreaterThan(40);
    }
    // At 100%: L(b) = 1.1 * (b + 0.0606 b + 0.02) <= 20 gives b = 17.
    expect(planner.saturated(gpu, 0, 100).batch).toBe(17);
  });

  it('a light model gets the smallest partition (p_ideal = 20 < p_eff) and a residual batch, timeout SLO/2', () => {
    // Saturated throughput at 20%: b = 3 (L = 1.1 * (3 * 5.06 + 0.02) = 16.7 ms), about 180 tasks/s; 50 tasks/s fits.
    expect(planner.minRequiredPartition(gpu, 0, 50)).toBe(20);
    const d = planner.plan([50, 0]);
    expect(d.placements).toHaveLength(1);
    const p = d.placements[0]!;
    expect(p).toMatchObject({ model: 0, gpu: 0, pct: 20, timeoutMs: 20 });
    // Residual batch: the largest b with b / rate + L(b) <= SLO: b = 1 (20 ms + 5.6 ms); b = 2 needs 40 ms
    // of collection.
    expect(p.batch).toBe(1);
  });

  it('a model whose rate exceeds its most efficient partition is split over several gpu-lets', () => {
    // Linear scaling: every ladder step gains the same per %, the first (20 -> 40) wins: p_eff = 40.
    expect(planner.maxEfficientPartition(gpu, 0)).toBe(40);
    const sat40 = planner.saturated(gpu, 0, 40).throughputPerS;
    const rate = sat40 * 2.5;
    const d = planner.plan([rate, 0]);
    const mine = d.placements.filter((p) => p.model === 0);
    expect(mine.length).toBeGreaterThanOrEqual(2);
    expect(new Set(mine.map((p) => p.gpu)).size).toBe(mine.length);
    // The first two gpu-lets are saturated 40% ones, one per GPU; the rest of the rate goes into a remainder partition.
    expect(mine.filter((p) => p.pct === 40)).toHaveLength(2);
    expect(deploymentProblem(cluster, d)).toBeNull();
  });

  it('best fit puts a second light model into the remainder of a split GPU', () => {
    const d = planner.plan([50, 40]);
    expect(d.placements.map((p) => [p.model, p.gpu, p.pct])).toEqual([
      [0, 0, 20],
      [1, 0, 80],
    ]);
  });

  it('the interference check keeps a pair apart when co-location would break an SLO', () => {
    const heavy = ProfileSchema.parse(
      makeProfile()
        .model('lin', { runAtB1Full: 1, batchExp: 1, pctExp: 1, alphaCache: 20, alphaU: 1, betaU: 0.2 })
        .model('hog', { runAtB1Full: 1, batchExp: 1, pctExp: 1, alphaCache: 20, alphaU: 1, betaU: 0.2 })
        .build(),
    );
    const c = buildCluster(
      [heavy, heavy],
      [
        { name: 'lin', sloMs: 40 },
        { name: 'hog', sloMs: 40 },
      ],
    );
    const d = new GpuletPlanner(c).plan([50, 40]);
    expect(d.placements.map((p) => p.gpu).sort()).toEqual([0, 1]);
  });
});

describe('gpulet: invariants over random rates', () => {
  const cluster = buildCluster(
    [
      load('profiles/rtx2060s.json'),
      load('profiles/rtx2060s.json'),
      load('profiles/rtx2060.json'),
      load('profiles/rtx2060.json'),
    ],
    paperModels,
  );
  const rng = new Rng(12345);

  it('valid deployments: at most two gpu-lets a GPU, 2 * L(b) <= SLO, timeout SLO/2, every busy model placed', () => {
    let unplacedSeen = 0;
    for (let trial = 0; trial < 60; trial++) {
      const rates = paperModels.map(() => (rng.next() < 0.15 ? 0 : rng.next() * 1500));
      const policy = gpuletFactory.create(cluster, {});
      const d = policy.decide(obs(rates));
      expect(deploymentProblem(cluster, d)).toBeNull();
      for (const g of cluster.gpus) expect(d.placements.filter((p) => p.gpu === g.index).length).toBeLessThanOrEqual(2);
      for (const p of d.placements) {
        const gpu = cluster.gpus[p.gpu]!;
        const sloMs = cluster.models[p.model]!.sloMs;
        expect(p.timeoutMs).toBe(sloMs / 2);
        if (p.batch > 1) expect(2 * gpuletL(gpu, p.model, p.batch, p.pct)).toBeLessThanOrEqual(sloMs + 1e-9);
        expect(d.gpuModes ?? []).not.toContain('timeshare');
      }
      rates.forEach((r, i) => {
        if (r <= 0) {
          expect(d.placements.some((p) => p.model === i)).toBe(false);
        } else if (!d.placements.some((p) => p.model === i)) {
          // Stranded only when no GPU has a free gpu-let that holds the model in memory even at batch 1
          // (memory-heavy pairs on the 6 GB GPUs; docs/policies/gpulet.md).
          unplacedSeen++;
          for (const g of cluster.gpus) {
            const on = d.placements.filter((p) => p.gpu === g.index);
            if (on.length >= 2) continue;
            expect(memoryOnGpu(g, [...on, { model: i, batch: 1 }])).toBeGreaterThan(g.memMb);
          }
        }
      });
    }
    expect(unplacedSeen).toBeLessThan(6); // 60 heavy random vectors of 8 models on 4 GPUs
  });

  it('under overload gives what it can: still valid, every model keeps a gpu-let', () => {
    const small: ClusterInfo = buildCluster(
      [load('profiles/rtx2060s.json'), load('profiles/rtx2060.json')],
      paperModels.slice(0, 4),
    );
    const d = gpuletFactory.create(small, {}).decide(obs([5000, 3000, 2000, 5000]));
    expect(deploymentProblem(small, d)).toBeNull();
    for (let i = 0; i < 4; i++) expect(d.placements.some((p) => p.model === i)).toBe(true);
    for (const g of small.gpus) expect(d.placements.filter((p) => p.gpu === g.index).length).toBeLessThanOrEqual(2);
  });

  it('is deterministic and keeps its plan while rates stay within 10%', () => {
    const rates = [400, 200, 80, 300, 300, 200, 300, 60];
    const a = gpuletFactory.create(cluster, { seed: 1 });
    const b = gpuletFactory.create(cluster, { seed: 99 });
    const da = a.decide(obs(rates));
    expect(b.decide(obs(rates))).toEqual(da);
    const nudged = rates.map((r) => r * 1.05);
    expect(a.decide(obs(nudged, 1000, da))).toBe(da);
    const moved = rates.map((r, i) => (i === 1 ? r * 3 : r));
    const dm = a.decide(obs(moved, 2000, da));
    expect(deploymentProblem(cluster, dm)).toBeNull();
    expect(dm).not.toBe(da);
  });

  it('alignToCurrent renumbers GPUs of one profile to keep current workers in place', () => {
    const current: Deployment = { placements: [{ model: 0, gpu: 1, pct: 42, batch: 4 }] };
    const plan: Deployment = { placements: [{ model: 0, gpu: 0, pct: 42, batch: 8 }] };
    expect(alignToCurrent(cluster, plan, current).placements).toEqual([{ model: 0, gpu: 1, pct: 42, batch: 8 }]);
  });
});

describe('gpulet on the V100 profile', () => {
  it('places alexnet, resnet50, vgg19 and ssd validly on two V100s', () => {
    const c = buildCluster(
      [v100, v100],
      [
        { name: 'alexnet', sloMs: 25 },
        { name: 'resnet50', sloMs: 80 },
        { name: 'vgg19', sloMs: 200 },
        { name: 'ssd', sloMs: 200 },
      ],
    );
    const d = gpuletFactory.create(c, {}).decide(obs([800, 400, 100, 50]));
    expect(deploymentProblem(c, d)).toBeNull();
    expect(new Set(d.placements.map((p) => p.model)).size).toBe(4);
    for (const p of d.placements) expect(p.pct % 2.5).toBeCloseTo(0, 9);
  });
});

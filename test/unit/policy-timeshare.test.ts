import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import { timeshareFactory, timeshareMaxBatch, timesharePlan } from '../../src/policy/policies/timeshare.js';
import { deploymentProblem, memoryOnGpu, predictOnGpu } from '../../src/policy/util.js';
import type { Deployment, Observation } from '../../src/policy/types.js';
import { parseProfile, ProfileSchema } from '../../src/profile/schema.js';
import { Rng } from '../../src/workload/random.js';
import { makeProfile } from '../support/builders.js';

const load = (p: string) => parseProfile(JSON.parse(readFileSync(p, 'utf8')), p);
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
const cluster = buildCluster(
  [
    load('profiles/rtx2060s.json'),
    load('profiles/rtx2060s.json'),
    load('profiles/rtx2060.json'),
    load('profiles/rtx2060.json'),
  ],
  paperModels,
);

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

describe('timeshare (Triton-style)', () => {
  it('never shares a GPU spatially: every GPU in timeshare mode, every worker on the whole GPU', () => {
    const d = timesharePlan(cluster);
    expect(d.gpuModes).toEqual(['timeshare', 'timeshare', 'timeshare', 'timeshare']);
    for (const p of d.placements) expect(p.pct).toBe(100);
    expect(deploymentProblem(cluster, d)).toBeNull();
  });

  it('dynamic batching: max batch is the largest b with 2 * t_inf(b, 100%) <= SLO; no queue delay', () => {
    const d = timesharePlan(cluster);
    for (const p of d.placements) {
      const gpu = cluster.gpus[p.gpu]!;
      const sloMs = cluster.models[p.model]!.sloMs;
      expect(p.timeoutMs).toBe(0);
      expect(p.batch).toBe(timeshareMaxBatch(gpu, p.model, sloMs));
      if (p.batch > 1)
        expect(2 * predictOnGpu(gpu, [{ model: p.model, batch: p.batch, pct: 100 }])[0]!).toBeLessThanOrEqual(sloMs);
      if (p.batch < 32)
        expect(2 * predictOnGpu(gpu, [{ model: p.model, batch: p.batch + 1, pct: 100 }])[0]!).toBeGreaterThan(sloMs);
    }
  });

  it('loads every model at least once and on every GPU where memory allows (instance group on all GPUs)', () => {
    const d = timesharePlan(cluster);
    for (const m of cluster.models) expect(d.placements.some((p) => p.model === m.index)).toBe(true);
    for (const g of cluster.gpus) {
      const on = d.placements.filter((p) => p.gpu === g.index);
      expect(memoryOnGpu(g, on)).toBeLessThanOrEqual(g.memMb);
      // A model missing from a GPU would not have fitted there.
      for (const m of cluster.models) {
        if (on.some((p) => p.model === m.index)) continue;
        const b = timeshareMaxBatch(g, m.index, m.sloMs);
        expect(memoryOnGpu(g, [...on, { model: m.index, batch: b }])).toBeGreaterThan(g.memMb);
      }
    }
  });

  it('hand-worked: a small synthetic cluster loads both models on both GPUs', () => {
    const synthetic = ProfileSchema.parse(
      makeProfile()
        .model('a', { runAtB1Full: 1, batchExp: 1, pctExp: 1 })
        .model('b', { runAtB1Full: 2, batchExp: 1, pctExp: 1 })
        .build(),
    );
    const c = buildCluster(
      [synthetic, synthetic],
      [
        { name: 'a', sloMs: 40 },
        { name: 'b', sloMs: 40 },
      ],
    );
    const d = timesharePlan(c);
    // t_inf(b) = b * run + 0.0606 b + 0.02 ms; 2 t_inf <= 40: a: b <= 18.8 -> 18; b: b <= 9.7 -> 9.
    expect(d.placements.map((p) => [p.model, p.gpu, p.batch])).toEqual([
      [0, 0, 18],
      [1, 0, 9],
      [0, 1, 18],
      [1, 1, 9],
    ]);
  });

  it('is static and deterministic: rates play no part', () => {
    const a = timeshareFactory.create(cluster, { seed: 1 });
    const b = timeshareFactory.create(cluster, { seed: 2 });
    const rng = new Rng(5);
    const first = a.decide(obs(paperModels.map(() => 100)));
    for (let t = 1; t < 30; t++) {
      const rates = paperModels.map(() => rng.next() * 2000);
      const d = a.decide(obs(rates, t * 1000, first));
      expect(d).toEqual(first);
      expect(deploymentProblem(cluster, d)).toBeNull();
    }
    expect(b.decide(obs(paperModels.map(() => 0)))).toEqual(first);
  });
});

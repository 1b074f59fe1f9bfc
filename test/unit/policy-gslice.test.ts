import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import {
  GSLICE_SETTLE_MS,
  gsliceBatch,
  gsliceFactory,
  gsliceKneePct,
  gsliceStep,
  gsliceTune,
  maxMinFair,
} from '../../src/policy/policies/gslice.js';
import { deploymentProblem, predictOnGpu } from '../../src/policy/util.js';
import type { Deployment, Observation } from '../../src/policy/types.js';
import { parseProfile } from '../../src/profile/schema.js';
import { Rng } from '../../src/workload/random.js';

const load = (p: string) => parseProfile(JSON.parse(readFileSync(p, 'utf8')), p);
const s = load('profiles/rtx2060s.json');
const r = load('profiles/rtx2060.json');
const models = [
  ['alexnet', 25],
  ['resnet50', 80],
  ['vgg16', 150],
  ['mnasnet', 50],
  ['mobilenet', 60],
  ['efficientnet', 40],
].map(([name, sloMs]) => ({ name: name as string, sloMs: sloMs as number }));
const cluster = buildCluster([s, s, r, r], models);

interface Feedback {
  served?: number[];
  violated?: number[];
  dropped?: number[];
  meanExecMs?: number[];
  meanLatencyMs?: number[];
}

function obs(ratePerS: readonly number[], nowMs: number, current: Deployment, f: Feedback = {}): Observation {
  const n = ratePerS.length;
  const fill = (v: number) => new Array<number>(n).fill(v);
  return {
    nowMs,
    ratePerS,
    queued: fill(0),
    lastEpoch: {
      served: f.served ?? fill(0),
      violated: f.violated ?? fill(0),
      dropped: f.dropped ?? fill(0),
      meanExecMs: f.meanExecMs ?? fill(Number.NaN),
      meanLatencyMs: f.meanLatencyMs ?? fill(Number.NaN),
    },
    current,
  };
}

const sharesOf = (d: Deployment, model: number) =>
  d.placements.filter((p) => p.model === model).reduce((a, p) => a + p.pct, 0);

describe('gslice: the self-tuning rule (hand-worked)', () => {
  it('raises the GPU% by the larger relative deficit', () => {
    // RL = (100 - 120) / 100 = -20%, RT = (100 - 90) / 90 = +11%: +20%.
    expect(
      gsliceTune(40, { sloMs: 100, ratePerS: 90, meanLatencyMs: 120, capacityPerS: 100, violationFraction: 0 }),
    ).toBeCloseTo(48, 9);
    // Throughput short by 50%: +50%.
    expect(
      gsliceTune(40, { sloMs: 100, ratePerS: 200, meanLatencyMs: 50, capacityPerS: 100, violationFraction: 0 }),
    ).toBeCloseTo(60, 9);
  });

  it('an epoch with SLO violations above the threshold counts as a latency deficit', () => {
    expect(
      gsliceTune(40, { sloMs: 100, ratePerS: 90, meanLatencyMs: 60, capacityPerS: 200, violationFraction: 0.3 }),
    ).toBeCloseTo(52, 9);
  });

  it('lowers it by the smaller surplus, and leaves it inside the 5% band', () => {
    // RL = 70%, throughput surplus as a fraction of capacity (200 - 100) / 200 = 50%: -50%.
    expect(
      gsliceTune(50, { sloMs: 100, ratePerS: 100, meanLatencyMs: 30, capacityPerS: 200, violationFraction: 0 }),
    ).toBeCloseTo(25, 9);
    // RL = 3%: inside the band.
    expect(
      gsliceTune(50, { sloMs: 100, ratePerS: 100, meanLatencyMs: 97, capacityPerS: 200, violationFraction: 0 }),
    ).toBe(50);
  });

  it('steps in whole percents, rounded up to the next MPS unit (glet GetNewGPUPart + getNextLargestPart)', () => {
    // A small model at 12% (unit 6) whose step is 12 * 0.1 = 1.2%: int() keeps 1%, 13% rounds up to 18.
    expect(gsliceStep(12, 13.2, 6)).toBe(18);
    // Under 1% of change: int() gives 0, no move.
    expect(gsliceStep(12, 12.9, 6)).toBe(12);
    // A decrease smaller than a unit rounds back up to where it was; a larger one takes whole units.
    expect(gsliceStep(30, 26.5, 6)).toBe(30);
    expect(gsliceStep(30, 22.5, 6)).toBe(24);
    // Never below one unit.
    expect(gsliceStep(6, 1, 6)).toBe(6);
  });

  it('max-min fair cut (glet AllocateMinMaxFair)', () => {
    expect(maxMinFair([10, 50, 80], 100)).toEqual([10, 45, 45]);
    expect(maxMinFair([10, 20], 100)).toEqual([10, 20]);
  });

  it('batch: the largest b whose solo t_inf fits SLO/2; knee within 10% of the full-GPU latency', () => {
    const gpu = cluster.gpus[0]!;
    const b = gsliceBatch(gpu, 1, 50, 80);
    expect(predictOnGpu(gpu, [{ model: 1, batch: b, pct: 50 }])[0]!).toBeLessThanOrEqual(40);
    if (b < 32) expect(predictOnGpu(gpu, [{ model: 1, batch: b + 1, pct: 50 }])[0]!).toBeGreaterThan(40);
    const knee = gsliceKneePct(gpu, 1, 80);
    const kb = gsliceBatch(gpu, 1, 100, 80);
    const full = predictOnGpu(gpu, [{ model: 1, batch: kb, pct: 100 }])[0]!;
    expect(predictOnGpu(gpu, [{ model: 1, batch: kb, pct: knee }])[0]!).toBeLessThanOrEqual(1.1 * full);
    expect(knee % gpu.mpsUnitPct === 0 || knee === 100).toBe(true);
  });
});

describe('gslice: behaviour over epochs', () => {
  const rates = [400, 150, 60, 300, 300, 200];

  it('raises a model share after an epoch with SLO violations, lowers it when it has slack', () => {
    const p = gsliceFactory.create(cluster, {});
    const d0 = p.decide(obs(rates, 0, { placements: [] }));
    expect(deploymentProblem(cluster, d0)).toBeNull();
    const before = sharesOf(d0, 1);
    // resnet50 (SLO 80): mean latency 100 ms, 20% of tasks late or dropped.
    const served = [400, 120, 60, 300, 300, 200];
    const badFeedback: Feedback = {
      served,
      violated: [0, 20, 0, 0, 0, 0],
      dropped: [0, 10, 0, 0, 0, 0],
      meanExecMs: [5, 30, 40, 10, 10, 10],
      meanLatencyMs: [12, 100, 70, 25, 30, 20],
    };
    const d1 = p.decide(obs(rates, 1000, d0, badFeedback));
    expect(deploymentProblem(cluster, d1)).toBeNull();
    expect(sharesOf(d1, 1)).toBeGreaterThan(before);
    // Within the settle time, no second change.
    const d2 = p.decide(obs(rates, 1000 + GSLICE_SETTLE_MS / 2, d1, badFeedback));
    expect(sharesOf(d2, 1)).toBe(sharesOf(d1, 1));
    // After it: lots of slack (latency 10 ms of 80, capacity far above the rate) lowers the share.
    const slack = obs(rates, 1000 + GSLICE_SETTLE_MS + 1000, d2, {
      served,
      meanExecMs: [5, 5, 40, 10, 10, 10],
      meanLatencyMs: [12, 10, 70, 25, 30, 20],
    });
    const d3 = p.decide(slack);
    expect(deploymentProblem(cluster, d3)).toBeNull();
    expect(sharesOf(d3, 1)).toBeLessThan(sharesOf(d2, 1));
  });

  it('emits valid deployments over random rates and feedback, places every model with traffic, timeout SLO/2', () => {
    const rng = new Rng(777);
    const p = gsliceFactory.create(cluster, {});
    let current: Deployment = { placements: [] };
    for (let t = 0; t < 120; t++) {
      const rt = models.map(() => (rng.next() < 0.1 ? 0 : rng.next() * 1500));
      const fb = {
        served: rt.map((x) => Math.round(x * rng.next())),
        violated: rt.map((x) => Math.round(x * 0.2 * rng.next())),
        dropped: rt.map((x) => Math.round(x * 0.1 * rng.next())),
        meanExecMs: models.map((m) => (rng.next() < 0.1 ? Number.NaN : m.sloMs * rng.next())),
        meanLatencyMs: models.map((m) => (rng.next() < 0.1 ? Number.NaN : 2 * m.sloMs * rng.next())),
      };
      const d = p.decide(obs(rt, t * 1000, current, fb));
      expect(deploymentProblem(cluster, d)).toBeNull();
      rt.forEach((x, i) => {
        if (x > 0) expect(d.placements.some((q) => q.model === i)).toBe(true);
      });
      for (const q of d.placements) expect(q.timeoutMs).toBe(models[q.model]!.sloMs / 2);
      current = d;
    }
  });

  it('is deterministic: the same observations give the same deployments', () => {
    const run = () => {
      const p = gsliceFactory.create(cluster, { seed: 3 });
      const out: Deployment[] = [];
      let current: Deployment = { placements: [] };
      for (let t = 0; t < 20; t++) {
        const f =
          t % 3 === 0
            ? {
                served: rates,
                meanExecMs: [5, 40, 80, 10, 10, 30],
                meanLatencyMs: [30, 90, 160, 40, 40, 50],
                violated: [40, 20, 10, 0, 0, 30],
              }
            : {};
        current = p.decide(obs(rates, t * 1000, current, f));
        out.push(current);
      }
      return out;
    };
    expect(run()).toEqual(run());
  });

  it('serves a share above 100% with replicas on distinct GPUs', () => {
    const p = gsliceFactory.create(cluster, {});
    let d = p.decide(obs([0, 0, 500, 0, 0, 0], 0, { placements: [] }));
    // vgg16 badly short of throughput, epoch after epoch.
    for (let t = 1; t < 30; t++) {
      d = p.decide(
        obs([0, 0, 500, 0, 0, 0], t * 5000, d, {
          served: [0, 0, 200, 0, 0, 0],
          meanExecMs: [0, 0, 70, 0, 0, 0],
          meanLatencyMs: [0, 0, 140, 0, 0, 0],
        }),
      );
      expect(deploymentProblem(cluster, d)).toBeNull();
    }
    const mine = d.placements.filter((q) => q.model === 2);
    expect(mine.length).toBeGreaterThanOrEqual(2);
    expect(new Set(mine.map((q) => q.gpu)).size).toBe(mine.length);
  });
});

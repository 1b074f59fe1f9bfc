import { describe, expect, it } from 'vitest';
import { decodeAction, actionSpace, referenceThroughput, replicaWeights, scorePlacements } from '../../rl/mdp.js';
import { refine } from '../../rl/refine.js';
import { deploymentProblem } from '../../src/policy/util.js';
import { Rng } from '../../src/workload/random.js';
import { builtInScenario } from '../support/clusters.js';

const { cluster } = builtInScenario('paper-6');
const space = actionSpace(cluster);
const ref = referenceThroughput(cluster);

describe('refine', () => {
  it.each([false, true])(
    'never returns an allocation worse than its start, always feasible, within its budget (replicas: %s)',
    (replicas) => {
      const rng = new Rng(replicas ? 5 : 3);
      for (let n = 0; n < 30; n++) {
        const action = Array.from({ length: 6 }, () => Math.floor(rng.next() * space.options.length));
        const { placements } = decodeAction(cluster, space, action);
        const rates = [500, 400, 200, 400, 450, 400].map((r) => r * (0.3 + rng.next()));
        const start = scorePlacements(cluster, ref, placements, rates);
        const r = refine(cluster, ref, placements, rates, { budget: 80, replicas });
        expect(r.outcome.reward).toBeGreaterThanOrEqual(start.reward);
        expect(r.evaluations).toBeLessThanOrEqual(80);
        // Includes "placed twice on GPU": replicas of a model run on distinct GPUs.
        expect(deploymentProblem(cluster, r.outcome.deployment)).toBeNull();
        expect(new Set(r.outcome.deployment.placements.map((p) => p.model)).size).toBe(6);
      }
    },
  );

  it('gives a starved model the units it needs', () => {
    const pick = (gpu: number, pct: number) => space.options.findIndex((o) => o.gpu === gpu && o.pct === pct);
    // resnet50 squeezed to one unit beside alexnet at 90%: far short of 300/s.
    const { placements } = decodeAction(cluster, space, [
      pick(0, 90),
      pick(0, 6),
      pick(1, 96),
      pick(2, 49),
      pick(2, 49),
      pick(3, 98),
    ]);
    const rates = [100, 300, 50, 100, 100, 100];
    const before = scorePlacements(cluster, ref, placements, rates);
    expect(before.violation[1]).toBeGreaterThan(0);
    const after = refine(cluster, ref, placements, rates, { budget: 200 });
    expect(after.outcome.violation[1]).toBe(0);
  });

  it('gives a model that no one GPU can carry a replica on another', () => {
    const pick = (gpu: number, pct: number) => space.options.findIndex((o) => o.gpu === gpu && o.pct === pct);
    // vgg16 alone on GPU 1 at 100%, asked for more than a whole RTX 2060 Super carries; GPU 3 half free.
    const { placements } = decodeAction(cluster, space, [
      pick(0, 48),
      pick(0, 48),
      pick(1, 100),
      pick(2, 49),
      pick(2, 49),
      pick(3, 49),
    ]);
    const rates = [100, 100, 600, 100, 100, 100];
    const single = refine(cluster, ref, placements, rates, { budget: 200 });
    expect(single.outcome.violation[2]).toBeGreaterThan(0);
    const r = refine(cluster, ref, placements, rates, { budget: 200, replicas: true });
    const vgg = r.outcome.deployment.placements.filter((p) => p.model === 2);
    expect(vgg.length).toBeGreaterThan(1);
    expect(r.outcome.capacityPerS[2]).toBeGreaterThan(single.outcome.capacityPerS[2]!);
    expect(r.outcome.violation[2]).toBeLessThan(single.outcome.violation[2]!);
  });
});

describe('replica weights', () => {
  it('are 1 for a model with one placement, and split a replicated model by throughput', () => {
    const ps = [
      { model: 0, gpu: 0, pct: 60, batch: 1 },
      { model: 0, gpu: 1, pct: 30, batch: 1 },
      { model: 1, gpu: 2, pct: 50, batch: 1 },
    ];
    const w = replicaWeights(cluster, ps);
    expect(w[2]).toBe(1);
    expect(w[0]! + w[1]!).toBeCloseTo(1, 12);
    expect(w[0]).toBeGreaterThan(w[1]!); // twice the share of the same GPU type: more throughput
  });
});

import { describe, expect, it } from 'vitest';
import { decodeAction, actionSpace, referenceThroughput, scorePlacements } from '../../rl/mdp.js';
import { refine } from '../../rl/refine.js';
import { deploymentProblem } from '../../src/policy/util.js';
import { Rng } from '../../src/workload/random.js';
import { builtInScenario } from '../support/clusters.js';

const { cluster } = builtInScenario('paper-6');
const space = actionSpace(cluster);
const ref = referenceThroughput(cluster);

describe('refine', () => {
  it('never returns an allocation worse than its start, always feasible, within its budget', () => {
    const rng = new Rng(3);
    for (let n = 0; n < 30; n++) {
      const action = Array.from({ length: 6 }, () => Math.floor(rng.next() * space.options.length));
      const { placements } = decodeAction(cluster, space, action);
      const rates = [500, 400, 200, 400, 450, 400].map((r) => r * (0.3 + rng.next()));
      const start = scorePlacements(cluster, ref, placements, rates);
      const r = refine(cluster, ref, placements, rates, { budget: 80 });
      expect(r.outcome.reward).toBeGreaterThanOrEqual(start.reward);
      expect(r.evaluations).toBeLessThanOrEqual(80);
      expect(deploymentProblem(cluster, r.outcome.deployment)).toBeNull();
    }
  });

  it('gives a starved model the units it needs', () => {
    const pick = (gpu: number, pct: number) => space.options.findIndex((o) => o.gpu === gpu && o.pct === pct);
    // resnet50 squeezed to one unit beside alexnet at 90%: far short of 300/s.
    const { placements } = decodeAction(cluster, space, [pick(0, 90), pick(0, 6), pick(1, 96), pick(2, 49), pick(2, 49), pick(3, 98)]);
    const rates = [100, 300, 50, 100, 100, 100];
    const before = scorePlacements(cluster, ref, placements, rates);
    expect(before.violation[1]).toBeGreaterThan(0);
    const after = refine(cluster, ref, placements, rates, { budget: 200 });
    expect(after.outcome.violation[1]).toBe(0);
  });
});

import { describe, expect, it } from 'vitest';
import {
  actionSpace,
  decodeAction,
  encodeState,
  memoryUsed,
  OMEGA,
  referenceThroughput,
  scorePlacements,
  stateDim,
  staticMasks,
} from '../../rl/mdp.js';
import { deploymentProblem } from '../../src/policy/util.js';
import { Rng } from '../../src/workload/random.js';
import { builtInScenario } from '../support/clusters.js';

const { cluster } = builtInScenario('paper-6');
const space = actionSpace(cluster);
const ref = referenceThroughput(cluster);

describe('the MDP of section 5.2', () => {
  it('has one head per model over every (GPU, share level) option', () => {
    expect(space.heads).toBe(6);
    // rtx2060s: 6% units -> 16 levels (6..96) + 100; rtx2060: 7% units -> 14 levels (7..98) + 100
    expect(space.options).toHaveLength(2 * 17 + 2 * 15);
    expect(stateDim(cluster)).toBe(4 + 12);
  });

  it('every action, however bad, decodes into a feasible deployment', () => {
    const rng = new Rng(42);
    for (let n = 0; n < 2000; n++) {
      const action = Array.from({ length: space.heads }, () => Math.floor(rng.next() * space.options.length));
      if (n % 3 === 0) action.fill(action[0]!); // everything on one GPU at one share
      const { placements } = decodeAction(cluster, space, action);
      expect(deploymentProblem(cluster, { placements })).toBeNull();
      expect(new Set(placements.map((p) => p.model)).size).toBe(6);
    }
  });

  it('a sensible action is left as it is', () => {
    const pick = (gpu: number, pct: number) => space.options.findIndex((o) => o.gpu === gpu && o.pct === pct);
    const action = [pick(0, 48), pick(0, 48), pick(1, 96), pick(2, 49), pick(2, 49), pick(3, 98)];
    const { placements, repaired } = decodeAction(cluster, space, action);
    expect(repaired).toBe(0);
    expect(placements.map((p) => [p.gpu, p.pct])).toEqual([
      [0, 48],
      [0, 48],
      [1, 96],
      [2, 49],
      [2, 49],
      [3, 98],
    ]);
  });

  it('reward is normalised throughput minus omega times violation (eq. 3)', () => {
    const pick = (gpu: number, pct: number) => space.options.findIndex((o) => o.gpu === gpu && o.pct === pct);
    const { placements } = decodeAction(cluster, space, [
      pick(0, 48),
      pick(0, 48),
      pick(1, 96),
      pick(2, 49),
      pick(2, 49),
      pick(3, 98),
    ]);
    const light = scorePlacements(cluster, ref, placements, [100, 100, 50, 100, 100, 100]);
    expect(light.violation.every((v) => v === 0)).toBe(true);
    expect(light.reward).toBeCloseTo(
      light.capacityPerS.reduce((s, h, i) => s + h / ref[i]!, 0),
      9,
    );
    const heavy = scorePlacements(cluster, ref, placements, [5000, 100, 50, 100, 100, 100]);
    expect(heavy.violation[0]).toBeGreaterThan(0);
    expect(heavy.reward).toBeLessThan(light.reward - OMEGA * 0.5);
  });

  it('with a capacity credit, capacity past that multiple of the rate earns nothing', () => {
    const pick = (gpu: number, pct: number) => space.options.findIndex((o) => o.gpu === gpu && o.pct === pct);
    const { placements } = decodeAction(cluster, space, [
      pick(0, 48),
      pick(0, 48),
      pick(1, 96),
      pick(2, 49),
      pick(2, 49),
      pick(3, 98),
    ]);
    const rates = [100, 100, 50, 100, 100, 100];
    const full = scorePlacements(cluster, ref, placements, rates);
    const capped = scorePlacements(cluster, ref, placements, rates, { capacityCreditX: 2 });
    expect(capped.capacityPerS).toEqual(full.capacityPerS); // the capacity itself is what it is
    expect(capped.reward).toBeCloseTo(
      full.capacityPerS.reduce((s, h, i) => s + Math.min(h, 2 * rates[i]!) / ref[i]!, 0),
      9,
    );
    expect(capped.reward).toBeLessThan(full.reward);
  });

  it('masks allow every option a model fits on, and the state is scaled', () => {
    expect(staticMasks(cluster, space).every((m) => m.every((x) => x === 1))).toBe(true);
    const s = encodeState(
      cluster,
      ref,
      memoryUsed(cluster, { placements: [] }),
      [100, 100, 50, 100, 100, 100],
      [0, 0, 0, 0, 0, 0],
    );
    expect(s).toHaveLength(16);
    for (const v of s) expect(v).toBeLessThan(1);
  });
});

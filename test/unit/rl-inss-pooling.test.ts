// inss deciding with the pooling planner: without a trained policy, the dwell after a switch, what a switch costs,
// and feedback from measured misses.
import { describe, expect, it } from 'vitest';
import {
  ALL_ADDITIONS,
  DWELL_MS,
  inssFactory,
  InssPolicy,
  inssVariantFactory,
  MAX_MISS_BOOST,
  MISS_BOOST,
} from '../../rl/inss.js';
import { sameLayout, switchRate } from '../../rl/switching.js';
import type { ClusterInfo, Deployment } from '../../src/policy/types.js';
import { deploymentProblem } from '../../src/policy/util.js';
import { Rng } from '../../src/workload/random.js';
import { observation } from '../support/builders.js';
import { builtInScenario } from '../support/clusters.js';

/** Every emitted deployment: valid (memory, shares <= 100%, models the profile has) and MPS shares whole units. */
function expectFeasible(cluster: ClusterInfo, d: Deployment): void {
  expect(deploymentProblem(cluster, d)).toBeNull();
  for (const p of d.placements) {
    if ((d.gpuModes?.[p.gpu] ?? 'mps') === 'timeshare') continue;
    const units = p.pct / cluster.gpus[p.gpu]!.mpsUnitPct;
    expect(Math.abs(units - Math.round(units)) < 1e-6 || p.pct === 100, `share ${p.pct} on GPU ${p.gpu}`).toBe(true);
  }
}

describe('switchRate', () => {
  it('counts the rate of the models whose workers a switch starts or stops, and nothing for re-batching', () => {
    const { cluster } = builtInScenario('paper-6');
    const rates = [300, 250, 125, 250, 275, 250];
    const a: Deployment = { placements: [0, 1, 2, 3, 4, 5].map((m) => ({ model: m, gpu: m % 4, pct: 50, batch: 4 })) };
    expect(switchRate(cluster, a, { placements: a.placements.map((p) => ({ ...p, batch: 8 })) }, rates)).toBe(0);
    // alexnet's share changes; GPU 1 (resnet50 and efficientnet) is pooled: those three count, the others do not.
    const b: Deployment = {
      placements: a.placements.map((p) => (p.model === 0 ? { ...p, pct: 60 } : p.model === 1 ? { ...p, pct: 100 } : p)),
      gpuModes: ['mps', 'timeshare', 'mps', 'mps'],
    };
    expect(switchRate(cluster, a, b, rates)).toBe(300 + 250 + 250);
  });
});

describe('dwell after a switch', () => {
  it('inss keeps a deployment it has just switched to while its workers start (DWELL_MS), then plans again', () => {
    const { cluster } = builtInScenario('bursty-6');
    const base = [300, 250, 125, 250, 275, 250];
    const rng = new Rng(5);
    const at = (nowMs: number, rates: number[], current: Deployment) => ({ ...observation(rates, current), nowMs });
    // Find a sequence where the policy switches at t = 1 s and, 1 s later, a fresh instance (no
    // switch behind it) would leave that deployment for other rates.
    let checked = 0;
    for (let tries = 0; tries < 300 && checked < 3; tries++) {
      const policy = inssFactory.create(cluster, {});
      const r = [0, 1, 2, 3].map(() => base.map((x) => x * (0.1 + 2.9 * rng.next())));
      const first = policy.decide(at(0, r[0]!, { placements: [] }));
      const switched = policy.decide(at(1000, r[1]!, first));
      if (sameLayout(switched, first)) continue;
      const fresh = inssFactory.create(cluster, {}).decide(at(2000, r[2]!, switched));
      if (sameLayout(fresh, switched)) continue;
      // Within the dwell: kept (re-batched), where an instance with no switch behind it moves.
      const kept = policy.decide(at(2000, r[2]!, switched));
      expect(sameLayout(kept, switched)).toBe(true);
      expectFeasible(cluster, kept);
      // After it: what an instance with no switch behind it decides from the same state.
      const later = policy.decide(at(1000 + DWELL_MS, r[3]!, kept));
      const freshLater = inssFactory.create(cluster, {}).decide(at(1000 + DWELL_MS, r[3]!, kept));
      if (!sameLayout(freshLater, kept)) expect(sameLayout(later, kept)).toBe(false);
      checked++;
    }
    expect(checked).toBe(3);
  });
});

describe('inss without a trained policy', () => {
  it('decides with the model-based planner anywhere, says so, plans feasibly, keeps plans as rates barely move', () => {
    const { cluster } = builtInScenario('bursty-6');
    const policy = inssFactory.create(cluster, {});
    expect(policy).toBeInstanceOf(InssPolicy);
    expect(policy.note).toMatch(/model-based planner/);
    expect(inssFactory.supports(cluster, {})).toBeNull();
    const rates = [300, 250, 125, 250, 275, 250];
    const first = policy.decide(observation(rates, { placements: [] }));
    expectFeasible(cluster, first);
    // Within the 2% band: no re-plan at all.
    expect(
      policy.decide(
        observation(
          rates.map((r) => r * 1.01),
          first,
        ),
      ),
    ).toBe(first);
    // A 5% change re-plans but the hysteresis keeps the same workers (no swap for a near-equal plan).
    const second = policy.decide(
      observation(
        rates.map((r) => r * 1.05),
        first,
      ),
    );
    expect(second.gpuModes).toEqual(first.gpuModes);
    expect(second.placements.map((p) => [p.model, p.gpu, p.pct])).toEqual(
      first.placements.map((p) => [p.model, p.gpu, p.pct]),
    );
    // Rates from scratch: still feasible, and the same for the same inputs (deterministic).
    const rng = new Rng(3);
    let current = first;
    for (let n = 0; n < 10; n++) {
      const r = rates.map((x) => x * (0.2 + 2 * rng.next()));
      current = policy.decide(observation(r, current));
      expectFeasible(cluster, current);
    }
    const again = inssFactory.create(cluster, {});
    expect(again.decide(observation(rates, { placements: [] }))).toEqual(first);
  });

  it('feedback (inss-fb): over 2% missed in 5 epochs earns more rate, under 0.5% the boost decays; off in inss', () => {
    // Too few tasks say nothing.
    const { cluster } = builtInScenario('bursty-6');
    const fb = inssVariantFactory({
      name: 'inss-fb',
      interference: true,
      additions: { ...ALL_ADDITIONS, missFeedback: true },
      description: '',
    });
    const policy = fb.create(cluster, {}) as InssPolicy;
    const rates = [300, 250, 125, 250, 275, 250];
    let current = policy.decide(observation(rates, { placements: [] }));
    const epoch = (missedOf0: number, served = 100) => {
      const obs = observation(rates, current);
      return {
        ...obs,
        lastEpoch: {
          ...obs.lastEpoch,
          served: rates.map(() => served),
          violated: rates.map((_, i) => (i === 0 ? missedOf0 : 0)),
          dropped: rates.map(() => 0),
        },
      };
    };
    // 4 epochs of 10% misses: the window is not over yet.
    for (let k = 0; k < 4; k++) current = policy.decide(epoch(10));
    expect(policy.missBoost).toEqual(rates.map(() => 1));
    const before = [...policy.sources.values()].reduce((a, b) => a + b, 0);
    current = policy.decide(epoch(10)); // fifth: 50 of 500 missed
    expect(policy.missBoost[0]).toBeCloseTo(MISS_BOOST, 9);
    expect(policy.missBoost.slice(1)).toEqual(rates.slice(1).map(() => 1));
    // The boost made it plan again although the rates did not move.
    expect([...policy.sources.values()].reduce((a, b) => a + b, 0)).toBe(before + 1);
    expectFeasible(cluster, current);
    // Repeated misses raise it to the cap, never past it.
    for (let k = 0; k < 40; k++) current = policy.decide(epoch(20));
    expect(policy.missBoost[0]).toBeCloseTo(MAX_MISS_BOOST, 9);
    // Windows without misses let it decay; epochs of 10 tasks never make a window.
    for (let k = 0; k < 10; k++) current = policy.decide(epoch(0));
    expect(policy.missBoost[0]).toBeLessThan(MAX_MISS_BOOST);
    expect(policy.missBoost[0]).toBeGreaterThan(1);
    const fresh = fb.create(cluster, {}) as InssPolicy;
    current = fresh.decide(observation(rates, { placements: [] }));
    for (let k = 0; k < 12; k++) {
      const obs = observation(rates, current);
      current = fresh.decide({
        ...obs,
        lastEpoch: {
          ...obs.lastEpoch,
          served: rates.map(() => 10),
          violated: rates.map(() => 5),
          dropped: rates.map(() => 0),
        },
      });
    }
    expect(fresh.missBoost).toEqual(rates.map(() => 1));
    const plain = inssFactory.create(cluster, {}) as InssPolicy;
    current = plain.decide(observation(rates, { placements: [] }));
    for (let k = 0; k < 10; k++) current = plain.decide(epoch(50));
    expect(plain.missBoost).toEqual(rates.map(() => 1));
  });

  it('inss-paper stays the paper: without a trained policy it says why it cannot run', async () => {
    const { inssPaperFactory } = await import('../../rl/inss.js');
    const { cluster } = builtInScenario('bursty-6');
    expect(inssPaperFactory.supports(cluster, {})).toMatch(/needs a trained policy/);
    expect(() => inssPaperFactory.create(cluster, {})).toThrow(/needs a trained policy/);
  });
});

// The online path in the twin: a scenario model marked unprofiled is served from the first epoch with
// AIMD batching, on a GPU of its own, and its fit is promoted into the planner's profile
// (docs/online-profiling.md).
import { describe, expect, it } from 'vitest';
import { loadProfile } from '../../cli/profiles.js';
import { staticEvenFactory } from '../../src/policy/policies/static-even.js';
import { withOnlineProfiling } from '../../src/policy/online/policy.js';
import {
  initialRates,
  plannerCluster,
  scenarioCluster,
  scenarioSettings,
  scenarioStreams,
  unprofiledModels,
} from '../../src/scenario/build.js';
import { ScenarioSchema } from '../../src/scenario/schema.js';
import { simulate } from '../../src/sim/simulator.js';
import type { Observation } from '../../src/policy/types.js';

describe('an unprofiled model in the simulator', () => {
  it('is served from the first epoch and promoted once its fit passes the held-out test', () => {
    const profile = loadProfile('rtx2060s');
    const profiles = new Map([[profile.id, profile]]);
    const s = ScenarioSchema.parse({
      name: 'online',
      gpus: [{ profile: 'rtx2060s', count: 2 }],
      models: [
        { name: 'alexnet', sloMs: 50, rate: { kind: 'constant', ratePerS: 200 } },
        { name: 'resnet50', sloMs: 80, rate: { kind: 'constant', ratePerS: 200 }, unprofiled: true },
      ],
      durationS: 12,
      seed: 3,
    });
    expect(unprofiledModels(s)).toEqual(['resnet50']);
    const truth = scenarioCluster(s, profiles);
    const planner = plannerCluster(s, profiles);
    expect(planner.gpus.map((g) => g.profileIndex[1])).toEqual([-1, -1]);
    expect(truth.gpus.every((g) => g.profileIndex[1]! >= 0)).toBe(true);
    const promotedAt: number[] = [];
    const inner = withOnlineProfiling(staticEvenFactory, {
      onPromote: (l) => promotedAt.push(l.promotedAfter),
    }).create(planner, { seed: s.seed });
    const observed: Observation[] = [];
    const policy = { name: inner.name, decide: (o: Observation) => (observed.push(o), inner.decide(o)) };
    const sim = simulate({
      cluster: planner,
      truthCluster: truth,
      streams: scenarioStreams(s, new Map()),
      initialRatePerS: initialRates(s, new Map()),
      policy,
      settings: scenarioSettings(s),
    });
    // The first epoch's observation already reports batches of resnet50, alone on its GPU, with records.
    const first = observed[1]!.lastEpoch;
    expect(first.served[1]).toBeGreaterThan(100);
    const recs = first.batches!.filter((b) => b.model === 1);
    expect(recs.length).toBeGreaterThan(0);
    expect(recs.every((b) => b.beside.length === 0 && b.pct === 100 && b.execMs > 0)).toBe(true);
    expect(promotedAt).toHaveLength(1);
    expect(promotedAt[0]).toBeGreaterThanOrEqual(100);
    expect(inner.note).toMatch(/resnet50 on rtx2060s: profiled online after/);
    const r = sim.models[1]!;
    expect(r.good / r.arrivals).toBeGreaterThan(0.9);
  });
});

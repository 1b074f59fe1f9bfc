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
import type { SimTrace } from '../../src/sim/types.js';
import type { Deployment, Observation } from '../../src/policy/types.js';

const profile = loadProfile('rtx2060s');
const profiles = new Map([[profile.id, profile]]);

function run(options: Parameters<typeof withOnlineProfiling>[1] = {}, trace?: SimTrace) {
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
  const planner = plannerCluster(s, profiles);
  const inner = withOnlineProfiling(staticEvenFactory, options).create(planner, { seed: s.seed });
  const observed: Observation[] = [];
  const decided: Deployment[] = [];
  const policy = {
    name: inner.name,
    decide: (o: Observation) => {
      observed.push(o);
      const d = inner.decide(o);
      decided.push(d);
      return d;
    },
  };
  const truth = scenarioCluster(s, profiles);
  const sim = simulate({
    cluster: planner,
    truthCluster: truth,
    streams: scenarioStreams(s, new Map()),
    initialRatePerS: initialRates(s, new Map()),
    policy,
    settings: scenarioSettings(s),
    ...(trace ? { trace } : {}),
  });
  return { s, planner, truth, inner, sim, observed, decided };
}

describe('an unprofiled model in the simulator', () => {
  it("pads every other batch to AIMD's size on a GPU of its own: its fit sees batches the load does not fill", () => {
    const padded = run();
    const plain = run({ padAlone: false });
    // Before its promotion (static-even then places it on GPU 0), its placement is GPU 1 alone, padded.
    const mine = (d: Deployment) => d.placements.find((p) => p.model === 1)!;
    expect(mine(padded.decided[0]!)).toMatchObject({ gpu: 1, pct: 100, padBatch: true });
    expect(mine(plain.decided[0]!).padBatch).toBeUndefined();
    const sizes = (r: ReturnType<typeof run>, epochs: number) =>
      r.observed
        .slice(1, 1 + epochs)
        .flatMap((o) => o.lastEpoch.batches!.filter((b) => b.model === 1).map((b) => b.batch));
    // In the first epochs at least every other batch runs at the batch in force (padded where the load leaves it
    // short), the others at what the load fills.
    for (let e = 1; e <= 3; e++) {
      const inForce = mine(padded.decided[e - 1]!).batch;
      const got = sizes({ ...padded, observed: padded.observed.slice(e - 1) }, 1);
      expect(got.filter((b) => b === inForce).length).toBeGreaterThanOrEqual(got.length / 2 - 1);
    }
    expect(new Set(sizes(padded, 3)).size).toBeGreaterThan(2);
    expect(Math.max(...sizes(padded, 3))).toBeGreaterThan(Math.max(...sizes(plain, 3)));
    // Padding costs its tasks no more than AIMD's target allows: they are served as well as without it.
    const ok = (r: ReturnType<typeof run>) => r.sim.models[1]!.good / r.sim.models[1]!.arrivals;
    expect(ok(padded)).toBeGreaterThan(0.9);
    expect(padded.sim.models[1]!.arrivals).toBe(plain.sim.models[1]!.arrivals);
  });

  it('is served from the first epoch and promoted once its fit passes the held-out test', () => {
    const promotedAt: number[] = [];
    const { s, planner, truth, inner, sim, observed } = run({ onPromote: (l) => promotedAt.push(l.promotedAfter) });
    expect(unprofiledModels(s)).toEqual(['resnet50']);
    expect(planner.gpus.map((g) => g.profileIndex[1])).toEqual([-1, -1]);
    expect(truth.gpus.every((g) => g.profileIndex[1]! >= 0)).toBe(true);
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

  it('is predicted by the dispatch rule with its fitted profile from the deployment that carries it on', () => {
    const starts: { tMs: number; size: number; predictedMs: number }[] = [];
    const trace: SimTrace = {
      batchStart: (tMs, model, _gpu, size, _d, predictedMs) => {
        if (model === 1) starts.push({ tMs, size, predictedMs });
      },
    };
    const { decided, observed } = run({}, trace);
    const k = decided.findIndex((d) => d.learned !== undefined);
    expect(k).toBeGreaterThan(0);
    // The fitted profile travels with every deployment from its promotion on, the same object until it changes.
    const learned = decided[k]!.learned!;
    expect(Object.keys(learned)).toEqual(['rtx2060s']);
    expect(learned.rtx2060s!.resnet50!.notes[0]).toMatch(/fitted online/);
    expect(decided[k + 1]!.learned).toBe(learned);
    expect(decided.slice(0, k).every((d) => d.learned === undefined)).toBe(true);
    // Before it the dispatch rule had no prediction for the model (0); after it, the fitted profile's.
    const at = observed[k]!.nowMs;
    const before = starts.filter((b) => b.tMs < at);
    const after = starts.filter((b) => b.tMs > at + 1000);
    expect(before.length).toBeGreaterThan(0);
    expect(before.every((b) => b.predictedMs === 0)).toBe(true);
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((b) => b.predictedMs > 0)).toBe(true);
  });
});

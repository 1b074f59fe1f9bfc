// SLO tiers of one network sharing workers (src/serving/tiers.ts, src/policy/tiers.ts): the grouping, the lane's
// rate, the deployment's check, the scenario key, and the simulator serving a shared lane earliest deadline first
// with every task counted under its own name.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inssFactory } from '../../rl/inss.js';
import { buildCluster } from '../../src/policy/cluster.js';
import { clusterTiers } from '../../src/policy/tiers.js';
import type { Deployment } from '../../src/policy/types.js';
import { deploymentProblem } from '../../src/policy/util.js';
import { scenarioCluster } from '../../src/scenario/build.js';
import { ScenarioSchema } from '../../src/scenario/schema.js';
import { parseProfile } from '../../src/profile/schema.js';
import { laneRatePerS, sharedByProblem, tierGroups, tierStampMs } from '../../src/serving/tiers.js';
import { DEFAULT_SIM_SETTINGS, simulate } from '../../src/sim/simulator.js';
import type { ArrivalStream } from '../../src/workload/arrivals.js';
import { loadProfileFile } from '../support/clusters.js';
import { REPO_ROOT } from '../support/paths.js';

const rtx = loadProfileFile('rtx2060s');
const TIERS = [
  { name: 'mobilenet-fast', profileModel: 'mobilenet', sloMs: 40 },
  { name: 'resnet50', sloMs: 100 },
  { name: 'mobilenet-bulk', profileModel: 'mobilenet', sloMs: 300 },
];

class Every implements ArrivalStream {
  private t: number;
  constructor(
    first: number,
    private readonly gapMs: number,
  ) {
    this.t = first - gapMs;
  }
  next(): number {
    this.t += this.gapMs;
    return this.t;
  }
}

describe('SLO tiers that share workers', () => {
  it('group names by network under the tightest tier; a lane runs at its names summed rate', () => {
    const sharedBy = tierGroups(TIERS);
    expect(sharedBy).toEqual([0, 1, 0]);
    expect(tierGroups(TIERS, new Set([2]))).toEqual([0, 1, 2]);
    expect(tierGroups([...TIERS].reverse())).toEqual([2, 1, 2]);
    expect(laneRatePerS(sharedBy, 0, [10, 20, 30])).toBe(40);
    expect(laneRatePerS(undefined, 0, [10, 20, 30])).toBe(10);
    // A bulk task's stamp in the fast lane: the lane's budget after it is its own deadline.
    expect(tierStampMs(1000, 300, 40) + 40).toBe(1300);
  });

  it('check a deployment that shares: every name in one lane that serves itself, workers only for lanes', () => {
    expect(sharedByProblem([0, 1, 0], 3)).toBeNull();
    expect(sharedByProblem([0, 1], 3)).toMatch(/2 entries for 3/);
    expect(sharedByProblem([2, 1, 0], 3)).toMatch(/sharedBy\[0\]: lane 2 is itself served by 0/);
    const c = buildCluster([rtx], TIERS);
    const d = (model: number): Deployment => ({
      placements: [{ model, gpu: 0, pct: 50, batch: 4 }],
      sharedBy: [0, 1, 0],
    });
    expect(deploymentProblem(c, d(0))).toBeNull();
    expect(deploymentProblem(c, d(2))).toMatch(/placements\[0\]\.model: model 2 is served by its lane's workers/);
  });

  it('shareTiers is a scenario key, validated, that the planner reads; the planner groups only with it', () => {
    const file = join(REPO_ROOT, 'benchmarks/scenarios/tiers-4x2-shared.json');
    const base = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    expect(ScenarioSchema.safeParse({ ...base, shareTiers: 'yes' }).error?.issues[0]?.path).toEqual(['shareTiers']);
    const profiles = new Map(
      ['rtx2060s', 'rtx2060'].map((id) => [
        id,
        parseProfile(JSON.parse(readFileSync(join(REPO_ROOT, 'profiles', `${id}.json`), 'utf8')) as unknown, id),
      ]),
    );
    const shared = scenarioCluster(ScenarioSchema.parse(base), profiles);
    expect(clusterTiers(shared)).toEqual([0, 0, 2, 2, 4, 4, 6, 6]);
    const { shareTiers: _, ...apart } = base;
    expect(clusterTiers(scenarioCluster(ScenarioSchema.parse(apart), profiles))).toBeNull();
    // inss places workers for the fast tiers only, and says which lane serves each name.
    const p = inssFactory.create(shared, {});
    const rates = [60, 120, 25, 50, 75, 150, 75, 150];
    const obs = {
      nowMs: 0,
      ratePerS: rates,
      queued: rates.map(() => 0),
      lastEpoch: { served: [], violated: [], dropped: [], meanExecMs: [], meanLatencyMs: [] },
      current: { placements: [] },
    };
    const dep = p.decide(obs);
    expect(dep.sharedBy).toEqual([0, 0, 2, 2, 4, 4, 6, 6]);
    expect(new Set(dep.placements.map((x) => x.model))).toEqual(new Set([0, 2, 4, 6]));
    expect(deploymentProblem(shared, dep)).toBeNull();
  });

  it('the simulator serves a shared lane earliest deadline first and counts each task under its own name', () => {
    const cluster = buildCluster([rtx], TIERS);
    const shared: Deployment = {
      placements: [
        { model: 0, gpu: 0, pct: 50, batch: 8 },
        { model: 1, gpu: 0, pct: 50, batch: 4 },
      ],
      sharedBy: [0, 1, 0],
    };
    const r = simulate({
      cluster,
      // The bulk tier at twice the fast tier's rate, in the same lane.
      streams: [new Every(1.3, 10), new Every(2.1, 20), new Every(0.7, 5)],
      initialRatePerS: [100, 50, 200],
      policy: { name: 'fixed', decide: () => shared },
      settings: {
        ...DEFAULT_SIM_SETTINGS,
        durationMs: 3000,
        groundTruth: { seed: 1, systematicErrorPct: 3, noisePct: 2, dramAlpha: 0.08 },
      },
    });
    const [fast, resnet, bulk] = r.models;
    expect(fast!.arrivals).toBe(300);
    expect(bulk!.arrivals).toBe(600);
    for (const m of [fast!, resnet!, bulk!]) {
      expect(m.arrivals).toBe(m.served + m.dropped + m.unfinished);
      expect(m.late + m.dropped).toBe(0);
    }
    // The lane's batches are counted under its own name (the fast tier), holding both names' tasks.
    expect(bulk!.meanBatch).toBeNaN();
    // Earliest deadline first: the fast tier's tasks wait less than the bulk tier's.
    expect(fast!.queueMs.p99).toBeLessThan(40);
    expect(bulk!.queueMs.p50).toBeGreaterThan(fast!.queueMs.p50);
  });
});

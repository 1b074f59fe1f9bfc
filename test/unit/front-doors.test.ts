import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCluster } from '../../src/policy/cluster.js';
import type { ClusterInfo, Deployment } from '../../src/policy/types.js';
import { ProfileSchema } from '../../src/profile/schema.js';
import { scenarioSettings } from '../../src/scenario/build.js';
import { ScenarioSchema } from '../../src/scenario/schema.js';
import { assignDoors, DoorRouter, leastWaiting, pickDoor } from '../../src/serving/frontDoors.js';
import { simulate, type SimSettings } from '../../src/sim/simulator.js';
import { DOOR_PROTOCOL_VERSION, ToDoorSchema } from '../../src/protocol/door.js';
import { FixedPolicy, ScriptedPolicy } from '../support/fakes.js';
import { loadProfileFile } from '../support/clusters.js';
import { controlHarness, simGpus } from '../support/control.js';
import { makeProfile } from '../support/builders.js';
import { REPO_ROOT } from '../support/paths.js';
import { constantPoisson as poisson, simSettings } from '../support/simInput.js';

describe('the front-door rules', () => {
  it('places a GPU on the door with the fewest workers of its models, then the fewest workers', () => {
    // GPUs of A, A, B, B, A+B: each door gets one A and one B, then the pair goes to the lowest index.
    const gpus = [[0], [0], [1], [1], [0, 1]].map((models) => ({ models, door: -1 }));
    expect(assignDoors(gpus, 2)).toEqual([0, 1, 0, 1, 0]);
    // Three doors: a GPU of a model no door holds goes where the fewest workers are, then to the lowest index.
    expect(
      assignDoors(
        [[0], [0], [1], [2]].map((models) => ({ models, door: -1 })),
        3,
      ),
    ).toEqual([0, 1, 2, 0]);
    const counts = [0, 3];
    expect(
      pickDoor(
        2,
        [5],
        () => 0,
        (d) => counts[d]!,
      ),
    ).toBe(0);
  });

  it('keeps the GPUs of live doors where they are and places those of a dead door on the others', () => {
    const gpus = [
      { models: [0], door: 0 },
      { models: [0], door: 1 },
      { models: [1], door: 1 },
      { models: [0], door: 2 },
      { models: [], door: -1 },
    ];
    // Door 1 died: its GPUs of model 0 and 1 go to the live door with the fewest of those models.
    expect(assignDoors(gpus, 3, [true, false, true])).toEqual([0, 0, 2, 2, -1]);
    expect(() => assignDoors(gpus, 2, [false, false])).toThrow(/no front door is alive/);
  });

  it("routes a model's tasks in proportion to the doors' workers, never to a door without one", () => {
    const r = new DoorRouter(3, 2);
    // Model 0: two workers at door 0, one at door 2; model 1: none yet.
    const workers = [
      { door: 0, model: 0 },
      { door: 0, model: 0 },
      { door: 2, model: 0 },
    ];
    r.setWorkers(
      workers.length,
      (i) => workers[i]!.door,
      (i) => workers[i]!.model,
    );
    const seen = [0, 0, 0];
    for (let i = 1; i <= 300; i++) {
      seen[r.next(0)]! += 1;
      // Never more than one task off the exact shares.
      expect(Math.abs(seen[0]! - (2 * i) / 3)).toBeLessThanOrEqual(1);
    }
    expect(seen).toEqual([200, 0, 100]);
    expect([r.share(0, 0), r.share(1, 0), r.holds(1, 0)]).toEqual([2 / 3, 0, false]);
    // A model with no worker: an even share at every door.
    const even = [0, 0, 0];
    for (let i = 0; i < 30; i++) even[r.next(1)]! += 1;
    expect(even).toEqual([10, 10, 10]);
  });

  it('sends a task to the door with the fewest waiting per share of the workers, never to one without', () => {
    // Door 0 holds two thirds of the workers, door 1 none, door 2 a third.
    const share = (d: number) => [2 / 3, 0, 1 / 3][d]!;
    expect(leastWaiting(3, share, () => 0)).toBe(0);
    // 3 waiting at door 0 (4 / (2/3) = 6) against 1 at door 2 (2 / (1/3) = 6): a tie goes to the lowest index.
    expect(leastWaiting(3, share, (d) => [3, 0, 1][d]!)).toBe(0);
    expect(leastWaiting(3, share, (d) => [4, 0, 1][d]!)).toBe(2);
    expect(
      leastWaiting(
        3,
        () => 0,
        () => 0,
      ),
    ).toBe(-1);
  });
});

// 'fast': 2 ms a batch of one, 'slow' 6 ms; shares do not change the times (pctExp 0).
const flat = { batchExp: 0.5, pctExp: 0, schedPerKernelMs: 0, alphaCache: 0, alphaU: 0, betaU: 0 };
const profile = ProfileSchema.parse(
  makeProfile()
    .model('fast', { ...flat, runAtB1Full: 2 })
    .model('slow', { ...flat, runAtB1Full: 6 })
    .model('step', { ...flat, runAtB1Full: 1 })
    .model('tail', { ...flat, runAtB1Full: 3 })
    .schedInterference(0, 0)
    .build(),
);

/** 'fast' on GPUs 0-2, 'slow' on GPU 3 alone, and a pipeline step -> tail on GPUs 4 and 5. */
function cluster(): ClusterInfo {
  const slos: [string, number][] = [
    ['fast', 40],
    ['slow', 60],
    ['step', 1],
    ['tail', 1],
  ];
  const c = buildCluster(
    slos.map(() => profile).concat(profile, profile),
    slos.map(([name, sloMs]) => ({ name, sloMs })),
  );
  const steps = ['step', 'tail'].map((model) => ({ model, inputMap: {}, outputMap: {} }));
  return { ...c, pipelines: [{ name: 'p', sloMs: 120, steps, stepModels: [2, 3] }] };
}
const deployment: Deployment = {
  placements: [
    { model: 0, gpu: 0, pct: 100, batch: 8 },
    { model: 0, gpu: 1, pct: 100, batch: 8 },
    { model: 0, gpu: 2, pct: 100, batch: 8 },
    { model: 1, gpu: 3, pct: 100, batch: 8 },
    { model: 2, gpu: 4, pct: 100, batch: 8 },
    { model: 3, gpu: 5, pct: 100, batch: 8 },
  ],
};

function run(over: Partial<SimSettings>, fastPerS = 900) {
  return simulate({
    cluster: cluster(),
    streams: [poisson(fastPerS, 1), poisson(120, 2), poisson(0, 3), poisson(0, 4)],
    pipelineStreams: [poisson(100, 5)],
    initialRatePerS: [fastPerS, 120, 100, 100],
    policy: new FixedPolicy(deployment),
    settings: simSettings(30_000, 2, over),
  });
}

describe('front doors in the simulator', () => {
  it('runs one door as the simulator without doors', () => {
    expect(run({ frontDoors: 1 })).toEqual(run({}));
  });

  it("answers every task at two and three doors: each model's tasks go where its workers are", () => {
    const one = run({});
    for (const frontDoors of [2, 3]) {
      const r = run({ frontDoors });
      expect(r.arrivals).toBe(one.arrivals);
      for (const m of r.models) {
        expect(m.served + m.dropped + m.unfinished).toBe(m.arrivals);
        // 'slow' has one GPU, at one door: the other doors' share of its tasks is forwarded there, none stranded;
        // a pipeline's tail task goes on from the door of its step to the door of the tail's GPU.
        // At the end: at most a batch running and one sent ahead per worker, and a batch waiting per door.
        expect(m.unfinished).toBeLessThanOrEqual(2 * 8 * 3 + 8 * frontDoors);
        expect(m.good).toBeGreaterThan(0.99 * m.served);
      }
      // The pipeline's requests are counted once end to end, its steps' tasks following them across doors.
      const p = r.pipelines![0]!;
      expect(p.served + p.dropped + p.unfinished).toBe(p.arrivals);
      expect(p.served).toBeGreaterThan(0.99 * p.arrivals);
      expect(r.sloViolationPct).toBeLessThan(one.sloViolationPct + 1);
    }
  });

  it('refuses a number of doors that is not a whole number of at least one', () => {
    expect(() => run({ frontDoors: 0 })).toThrow(/frontDoors: must be an integer >= 1, got 0/);
    expect(() => run({ frontDoors: 1.5 })).toThrow(/frontDoors/);
  });

  it("takes a scenario's frontDoors into the simulator's settings and refuses one out of 1 to 64 by field", () => {
    const base = JSON.parse(readFileSync(join(REPO_ROOT, 'scenarios', 'v100-4.json'), 'utf8')) as object;
    expect(scenarioSettings(ScenarioSchema.parse({ ...base, frontDoors: 3 })).frontDoors).toBe(3);
    expect(scenarioSettings(ScenarioSchema.parse(base)).frontDoors).toBeUndefined();
    for (const bad of [0, 65, 1.5]) {
      const r = ScenarioSchema.safeParse({ ...base, frontDoors: bad });
      expect(r.success).toBe(false);
      expect(r.error!.issues[0]!.path).toEqual(['frontDoors']);
    }
  });
});

describe("a front door following the scheduler's table", () => {
  it('gets the padded placements and the profiles learned online, and its dispatch rule predicts with them', () => {
    // mobilenet has no profile where both start; the scheduler's deployment pads it and carries its fitted profile.
    const rtx = loadProfileFile('rtx2060s');
    const { mobilenet, ...others } = rtx.models;
    const profiles = new Map([[rtx.id, { ...rtx, models: others }]]);
    const models = [
      { name: 'resnet50', sloMs: 100 },
      { name: 'mobilenet', sloMs: 40 },
    ];
    const learned = { [rtx.id]: { mobilenet: mobilenet! } };
    const d: Deployment = {
      placements: [
        { model: 0, gpu: 0, pct: 50, batch: 4 },
        { model: 1, gpu: 0, pct: 50, batch: 8, padBatch: true },
      ],
      learned,
    };
    const memory = (seen: number[]) => ({ gpuPredicted: (g: number, _s: number, mb: number) => (seen[g] = mb) });
    const atScheduler: number[] = [];
    const atDoor: number[] = [];
    const scheduler = controlHarness({
      models,
      profiles,
      policy: () => new ScriptedPolicy([d]),
      gpus: simGpus('rtx2060s', 1),
      observers: [memory(atScheduler)],
    });
    const door = controlHarness({
      models,
      profiles,
      policy: () => new ScriptedPolicy([{ placements: [] }]),
      gpus: simGpus('rtx2060s', 1),
      observers: [memory(atDoor)],
    });
    try {
      const doors = [{ index: 0, id: 'scheduler', url: 'http://127.0.0.1:1' }];
      const table = { v: DOOR_PROTOCOL_VERSION, type: 'table', door: 1, doors, ...scheduler.control.doorRows(() => 1) };
      // Over the link as JSON, validated by the door's schema.
      const got = ToDoorSchema.parse(JSON.parse(JSON.stringify(table)));
      if (got.type !== 'table') throw new Error('not a table');
      expect(got.learned).toEqual(learned);
      expect(got.workers.map((w) => [w.model, w.padBatch === true])).toEqual([
        ['resnet50', false],
        ['mobilenet', true],
      ]);
      door.control.follow(got);
      // The door counts mobilenet's memory on the GPU as the scheduler does: it has its profile now.
      const resnetOnly = rtx.models.resnet50!.memory.baseMb + 4 * rtx.models.resnet50!.memory.perBatchMb;
      expect(atScheduler[0]).toBeGreaterThan(resnetOnly + mobilenet!.memory.baseMb - 1);
      expect(atDoor[0]).toBeCloseTo(atScheduler[0]!, 6);
      expect(door.control.workerViews().map((w) => [w.model, w.batch])).toEqual([
        ['resnet50', 4],
        ['mobilenet', 8],
      ]);
    } finally {
      scheduler.control.stop();
      door.control.stop();
    }
  });
});

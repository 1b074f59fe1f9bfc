// Over 400 lines because every case runs one shared scripted trace through both sides with one pair of
// fixtures (the simulator run and the hand-driven control plane); split, each file would repeat them.
// Conformance: one scripted trace (arrivals, a burst, two deployments with shadow swaps, batch
// completions, readies, a worker that dies with a batch in flight and is restarted) through the
// simulator and through the scheduler's control plane (manual clock, the test as the agent), and the
// same batch starts, drops and activations come out of both: the running system applies the
// simulator's rules (src/serving/, the dispatch rule in src/serving/dispatch.ts), not a copy of them.
// The control plane's batches complete after the time the simulator's ground truth gave the same
// batch, so any difference is a difference of rules. A failure plays as the agent plays it: the
// batch in flight is answered `worker-failed`, then the worker is reported failed, then ready again.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PooledGpuMode } from '../../src/model/pooledGpu.js';
import { LatencyModel } from '../../src/model/predictor.js';
import { buildCluster } from '../../src/policy/cluster.js';
import type { Deployment } from '../../src/policy/types.js';
import { workerKey, type WorkerIdentity } from '../../src/protocol/agent.js';
import type { TaskAnswer } from '../../scheduler/control.js';
import { type QueuePolicyConfig, resolveQueuePolicy } from '../../src/serving/queuePolicy.js';
import { DEFAULT_SERVING_SETTINGS } from '../../src/serving/settings.js';
import { GroundTruth, gpuTypeIndex, profileModelIndex } from '../../src/sim/groundTruth.js';
import { simulate, type WorkerFailure } from '../../src/sim/simulator.js';
import { AGENT_PROTOCOL_VERSION } from '../../src/protocol/agent.js';
import type { ArrivalStream } from '../../src/workload/arrivals.js';
import { loadProfileFile } from '../support/clusters.js';
import { controlHarness, type Harness, simGpus } from '../support/control.js';
import { ScriptedPolicy } from '../support/fakes.js';

const rtx = loadProfileFile('rtx2060s');
interface TraceModel {
  readonly name: string;
  readonly sloMs: number;
  readonly profileModel?: string;
}
const PAIR: readonly TraceModel[] = [
  { name: 'resnet50', sloMs: 100 },
  { name: 'mobilenet', sloMs: 40 },
];
/** Two SLO tiers of one network (src/serving/tiers.ts): the tight one named as the network, as `inss up` serves it. */
const TIERS: readonly TraceModel[] = [
  { name: 'mobilenet', sloMs: 40 },
  { name: 'mobilenet-bulk', sloMs: 200, profileModel: 'mobilenet' },
];
/** The served models both sides run (a case may serve TIERS). */
let MODELS = PAIR;
/** Queue policies (src/serving/queuePolicy.ts) as a scenario gives them, the same for both models. */
const REJECT: QueuePolicyConfig = { timeoutAction: 'reject' };
const DELAY: QueuePolicyConfig = { timeoutAction: 'delay' };
const SWAP_MS = 1000;
const END_MS = 5000;
// Two deployments: the shares change at the decision of t = 2 s (shadow swaps, ready at 3 s).
const D1: Deployment = {
  placements: [
    { model: 0, gpu: 0, pct: 50, batch: 1 },
    { model: 1, gpu: 0, pct: 50, batch: 1 },
  ],
};
const D2: Deployment = {
  placements: [
    { model: 0, gpu: 0, pct: 70, batch: 1 },
    { model: 1, gpu: 0, pct: 30, batch: 1 },
  ],
};
const SCRIPT = [D1, D1, D2];
// A pooled (time-shared) GPU: when serial, one batch at a time, and when it frees up the model with the
// oldest waiting task goes next; when overlapping, each model's worker takes its batches as it frees.
const TS: Deployment = {
  placements: [
    { model: 0, gpu: 0, pct: 100, batch: 1 },
    { model: 1, gpu: 0, pct: 100, batch: 1 },
  ],
  gpuModes: ['timeshare'],
};
// Steady arrivals off the epoch grid, and a burst of mobilenet at 2.5 s that its worker cannot serve in time.
const ARRIVALS: number[][] = [
  Array.from({ length: 280 }, (_, i) => 7.31 + 17.03 * i),
  [
    ...Array.from({ length: 330 }, (_, i) => 3.17 + 14.71 * i),
    ...Array.from({ length: 40 }, (_, i) => 2500.5 + 0.013 * i),
  ].sort((a, b) => a - b),
];

class TimesStream implements ArrivalStream {
  private i = 0;
  constructor(private readonly times: readonly number[]) {}
  next(): number {
    return this.times[this.i++] ?? Infinity;
  }
}

const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

interface Trace {
  batches: [number, number, number][]; // t, model, size
  drops: [number, number][]; // t, model
  /** Control plane only: tasks answered `queue-full`. */
  queueFull?: number;
  activations: [number, number, number][]; // t, model, pct
  failures: [number, number, number][]; // t, model, tasks lost
  /** Control plane only: tasks answered `worker-failed`. */
  failedAnswers?: number;
  /** Per model, its tasks answered with a result (the simulator's `served`). */
  answered?: number[];
}

type SimRun = Trace & { durations: number[][]; ends: [number, number, number][]; delays: number; predicted: number[] };

/** What a trace varies: the arrivals, the queue policy, the rates the monitor starts from. */
interface Load {
  readonly arrivals: readonly (readonly number[])[];
  readonly queuePolicy: QueuePolicyConfig;
  readonly initialRatePerS: readonly [number, number];
}
const STEADY_REJECT: Load = { arrivals: ARRIVALS, queuePolicy: REJECT, initialRatePerS: [60, 70] };

const TRUTH = { seed: 1, systematicErrorPct: 3, noisePct: 2, dramAlpha: 0.08 };
/** The serving settings both sides run by (a case may set how a pooled batch is predicted). */
let SETTINGS = DEFAULT_SERVING_SETTINGS;
/** The profile both sides' dispatch rules start from (a case may hide a model from it); batches are timed by `rtx`. */
let PLANNED = rtx;

function runSimulator(
  script: readonly Deployment[],
  pooled: PooledGpuMode = 'overlap',
  failures: readonly WorkerFailure[] = [],
  load: Load = STEADY_REJECT,
): SimRun {
  const t: SimRun = {
    batches: [],
    drops: [],
    activations: [],
    failures: [],
    durations: [[], []],
    ends: [],
    delays: 0,
    predicted: [],
  };
  const result = simulate({
    cluster: buildCluster([PLANNED], MODELS, pooled),
    truthCluster: buildCluster([rtx], MODELS, pooled),
    streams: load.arrivals.map((a) => new TimesStream(a)),
    initialRatePerS: load.initialRatePerS,
    policy: new ScriptedPolicy(script),
    failures,
    settings: {
      ...SETTINGS,
      swapMs: SWAP_MS,
      durationMs: END_MS,
      groundTruth: TRUTH,
      queuePolicies: MODELS.map(() => resolveQueuePolicy(load.queuePolicy)),
    },
    trace: {
      batchStart: (tMs, model, _gpu, size, durationMs, predictedMs) => {
        t.batches.push([r6(tMs), model, size]);
        t.predicted.push(predictedMs);
        t.durations[model]!.push(durationMs);
        t.ends.push([tMs, model, tMs + durationMs]);
      },
      drop: (tMs, model) => t.drops.push([r6(tMs), model]),
      delay: () => t.delays++,
      activate: (tMs, model, _gpu, pct) => t.activations.push([r6(tMs), model, pct]),
      fail: (tMs, model, _gpu, lost) => t.failures.push([r6(tMs), model, lost]),
    },
  });
  t.answered = result.models.map((m) => m.served);
  return t;
}

/**
 * A failure of `model`'s worker half-way through its first batch that starts after `afterMs` (in the
 * run without failures, which is the same up to then), so a batch is lost; back `downMs` later.
 */
function failMidBatch(run: SimRun, model: number, afterMs: number, downMs: number): WorkerFailure {
  const [start, , end] = run.ends.find(([t, m]) => m === model && t > afterMs)!;
  return { tMs: r6((start + end) / 2), model, gpu: 0, downMs };
}

const harnesses: Harness[] = [];
afterEach(() => {
  for (const h of harnesses.splice(0)) h.control.stop();
});

/**
 * How the test, as the agent, times the control plane's batches: the simulator's durations in order,
 * or (`worker`) the simulated worker's own rule on the GPU's pooled mode, from the batches it sees
 * running beside each one when it arrives (GroundTruth.batchMs, as agent/simWorker.ts times them).
 */
type Timing = number[][] | 'worker';

/** The control plane through the same trace; the test is the agent (see the file header). */
function runControl(
  script: readonly Deployment[],
  timing: Timing,
  failures: readonly WorkerFailure[] = [],
  load: Load = STEADY_REJECT,
  pooled: PooledGpuMode = 'overlap',
  firesTimers = false,
): Trace & { ends: [number, number, number][]; answeredAt: [number, number][] } {
  const out: Trace & { ends: [number, number, number][]; answeredAt: [number, number][] } = {
    batches: [],
    drops: [],
    activations: [],
    failures: [],
    ends: [],
    answered: MODELS.map(() => 0),
    answeredAt: [],
  };
  const durations = timing === 'worker' ? null : timing;
  const truth = new GroundTruth(TRUTH);
  const lm = LatencyModel.compile(rtx);
  const h = controlHarness({
    models: MODELS.map((m) => ({ ...m, queuePolicy: load.queuePolicy })),
    profiles: new Map([[rtx.id, PLANNED]]),
    policy: () => new ScriptedPolicy(script),
    gpus: simGpus('rtx2060s', 1, pooled),
    settings: SETTINGS,
    initialRatePerS: Object.fromEntries(MODELS.map((m, i) => [m.name, load.initialRatePerS[i]!])),
  });
  harnesses.push(h);
  const c = h.control;
  // Events: [time, priority (the simulator's order at a tie: epoch, arrival, worker), sequence, action].
  const events: [number, number, number, () => void][] = [];
  let seq = 0;
  const at = (t: number, prio: number, f: () => void) => events.push([t, prio, seq++, f]);
  const readyAt = new Map<string, number>();
  let desired: WorkerIdentity[] = [];
  let batchesSeen = 0;
  let desiredSeen = 0;
  const answers: { m: number; box: { answer: TaskAnswer | null }; seen: boolean }[] = [];
  // Per worker id: the batch it runs (lost if it dies first). Per worker: dead until its restart.
  const inFlight = new Map<string, { batchId: string; model: number; size: number; lost: boolean }>();
  /** What the simulated worker takes for this batch beside the batches in flight (agent/simWorker.ts `batchMs`). */
  const workerMs = (m: number, size: number): number => {
    const models = [profileModelIndex(lm.modelIndex(MODELS[m]!.profileModel ?? MODELS[m]!.name))];
    const batches = [size];
    const pcts = [100];
    for (const r of inFlight.values()) {
      models.push(profileModelIndex(lm.modelIndex(MODELS[r.model]!.profileModel ?? MODELS[r.model]!.name)));
      batches.push(r.size);
      pcts.push(100);
    }
    return truth.batchMs(
      lm,
      gpuTypeIndex(rtx.id),
      models.length > 1 ? pooled : null,
      models,
      batches,
      pcts,
      models.length,
      [],
    );
  };
  const downUntil = new Map<string, number>();
  const state = (w: WorkerIdentity) =>
    (downUntil.get(workerKey(w)) ?? -1) > h.now ? 'failed' : readyAt.get(workerKey(w))! <= h.now ? 'ready' : 'starting';
  const report = () =>
    c.workersReported(
      'a1',
      desired.map((w) => ({ ...w, state: state(w), pid: 1 })),
    );
  const sync = () => {
    const ds = h.sent.flatMap((s) => (s.msg.type === 'desired' ? [s.msg.workers] : []));
    for (; desiredSeen < ds.length; desiredSeen++) {
      desired = ds[desiredSeen]!;
      for (const w of desired) {
        const k = workerKey(w);
        if (readyAt.has(k)) continue;
        // The first deployment starts warm, as the simulator's does; later workers warm up for swapMs.
        const t = h.now === 0 ? 0 : h.now + SWAP_MS;
        readyAt.set(k, t);
        if (t > 0) {
          at(t, 3, () => {
            out.activations.push([r6(h.now), MODELS.findIndex((m) => m.name === w.model), w.pct]);
            report();
          });
        }
      }
    }
    const bs = h.batches();
    for (; batchesSeen < bs.length; batchesSeen++) {
      const b = bs[batchesSeen]!;
      const m = MODELS.findIndex((x) => x.name === b.model);
      out.batches.push([r6(h.now), m, b.size]);
      const d = durations ? (durations[m]!.shift() ?? 1) : workerMs(m, b.size);
      out.ends.push([r6(h.now), m, r6(h.now + d)]);
      const run = { batchId: b.batchId, model: m, size: b.size, lost: false };
      inFlight.set(b.workerId, run);
      at(h.now + d, 3, () => {
        if (run.lost) return;
        inFlight.delete(b.workerId);
        h.result(b.batchId, d);
      });
    }
    for (const a of answers) {
      if (a.seen || a.box.answer === null) continue;
      a.seen = true;
      if (a.box.answer.ok) {
        out.answered![a.m]! += 1;
        out.answeredAt.push([h.now, a.m]);
      }
      // A task refused at a full queue is a drop in the simulator's count.
      if (!a.box.answer.ok && (a.box.answer.reason === 'slo' || a.box.answer.reason === 'queue-full'))
        out.drops.push([r6(h.now), a.m]);
      if (!a.box.answer.ok && a.box.answer.reason === 'queue-full') out.queueFull = (out.queueFull ?? 0) + 1;
      if (!a.box.answer.ok && a.box.answer.reason === 'worker-failed') out.failedAnswers = (out.failedAnswers ?? 0) + 1;
      else if (!a.box.answer.ok && a.box.answer.reason !== 'slo' && a.box.answer.reason !== 'queue-full')
        throw new Error(`task of model ${a.m} answered ${a.box.answer.reason} at ${h.now}: ${a.box.answer.error}`);
    }
  };
  sync();
  report();
  sync();
  load.arrivals.forEach((ts, m) =>
    ts.forEach((t) => at(t, 1, () => answers.push({ m, box: h.submit(m), seen: false }))),
  );
  for (let t = DEFAULT_SERVING_SETTINGS.epochMs; t <= END_MS; t += DEFAULT_SERVING_SETTINGS.epochMs)
    at(t, 0, () => c.epoch());
  for (const f of failures) {
    at(f.tMs, 4, () => {
      // The serving worker of the model on the GPU (not a shadow still warming up).
      const w = desired.find(
        (x) =>
          x.model === MODELS[f.model]!.name &&
          x.gpu === f.gpu &&
          readyAt.get(workerKey(x))! <= h.now &&
          state(x) === 'ready',
      );
      if (!w) return;
      const run = inFlight.get(w.workerId);
      out.failures.push([r6(h.now), f.model, run?.size ?? 0]);
      downUntil.set(workerKey(w), h.now + f.downMs);
      if (run) {
        run.lost = true;
        inFlight.delete(w.workerId);
        c.batchError('a1', {
          v: AGENT_PROTOCOL_VERSION,
          type: 'batchError',
          batchId: run.batchId,
          workerId: w.workerId,
          reason: 'worker-failed',
          message: 'worker exited',
        });
      }
      report();
      at(h.now + f.downMs, 3, report);
    });
  }
  // `firesTimers`: the control plane's dispatch timers fire at the instants they are armed for (fake timers, the
  // one armed timer at a time), between arrivals at a tie as the simulator's do; otherwise they never fire.
  const armed = (c as unknown as { buffer: { timerAt: number[] } }).buffer.timerAt;
  for (;;) {
    events.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
    const due = Math.min(...armed);
    const first = events[0];
    if (firesTimers && due <= END_MS && (!first || due < first[0] || (due === first[0] && first[1] > 2))) {
      h.now = due;
      vi.advanceTimersToNextTimer();
      sync();
      continue;
    }
    const e = events.shift();
    if (!e || e[0] > END_MS) break;
    h.now = e[0];
    e[3]();
    sync();
  }
  return out;
}

describe('conformance: the simulator and the control plane on one scripted trace', () => {
  it(
    'start the same batches, drop the same tasks, lose the same batches to failed workers and ' +
      'activate the same shadows at the same times',
    () => {
      // resnet50's worker dies during the first deployment; mobilenet's during the swap (it is retiring
      // then) and its burst, with tasks queued; each is back (restarted by its agent) 700 ms later.
      const plain = runSimulator(SCRIPT);
      const failures = [failMidBatch(plain, 0, 1200, 700), failMidBatch(plain, 1, 2500.5, 700)];
      const sim = runSimulator(SCRIPT, 'overlap', failures);
      // The trace exercises what it is meant to: swaps, drops, many batches, two workers dying with a batch each.
      expect(sim.activations.map(([t, m, p]) => [t, m, p])).toEqual([
        [3000, 0, 70],
        [3000, 1, 30],
      ]);
      expect(sim.drops.length).toBeGreaterThan(5);
      expect(sim.batches.length).toBeGreaterThan(400);
      expect(sim.failures).toEqual([
        [failures[0]!.tMs, 0, 1],
        [failures[1]!.tMs, 1, 1],
      ]);
      const live = runControl(
        SCRIPT,
        sim.durations.map((d) => [...d]),
        failures,
      );
      expect(live.failures).toEqual(sim.failures);
      expect(live.failedAnswers).toBe(2); // the lost tasks are answered worker-failed, and no other
      expect(live.activations).toEqual(sim.activations);
      expect(live.drops).toEqual(sim.drops);
      expect(live.batches).toEqual(sim.batches);
    },
  );

  it('pad every other batch of a padding worker to its placed batch alike on both sides, answering tasks alone', () => {
    // The online profiler's padded placements (Placement.padBatch): batch 6, one model's worker padding (the other
    // at batch 1: two models at batches over 1 on one MPS GPU do not start alike on both sides yet).
    const PAD: Deployment = {
      placements: [
        { model: 0, gpu: 0, pct: 50, batch: 6, padBatch: true },
        { model: 1, gpu: 0, pct: 50, batch: 1 },
      ],
    };
    const sim = runSimulator([PAD]);
    const padded = sim.batches.filter(([, m, size]) => m === 0 && size === 6).length;
    const resnet = sim.batches.filter(([, m]) => m === 0).length;
    // About every other batch of model 0 at 6 (the load fills fewer).
    expect(padded).toBeGreaterThan(resnet / 2 - 2);
    expect(padded).toBeLessThan(resnet);
    // Batches over 1 wait for their latest start: the control plane's dispatch timers fire on the fake clock.
    vi.useFakeTimers();
    const live = runControl(
      [PAD],
      sim.durations.map((d) => [...d]),
      [],
      STEADY_REJECT,
      'overlap',
      true,
    );
    vi.useRealTimers();
    expect(live.batches).toEqual(sim.batches);
    expect(live.drops).toEqual(sim.drops);
    // Each task is answered once: the copies that pad a batch are not.
    expect(live.answered).toEqual(sim.answered);
  });

  it('on a time-shared GPU, serve the same model next when it frees up, also when a worker dies', () => {
    const failures = [failMidBatch(runSimulator([TS], 'serial'), 0, 1500, 400)];
    const sim = runSimulator([TS], 'serial', failures);
    expect(sim.batches.length).toBeGreaterThan(300);
    expect(sim.drops.length).toBeGreaterThan(5);
    expect(sim.failures).toEqual([[failures[0]!.tMs, 0, 1]]);
    const live = runControl(
      [TS],
      sim.durations.map((d) => [...d]),
      failures,
      STEADY_REJECT,
      'serial',
    );
    expect(live.activations).toEqual([]);
    expect(live.failures).toEqual(sim.failures);
    expect(live.drops).toEqual(sim.drops);
    expect(live.batches).toEqual(sim.batches);
  });
  it(
    'under a delay policy, serve the same late batches when a worker has nothing on time, and refuse ' +
      'the same tasks at a full queue',
    () => {
      // The burst of 40 mobilenet tasks at 2.5 s cannot all make their 40 ms: under delay they are served
      // late between on-time batches; with room for 16 tasks, the burst also meets a full queue.
      for (const queuePolicy of [DELAY, { ...DELAY, maxQueueSize: 16 }]) {
        const load: Load = { ...STEADY_REJECT, queuePolicy };
        const sim = runSimulator(SCRIPT, 'overlap', [], load);
        expect(sim.delays).toBeGreaterThan(5);
        const live = runControl(
          SCRIPT,
          sim.durations.map((d) => [...d]),
          [],
          load,
        );
        expect(live.activations).toEqual(sim.activations);
        expect(live.drops).toEqual(sim.drops);
        expect(live.batches).toEqual(sim.batches);
        if (queuePolicy.maxQueueSize === undefined) expect(sim.drops).toEqual([]);
        else expect(live.queueFull).toBeGreaterThan(0);
      }
      // The same under delay on a time-shared GPU (a late batch holds the GPU only before the other model's latest
      // start).
      const ts: Load = { ...STEADY_REJECT, queuePolicy: DELAY };
      const sim = runSimulator([TS], 'serial', [], ts);
      expect(sim.delays).toBeGreaterThan(5);
      expect(
        runControl(
          [TS],
          sim.durations.map((d) => [...d]),
          [],
          ts,
          'serial',
        ).batches,
      ).toEqual(sim.batches);
    },
  );

  it(
    'on a pooled GPU, start and end the same batches under either mode, the live batches timed by ' +
      'the simulated worker from what runs beside them',
    () => {
      for (const pooled of ['overlap', 'serial'] as const) {
        const sim = runSimulator([TS], pooled);
        expect(sim.batches.length).toBeGreaterThan(300);
        const live = runControl([TS], 'worker', [], STEADY_REJECT, pooled);
        expect(live.drops).toEqual(sim.drops);
        expect(live.batches).toEqual(sim.batches);
        expect(live.ends).toEqual(sim.ends.map(([t, m, e]) => [r6(t), m, r6(e)]));
        // Overlapping, batches of the two models run at once; serial, never.
        const overlapping = sim.ends.filter(([t], i) =>
          sim.ends.some(([t2, , e2], j) => j < i && t < e2 && t2 <= t),
        ).length;
        if (pooled === 'overlap') expect(overlapping).toBeGreaterThan(20);
        else expect(overlapping).toBe(0);
      }
    },
  );

  it('on a pooled overlap GPU, predict each batch beside the batches running there alike on both sides', () => {
    const load: Load = { ...STEADY_REJECT, queuePolicy: DELAY };
    SETTINGS = { ...DEFAULT_SERVING_SETTINGS, pooledPrediction: 'solo' };
    const solo = runSimulator([TS], 'overlap', [], load);
    SETTINGS = { ...DEFAULT_SERVING_SETTINGS, pooledPrediction: 'running' };
    try {
      const sim = runSimulator([TS], 'overlap', [], load);
      // Batches that start beside another are predicted slower than alone.
      expect(sim.predicted.filter((ms, i) => ms > solo.predicted[i]! * 1.05).length).toBeGreaterThan(20);
      const live = runControl([TS], 'worker', [], load, 'overlap');
      expect(live.drops).toEqual(sim.drops);
      expect(live.batches).toEqual(sim.batches);
    } finally {
      SETTINGS = DEFAULT_SERVING_SETTINGS;
    }
  });

  it('predict a model profiled online with the profile its deployment carries, alike on both sides', () => {
    // mobilenet has no profile at first (0 predicted: no drop for it) beside resnet50 on a pooled GPU; from the
    // third decision the deployment carries its profile (Deployment.learned), as the online profiler's does.
    const { mobilenet, ...others } = rtx.models;
    const learned: Deployment = { ...TS, learned: { [rtx.id]: { mobilenet: mobilenet! } } };
    const load = STEADY_REJECT;
    PLANNED = { ...rtx, models: others };
    try {
      const sim = runSimulator([TS, TS, learned], 'overlap', [], load);
      const live = runControl([TS, TS, learned], 'worker', [], load, 'overlap');
      const mine = sim.batches.map(([t, m], i) => ({ t, m, ms: sim.predicted[i]! })).filter((b) => b.m === 1);
      expect(mine.filter((b) => b.t < 2000).every((b) => b.ms === 0)).toBe(true);
      expect(mine.filter((b) => b.t > 2000).every((b) => b.ms > 0)).toBe(true);
      expect(mine.filter((b) => b.t > 2000).length).toBeGreaterThan(10);
      expect(live.batches).toEqual(sim.batches);
      expect(live.drops).toEqual(sim.drops);
    } finally {
      PLANNED = rtx;
    }
  });

  it('at a low rate, start each lone task at once on both sides, not at its latest start', () => {
    // Batches of 4 and about 3 tasks/s per model: no batch fills, and no task waits for one.
    const sparse: Load = {
      arrivals: [
        Array.from({ length: 14 }, (_, i) => 11.3 + 347.1 * i),
        Array.from({ length: 16 }, (_, i) => 23.9 + 301.7 * i),
      ],
      queuePolicy: DELAY,
      initialRatePerS: [3, 3],
    };
    const B4: Deployment = {
      placements: [
        { model: 0, gpu: 0, pct: 50, batch: 4 },
        { model: 1, gpu: 0, pct: 50, batch: 4 },
      ],
    };
    const sim = runSimulator([B4], 'overlap', [], sparse);
    expect(sim.batches.length).toBe(30);
    sparse.arrivals.forEach((ts, m) =>
      expect(sim.batches.filter(([, bm]) => bm === m).map(([t]) => t)).toEqual(ts.map(r6)),
    );
    const live = runControl(
      [B4],
      sim.durations.map((d) => [...d]),
      [],
      sparse,
    );
    expect(live.batches).toEqual(sim.batches);
    expect(live.drops).toEqual([]);
  });

  it(
    'serve two SLO tiers of one network in one worker: the same mixed-tier batches and drops, each task ' +
      'answered under its own name',
    () => {
      // The bulk tier's burst at 2.5 s waits behind the tight tier's tasks, which are due first.
      const SHARED: Deployment = { placements: [{ model: 0, gpu: 0, pct: 100, batch: 4 }], sharedBy: [0, 0] };
      MODELS = TIERS;
      try {
        for (const queuePolicy of [REJECT, DELAY]) {
          const load: Load = { ...STEADY_REJECT, queuePolicy };
          const sim = runSimulator([SHARED], 'overlap', [], load);
          expect(sim.batches.length).toBeGreaterThan(150);
          expect(sim.batches.every(([, m]) => m === 0)).toBe(true);
          vi.useFakeTimers();
          const live = runControl(
            [SHARED],
            sim.durations.map((d) => [...d]),
            [],
            load,
            'overlap',
            true,
          );
          vi.useRealTimers();
          expect(live.drops).toEqual(sim.drops);
          expect(live.batches).toEqual(sim.batches);
          expect(live.answered).toEqual(sim.answered);
          expect(sim.answered![1]).toBeGreaterThan(300);
          // One batch ends at a time: answers at one instant are one batch's, and many hold both names.
          const at = new Map<number, Set<number>>();
          for (const [t, m] of live.answeredAt) at.set(t, (at.get(t) ?? new Set()).add(m));
          expect([...at.values()].filter((names) => names.size === 2).length).toBeGreaterThan(20);
        }
      } finally {
        vi.useRealTimers();
        MODELS = PAIR;
      }
    },
  );
});

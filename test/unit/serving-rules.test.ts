// The serving rules the simulator and the scheduler's control plane share (src/serving/). Each rule has
// a test that fails if the two sides follow it differently: the control plane driven by hand
// (test/support/control.ts) and the simulator on small clusters.
import { afterEach, describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import type { Deployment, Observation, Policy } from '../../src/policy/types.js';
import { LatencyModel } from '../../src/model/predictor.js';
import { RateMonitor, windowEpochs } from '../../src/serving/monitor.js';
import { nextModelsOnFreedGpu, pastDeadline } from '../../src/serving/rules.js';
import { DEFAULT_SERVING_SETTINGS, servingSettings, withOverrides } from '../../src/serving/settings.js';
import { GroundTruth, gpuTypeIndex, profileModelIndex } from '../../src/sim/groundTruth.js';
import { simulate } from '../../src/sim/simulator.js';
import type { ArrivalStream } from '../../src/workload/arrivals.js';
import { Rng } from '../../src/workload/random.js';
import { scenarioSettings } from '../../src/scenario/build.js';
import { ScenarioSchema } from '../../src/scenario/schema.js';
import { loadProfileFile } from '../support/clusters.js';
import { controlHarness, type Harness, simGpus } from '../support/control.js';
import { FixedPolicy } from '../support/fakes.js';

const rtx = loadProfileFile('rtx2060s');
const profiles = new Map([[rtx.id, rtx]]);
const harnesses: Harness[] = [];
afterEach(() => {
  for (const h of harnesses.splice(0)) h.control.stop();
});

function harness(
  models: Parameters<typeof controlHarness>[0]['models'],
  d: Deployment,
  extra: Partial<Parameters<typeof controlHarness>[0]> = {},
): Harness {
  const h = controlHarness({
    models,
    profiles,
    policy: () => new FixedPolicy(d),
    gpus: simGpus('rtx2060s', 1),
    ...extra,
  });
  harnesses.push(h);
  return h;
}

/** Arrivals at fixed times (ms), then none. */
class TimesStream implements ArrivalStream {
  private i = 0;
  constructor(private readonly times: readonly number[]) {}
  next(): number {
    return this.times[this.i++] ?? Infinity;
  }
}

/** Records every observation and deploys `d`. */
class Recorder implements Policy {
  readonly name = 'recorder';
  readonly rates: number[][] = [];
  constructor(private readonly d: Deployment) {}
  decide(obs: Observation): Deployment {
    this.rates.push([...obs.ratePerS]);
    return this.d;
  }
}

describe('drop strictly past the deadline (src/serving/rules.ts pastDeadline)', () => {
  it('the rule', () => {
    expect(pastDeadline(0, 100, 100)).toBe(false);
    expect(pastDeadline(0, 100, 100.001)).toBe(true);
  });

  it(
    'the control plane keeps a task exactly at its deadline and, once past, drops it (reject) or ' +
      'keeps it to serve late (delay)',
    () => {
      for (const timeoutAction of ['reject', 'delay'] as const) {
        const h = harness([{ name: 'resnet50', sloMs: 100, queuePolicy: { timeoutAction } }], {
          placements: [{ model: 0, gpu: 0, pct: 50, batch: 4 }],
        });
        // The worker is starting: the task waits.
        const t = h.submit(0);
        h.now = 100;
        h.control.epoch();
        expect(t.answer).toBeNull();
        h.now = 100.5;
        h.control.epoch();
        if (timeoutAction === 'reject') {
          expect(t.answer).toMatchObject({ ok: false, reason: 'slo' });
          continue;
        }
        expect(t.answer).toBeNull();
        h.report('ready'); // the worker is ready: nothing on time to start, so the late task goes
        expect(h.batches().map((b) => b.size)).toEqual([1]);
        h.now = 130;
        h.result(h.batches()[0]!.batchId);
        expect(t.answer).toMatchObject({ ok: true, latencyMs: 130 });
      }
    },
  );
});

describe('a serial pooled GPU that frees up serves the model whose waiting task is due first', () => {
  it('the rule', () => {
    const head = new Map([
      [0, 30],
      [1, 10],
      [2, Infinity],
    ]);
    expect(nextModelsOnFreedGpu([0, 2, 1, 0], (m) => head.get(m)!)).toEqual([1, 0, 2]);
  });

  /** A control plane with every model's worker on one pooled GPU in `mode`, ready. */
  function pooledGpu(models: { name: string; sloMs: number }[], mode: 'serial' | 'overlap') {
    const h = harness(
      models,
      {
        placements: models.map((_, m) => ({ model: m, gpu: 0, pct: 100, batch: 1 })),
        gpuModes: ['timeshare'],
      },
      { gpus: simGpus('rtx2060s', 1, mode) },
    );
    h.report('ready');
    return h;
  }

  it('the control plane: a tight SLO goes before an older task of a lax model', () => {
    const h = pooledGpu(
      [
        { name: 'vgg16', sloMs: 400 },
        { name: 'alexnet', sloMs: 25 },
        { name: 'resnet50', sloMs: 400 },
      ],
      'serial',
    );
    h.submit(0); // takes the GPU
    h.now = 2;
    h.submit(2); // waits, due at 402
    h.now = 6;
    h.submit(1); // waits, younger but due at 31
    h.now = 8;
    h.result(h.batches()[0]!.batchId);
    expect(h.batches().map((b) => b.model)).toEqual(['vgg16', 'alexnet']);
  });

  const twoLax = [
    { name: 'resnet50', sloMs: 5000 },
    { name: 'mobilenet', sloMs: 5000 },
  ];

  it('the control plane', () => {
    const h = pooledGpu(twoLax, 'serial');
    h.submit(0); // takes the GPU
    expect(h.batches().map((b) => b.model)).toEqual(['resnet50']);
    h.now = 5;
    h.submit(1); // waits: the GPU is busy; the oldest waiting task
    h.now = 10;
    h.submit(0);
    h.now = 20;
    h.result(h.batches()[0]!.batchId);
    expect(h.batches().map((b) => b.model)).toEqual(['resnet50', 'mobilenet']);
  });

  it('an overlapping one starts the other model at once', () => {
    const h = pooledGpu(twoLax, 'overlap');
    h.submit(0);
    h.now = 5;
    h.submit(1); // beside resnet50's batch
    expect(h.batches().map((b) => b.model)).toEqual(['resnet50', 'mobilenet']);
    h.now = 10;
    h.submit(0); // resnet50's worker is busy: it waits for it, not for the GPU
    expect(h.batches()).toHaveLength(2);
  });
});

describe('the monitor measures how bursty arrivals are (src/serving/monitor.ts)', () => {
  it(
    'squared CV of the gaps over the window: 0 evenly spaced, about 1 Poisson, more in bursts, 1 ' +
      'until enough are seen',
    () => {
      const mon = new RateMonitor(3, 1000, 3000);
      const rng = new Rng(3);
      let poisson = 0;
      for (let i = 0; i < 2000; i++) {
        mon.arrival(0, i * 1.5); // evenly spaced
        poisson += -Math.log(1 - rng.next()) * 1.5;
        mon.arrival(1, poisson);
      }
      // Model 2: bursts of 10 at once, 15 ms apart.
      for (let i = 0; i < 200; i++) for (let k = 0; k < 10; k++) mon.arrival(2, i * 15);
      expect(mon.arrivalCv2()).toEqual([1, 1, 1]); // nothing closed yet
      mon.endEpoch();
      const [even, exp, bursts] = mon.arrivalCv2();
      expect(even).toBeCloseTo(0, 9);
      expect(exp).toBeGreaterThan(0.85);
      expect(exp).toBeLessThan(1.15);
      expect(bursts).toBeGreaterThan(8); // nine gaps of 0 and one of 15 ms: CV^2 = 9
      const few = new RateMonitor(1, 1000, 3000);
      for (let i = 0; i < 10; i++) few.arrival(0, i * i);
      few.endEpoch();
      expect(few.arrivalCv2()).toEqual([1]);
    },
  );
});

describe('one warm-up rate rule (src/serving/monitor.ts)', () => {
  it('the scenario rate until a full window is seen, then the measured one', () => {
    expect(windowEpochs(3000, 1000)).toBe(3);
    const mon = new RateMonitor(1, 1000, 3000);
    expect(mon.ratesPerS([50])).toEqual([50]);
    for (let i = 0; i < 10; i++) mon.arrival(0);
    mon.endEpoch();
    expect(mon.ratesPerS([50])).toEqual([50]); // 10/s measured, below the initial 50 while warming up
    for (let i = 0; i < 100; i++) mon.arrival(0);
    mon.endEpoch();
    expect(mon.ratesPerS([50])).toEqual([55]); // (10 + 100) / 2 s
    mon.endEpoch();
    expect(mon.ratesPerS([50])[0]).toBeCloseTo(110 / 3, 9); // a full window: measured only
  });

  it('the simulator and the control plane observe the same rates with no traffic', () => {
    const d: Deployment = { placements: [{ model: 0, gpu: 0, pct: 50, batch: 4 }] };
    const cluster = buildCluster([rtx], [{ name: 'resnet50', sloMs: 100 }]);
    const simPolicy = new Recorder(d);
    simulate({
      cluster,
      streams: [new TimesStream([])],
      initialRatePerS: [40],
      policy: simPolicy,
      settings: {
        ...DEFAULT_SERVING_SETTINGS,
        swapMs: 1000,
        durationMs: 4500,
        groundTruth: { seed: 1, systematicErrorPct: 0, noisePct: 0, dramAlpha: 0 },
      },
    });
    const livePolicy = new Recorder(d);
    const h = controlHarness({
      models: [{ name: 'resnet50', sloMs: 100 }],
      profiles,
      policy: () => livePolicy,
      gpus: simGpus('rtx2060s', 1),
      initialRatePerS: { resnet50: 40 },
    });
    harnesses.push(h);
    for (let e = 1; e <= 4; e++) {
      h.now = e * 1000;
      h.control.epoch();
    }
    // Decisions at 0, 1, 2 s plan for the scenario's 40/s; from 3 s on (a full 3 s window) the measured 0.
    expect(simPolicy.rates.map((r) => r[0])).toEqual([40, 40, 40, 0, 0]);
    expect(livePolicy.rates.map((r) => r[0])).toEqual(simPolicy.rates.map((r) => r[0]));
  });
});

describe('epoch and monitor window from the scenario (src/serving/settings.ts)', () => {
  const scenario = ScenarioSchema.parse({
    name: 's',
    description: 'd',
    gpus: [{ profile: 'rtx2060s', count: 1 }],
    models: [
      { name: 'resnet50', sloMs: 80, arrival: { process: 'poisson' }, rate: { kind: 'constant', ratePerS: 10 } },
    ],
    durationS: 10,
    epochS: 0.5,
    monitorWindowS: 2,
    seed: 1,
  });

  it('the simulator and the scheduler read the same settings, which flags may override, validated', () => {
    const s = servingSettings(scenario);
    expect(s).toEqual({
      epochMs: 500,
      monitorWindowMs: 2000,
      dispatchSlack: 0.1,
      monitor: 'mean',
      pooledPrediction: 'running',
    });
    expect(servingSettings({ ...scenario, pooledPrediction: 'solo' }).pooledPrediction).toBe('solo');
    expect(scenarioSettings(scenario)).toMatchObject(s);
    expect(withOverrides(s, { epochMs: 250, monitorWindowMs: undefined })).toEqual({ ...s, epochMs: 250 });
    expect(() => withOverrides(s, { epochMs: 0 })).toThrow(/epochMs/);
    expect(() => withOverrides(s, { monitorWindowMs: 1.5 })).toThrow(/monitorWindowMs/);
  });
});

describe('the ground truth is keyed by the profile model index and a GPU type from the profile id', () => {
  it('gives a GPU type from the profile id alone', () => {
    expect(gpuTypeIndex('rtx2060s')).toBe(gpuTypeIndex('rtx2060s'));
    expect(gpuTypeIndex('rtx2060s')).not.toBe(gpuTypeIndex('v100'));
    expect(() => profileModelIndex(-1)).toThrow(RangeError);
  });

  it("the simulator times a batch with the configuration's error of the model's profile index", () => {
    // Served order (mobilenet, resnet50) differs from the profile's (resnet50 is 0, mobilenet 6).
    const models = [
      { name: 'mobilenet', sloMs: 1000 },
      { name: 'resnet50', sloMs: 1000 },
    ];
    const cluster = buildCluster([rtx, rtx], models);
    const gt = { seed: 3, systematicErrorPct: 20, noisePct: 0, dramAlpha: 0 };
    const d: Deployment = {
      placements: [
        { model: 0, gpu: 0, pct: 50, batch: 1 },
        { model: 1, gpu: 1, pct: 50, batch: 1 },
      ],
    };
    const times = Array.from({ length: 20 }, (_, i) => 100 + i * 200);
    const r = simulate({
      cluster,
      streams: [new TimesStream(times), new TimesStream(times)],
      initialRatePerS: [5, 5],
      policy: new FixedPolicy(d),
      settings: { ...DEFAULT_SERVING_SETTINGS, swapMs: 1000, durationMs: 5000, groundTruth: gt },
    });
    const latency = LatencyModel.compile(rtx);
    const truth = new GroundTruth(gt);
    for (const [m, name] of ['mobilenet', 'resnet50'].entries()) {
      const j = profileModelIndex(latency.modelIndex(name));
      const out = [0];
      latency.predictGpu([j], [1], [50], 1, out);
      // What the simulated worker computes for this configuration (agent/simWorker.ts).
      const expected = out[0]! * truth.batchFactor(gpuTypeIndex(rtx.id), [j], [1], [50]);
      expect(r.models[m]!.served).toBe(20);
      expect(r.models[m]!.execMs.mean, name).toBeCloseTo(expected, 9);
    }
  });
});

import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import { ProfileSchema } from '../../src/profile/schema.js';
import { DEFAULT_SIM_SETTINGS, simulate, type SimSettings } from '../../src/sim/simulator.js';
import { DEFAULT_MAX_QUEUE_SIZE, type QueuePolicy } from '../../src/serving/queuePolicy.js';
import { TraceStream } from '../../src/workload/arrivals.js';
import { FixedPolicy, ScriptedPolicy } from '../support/fakes.js';
import { makeProfile } from '../support/builders.js';
import { constantPoisson } from '../support/simInput.js';

// A GPU whose running time does not depend on the batch's share and grows linearly with batch:
// o_r = 2 ms * b (pctExp 0), tiny transfers; scheduling 0.
const profile = ProfileSchema.parse(
  makeProfile()
    .model('net', { runAtB1Full: 2, batchExp: 1, pctExp: 0, schedPerKernelMs: 0, alphaCache: 0, alphaU: 0, betaU: 0 })
    .model('other', { runAtB1Full: 1, batchExp: 1, pctExp: 1, schedPerKernelMs: 0, alphaCache: 0.5 })
    .schedInterference(0, 0)
    .build(),
);
const REJECT: QueuePolicy = { delay: false, timeoutMs: Number.NaN, maxQueueSize: DEFAULT_MAX_QUEUE_SIZE };
const noTruthError = { systematicErrorPct: 0, noisePct: 0, dramAlpha: 0, seed: 1 };
const settings = (over: Partial<SimSettings> = {}): SimSettings => ({
  ...DEFAULT_SIM_SETTINGS,
  durationMs: 200_000,
  groundTruth: noTruthError,
  ...over,
});

const poisson = constantPoisson;

describe('simulator against closed forms', () => {
  it('an M/D/1 queue with batch size 1 matches its mean waiting time rho*D / (2(1 - rho))', () => {
    const cluster = buildCluster([profile], [{ name: 'net', sloMs: 1e9 }]);
    const serviceMs = cluster.gpus[0]!.model.predict([{ model: 'net', batch: 1, pct: 100 }]).latencyMs[0]!;
    const ratePerS = 300;
    const rho = (ratePerS * serviceMs) / 1000;
    const r = simulate({
      cluster,
      streams: [poisson(ratePerS, 7)],
      initialRatePerS: [ratePerS],
      policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 1 }] }),
      settings: settings(),
    });
    const expectedWaitMs = (rho * serviceMs) / (2 * (1 - rho));
    expect(r.models[0]!.queueMs.mean / expectedWaitMs).toBeGreaterThan(0.95);
    expect(r.models[0]!.queueMs.mean / expectedWaitMs).toBeLessThan(1.05);
    expect(r.models[0]!.execMs.mean).toBeCloseTo(serviceMs, 6);
    expect(r.dropped).toBe(0);
    expect(r.arrivals).toBe(r.served + r.unfinished);
  });

  it('under overload an unbounded SLO queue serves at the service rate', () => {
    const cluster = buildCluster([profile], [{ name: 'net', sloMs: 1e12 }]);
    const serviceMs = cluster.gpus[0]!.model.predict([{ model: 'net', batch: 1, pct: 100 }]).latencyMs[0]!;
    const r = simulate({
      cluster,
      streams: [poisson(1000, 3)],
      initialRatePerS: [1000],
      policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 1 }] }),
      settings: settings({ durationMs: 50_000 }),
    });
    expect(r.throughputPerS / (1000 / serviceMs)).toBeCloseTo(1, 2);
  });
});

describe('transport', () => {
  it('holds each batch for the transport on top of its GPU time, and the dispatch rule starts earlier for it', () => {
    const cluster = buildCluster([profile], [{ name: 'net', sloMs: 1e9 }]);
    const run = (transportMs: number) =>
      simulate({
        cluster,
        streams: [poisson(50, 3)],
        initialRatePerS: [50],
        policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 1 }] }),
        settings: settings({ durationMs: 60_000, transportMs }),
      });
    const bare = run(0);
    const moved = run(5);
    // The same GPU time per batch; each task's latency grows by the transport and the extra queueing it causes.
    expect(moved.models[0]!.execMs.mean).toBeCloseTo(bare.models[0]!.execMs.mean, 9);
    expect(moved.latencyMs.mean - bare.latencyMs.mean).toBeGreaterThan(5);
    expect(moved.latencyMs.mean - bare.latencyMs.mean).toBeLessThan(8);
  });
});

describe('pipelining (a worker takes its next batch while one runs, where there is transport)', () => {
  const cluster = buildCluster([profile], [{ name: 'net', sloMs: 1e12 }]);
  const serviceMs = cluster.gpus[0]!.model.predict([{ model: 'net', batch: 1, pct: 100 }]).latencyMs[0]!;
  const run = (transportMs: number) => {
    const starts: { tMs: number; durationMs: number }[] = [];
    const r = simulate({
      cluster,
      streams: [poisson(1000, 3)],
      initialRatePerS: [1000],
      policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 1 }] }),
      settings: settings({ durationMs: 20_000, transportMs }),
      trace: { batchStart: (tMs, _m, _g, _size, durationMs) => starts.push({ tMs, durationMs }) },
    });
    // Batches sent while the one before was still unanswered (told in send order).
    const sorted = [...starts].sort((x, y) => x.tMs - y.tMs);
    const overlapping = sorted.filter(
      (s, i) => i > 0 && s.tMs < sorted[i - 1]!.tMs + sorted[i - 1]!.durationMs - 1e-9,
    ).length;
    return { r, overlapping, batches: starts.length };
  };

  it(
    'under overload, a transport shorter than a batch overlaps the batch running: the GPU stays ' +
      'busy, throughput is the service rate',
    () => {
      const { r, overlapping, batches } = run(serviceMs / 2);
      // Without pipelining it would be 1000 / (service + transport), two thirds of it.
      expect(r.throughputPerS / (1000 / serviceMs)).toBeGreaterThan(0.98);
      expect(overlapping / batches).toBeGreaterThan(0.95);
      expect(r.arrivals).toBe(r.served + r.dropped + r.unfinished);
    },
  );

  it(
    'a transport longer than a batch is hidden only in part: two batches in flight per round trip of ' +
      'transport + service',
    () => {
      const { r } = run(3 * serviceMs);
      // PIPELINE_DEPTH (2) batches per (transport + service): 2 / 4 of the service rate (without pipelining 1 / 4).
      expect(r.throughputPerS / (1000 / serviceMs)).toBeCloseTo(0.5, 2);
    },
  );

  it('with zero transport a worker runs one batch at a time (the results before pipelining)', () => {
    const { r, overlapping } = run(0);
    expect(overlapping).toBe(0);
    expect(r.throughputPerS / (1000 / serviceMs)).toBeCloseTo(1, 2);
  });
});

describe('task buffer', () => {
  it('drops tasks that cannot meet their SLO and counts every task exactly once', () => {
    const cluster = buildCluster([profile], [{ name: 'net', sloMs: 5 }]);
    const r = simulate({
      cluster,
      streams: [poisson(900, 11)],
      initialRatePerS: [900],
      policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 2 }] }),
      settings: settings({ durationMs: 20_000, queuePolicies: [REJECT] }),
    });
    expect(r.dropped).toBeGreaterThan(0);
    expect(r.arrivals).toBe(r.served + r.dropped + r.unfinished);
    expect(r.late).toBe(0); // with exact predictions, nothing started is late
  });

  it('under a delay policy serves late what it cannot serve in time, while the on-time tasks stay on time', () => {
    // 3x overload of a worker serving 500 tasks/s (batch 2 in 4 ms): nothing is idle, so the delayed
    // lane fills to the queue's bound and its oldest tasks make room; memory stays bounded.
    const cluster = buildCluster([profile], [{ name: 'net', sloMs: 5 }]);
    const run = (maxQueueSize: number) =>
      simulate({
        cluster,
        streams: [poisson(1500, 11)],
        initialRatePerS: [1500],
        policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 2 }] }),
        settings: settings({
          durationMs: 20_000,
          queuePolicies: [{ delay: true, timeoutMs: Number.NaN, maxQueueSize }],
        }),
      });
    for (const max of [64, DEFAULT_MAX_QUEUE_SIZE]) {
      const r = run(max);
      expect(r.arrivals).toBe(r.served + r.dropped + r.unfinished);
      expect(r.unfinished).toBeLessThanOrEqual(max + 2);
      expect(r.models[0]!.delayed).toBeGreaterThan(r.arrivals / 2);
      expect(r.good / r.arrivals).toBeGreaterThan(0.3); // the worker's capacity (a third) still goes to on-time tasks
    }
  });

  it(
    'a burst on an idle cluster is served whole under delay (late where it must be); reject drops ' +
      'what cannot make it',
    () => {
      const cluster = buildCluster([profile], [{ name: 'net', sloMs: 20 }]);
      const burst = Array.from({ length: 200 }, (_, i) => 1000 + i * 0.01);
      const run = (p: QueuePolicy | undefined) =>
        simulate({
          cluster,
          streams: [new TraceStream(burst, 1)],
          initialRatePerS: [0],
          policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 4 }] }),
          settings: settings({ durationMs: 5_000, queuePolicies: [p] }),
        });
      const delayed = run(undefined);
      expect(delayed.served).toBe(200);
      expect(delayed.dropped).toBe(0);
      expect(delayed.late).toBeGreaterThan(100);
      const rejected = run(REJECT);
      expect(rejected.dropped).toBe(delayed.late);
      expect(rejected.good).toBe(delayed.good);
    },
  );

  it(
    'at a low rate a lone task starts at once, instead of waiting most of its SLO for a batch that ' + 'will not fill',
    () => {
      const cluster = buildCluster([profile], [{ name: 'net', sloMs: 100 }]);
      const r = simulate({
        cluster,
        streams: [poisson(1, 3)],
        initialRatePerS: [1],
        policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 8 }] }),
        settings: settings({ durationMs: 60_000 }),
      });
      // A batch of one takes 2 ms; waiting for a fuller one would have started it at 100 - 1.1 * 2 ms.
      expect(r.models[0]!.latencyMs.p99).toBeLessThan(4);
      expect(r.good).toBe(r.arrivals);
    },
  );

  it('fills batches to the decided size when the rate allows, and honours a timeout', () => {
    const cluster = buildCluster([profile], [{ name: 'net', sloMs: 200 }]);
    const run = (timeoutMs?: number) =>
      simulate({
        cluster,
        streams: [poisson(200, 5)],
        initialRatePerS: [200],
        policy: new FixedPolicy({
          placements: [{ model: 0, gpu: 0, pct: 100, batch: 8, ...(timeoutMs !== undefined ? { timeoutMs } : {}) }],
        }),
        settings: settings({ durationMs: 30_000 }),
      });
    expect(run().models[0]!.meanBatch).toBeGreaterThan(7.5);
    expect(run(5).models[0]!.meanBatch).toBeLessThan(3);
  });

  it('the same seed gives the same result', () => {
    const cluster = buildCluster([profile], [{ name: 'net', sloMs: 50 }]);
    const go = () =>
      simulate({
        cluster,
        streams: [poisson(300, 9)],
        initialRatePerS: [300],
        policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 4 }] }),
        settings: settings({
          durationMs: 10_000,
          groundTruth: { systematicErrorPct: 3, noisePct: 2, dramAlpha: 0.08, seed: 4 },
        }),
      });
    expect(go()).toEqual(go());
  });
});

describe('reconfiguration', () => {
  it('a share change is a shadow swap: no task is lost and service never stops', () => {
    const cluster = buildCluster([profile], [{ name: 'other', sloMs: 100 }]);
    const a = { placements: [{ model: 0, gpu: 0, pct: 40, batch: 2 }] };
    const b = { placements: [{ model: 0, gpu: 0, pct: 60, batch: 2 }] };
    const r = simulate({
      cluster,
      streams: [poisson(200, 2)],
      initialRatePerS: [200],
      policy: new ScriptedPolicy([a, a, b, b, b, b, b, b, a, a]),
      settings: settings({ durationMs: 20_000, swapMs: 3000 }),
    });
    expect(r.swaps).toBe(2);
    expect(r.dropped).toBe(0);
    expect(r.arrivals).toBe(r.served + r.unfinished);
    for (const p of r.timeline) expect(p.servedPerS).toBeGreaterThan(100);
  });

  it('the ground truth differs from the predictor: systematic error, noise and DRAM contention', () => {
    const cluster = buildCluster(
      [profile],
      [
        { name: 'other', sloMs: 1e9 },
        { name: 'net', sloMs: 1e9 },
      ],
    );
    const dep = {
      placements: [
        { model: 0, gpu: 0, pct: 50, batch: 1 },
        { model: 1, gpu: 0, pct: 50, batch: 1 },
      ],
    };
    const exact = simulate({
      cluster,
      streams: [poisson(100, 1), poisson(100, 2)],
      initialRatePerS: [100, 100],
      policy: new FixedPolicy(dep),
      settings: settings({ durationMs: 20_000 }),
    });
    const real = simulate({
      cluster,
      streams: [poisson(100, 1), poisson(100, 2)],
      initialRatePerS: [100, 100],
      policy: new FixedPolicy(dep),
      settings: settings({
        durationMs: 20_000,
        groundTruth: { systematicErrorPct: 3, noisePct: 2, dramAlpha: 0.3, seed: 8 },
      }),
    });
    expect(real.models[0]!.execMs.mean).not.toBeCloseTo(exact.models[0]!.execMs.mean, 3);
  });
});

describe('timeshare GPUs', () => {
  it('run one batch at a time when serial', () => {
    const cluster = buildCluster(
      [profile],
      [
        { name: 'net', sloMs: 1e9 },
        { name: 'other', sloMs: 1e9 },
      ],
      'serial',
    );
    const dep = {
      placements: [
        { model: 0, gpu: 0, pct: 100, batch: 1 },
        { model: 1, gpu: 0, pct: 100, batch: 1 },
      ],
      gpuModes: ['timeshare' as const],
    };
    const r = simulate({
      cluster,
      streams: [poisson(150, 1), poisson(150, 2)],
      initialRatePerS: [150, 150],
      policy: new FixedPolicy(dep),
      settings: settings({ durationMs: 20_000 }),
    });
    expect(r.gpuSharePct[0]!).toBeLessThanOrEqual(100 + 1e-9);
    expect(r.gpuSharePct[0]!).toBeGreaterThan(30);
  });
});

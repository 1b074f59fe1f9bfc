import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import type { ClusterInfo, Deployment } from '../../src/policy/types.js';
import { ProfileSchema } from '../../src/profile/schema.js';
import { DEFAULT_MAX_QUEUE_SIZE, type QueuePolicy } from '../../src/serving/queuePolicy.js';
import { DEFAULT_SIM_SETTINGS, simulate, type SimSettings } from '../../src/sim/simulator.js';
import { rateFunction, RenewalStream } from '../../src/workload/arrivals.js';
import { mixSeed, Rng } from '../../src/workload/random.js';
import { FixedPolicy } from '../support/fakes.js';
import { makeProfile } from '../support/builders.js';

// 'fast': 1 ms a batch of one; 'slow': 12 ms x sqrt(batch), so it carries more the larger its batch (83/s alone,
// 144/s at 3); 'net': a model served alone. Shares do not change the times (pctExp 0).
const flat = { batchExp: 1, pctExp: 0, schedPerKernelMs: 0, alphaCache: 0, alphaU: 0, betaU: 0 };
const profile = ProfileSchema.parse(
  makeProfile()
    .model('fast', { ...flat, runAtB1Full: 1 })
    .model('slow', { ...flat, runAtB1Full: 12, batchExp: 0.5 })
    .model('net', { ...flat, runAtB1Full: 2 })
    .schedInterference(0, 0)
    .build(),
);
const REJECT: QueuePolicy = { delay: false, timeoutMs: Number.NaN, maxQueueSize: DEFAULT_MAX_QUEUE_SIZE };
const settings = (over: Partial<SimSettings> = {}): SimSettings => ({
  ...DEFAULT_SIM_SETTINGS,
  durationMs: 60_000,
  groundTruth: { systematicErrorPct: 0, noisePct: 0, dramAlpha: 0, seed: 1 },
  ...over,
});
const poisson = (ratePerS: number, seed: number) =>
  new RenewalStream(rateFunction({ kind: 'constant', ratePerS }), new Rng(mixSeed(seed)));

/** fast -> slow under `sloMs` end to end, beside 'net' served alone; the step models' own SLOs unused. */
function pipelineCluster(sloMs: number): ClusterInfo {
  const c = buildCluster(
    [profile, profile, profile],
    [
      { name: 'fast', sloMs: 1 },
      { name: 'slow', sloMs: 1 },
      { name: 'net', sloMs: 50 },
    ],
  );
  const steps = [
    { model: 'fast', inputMap: {}, outputMap: {} },
    { model: 'slow', inputMap: {}, outputMap: {} },
  ];
  return { ...c, pipelines: [{ name: 'p', sloMs, steps, stepModels: [0, 1] }] };
}

function run(cluster: ClusterInfo, d: Deployment, pipelinePerS: number, netPerS: number, over = {}) {
  return simulate({
    cluster,
    streams: [poisson(0, 1), poisson(0, 2), poisson(netPerS, 3)],
    pipelineStreams: [poisson(pipelinePerS, 4)],
    initialRatePerS: [pipelinePerS, pipelinePerS, netPerS],
    policy: new FixedPolicy(d),
    settings: settings(over),
  });
}

const placements = (fastBatch: number, slowBatch: number) => [
  { model: 0, gpu: 0, pct: 100, batch: fastBatch },
  { model: 1, gpu: 1, pct: 100, batch: slowBatch },
  { model: 2, gpu: 2, pct: 100, batch: 1 },
];

describe('pipelines in the simulator', () => {
  it('counts a request once, end to end: each answered step task becomes one task of the next step', () => {
    const r = run(pipelineCluster(60), { placements: placements(1, 1) }, 40, 100);
    const [fast, slow, net] = r.models;
    const p = r.pipelines![0]!;
    expect(p.arrivals).toBe(fast!.arrivals);
    expect(slow!.arrivals).toBe(fast!.served);
    expect(p.served).toBe(slow!.served);
    expect(p.served + p.dropped + p.unfinished).toBe(p.arrivals);
    // The totals are what clients see: 'net's tasks and the pipeline's requests, not the step tasks.
    expect(r.arrivals).toBe(net!.arrivals + p.arrivals);
    expect(r.served).toBe(net!.served + p.served);
    expect(p.good).toBeGreaterThan(0.99 * p.served);
    expect(p.latencyMs.p99).toBeLessThanOrEqual(60);
  });

  it('carries slack forward: a step slower than its own budget still answers within the SLO', () => {
    // Budgets [20, 10]: 'slow' takes 12 ms, over its own 10, but 'fast' at a low rate leaves most of its 20.
    const d = { placements: placements(1, 1), pipelineBudgetsMs: { p: [20, 10] } };
    const r = run(pipelineCluster(30), d, 5, 0);
    const p = r.pipelines![0]!;
    expect(p.served).toBeGreaterThan(250);
    expect(p.good).toBe(p.served);
    expect(p.dropped).toBe(0);
  });

  it('drops the request when a step task is dropped', () => {
    // 10 ms end to end cannot hold 'slow's 12 ms: its tasks time out and its reject policy drops them.
    const r = run(pipelineCluster(10), { placements: placements(1, 1) }, 20, 0, {
      queuePolicies: [REJECT, REJECT, REJECT],
    });
    const p = r.pipelines![0]!;
    expect(p.served).toBe(0);
    expect(p.dropped).toBe(r.models[1]!.dropped);
    expect(p.dropped).toBeGreaterThan(0.95 * p.arrivals);
    expect(r.sloViolationPct).toBeGreaterThan(99);
  });

  it('runs a split better the more of the SLO it gives the slow step', () => {
    // 'fast' batches up to 8 and holds its tasks toward its step's deadline; what it is given beyond its 1 ms is
    // time its tasks may wait there that 'slow', which needs batches of 2 or more at 95/s, then lacks.
    const violation = (budgets: number[]) =>
      run(pipelineCluster(30), { placements: placements(8, 3), pipelineBudgetsMs: { p: budgets } }, 95, 0)
        .sloViolationPct;
    const [toSlow, even, toFast] = [violation([4, 26]), violation([15, 15]), violation([25, 5])];
    expect(toSlow).toBeLessThan(even - 5);
    expect(even).toBeLessThan(toFast - 20);
  });

  it("draws a request's way in from the fitted spread, as a model's request's", () => {
    // At 5/s nothing queues: a request's latency is its way in (5 ms fitted) plus 1 + 12 ms of batches.
    const wayIn = { fixedMs: 0, perMbMs: 0, wayIn: { fixedMs: 5, perMbMs: 0 } };
    const latency = (transport: typeof wayIn & { wayInSpread?: number[] }) =>
      run(pipelineCluster(60), { placements: placements(1, 1) }, 5, 0, { transport }).pipelines![0]!.latencyMs;
    const exact = latency(wayIn);
    // Half the requests take no time on the way in, the other half 0-20 ms: the mean stays, the median falls.
    const spread = latency({ ...wayIn, wayInSpread: [0, 0, 4] });
    expect(exact.p50).toBeGreaterThan(spread.p50 + 4);
    expect(Math.abs(spread.mean - exact.mean)).toBeLessThan(1);
  });

  it("refuses a deployment whose split is not the pipeline's", () => {
    const d = { placements: placements(1, 1), pipelineBudgetsMs: { p: [20, 20] } };
    expect(() => run(pipelineCluster(30), d, 5, 0)).toThrow(/budgets sum to 40 ms, not its SLO of 30 ms/);
  });

  it('leaves a run without pipelines as it was: no pipelines in the result', () => {
    const c = buildCluster([profile], [{ name: 'net', sloMs: 50 }]);
    const r = simulate({
      cluster: c,
      streams: [poisson(100, 3)],
      initialRatePerS: [100],
      policy: new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 1 }] }),
      settings: settings(),
    });
    expect(r.pipelines).toBeUndefined();
    expect(r.arrivals).toBe(r.models[0]!.arrivals);
  });
});

// Runs policies side by side on the simulator over the same seeded workload (`inss bench`). Pure
// apart from the injected clock that times decisions.
import {
  initialRates,
  pipelineStreams,
  plannerCluster,
  scenarioCluster,
  scenarioSettings,
  scenarioStreams,
  unprofiledModels,
} from '../../src/scenario/build.js';
import { withOnlineProfiling } from '../../src/policy/online/policy.js';
import type { TransportModel } from '../../src/serving/transport.js';
import type { Scenario } from '../../src/scenario/schema.js';
import type { Profile } from '../../src/profile/schema.js';
import type { ClusterInfo, PolicyFactory, PolicyOptions } from '../../src/policy/types.js';
import { simulate, type SimResult } from '../../src/sim/simulator.js';
import { type CurvePoint, gridCurve } from './capacity.js';

export interface BenchContext {
  readonly scenario: Scenario;
  readonly profiles: ReadonlyMap<string, Profile>;
  readonly traces: ReadonlyMap<string, readonly number[]>;
  readonly clock?: () => number;
  readonly policyOptions?: (name: string) => PolicyOptions;
  /** The host's measured transport (src/serving/transport.ts): the simulator runs every batch's path with it. */
  readonly transport?: TransportModel;
}

export interface PolicyResult {
  readonly policy: string;
  readonly sim: SimResult;
  readonly throughputPerS: number;
  readonly goodputPerS: number;
  readonly sloViolationPct: number;
  readonly dropPct: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly decisionMsP99: number;
  /** What the policy decided with, where it says (Policy.note). */
  readonly note?: string;
  /** Wall time of the whole simulation, ms (0 without a clock). */
  readonly wallMs: number;
}

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

export function runPolicy(
  ctx: BenchContext,
  factory: PolicyFactory,
  loadScale = 1,
  cluster?: ClusterInfo,
): PolicyResult {
  const s = ctx.scenario;
  const truth = cluster ?? scenarioCluster(s, ctx.profiles);
  // Models marked unprofiled: the policy and the dispatch rule get the planner's cluster, without their
  // profiles, and the policy serves them through the online-profiling decorator (docs/online-profiling.md).
  const online = unprofiledModels(s).length > 0;
  const c = online ? plannerCluster(s, ctx.profiles) : truth;
  const f = online ? withOnlineProfiling(factory) : factory;
  const policy = f.create(c, { seed: s.seed, ...(ctx.policyOptions?.(factory.name) ?? {}) });
  const t0 = ctx.clock?.() ?? 0;
  const sim = simulate({
    cluster: c,
    truthCluster: truth,
    streams: scenarioStreams(s, ctx.traces, loadScale),
    ...(s.pipelines.length > 0 ? { pipelineStreams: pipelineStreams(s, ctx.traces, loadScale) } : {}),
    initialRatePerS: initialRates(s, ctx.traces, loadScale),
    policy,
    settings: { ...scenarioSettings(s), ...(ctx.transport ? { transport: ctx.transport } : {}) },
    ...(ctx.clock ? { clock: ctx.clock } : {}),
  });
  const wallMs = ctx.clock ? ctx.clock() - t0 : 0;
  return {
    policy: factory.name,
    sim,
    throughputPerS: sim.throughputPerS,
    goodputPerS: sim.goodputPerS,
    sloViolationPct: sim.sloViolationPct,
    dropPct: sim.dropPct,
    p50Ms: sim.latencyMs.p50,
    p99Ms: sim.latencyMs.p99,
    decisionMsP99: quantile(sim.decisionMs, 0.99),
    ...(policy.note !== undefined ? { note: policy.note } : {}),
    wallMs,
  };
}

/** The scenario with another seed: arrivals, ground truth and policy seed all follow it. */
export function withSeed(s: Scenario, seed: number): Scenario {
  return seed === s.seed ? s : { ...s, seed };
}

/** One point of a policy's violation-versus-load curve: one untimed run at `loadScale` and `seed`. */
export function runAt(
  ctx: BenchContext,
  factory: PolicyFactory,
  loadScale: number,
  seed: number,
  cluster?: ClusterInfo,
): CurvePoint {
  const { clock: _clock, ...untimed } = ctx;
  const r = runPolicy({ ...untimed, scenario: withSeed(ctx.scenario, seed) }, factory, loadScale, cluster);
  return { loadScale, sloViolationPct: r.sloViolationPct, goodputPerS: r.goodputPerS };
}

/**
 * A policy's violation-versus-load curve on `loads` at one seed (capacity.ts: gridCurve), stopping
 * after the first load below `stopAtAttainment` when given.
 */
export function policyCurve(
  ctx: BenchContext,
  factory: PolicyFactory,
  loads: readonly number[],
  seed = ctx.scenario.seed,
  stopAtAttainment?: number,
): CurvePoint[] {
  const cluster = scenarioCluster(ctx.scenario, ctx.profiles);
  return gridCurve((x) => runAt(ctx, factory, x, seed, cluster), loads, stopAtAttainment);
}

// Runs policies side by side on the simulator over the same seeded workload (`inss bench`). Pure
// apart from the injected clock that times decisions.
import { initialRates, scenarioCluster, scenarioSettings, scenarioStreams } from '../scenario/build.js';
import type { Scenario } from '../scenario/schema.js';
import type { Profile } from '../profile/schema.js';
import type { ClusterInfo, PolicyFactory, PolicyOptions } from '../policy/types.js';
import { simulate, type SimResult } from '../sim/simulator.js';

export interface BenchContext {
  readonly scenario: Scenario;
  readonly profiles: ReadonlyMap<string, Profile>;
  readonly traces: ReadonlyMap<string, readonly number[]>;
  readonly clock?: () => number;
  readonly policyOptions?: (name: string) => PolicyOptions;
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
  /** Wall time of the whole simulation, ms (0 without a clock). */
  readonly wallMs: number;
}

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

export function runPolicy(ctx: BenchContext, factory: PolicyFactory, loadScale = 1, cluster?: ClusterInfo): PolicyResult {
  const s = ctx.scenario;
  const c = cluster ?? scenarioCluster(s, ctx.profiles);
  const policy = factory.create(c, { seed: s.seed, ...(ctx.policyOptions?.(factory.name) ?? {}) });
  const t0 = ctx.clock?.() ?? 0;
  const sim = simulate({
    cluster: c,
    streams: scenarioStreams(s, ctx.traces, loadScale),
    initialRatePerS: initialRates(s, ctx.traces, loadScale),
    policy,
    settings: scenarioSettings(s),
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
    wallMs,
  };
}

export interface SweepPoint {
  readonly loadScale: number;
  readonly sloViolationPct: number;
  readonly goodputPerS: number;
}

/**
 * The highest load multiplier at which at least `attainment` of the tasks meet their SLO
 * (violation <= 1 - attainment): doubling from 1 (or halving) to bracket it, then bisection to
 * `relTolerance`. Returns the best multiplier found (0 if even the smallest tried fails) and the points.
 */
export function sweep(ctx: BenchContext, factory: PolicyFactory, attainment = 0.99, relTolerance = 0.02): { maxLoadScale: number; maxGoodputPerS: number; points: SweepPoint[] } {
  const cluster = scenarioCluster(ctx.scenario, ctx.profiles);
  const { clock: _clock, ...untimed } = ctx;
  const points: SweepPoint[] = [];
  const limitPct = (1 - attainment) * 100;
  const ok = (scale: number): boolean => {
    const r = runPolicy(untimed, factory, scale, cluster);
    points.push({ loadScale: scale, sloViolationPct: r.sloViolationPct, goodputPerS: r.goodputPerS });
    return r.sloViolationPct <= limitPct;
  };
  let lo = 0;
  let hi = 0;
  if (ok(1)) {
    lo = 1;
    hi = 2;
    while (hi <= 64 && ok(hi)) {
      lo = hi;
      hi *= 2;
    }
  } else {
    hi = 1;
    lo = 0.5;
    while (lo >= 1 / 64 && !ok(lo)) {
      hi = lo;
      lo /= 2;
    }
    if (lo < 1 / 64) return { maxLoadScale: 0, maxGoodputPerS: 0, points };
  }
  while ((hi - lo) / lo > relTolerance) {
    const mid = (lo + hi) / 2;
    if (ok(mid)) lo = mid;
    else hi = mid;
  }
  const best = points.filter((p) => p.loadScale === lo)[0];
  return { maxLoadScale: lo, maxGoodputPerS: best?.goodputPerS ?? 0, points: points.sort((a, b) => a.loadScale - b.loadScale) };
}

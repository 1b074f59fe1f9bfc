// Oracle sweep of fixed plans (docs/results.md, "Physics or design: the oracle sweep"): the
// highest capacity any fixed deployment reaches on a scenario, measured by the simulator itself, to
// tell a shortfall of inss's planner (design: a plan exists that carries more) from one of the GPUs
// (physics, in the space searched: none does).
//
// A fixed plan is one deployment (placements, MPS shares, each GPU pooled or partitioned, batch caps)
// held for the whole run: the first deployment is ready at once and nothing is ever swapped. The
// search: seed plans (the candidates inss's planner generates at the loads searched: time sharing's
// deployment, greedy and balanced MPS partitions batched by BDA, their hybrids, the planner's best,
// plus any the caller adds, e.g. inss's own decision), then a first-improvement local search of
// perturbations (the planner's own moves, a unit moved between any two co-located partitions, a
// free unit added, a partition moved or replicated to another GPU, each batch cap up or down), each
// scored by the simulator at a grid load on every seed: the sum of the seeds' violation, with a
// plan dropped once its seeds' sum exceeds the sum of the plan it would replace. A search that is
// stuck (no perturbation improves) starts again from the next seed plan, while the budget lasts.
// When the best keeps `attainment` on every seed, the search moves to the next load. At the end the best plan of
// the highest load reached is run on every grid load below it, so its capacity is the suite's
// metric (capacity.ts). Pure (the simulator is).
import { type CurvePoint, capacityOf, gridCurve, violationLimitPct } from './capacity.js';
import { type BenchContext, runAt } from './run.js';
import {
  balancedPartition,
  greedyPartition,
  hybrids,
  moves,
  planPooling,
  type PoolingOptions,
  scoreDeployment,
  timeshareDeployment,
} from '../../src/policy/pooling/index.js';
import { timeshareMaxBatch, TIMESHARE_MAX_QUEUE_DELAY_MS } from '../../src/policy/policies/timeshare.js';
import { BDA_MAX_BATCH } from '../../src/policy/bda.js';
import type { ClusterInfo, Deployment, GpuMode, Placement, Policy, PolicyFactory } from '../../src/policy/types.js';
import { deploymentProblem } from '../../src/policy/util.js';
import { Rng } from '../../src/workload/random.js';

/** A policy that holds one deployment for the whole run. */
export function fixedPlanFactory(plan: Deployment): PolicyFactory {
  return {
    name: 'fixed-plan',
    description: 'one deployment held for the whole run (the oracle sweep)',
    supports: () => null,
    create(): Policy {
      return { name: 'fixed-plan', decide: () => plan };
    },
  };
}

const modesOf = (cluster: ClusterInfo, d: Deployment): GpuMode[] =>
  cluster.gpus.map((g) => d.gpuModes?.[g.index] ?? 'mps');

/** A canonical text of a plan (placements sorted, modes, batches), for memoising its simulations. */
export function planKey(cluster: ClusterInfo, d: Deployment): string {
  const modes = modesOf(cluster, d);
  return [...d.placements]
    .sort((a, b) => a.gpu - b.gpu || a.model - b.model)
    .map(
      (p) =>
        `${p.model}@${p.gpu}${modes[p.gpu] === 'timeshare' ? 't' : `:${p.pct}`}b${p.batch}` +
        (p.timeoutMs !== undefined ? `w${p.timeoutMs}` : ''),
    )
    .join(',');
}

/** The deployment with its placements in canonical order and gpuModes present only when some GPU is pooled. */
function normalise(cluster: ClusterInfo, placements: readonly Placement[], modes: readonly GpuMode[]): Deployment {
  const ps = [...placements].sort((a, b) => a.gpu - b.gpu || a.model - b.model);
  return modes.some((m) => m === 'timeshare') ? { placements: ps, gpuModes: [...modes] } : { placements: ps };
}

const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;

/**
 * The plans inss's pooling planner starts from at `ratePerS`, batched by its score (BDA on MPS GPUs, time sharing's
 * caps on pooled ones).
 */
export function plannerCandidates(
  cluster: ClusterInfo,
  ratePerS: readonly number[],
  options: PoolingOptions,
): Deployment[] {
  const mps: Deployment[] = [
    { placements: greedyPartition(cluster, ratePerS) },
    { placements: balancedPartition(cluster, ratePerS) },
  ];
  const out: Deployment[] = [timeshareDeployment(cluster)];
  for (const m of mps) out.push(m, ...hybrids(cluster, m, ratePerS));
  out.push(planPooling(cluster, ratePerS, mps, options).best.deployment);
  return out
    .map((d) => scoreDeployment(cluster, d, ratePerS, options).deployment)
    .filter((d) => deploymentProblem(cluster, d) === null);
}

/**
 * Perturbations of a fixed plan: the pooling planner's moves (re-batched by its score at
 * `ratePerS`), a unit moved between any two co-located partitions or a free unit added, a partition
 * moved or replicated (one unit from the largest share there) to another partitioned GPU, and each
 * batch cap one step and a third up or down. Only plans that pass deploymentProblem.
 */
export function perturbations(
  cluster: ClusterInfo,
  d: Deployment,
  ratePerS: readonly number[],
  options: PoolingOptions,
): Deployment[] {
  const modes = modesOf(cluster, d);
  const ps = d.placements;
  const out: Deployment[] = [];
  const push = (placements: readonly Placement[], m: readonly GpuMode[] = modes) => {
    const plan = normalise(cluster, placements, m);
    if (deploymentProblem(cluster, plan) === null) out.push(plan);
  };
  const rebatch = (plan: Deployment) => {
    const s = scoreDeployment(cluster, plan, ratePerS, options);
    if (Number.isFinite(s.score)) push(s.deployment.placements, modesOf(cluster, s.deployment));
  };
  for (const plan of moves(cluster, scoreDeployment(cluster, d, ratePerS, options), ratePerS)) rebatch(plan);
  for (const [i, p] of ps.entries()) {
    if (modes[p.gpu] !== 'mps') continue;
    const gpu = cluster.gpus[p.gpu]!;
    const unit = gpu.mpsUnitPct;
    const used = ps.filter((q) => q.gpu === p.gpu).reduce((s, q) => s + q.pct, 0);
    if (used + unit <= 100 + 1e-9) push(ps.map((q, k) => (k === i ? { ...q, pct: round6(q.pct + unit) } : q)));
    for (const [j, q] of ps.entries()) {
      if (j === i || q.gpu !== p.gpu || q.pct < 2 * unit - 1e-9) continue;
      push(
        ps.map((r, k) =>
          k === i ? { ...r, pct: round6(r.pct + unit) } : k === j ? { ...r, pct: round6(r.pct - unit) } : r,
        ),
      );
    }
    for (const other of cluster.gpus) {
      if (
        other.index === p.gpu ||
        modes[other.index] !== 'mps' ||
        (other.profileIndex[p.model] ?? -1) < 0 ||
        ps.some((q) => q.gpu === other.index && q.model === p.model)
      )
        continue;
      const on = ps.filter((q) => q.gpu === other.index);
      const free = 100 - on.reduce((s, q) => s + q.pct, 0);
      const u = other.mpsUnitPct;
      const pct = Math.floor(free / u + 1e-9) * u;
      if (pct >= u - 1e-9) {
        push(ps.map((q, k) => (k === i ? { ...q, gpu: other.index, pct: round6(pct) } : q))); // move it
        push([...ps, { model: p.model, gpu: other.index, pct: round6(pct), batch: p.batch }]); // replicate it
        continue;
      }
      const donor = [...on].sort((a, b) => b.pct - a.pct)[0];
      if (!donor || donor.pct < 2 * u - 1e-9) continue;
      push([
        ...ps.map((q) => (q === donor ? { ...q, pct: round6(q.pct - u) } : q)),
        { model: p.model, gpu: other.index, pct: round6(u), batch: p.batch },
      ]);
    }
  }
  for (const [i, p] of ps.entries()) {
    for (const b of new Set([p.batch - 1, p.batch + 1, Math.round(p.batch / 1.33), Math.round(p.batch * 1.33)])) {
      if (b < 1 || b > BDA_MAX_BATCH || b === p.batch) continue;
      push(ps.map((q, k) => (k === i ? { ...q, batch: b } : q)));
    }
  }
  return out;
}

/** Every model on every GPU, pooled, at time sharing's caps where memory allows (one of the seeds). */
function pooledEverywhere(cluster: ClusterInfo): Deployment {
  const placements: Placement[] = [];
  for (const g of cluster.gpus) {
    let mem = 0;
    for (const m of cluster.models) {
      const idx = g.profileIndex[m.index] ?? -1;
      if (idx < 0) continue;
      const b = timeshareMaxBatch(g, m.index, m.sloMs);
      const mb = g.model.memoryMb(idx, b);
      if (mem + mb > g.memMb) continue;
      mem += mb;
      placements.push({ model: m.index, gpu: g.index, pct: 100, batch: b, timeoutMs: TIMESHARE_MAX_QUEUE_DELAY_MS });
    }
  }
  return { placements, gpuModes: cluster.gpus.map(() => 'timeshare') };
}

export interface OracleOptions {
  /** Grid loads to climb, increasing (e.g. those above the best other policy's capacity). */
  readonly loads: readonly number[];
  /** Every grid load, increasing, for the final capacity of the best plan (capacity.ts). */
  readonly grid: readonly number[];
  readonly seeds: readonly number[];
  /** Most simulations of the search (the final capacity check comes on top). */
  readonly budget: number;
  /** Attainment the capacity is at (0.99). */
  readonly attainment: number;
  /** Each model's rate at load 1 that candidates are planned for (its peak). */
  readonly planRates: readonly number[];
  /** The planner's options (inss's: sloFraction 0.85, budget 40). */
  readonly pooling: PoolingOptions;
  /** More seed plans (e.g. inss's own decisions), given with batches. */
  readonly extraSeeds?: readonly Deployment[];
  /** Order of the perturbations (seeded shuffle). */
  readonly rngSeed?: number;
  /** Called after each simulation (progress). */
  readonly onStep?: (s: OracleStep) => void;
}

export interface OracleStep {
  readonly simulations: number;
  readonly load: number;
  readonly bestViolationPct: readonly number[];
  readonly passed: boolean;
}

export interface OracleResult {
  /** The highest searched load at which a plan kept the attainment on every seed (0: none). */
  readonly reachedLoad: number;
  /** That plan (or, when none passed, the best at the first load). */
  readonly plan: Deployment;
  /** Its violation (%) per seed at each searched load it was run at. */
  readonly violationPct: Readonly<Record<string, readonly number[]>>;
  /** Per seed, the suite's capacity of the plan (every grid load up to the first failing one). */
  readonly capacityBySeed: readonly number[];
  /** Their mean: the number the suite reports. */
  readonly capacity: number;
  readonly simulations: number;
  readonly candidatesTried: number;
}

/** The oracle sweep (see the file header). */
export function oracleSweep(ctx: BenchContext, cluster: ClusterInfo, options: OracleOptions): OracleResult {
  const limit = violationLimitPct(options.attainment) + 1e-9;
  const rng = new Rng(options.rngSeed ?? 1);
  let simulations = 0;
  let tried = 0;
  const memo = new Map<string, number>();
  const simulate = (plan: Deployment, load: number, seed: number): number => {
    const key = `${planKey(cluster, plan)}|${load}|${seed}`;
    let v = memo.get(key);
    if (v === undefined) {
      v = runAt(ctx, fixedPlanFactory(plan), load, seed, cluster).sloViolationPct;
      simulations++;
      memo.set(key, v);
    }
    return v;
  };
  /** Violation per seed, stopping (the rest Infinity) once the sum passes `bound`. */
  const evaluate = (plan: Deployment, load: number, bound: number): number[] => {
    tried++;
    const out: number[] = [];
    let sum = 0;
    for (const s of options.seeds) {
      if (sum > bound) {
        out.push(Infinity);
        continue;
      }
      const v = simulate(plan, load, s);
      out.push(v);
      sum += v;
    }
    return out;
  };
  const total = (v: readonly number[]) => v.reduce((a, b) => a + b, 0);
  const passes = (v: readonly number[]) => v.every((x) => x <= limit);
  const ratesAt = (load: number) => options.planRates.map((r) => r * load);
  const violationPct: Record<string, number[]> = {};
  let reachedLoad = 0;
  let reachedPlan: Deployment | null = null;
  let best: Deployment | null = null;
  let bestV: number[] = [];
  for (const load of options.loads) {
    if (simulations >= options.budget) break;
    // Seeds at this load: the planner's candidates planned for it (and 10% and 20% above), the
    // best so far, the extra seeds; the best of them starts the local search.
    const seeds: Deployment[] = [];
    if (best) seeds.push(best);
    for (const f of [1, 1.1, 1.2]) seeds.push(...plannerCandidates(cluster, ratesAt(load * f), options.pooling));
    seeds.push(pooledEverywhere(cluster), ...(options.extraSeeds ?? []));
    const seen = new Set<string>();
    const starts: { plan: Deployment; v: number[] }[] = [];
    best = null;
    bestV = [];
    for (const plan of seeds) {
      const key = planKey(cluster, plan);
      if (seen.has(key) || simulations >= options.budget) continue;
      seen.add(key);
      const v = evaluate(plan, load, best ? total(bestV) : Infinity);
      starts.push({ plan, v });
      if (!best || total(v) < total(bestV)) [best, bestV] = [plan, v];
    }
    if (!best) break;
    // First-improvement local searches, perturbations in a seeded random order: from the best seed,
    // then, each time one is stuck (no perturbation improves it), from the next seed (by the first
    // seed's violation), while the budget lasts.
    starts.sort((a, b) => a.v[0]! - b.v[0]! || total(a.v) - total(b.v));
    for (const start of starts) {
      if (passes(bestV) || simulations >= options.budget) break;
      let cur = start.plan;
      let curV = start.v.some((x) => !Number.isFinite(x)) ? evaluate(cur, load, Infinity) : start.v;
      let improved = true;
      while (!passes(curV) && improved && simulations < options.budget) {
        improved = false;
        const next = perturbations(cluster, cur, ratesAt(load), options.pooling);
        for (let k = next.length - 1; k > 0; k--) {
          const j = Math.floor(rng.next() * (k + 1));
          [next[k], next[j]] = [next[j]!, next[k]!];
        }
        for (const plan of next) {
          if (simulations >= options.budget) break;
          const key = planKey(cluster, plan);
          if (seen.has(key)) continue;
          seen.add(key);
          const v = evaluate(plan, load, total(curV));
          options.onStep?.({
            simulations,
            load,
            bestViolationPct: total(curV) < total(bestV) ? curV : bestV,
            passed: false,
          });
          if (total(v) < total(curV) - 1e-9) {
            [cur, curV] = [plan, v];
            improved = true;
            break;
          }
        }
      }
      if (total(curV) < total(bestV)) [best, bestV] = [cur, curV];
    }
    violationPct[String(load)] = bestV;
    const ok = passes(bestV);
    options.onStep?.({ simulations, load, bestViolationPct: bestV, passed: ok });
    if (!ok) break;
    reachedLoad = load;
    reachedPlan = best;
  }
  const plan = reachedPlan ?? best ?? timeshareDeployment(cluster);
  // The suite's capacity of the plan, per seed: every grid load up to the first that fails.
  const capacityBySeed = options.seeds.map((s) =>
    capacityOf(
      gridCurve(
        (x): CurvePoint => ({ loadScale: x, sloViolationPct: simulate(plan, x, s), goodputPerS: 0 }),
        options.grid,
        options.attainment,
      ),
      options.attainment,
    ),
  );
  return {
    reachedLoad,
    plan,
    violationPct,
    capacityBySeed,
    capacity: capacityBySeed.reduce((a, b) => a + b, 0) / capacityBySeed.length,
    simulations,
    candidatesTried: tried,
  };
}

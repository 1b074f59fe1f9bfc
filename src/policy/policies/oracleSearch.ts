// oracle: exhaustive search of problem (1) of the InSS paper (section 3.3) on small instances, the
// upper reference for how close a policy gets. It searches every placement (model -> GPU, one GPU
// per model, (1e)) and every split of each GPU into shares in the GPU's MPS units, with batch sizes
// from BDA (Algorithm 1, src/policy/bda.ts), and maximises the predicted total throughput
// sum b_i / t_inf_i subject to (1a) shares <= 100% per GPU, (1b) memory, (1c) eq. (2) task latency
// <= SLO and (1d) throughput >= rate. docs/policies/oracle.md describes the search, its pruning
// and its size limit.
//
// Why it is exact and still small: given the placement, every model's prediction depends only on
// its own GPU (interference is per GPU), so the best shares of one GPU depend only on which models
// it holds. The search therefore finds, once per (GPU profile, set of models), the best split of
// that GPU (branch and bound over share levels), and then combines those per-GPU optima over all
// placements, GPUs of one profile taken as interchangeable.
//
// When no placement meets (1c)-(1d) for every model (the load exceeds the cluster), it maximises
// the predicted goodput instead: sum over models of min(b/t_inf, rate) for models whose eq. (2)
// latency meets the SLO, a model being allowed to stay unplaced.
import { bda, BDA_MAX_BATCH, worstTaskLatencyMs, type BdaInput } from '../bda.js';
import { memoryOnGpu, predictOnGpu, shareLevels } from '../util.js';
import type { ClusterInfo, Deployment, GpuInfo, Placement } from '../types.js';
import { assertOracleSize, ORACLE_MAX_SPLITS, profileGroups } from './oracleSize.js';

const EPS = 1e-9;

/** What a deployment achieves under problem (1)'s predictions (timeouts ignored: eq. (2) assumes full batches). */
export interface DeploymentValue {
  /** Every model placed and meeting (1c) eq. (2) latency <= SLO and (1d) throughput >= rate. */
  readonly feasible: boolean;
  /** Problem (1)'s objective: sum over workers of b / t_inf (tasks/s). */
  readonly throughputPerS: number;
  /** Sum over models meeting (1c) of min(throughput, rate) (tasks/s): what would be served within SLO. */
  readonly goodputPerS: number;
  /** Per model: meets (1c) and (1d). */
  readonly modelFeasible: readonly boolean[];
}

/**
 * Evaluates any deployment (MPS GPUs only) with the latency model, as problem (1) does. A model with
 * replicas splits its rate over them in proportion to their throughput.
 */
export function evaluateDeployment(cluster: ClusterInfo, d: Deployment, ratePerS: readonly number[]): DeploymentValue {
  if (d.gpuModes?.some((m) => m !== 'mps')) throw new RangeError('evaluateDeployment: only MPS GPUs are supported');
  const nModels = cluster.models.length;
  const tInf = new Map<Placement, number>();
  for (const gpu of cluster.gpus) {
    const on = d.placements.filter((p) => p.gpu === gpu.index);
    predictOnGpu(gpu, on).forEach((t, k) => tInf.set(on[k]!, t));
  }
  const hPerS = new Array<number>(nModels).fill(0);
  for (const p of d.placements) hPerS[p.model]! += (p.batch * 1000) / tInf.get(p)!;
  let throughputPerS = 0;
  let goodputPerS = 0;
  const modelFeasible = cluster.models.map((m) => {
    const rate = Math.max(0, ratePerS[m.index] ?? 0);
    const mine = d.placements.filter((p) => p.model === m.index);
    if (mine.length === 0) return false;
    const h = hPerS[m.index]!;
    throughputPerS += h;
    const latOk = mine.every((p) => {
      const t = tInf.get(p)!;
      const share = h > 0 ? (rate * (p.batch * 1000)) / t / h : rate;
      return worstTaskLatencyMs(p.batch, t, share) <= m.sloMs + EPS;
    });
    if (latOk) goodputPerS += Math.min(h, rate);
    return latOk && h >= rate - EPS;
  });
  return { feasible: modelFeasible.every(Boolean), throughputPerS, goodputPerS, modelFeasible };
}

type Mode = 'feasible' | 'goodput';

interface SplitResult {
  readonly score: number;
  readonly pcts: readonly number[];
  readonly batches: readonly number[];
}

export interface OracleSearchOptions {
  readonly maxSplits?: number;
}

export interface OracleResult {
  readonly deployment: Deployment;
  /** Every model meets (1c)-(1d): the deployment solves problem (1). */
  readonly feasible: boolean;
  readonly throughputPerS: number;
  readonly goodputPerS: number;
  /** Share splits evaluated with BDA (after pruning). */
  readonly leaves: number;
}

/** The search for one GPU profile: bounds per (model, share level) and the per-model-set optimum. */
class ProfileSearch {
  readonly levels: number[];
  /** [model][level]: an upper bound on the model's score at that share, -1 where it cannot qualify. */
  private readonly ub: Record<Mode, number[][]>;
  private readonly memo: Record<Mode, Map<number, SplitResult | null>> = { feasible: new Map(), goodput: new Map() };
  leaves = 0;

  constructor(
    private readonly cluster: ClusterInfo,
    readonly gpu: GpuInfo,
    private readonly ratePerS: readonly number[],
  ) {
    this.levels = shareLevels(gpu);
    const feasible: number[][] = [];
    const goodput: number[][] = [];
    for (const m of cluster.models) {
      const f: number[] = [];
      const g: number[] = [];
      const pIdx = gpu.profileIndex[m.index] ?? -1;
      for (const pct of this.levels) {
        let bestF = -1;
        let bestG = pIdx < 0 ? -1 : 0;
        if (pIdx >= 0) {
          // Alone at this share, with the whole GPU's memory: interference only lengthens t_inf and
          // neighbours only take memory, so this bounds what the model can reach beside any others.
          for (let b = 1; b <= BDA_MAX_BATCH; b++) {
            if (gpu.model.memoryMb(pIdx, b) > gpu.memMb + EPS) break;
            const t = predictOnGpu(gpu, [{ model: m.index, batch: b, pct }])[0]!;
            const rate = this.rate(m.index);
            if (worstTaskLatencyMs(b, t, rate) > m.sloMs + EPS) continue;
            const h = (b * 1000) / t;
            bestG = Math.max(bestG, Math.min(h, rate));
            if (h >= rate - EPS) bestF = Math.max(bestF, h);
          }
        }
        f.push(bestF);
        g.push(bestG);
      }
      feasible.push(f);
      goodput.push(g);
    }
    this.ub = { feasible, goodput };
  }

  private rate(model: number): number {
    return Math.max(0, this.ratePerS[model] ?? 0);
  }

  /** The best split of this GPU among the models in `mask` (bit i = model i), or null if none qualifies. */
  best(mask: number, mode: Mode): SplitResult | null {
    const memo = this.memo[mode];
    if (memo.has(mask)) return memo.get(mask)!;
    const r = this.search(mask, mode);
    memo.set(mask, r);
    return r;
  }

  private search(mask: number, mode: Mode): SplitResult | null {
    const members: number[] = [];
    for (let i = 0; i < this.cluster.models.length; i++) if (mask & (1 << i)) members.push(i);
    const n = members.length;
    const ub = this.ub[mode];
    const levels = this.levels;
    // Candidate levels per member, largest first (good splits early, so the bound prunes sooner).
    const cand = members.map((m) =>
      levels
        .map((_, li) => li)
        .filter((li) => ub[m]![li]! >= 0)
        .reverse(),
    );
    if (cand.some((c) => c.length === 0)) return null;
    const minPct = cand.map((c) => levels[c[c.length - 1]!]!);
    // maxUbUpTo[k][li]: the best bound of member k at any candidate level <= levels[li].
    const maxUbUpTo = members.map((m, k) => {
      const out: number[] = [];
      let run = -1;
      levels.forEach((_, li) => {
        if (cand[k]!.includes(li)) run = Math.max(run, ub[m]![li]!);
        out.push(run);
      });
      return out;
    });
    const capIndex = (pct: number): number => {
      let idx = -1;
      for (let li = 0; li < levels.length && levels[li]! <= pct + EPS; li++) idx = li;
      return idx;
    };
    const restMinFrom = new Array<number>(n + 1).fill(0);
    for (let k = n - 1; k >= 0; k--) restMinFrom[k] = restMinFrom[k + 1]! + minPct[k]!;
    let best: SplitResult | null = null;
    const chosen = new Array<number>(n).fill(0);
    const dfs = (k: number, usedPct: number, ubSoFar: number): void => {
      if (k === n) {
        const r = this.leaf(members, chosen, mode);
        if (r && (!best || r.score > best.score + EPS)) best = r;
        return;
      }
      for (const li of cand[k]!) {
        const pct = levels[li]!;
        if (usedPct + pct + restMinFrom[k + 1]! > 100 + EPS) continue;
        if (best) {
          // Branch and bound: each later member at its best level that still leaves room for the others' minima.
          let bound = ubSoFar + ub[members[k]!]![li]!;
          for (let j = k + 1; j < n; j++) {
            const cap = 100 - usedPct - pct - (restMinFrom[k + 1]! - minPct[j]!);
            const ci = capIndex(cap);
            bound += ci >= 0 ? Math.max(0, maxUbUpTo[j]![ci]!) : 0;
          }
          if (bound <= best.score + EPS) continue;
        }
        chosen[k] = pct;
        dfs(k + 1, usedPct + pct, ubSoFar + ub[members[k]!]![li]!);
      }
    };
    dfs(0, 0, 0);
    return best;
  }

  /** One split: BDA picks the batches; the score is problem (1)'s objective, or the goodput in overload. */
  private leaf(members: readonly number[], pcts: readonly number[], mode: Mode): SplitResult | null {
    this.leaves++;
    const gpu = this.gpu;
    const inputs: BdaInput[] = members.map((m, k) => ({
      placement: { model: m, gpu: gpu.index, pct: pcts[k]! },
      sloMs: this.cluster.models[m]!.sloMs,
      ratePerS: this.rate(m),
    }));
    const r = bda(this.cluster.gpus, inputs);
    if (mode === 'feasible' && !r.ok) return null;
    const batches = [...r.batches];
    const workers = () => members.map((m, k) => ({ model: m, batch: batches[k]!, pct: pcts[k]! }));
    if (mode === 'goodput') {
      // Models BDA could not serve at their rate: the largest batch meeting (4a) memory and (4b) latency.
      members.forEach((m, k) => {
        if (r.feasible[k]) return;
        for (let b = BDA_MAX_BATCH; b >= 1; b--) {
          batches[k] = b;
          const w = workers();
          if (memoryOnGpu(gpu, w) > gpu.memMb + EPS) continue;
          const t = predictOnGpu(gpu, w)[k]!;
          if (worstTaskLatencyMs(b, t, this.rate(m)) <= this.cluster.models[m]!.sloMs + EPS) return;
        }
        batches[k] = 1;
      });
    }
    const w = workers();
    if (memoryOnGpu(gpu, w) > gpu.memMb + EPS) return null;
    const t = predictOnGpu(gpu, w);
    let score = 0;
    members.forEach((m, k) => {
      const h = (batches[k]! * 1000) / t[k]!;
      if (mode === 'feasible') score += h;
      else if (worstTaskLatencyMs(batches[k]!, t[k]!, this.rate(m)) <= this.cluster.models[m]!.sloMs + EPS)
        score += Math.min(h, this.rate(m));
    });
    return { score, pcts: [...pcts], batches };
  }
}

/**
 * The exhaustive search (pure, deterministic). Throws a RangeError naming the size when the
 * instance exceeds the limits (ORACLE_MAX_*). Ties go to the first found: models on lower-indexed
 * GPUs, larger shares first.
 */
export function oracleSearch(
  cluster: ClusterInfo,
  ratePerS: readonly number[],
  options: OracleSearchOptions = {},
): OracleResult {
  assertOracleSize(cluster, options.maxSplits ?? ORACLE_MAX_SPLITS);
  const rates = cluster.models.map((m) => {
    const r = ratePerS[m.index] ?? 0;
    return Number.isFinite(r) && r > 0 ? r : 0;
  });
  const groups = profileGroups(cluster);
  const searches = groups.map((g) => new ProfileSearch(cluster, g[0]!, rates));
  const nModels = cluster.models.length;
  // bins[g][j]: mask of models on the j-th GPU of group g; used[g]: GPUs of group g opened so far
  // (symmetry: a model may open only the next unused GPU of a group, never a later one).
  const bins = groups.map((g) => new Array<number>(g.length).fill(0));
  const used = groups.map(() => 0);
  const run = (mode: Mode): { score: number; bins: number[][] } | null => {
    let best: { score: number; bins: number[][] } | null = null;
    const assign = (i: number): void => {
      if (i === nModels) {
        let score = 0;
        for (let g = 0; g < groups.length; g++) {
          for (let j = 0; j < used[g]!; j++) {
            const r = searches[g]!.best(bins[g]![j]!, mode);
            if (!r) return;
            score += r.score;
          }
        }
        if (!best || score > best.score + EPS) best = { score, bins: bins.map((b) => [...b]) };
        return;
      }
      groups.forEach((group, g) => {
        if ((group[0]!.profileIndex[i] ?? -1) < 0) return;
        const open = Math.min(used[g]! + 1, group.length);
        for (let j = 0; j < open; j++) {
          const opened = j === used[g];
          if (opened) used[g]! += 1;
          bins[g]![j]! |= 1 << i;
          assign(i + 1);
          bins[g]![j]! &= ~(1 << i);
          if (opened) used[g]! -= 1;
        }
      });
      if (mode === 'goodput') assign(i + 1); // overload: the model may stay unplaced
    };
    assign(0);
    return best;
  };
  const feasibleBest = run('feasible');
  const mode: Mode = feasibleBest ? 'feasible' : 'goodput';
  const chosen = feasibleBest ?? run('goodput');
  const placements: Placement[] = [];
  if (chosen) {
    chosen.bins.forEach((row, g) => {
      row.forEach((mask, j) => {
        if (mask === 0) return;
        const r = searches[g]!.best(mask, mode)!;
        const gpu = groups[g]![j]!;
        let k = 0;
        for (let i = 0; i < nModels; i++) {
          if (!(mask & (1 << i))) continue;
          placements.push({ model: i, gpu: gpu.index, pct: r.pcts[k]!, batch: r.batches[k]! });
          k++;
        }
      });
    });
  }
  placements.sort((a, b) => a.gpu - b.gpu || a.model - b.model);
  const deployment: Deployment = { placements };
  const value = evaluateDeployment(cluster, deployment, rates);
  return {
    deployment,
    feasible: mode === 'feasible',
    throughputPerS: value.throughputPerS,
    goodputPerS: value.goodputPerS,
    leaves: searches.reduce((s, x) => s + x.leaves, 0),
  };
}

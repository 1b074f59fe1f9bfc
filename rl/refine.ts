// Model-based refinement of an allocation (beyond the paper, docs/inss.md): a bounded local search
// that starts from the actor's allocation and moves MPS units between models on a GPU, adds free
// units, or moves a model to another GPU, keeping a move when it raises the predicted reward of
// eq. (3). The actor proposes, the latency model polishes: the actor's output is kept where it is
// already best. Pure; the evaluation budget bounds the decision time.
import type { BdaOptions } from '../src/policy/bda.js';
import type { ClusterInfo, Placement } from '../src/policy/types.js';
import { memoryOnGpu } from '../src/policy/util.js';
import { scorePlacements, type StepOutcome } from './mdp.js';

export interface RefineOptions extends BdaOptions {
  /** Most reward evaluations (each is one BDA over the cluster). */
  readonly budget: number;
}

function sharesValid(cluster: ClusterInfo, ps: readonly Placement[]): boolean {
  const sum = new Array<number>(cluster.gpus.length).fill(0);
  for (const p of ps) sum[p.gpu]! += p.pct;
  for (let g = 0; g < sum.length; g++) {
    if (sum[g]! > 100 + 1e-9) return false;
    const on = ps.filter((p) => p.gpu === g);
    if (on.length > 0 && memoryOnGpu(cluster.gpus[g]!, on) > cluster.gpus[g]!.memMb) return false;
  }
  return ps.every((p) => p.pct > 0 && (cluster.gpus[p.gpu]!.profileIndex[p.model] ?? -1) >= 0);
}

/** Candidate neighbours of an allocation, most promising first (moves that help a model short of capacity). */
function* neighbours(cluster: ClusterInfo, ps: readonly Placement[], short: readonly number[]): Generator<Placement[]> {
  const order = [...ps.keys()].sort((a, b) => short[ps[b]!.model]! - short[ps[a]!.model]!);
  for (const i of order) {
    const p = ps[i]!;
    const gpu = cluster.gpus[p.gpu]!;
    const unit = gpu.mpsUnitPct;
    const used = ps.filter((q) => q.gpu === p.gpu).reduce((s, q) => s + q.pct, 0);
    // Add a free unit.
    if (used + unit <= 100 + 1e-9) yield ps.map((q, k) => (k === i ? { ...q, pct: Math.round((q.pct + unit) * 1e6) / 1e6 } : q));
    // Take a unit from a neighbour on the same GPU.
    for (const [j, q] of ps.entries()) {
      if (j === i || q.gpu !== p.gpu || q.pct - unit < unit - 1e-9) continue;
      yield ps.map((r, k) => (k === i ? { ...r, pct: Math.round((r.pct + unit) * 1e6) / 1e6 } : k === j ? { ...r, pct: Math.round((r.pct - unit) * 1e6) / 1e6 } : r));
    }
    // Move to another GPU, taking what is free there (at least the share it has, if it fits).
    for (const other of cluster.gpus) {
      if (other.index === p.gpu || (other.profileIndex[p.model] ?? -1) < 0) continue;
      const free = 100 - ps.filter((q) => q.gpu === other.index).reduce((s, q) => s + q.pct, 0);
      const pct = Math.floor(free / other.mpsUnitPct + 1e-9) * other.mpsUnitPct;
      if (pct < other.mpsUnitPct) continue;
      yield ps.map((q, k) => (k === i ? { ...q, gpu: other.index, pct: Math.round(pct * 1e6) / 1e6 } : q));
    }
  }
}

/**
 * Best-improvement-first local search from `start`. Returns the best allocation found and its
 * score; never worse than `start`.
 */
export function refine(cluster: ClusterInfo, refPerS: readonly number[], start: readonly Placement[], ratePerS: readonly number[], options: RefineOptions): { placements: Placement[]; outcome: StepOutcome; evaluations: number } {
  let best = start.map((p) => ({ ...p, batch: 1 }));
  let bestOut = scorePlacements(cluster, refPerS, best, ratePerS, options);
  let evaluations = 1;
  let improved = true;
  while (improved && evaluations < options.budget) {
    improved = false;
    const short = cluster.models.map((m) => (ratePerS[m.index]! > 0 ? Math.max(0, 1 - bestOut.capacityPerS[m.index]! / ratePerS[m.index]!) + bestOut.violation[m.index]! : 0));
    for (const cand of neighbours(cluster, best, short)) {
      if (evaluations >= options.budget) break;
      if (!sharesValid(cluster, cand)) continue;
      const out = scorePlacements(cluster, refPerS, cand, ratePerS, options);
      evaluations++;
      if (out.reward > bestOut.reward + 1e-9) {
        best = cand;
        bestOut = out;
        improved = true;
        break; // first improvement: restart from the better allocation
      }
    }
  }
  return { placements: bestOut.deployment.placements.map((p) => ({ ...p })), outcome: bestOut, evaluations };
}

// Model-based refinement of an allocation (beyond the paper, docs/inss.md): a bounded local search
// that starts from the actor's allocation (or the deployment in force) and moves MPS units between
// models on a GPU, adds free units, moves a model to another GPU, or (with `replicas`) gives a model
// a replica on another GPU or drops one, keeping a move when it raises the predicted reward of
// eq. (3) (with the capacity credit of ScoreOptions, when set). The actor proposes, the latency model
// polishes: the actor's output is kept where it is already best. Pure; the evaluation budget bounds the decision time.
import type { ClusterInfo, Placement } from '../src/policy/types.js';
import { type ScoreOptions, scorePlacements, type StepOutcome } from './mdp.js';

export interface RefineOptions extends ScoreOptions {
  /** Most reward evaluations (each is one BDA over the cluster). */
  readonly budget: number;
  /** Also try replicas: a model on a second GPU (or dropping a replica it no longer needs). */
  readonly replicas?: boolean;
}

function sharesValid(cluster: ClusterInfo, ps: readonly Placement[]): boolean {
  // Each GPU's shares and memory summed in placement order (memoryOnGpu's order) in one pass each.
  const sum = new Float64Array(cluster.gpus.length);
  for (const p of ps) sum[p.gpu]! += p.pct;
  for (let g = 0; g < sum.length; g++) if (sum[g]! > 100 + 1e-9) return false;
  const mem = new Float64Array(cluster.gpus.length);
  for (const p of ps) {
    const gpu = cluster.gpus[p.gpu]!;
    mem[p.gpu]! += gpu.model.memoryMb(gpu.profileIndex[p.model]!, p.batch);
  }
  for (let g = 0; g < mem.length; g++) if (mem[g]! > cluster.gpus[g]!.memMb) return false;
  const seen = new Set<number>();
  for (const p of ps) {
    const key = p.model * sum.length + p.gpu;
    if (seen.has(key)) return false; // replicas of a model run on distinct GPUs
    seen.add(key);
  }
  return ps.every((p) => p.pct > 0 && (cluster.gpus[p.gpu]!.profileIndex[p.model] ?? -1) >= 0);
}

const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;

/** Candidate neighbours of an allocation, most promising first (moves that help a model short of capacity). */
function* neighbours(
  cluster: ClusterInfo,
  ps: readonly Placement[],
  short: readonly number[],
  replicas: boolean,
): Generator<Placement[]> {
  const order = [...ps.keys()].sort((a, b) => short[ps[b]!.model]! - short[ps[a]!.model]!);
  // Each GPU's shares in use, summed in placement order.
  const usedOn = new Float64Array(cluster.gpus.length);
  for (const q of ps) usedOn[q.gpu]! += q.pct;
  for (const i of order) {
    const p = ps[i]!;
    const gpu = cluster.gpus[p.gpu]!;
    const unit = gpu.mpsUnitPct;
    // Add a free unit.
    if (usedOn[p.gpu]! + unit <= 100 + 1e-9)
      yield ps.map((q, k) => (k === i ? { ...q, pct: round6(q.pct + unit) } : q));
    // Take a unit from a neighbour on the same GPU.
    for (const [j, q] of ps.entries()) {
      if (j === i || q.gpu !== p.gpu || q.pct - unit < unit - 1e-9) continue;
      yield ps.map((r, k) =>
        k === i ? { ...r, pct: round6(r.pct + unit) } : k === j ? { ...r, pct: round6(r.pct - unit) } : r,
      );
    }
    // Move to another GPU, taking what is free there (at least the share it has, if it fits).
    for (const other of cluster.gpus) {
      if (other.index === p.gpu || (other.profileIndex[p.model] ?? -1) < 0) continue;
      const free = 100 - usedOn[other.index]!;
      const pct = Math.floor(free / other.mpsUnitPct + 1e-9) * other.mpsUnitPct;
      if (pct < other.mpsUnitPct) continue;
      yield ps.map((q, k) => (k === i ? { ...q, gpu: other.index, pct: round6(pct) } : q));
    }
    if (!replicas) continue;
    // Beyond the paper: a replica of the model on another GPU (one queue, several workers), with
    // what is free there, or with one unit taken from the largest share there.
    const hosts = new Set(ps.filter((q) => q.model === p.model).map((q) => q.gpu));
    if (hosts.size > 1 && short[p.model]! <= 0) yield ps.filter((_, k) => k !== i); // drop a replica it no longer needs
    if (short[p.model]! <= 0) continue;
    for (const other of cluster.gpus) {
      if (hosts.has(other.index) || (other.profileIndex[p.model] ?? -1) < 0) continue;
      const on = [...ps.keys()].filter((k) => ps[k]!.gpu === other.index);
      const free = 100 - on.reduce((s, k) => s + ps[k]!.pct, 0);
      const unit = other.mpsUnitPct;
      const pct = Math.floor(free / unit + 1e-9) * unit;
      if (pct >= unit - 1e-9) {
        yield [...ps, { model: p.model, gpu: other.index, pct: round6(pct), batch: 1 }];
        continue;
      }
      const donor = on.sort((a, b) => ps[b]!.pct - ps[a]!.pct)[0];
      if (donor === undefined || ps[donor]!.pct < 2 * unit - 1e-9) continue;
      yield [
        ...ps.map((q, k) => (k === donor ? { ...q, pct: round6(q.pct - unit) } : q)),
        { model: p.model, gpu: other.index, pct: round6(unit), batch: 1 },
      ];
    }
  }
}

/**
 * First-improvement local search from `start`. Returns the best allocation found and its outcome;
 * never worse than `start`.
 */
export function refine(
  cluster: ClusterInfo,
  refPerS: readonly number[],
  start: readonly Placement[],
  ratePerS: readonly number[],
  options: RefineOptions,
): { placements: Placement[]; outcome: StepOutcome; evaluations: number } {
  let best = start.map((p) => ({ ...p, batch: 1 }));
  let bestOut = scorePlacements(cluster, refPerS, best, ratePerS, options);
  let evaluations = 1;
  let improved = true;
  while (improved && evaluations < options.budget) {
    improved = false;
    const short = cluster.models.map((m) =>
      ratePerS[m.index]! > 0
        ? Math.max(0, 1 - bestOut.capacityPerS[m.index]! / ratePerS[m.index]!) + bestOut.violation[m.index]!
        : 0,
    );
    for (const cand of neighbours(cluster, best, short, options.replicas ?? false)) {
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

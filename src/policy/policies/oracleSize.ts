// The oracle's size limits (docs/policies/oracle.md): how many share splits and placements its exhaustive
// search (oracleSearch.ts) would enumerate on a cluster, and whether that is within the documented limit.
import type { ClusterInfo, GpuInfo } from '../types.js';
import { shareLevels } from '../util.js';

/** Hard caps on the instance, whatever the share units. */
export const ORACLE_MAX_MODELS = 8;
export const ORACLE_MAX_GPUS = 6;
/** Cap on share splits before pruning: sum over GPU profiles and model sets S of C(levels, |S|). */
export const ORACLE_MAX_SPLITS = 2_000_000;
/** Cap on placements before symmetry pruning: (GPUs + 1)^models (the +1 is "unplaced", in overload). */
export const ORACLE_MAX_PLACEMENTS = 2_000_000;

function choose(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return Math.round(c);
}

export interface OracleSize {
  readonly models: number;
  readonly gpus: number;
  /** Share splits the search would evaluate without pruning. */
  readonly splits: number;
  /** Placements it would enumerate without symmetry pruning. */
  readonly placements: number;
}

/** GPUs grouped by profile, in order of their first GPU; GPUs of one group are interchangeable. */
export function profileGroups(cluster: ClusterInfo): GpuInfo[][] {
  const groups = new Map<string, GpuInfo[]>();
  for (const g of cluster.gpus) {
    const list = groups.get(g.profileId) ?? [];
    list.push(g);
    groups.set(g.profileId, list);
  }
  return [...groups.values()];
}

/** How big the search is for this cluster (before pruning). */
export function oracleSize(cluster: ClusterInfo): OracleSize {
  let splits = 0;
  for (const group of profileGroups(cluster)) {
    const rep = group[0]!;
    const m = cluster.models.filter((x) => (rep.profileIndex[x.index] ?? -1) >= 0).length;
    const levels = shareLevels(rep).length;
    for (let s = 1; s <= m; s++) splits += choose(m, s) * choose(levels, s);
  }
  return {
    models: cluster.models.length,
    gpus: cluster.gpus.length,
    splits,
    placements: (cluster.gpus.length + 1) ** cluster.models.length,
  };
}

/** Why the instance is over the documented size limit (naming the size), or null when the search can run it. */
export function oracleSizeProblem(cluster: ClusterInfo, maxSplits = ORACLE_MAX_SPLITS): string | null {
  const size = oracleSize(cluster);
  const what = `${size.models} models on ${size.gpus} GPUs`;
  if (size.models > ORACLE_MAX_MODELS || size.gpus > ORACLE_MAX_GPUS)
    return `instance too large: ${what} (limit ${ORACLE_MAX_MODELS} models, ${ORACLE_MAX_GPUS} GPUs)`;
  if (size.splits > maxSplits)
    return (
      `instance too large: ${what} means ${size.splits.toExponential(2)} share splits to search ` +
      `(limit ${maxSplits.toExponential(2)})`
    );
  if (size.placements > ORACLE_MAX_PLACEMENTS)
    return (
      `instance too large: ${what} means ${size.placements.toExponential(2)} placements ` +
      `(limit ${ORACLE_MAX_PLACEMENTS.toExponential(2)})`
    );
  return null;
}

/**
 * Throws a RangeError naming the size when the instance is over the documented limit: a caller that
 * searches without asking `oracleSizeProblem` (or the factory's `supports`) first has a bug.
 */
export function assertOracleSize(cluster: ClusterInfo, maxSplits = ORACLE_MAX_SPLITS): OracleSize {
  const problem = oracleSizeProblem(cluster, maxSplits);
  if (problem !== null) throw new RangeError(`oracle: ${problem}`);
  return oracleSize(cluster);
}

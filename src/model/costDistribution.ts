// Models whose cost depends on the input (Orloj, docs/latency-model.md "Input-dependent cost"): an
// empirical distribution of a sample's cost relative to the profiled one, as (relative cost, weight)
// classes such as sequence-length buckets, normalised so that the mean cost is 1 (the profile times a
// sample of mean cost). A batch is padded to its longest sample, as PyTorch and ONNX Runtime run a batch
// of variable-length sequences without ragged kernels, so a batch of b samples costs what b samples of
// its most expensive one cost: its time is the profile's t_inf(b) times the max of b independent draws.
// Pure; the simulator draws with it and the batch decision and dispatch rule plan with it.

/** One class of the distribution: a sample's cost relative to the others', and how often it comes. */
export interface CostClass {
  readonly relative: number;
  readonly weight: number;
}

/** A normalised distribution: costs ascending with mean 1, and the cumulative probability at each. */
export interface CostDistribution {
  readonly costs: Float64Array;
  readonly cdf: Float64Array;
}

/**
 * Normalises `classes` (any positive relative costs and weights, e.g. bucket lengths and counts):
 * probabilities sum to 1, mean cost 1; equal costs merge. Throws a RangeError naming the class whose
 * cost or weight is not a positive finite number.
 */
export function costDistribution(classes: readonly CostClass[]): CostDistribution {
  if (classes.length === 0) throw new RangeError('classes: at least one class is needed');
  classes.forEach((c, i) => {
    if (!(Number.isFinite(c.relative) && c.relative > 0))
      throw new RangeError(`classes[${i}].relative: must be a positive number, got ${c.relative}`);
    if (!(Number.isFinite(c.weight) && c.weight > 0))
      throw new RangeError(`classes[${i}].weight: must be a positive number, got ${c.weight}`);
  });
  const total = classes.reduce((s, c) => s + c.weight, 0);
  const mean = classes.reduce((s, c) => s + c.relative * c.weight, 0) / total;
  const merged = new Map<number, number>();
  for (const c of classes) merged.set(c.relative, (merged.get(c.relative) ?? 0) + c.weight);
  const sorted = [...merged.entries()].sort((a, b) => a[0] - b[0]);
  const costs = new Float64Array(sorted.length);
  const cdf = new Float64Array(sorted.length);
  let acc = 0;
  sorted.forEach(([relative, weight], k) => {
    costs[k] = relative / mean;
    acc += weight / total;
    cdf[k] = acc;
  });
  cdf[cdf.length - 1] = 1; // rounding must not leave the last class unreachable
  return { costs, cdf };
}

/**
 * The q-quantile of the max of `batch` draws (the batch's cost factor): the smallest class cost c with
 * P(max <= c) = F(c)^batch >= q. q in (0, 1].
 */
export function maxCostQuantile(d: CostDistribution, batch: number, q: number): number {
  for (let k = 0; k < d.costs.length; k++) if (d.cdf[k]! ** batch >= q) return d.costs[k]!;
  return d.costs[d.costs.length - 1]!;
}

/** The mean of the max of `batch` draws: sum over classes of c_k (F(c_k)^b - F(c_(k-1))^b). */
export function maxCostMean(d: CostDistribution, batch: number): number {
  let mean = 0;
  let below = 0;
  for (let k = 0; k < d.costs.length; k++) {
    const at = d.cdf[k]! ** batch;
    mean += d.costs[k]! * (at - below);
    below = at;
  }
  return mean;
}

/** One draw of a sample's cost: the class whose cumulative probability first reaches `u` in [0, 1). */
export function drawCost(d: CostDistribution, u: number): number {
  for (let k = 0; k < d.costs.length; k++) if (u < d.cdf[k]!) return d.costs[k]!;
  return d.costs[d.costs.length - 1]!;
}

/**
 * A batch's cost factor: each of its `batch` samples draws its class (`uniform` in [0, 1) per sample)
 * and the batch is padded to the most expensive. The simulator's ground truth times every batch of a
 * model with a distribution by this.
 */
export function drawBatchCost(d: CostDistribution, batch: number, uniform: () => number): number {
  let max = 0;
  for (let i = 0; i < batch; i++) {
    const c = drawCost(d, uniform());
    if (c > max) max = c;
  }
  return max;
}

/** Most batch sizes a plan tabulates (the dispatch rule's prediction table's, src/serving/prediction.ts). */
export const COST_PLAN_BATCHES = 64;

/**
 * What the batch decision and the dispatch rule multiply a batch's predicted t_inf by, per batch size
 * (index b, 1..COST_PLAN_BATCHES - 1; beyond, the last): `latency`, the batch cost's `quantile`, for
 * whether a batch finishes in time (Orloj plans against the tail its SLO attainment asks for);
 * `throughput`, its mean, for whether the worker keeps up with the arrivals.
 */
export interface CostPlan {
  readonly quantile: number;
  readonly latency: Float64Array;
  readonly throughput: Float64Array;
}

export function costPlan(d: CostDistribution, quantile: number): CostPlan {
  if (!(quantile > 0 && quantile <= 1)) throw new RangeError(`quantile: must be in (0, 1], got ${quantile}`);
  const latency = new Float64Array(COST_PLAN_BATCHES);
  const throughput = new Float64Array(COST_PLAN_BATCHES);
  latency[0] = throughput[0] = 1;
  for (let b = 1; b < COST_PLAN_BATCHES; b++) {
    latency[b] = maxCostQuantile(d, b, quantile);
    throughput[b] = maxCostMean(d, b);
  }
  return { quantile, latency, throughput };
}

/** A plan's factor at batch `b` (the last tabulated one beyond the table); 1 without a plan. */
export function planFactor(table: Float64Array | undefined, b: number): number {
  if (table === undefined) return 1;
  return table[Math.min(Math.max(1, Math.round(b)), COST_PLAN_BATCHES - 1)]!;
}

/**
 * A served model's input-dependent cost: its distribution (what the simulator draws from) and, where
 * the batching is distribution-aware, the plan derived from it. Without a plan the model is batched as
 * if every sample cost the mean (the mean-cost rule: the profile's t_inf as it is).
 */
export interface ServedCost {
  readonly distribution: CostDistribution;
  readonly plan?: CostPlan;
}

/** How models with a cost distribution are batched: against the batch time's tail, or its mean-cost time. */
export const COST_BATCHING_MODES = ['tail', 'mean'] as const;
export type CostBatching = (typeof COST_BATCHING_MODES)[number];

export function servedCost(classes: readonly CostClass[], batching: CostBatching, quantile: number): ServedCost {
  const distribution = costDistribution(classes);
  return batching === 'tail' ? { distribution, plan: costPlan(distribution, quantile) } : { distribution };
}

// The pooled-deployment score (docs/inss.md, "Pooling"): every model's queue is one pool of servers, its
// placements. A server on an `mps` GPU is a partition: its batch is BDA's (bda.ts) for the part of the rate
// it carries (or, where BDA finds none, the largest batch whose worst task meets the SLO), its service time
// t_inf at that batch with its co-located partitions' interference, its rate b / t_inf. A server on a
// `timeshare` GPU runs at the whole GPU with time sharing's batch cap (timeshare.ts: 2 t_inf <= SLO) and its
// batches meet the batches of the GPU's other models that are running as the GPU's pooled mode says
// (src/model/pooledGpu.ts, the rule the simulator and the live system follow): overlapping, timed at an
// even split of the GPU with the latency model's interference, never slower than the smaller of fair turns
// and the series; serial, after the rest of theirs (half their time in the mean), and a task whose slack
// the rest of another model's batch outlasts misses; in expectation over how many of the others are busy
// (each for its busy fraction at its slowed batch time). Its mean batch is what the shared dispatch rule
// with timeout 0 runs: what arrived while the previous batch ran, or one after an idle spell
// (gatedMeanBatch), capped.
// A model's rate is split over its servers in proportion to their rates, and the pool is SERF's
// M/D_interf/c queue (queueing.ts). A task misses when its wait exceeds SLO x sloFraction minus its batch's
// time, by the larger of the estimates below (missesOf). A pool past utilisation 1 misses everything: a bound,
// pessimistic; with `expectedMisses` the misses the dispatch rule leaves instead (M/M/c+D, shrinking batches).
// score = expected missed tasks/s + UTILISATION_WEIGHT x (rate-weighted utilisation): among deployments
// that miss nothing at the planned rates, the one with the most room left wins.
import { cosmetatosFactor, impatientMiss, poolQueue, type QueueEstimate, waitExceeds } from '../queueing.js';
import { TIMESHARE_MAX_QUEUE_DELAY_MS } from '../policies/timeshare.js';
import type { ClusterInfo, Deployment, ServedModel } from '../types.js';
import { deploymentProblem } from '../util.js';
import { pooledBatchMiss } from './batching.js';
import { type PoolingContext, poolingContext } from './context.js';
import { settlePooled } from './overlap.js';
import { buildServers, modesOf, type Servers } from './servers.js';

/** Weight of the utilisation term against missed tasks/s (a tie-break among plans that miss nothing). */
export const UTILISATION_WEIGHT = 0.01;

export interface PoolingOptions {
  /** Plan each task's latency against SLO x this (inss: SLO_FRACTION). */
  readonly sloFraction: number;
  /** Predict with interference between co-located MPS partitions (default true). */
  readonly interference?: boolean;
  /** Most deployment evaluations of the local search. */
  readonly budget: number;
  /**
   * Per model, the squared coefficient of variation of its inter-arrival gaps (the monitor's
   * `arrivalCv2`; absent: Poisson, 1). A pool's mean wait scales with it (Allen-Cunneen's G/G/c
   * approximation against M/D/c: (ca^2 + cs^2) / (1 + cs^2), cs^2 = 0 for deterministic batches).
   */
  readonly arrivalCv2?: readonly number[];
  /**
   * Score the misses the dispatch rule leaves rather than a bound on them (docs/inss.md, "The attainment
   * target"): a task that would wait past its slack is dropped or served late behind the on-time ones, so
   * the pool's tail is M/M/c+D's (`impatientMiss`, finite past utilisation 1), and a lone pooled server's
   * batches shrink so that their oldest task finishes in time (`pooledBatchMiss`). Absent or false: the
   * bound, as if no late task left the queue and every batch ran full.
   */
  readonly expectedMisses?: boolean;
}

export interface PlanScore {
  /** The deployment with its batch sizes set (BDA's on MPS GPUs, time sharing's on pooled ones). */
  readonly deployment: Deployment;
  /** Expected missed tasks/s at the planned rates; Infinity when the deployment is infeasible. */
  readonly missedPerS: number;
  readonly score: number;
  /** Per model: predicted fraction of its tasks that miss the SLO. */
  readonly violation: number[];
  /** Per model: its pool's utilisation lambda / (c mu). */
  readonly utilisation: number[];
  /** Per placement of `deployment` (its order): the mean batch its server is expected to run at the planned rates. */
  readonly meanBatch: number[];
  /** Per placement of `deployment`: that batch's expected time (ms), with interference or overlap. */
  readonly batchMs: number[];
}

/**
 * Scores a deployment at `ratePerS` (its MPS batches are re-chosen by BDA for the rates; pooled GPUs use
 * time sharing's). `pooling`: the caller's PoolingContext for repeated scoring, or the cluster alone.
 */
export function scoreDeployment(
  pooling: PoolingContext | ClusterInfo,
  d: Deployment,
  ratePerS: readonly number[],
  options: PoolingOptions,
): PlanScore {
  const ctx = poolingContext(pooling);
  const cluster = ctx.cluster;
  const modes = modesOf(cluster, d);
  const s = buildServers(ctx, d.placements, modes, ratePerS, options.interference ?? true, options.sloFraction);
  if (!s) return infeasible(d, cluster.models.length);
  settlePooled(ctx, s, ratePerS);
  const misses = missesOf(ctx, s, ratePerS, options);
  return scored(cluster, s, misses);
}

interface Misses {
  readonly violation: number[];
  readonly utilisation: number[];
  /** Expected missed tasks/s over every model. */
  readonly missed: number;
  /** Rate-weighted utilisation (each pool's capped at 2; a model with no server counts 2). */
  readonly utilTerm: number;
}

/** Each model's predicted miss fraction and its pool's utilisation, from the settled servers. */
function missesOf(ctx: PoolingContext, s: Servers, ratePerS: readonly number[], options: PoolingOptions): Misses {
  const nModels = ctx.cluster.models.length;
  const violation = new Array<number>(nModels).fill(0);
  const utilisation = new Array<number>(nModels).fill(0);
  let missed = 0;
  let utilTerm = 0;
  for (const m of ctx.cluster.models) {
    const rate = ratePerS[m.index]!;
    if (!(rate > 0)) continue;
    const mine = s.byModel[m.index]!;
    const c = mine.length;
    const muSum = mine.reduce((sum, i) => sum + s.effMu[i]!, 0);
    if (c === 0 || !(muSum > 0)) {
      violation[m.index] = 1;
      utilisation[m.index] = Infinity;
      missed += rate;
      utilTerm += rate * 2;
      continue;
    }
    const q = burstyQueue(poolQueue(rate, new Array<number>(c).fill(muSum / c)), options.arrivalCv2?.[m.index]);
    violation[m.index] = Math.min(1, poolMiss(ctx, s, m, rate, q, options, muSum));
    utilisation[m.index] = q.utilisation;
    missed += rate * violation[m.index]!;
    utilTerm += rate * Math.min(2, q.utilisation);
  }
  return { violation, utilisation, missed, utilTerm };
}

/**
 * The fraction of model `m`'s tasks (at `rate`, its pool's queue `q`) that miss: per server, weighted by
 * its share of the rate, the largest of the queue's waiting-time tail, a batching server's wait, the
 * batch-size fluctuation of a lone pooled server (pooledBatchMiss) and a serial GPU's turns.
 */
function poolMiss(
  ctx: PoolingContext,
  s: Servers,
  m: ServedModel,
  rate: number,
  q: QueueEstimate,
  options: PoolingOptions,
  muSum: number,
): number {
  const { ps, modes, lam, effMs, fill } = s;
  const mine = s.byModel[m.index]!;
  const c = mine.length;
  const budgetMs = m.sloMs * options.sloFraction;
  const expected = options.expectedMisses ?? false;
  // Waits scale as poolQueue's mean wait does: Cosmetatos' factor for deterministic batches, the arrivals' cv^2.
  const waitScale = expected
    ? cosmetatosFactor(c, Math.min(1, q.utilisation)) * burstiness(options.arrivalCv2?.[m.index])
    : 1;
  // A batching server: a task that finds every server of its pool busy waits for the first to
  // finish its batch (a residual uniform on [0, t_inf]), then runs in the next batch. Each server
  // is busy a fraction lambda_i t_inf(b) / b of the time (b its batch at this load).
  const busy = mine.map((k) => Math.min(1, (lam[k]! * effMs[k]!) / (1000 * fill[k]!)));
  let v = 0;
  for (const i of mine) {
    const gpu = ctx.cluster.gpus[ps[i]!.gpu]!;
    const pooled = modes[ps[i]!.gpu] === 'timeshare';
    const slackMs = budgetMs - effMs[i]!;
    let batchMiss = 1;
    if (slackMs >= 0) mine.forEach((k, j) => (batchMiss *= busy[j]! * Math.max(0, 1 - slackMs / effMs[k]!)));
    const queueMiss = expected
      ? impatientMiss(rate, c, muSum / c, slackMs / 1000, waitScale)
      : q.utilisation >= 1
        ? 1
        : waitExceeds(q, slackMs / 1000);
    const dynamicMiss =
      c === 1 && pooled
        ? pooledBatchMiss(ctx, gpu, ps[i]!.model, lam[i]!, fill[i]!, s.batch[i]!, s.slow[i]!, budgetMs, expected)
        : 0;
    const turnMiss = pooled && gpu.pooled === 'serial' ? serialTurnMiss(ctx, s, i, budgetMs) : 0;
    v += (lam[i]! / rate) * Math.max(queueMiss, batchMiss, dynamicMiss, turnMiss);
  }
  return v;
}

/**
 * On a serial pooled GPU a task's batch waits for the batch of another model running when it is ready:
 * the rest of it, uniform over its time. It misses when that rest exceeds its slack (its budget less its
 * own batch alone); each other model's server busy for its share of the GPU.
 */
function serialTurnMiss(ctx: PoolingContext, s: Servers, i: number, budgetMs: number): number {
  const { ps, lam, fill } = s;
  const g = ctx.cluster.gpus[ps[i]!.gpu]!;
  const slackMs = budgetMs - ctx.soloMsAt(g, ps[i]!.model, fill[i]!);
  if (slackMs < 0) return 1;
  let none = 1;
  for (const j of s.byGpu[g.index]!) {
    if (j === i || ps[j]!.model === ps[i]!.model) continue;
    const t = ctx.soloMsAt(g, ps[j]!.model, fill[j]!);
    none *= 1 - Math.min(1, (lam[j]! * t) / (1000 * fill[j]!)) * Math.max(0, 1 - slackMs / t);
  }
  return 1 - none;
}

/** A model's squared CV of arrivals for the queue (absent or not finite: Poisson, 1). */
function burstiness(cv2: number | undefined): number {
  return cv2 === undefined || !Number.isFinite(cv2) ? 1 : Math.max(0, cv2);
}

/**
 * A pool's queue estimate for arrivals of squared CV `cv2` (absent or NaN: Poisson): its mean wait
 * scaled by cv2 (see PoolingOptions.arrivalCv2).
 */
function burstyQueue(q: QueueEstimate, cv2: number | undefined): QueueEstimate {
  const k = burstiness(cv2);
  return k === 1 || !Number.isFinite(q.meanWaitS) ? q : { ...q, meanWaitS: q.meanWaitS * k };
}

/** The scored deployment: placements by GPU then model, batches set, infeasible if it breaks a rule. */
function scored(cluster: ClusterInfo, s: Servers, misses: Misses): PlanScore {
  const { ps, modes, batch } = s;
  const order = ps.map((_, i) => i).sort((a, b) => ps[a]!.gpu - ps[b]!.gpu || ps[a]!.model - ps[b]!.model);
  const placements = order.map((i) => {
    const p = ps[i]!;
    return modes[p.gpu] === 'timeshare'
      ? { model: p.model, gpu: p.gpu, pct: 100, batch: batch[i]!, timeoutMs: TIMESHARE_MAX_QUEUE_DELAY_MS }
      : { model: p.model, gpu: p.gpu, pct: p.pct, batch: batch[i]! };
  });
  const deployment: Deployment = modes.some((x) => x === 'timeshare')
    ? { placements, gpuModes: [...modes] }
    : { placements };
  if (deploymentProblem(cluster, deployment) !== null) return infeasible(deployment, cluster.models.length);
  return {
    deployment,
    missedPerS: misses.missed,
    score: misses.missed + UTILISATION_WEIGHT * misses.utilTerm,
    violation: misses.violation,
    utilisation: misses.utilisation,
    meanBatch: order.map((i) => s.fill[i]!),
    batchMs: order.map((i) => s.effMs[i]!),
  };
}

/**
 * True when scoreDeployment would surely find `d` infeasible whatever batches it chooses: a
 * placement on a missing GPU or of a model the GPU's profile lacks, a model twice on one GPU, MPS
 * shares out of range or over 100% on a GPU, or a GPU's memory exceeded with its pooled models at
 * time sharing's batches and its partitions at batch 1 (the least any batch needs). A cheap exact
 * pre-check: false says nothing.
 */
export function cannotFit(pooling: PoolingContext | ClusterInfo, d: Deployment): boolean {
  const ctx = poolingContext(pooling);
  const cluster = ctx.cluster;
  const modes = modesOf(cluster, d);
  const pct = new Float64Array(cluster.gpus.length);
  const mem = new Float64Array(cluster.gpus.length);
  const seen = new Uint8Array(cluster.gpus.length * cluster.models.length);
  for (const p of d.placements) {
    const gpu = cluster.gpus[p.gpu];
    if (!gpu || !cluster.models[p.model]) return true;
    const idx = gpu.profileIndex[p.model] ?? -1;
    if (idx < 0) return true;
    const at = p.gpu * cluster.models.length + p.model;
    if (seen[at]) return true;
    seen[at] = 1;
    if (modes[p.gpu] === 'timeshare') mem[p.gpu]! += gpu.model.memoryMb(idx, ctx.pooledServer(gpu, p.model).batch);
    else {
      if (!(p.pct > 0 && p.pct <= 100)) return true;
      pct[p.gpu]! += p.pct;
      mem[p.gpu]! += gpu.model.memoryMb(idx, 1);
    }
  }
  for (const g of cluster.gpus) if (pct[g.index]! > 100 + 1e-6 || mem[g.index]! > g.memMb + 1e-6) return true;
  return false;
}

/** The score of a deployment that cannot run: every task missed. */
export function infeasible(d: Deployment, nModels: number): PlanScore {
  return {
    deployment: d,
    missedPerS: Infinity,
    score: Infinity,
    violation: new Array<number>(nModels).fill(1),
    utilisation: new Array<number>(nModels).fill(Infinity),
    meanBatch: d.placements.map(() => NaN),
    batchMs: d.placements.map(() => NaN),
  };
}

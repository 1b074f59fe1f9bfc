// The pooling planner (issue 12; docs/inss.md, "Pooling"): chooses per GPU between MPS partitions
// and time-shared pooling, scoring whole deployments with the latency model and a queueing model of
// each model's servers (queueing.ts). Pure and deterministic.
//
// A deployment's score: every model's queue is one pool of servers, its placements. A server on an
// `mps` GPU is a partition: its batch is BDA's (bda.ts) for the part of the rate it carries (or,
// where BDA finds none, the largest batch whose worst task meets the SLO), its service time t_inf at
// that batch with its co-located partitions' interference, its rate b / t_inf. A server on a
// `timeshare` GPU runs at the whole GPU with time sharing's batch cap (timeshare.ts: 2 t_inf <= SLO)
// and its batches meet the batches of the GPU's other models that are running as the GPU's pooled
// mode says (src/model/pooledGpu.ts, the rule the simulator and the live system follow): overlapping,
// timed at an even split of the GPU with the latency model's interference, never slower than the
// smaller of fair turns and the series; serial, after the rest of theirs (half their time in the
// mean), and a task whose slack the rest of another model's batch outlasts misses; in expectation over
// how many of the others are busy (each for its busy fraction at its slowed batch time). Its mean batch is what the
// shared dispatch rule with timeout 0 runs: what arrived while the previous batch ran, or one after an
// idle spell (gatedMeanBatch), capped.
// A model's rate is split over its servers in proportion to their rates (what one shared queue with
// free workers pulling from it does), and the pool is SERF's M/D_interf/c queue (queueing.ts). A
// task misses when its wait exceeds SLO x sloFraction minus its batch's time, by the larger of two
// estimates: the queue's waiting-time tail, and a batching server's (a task that finds every server
// of its pool busy waits for the first to finish a batch, a residual uniform on [0, t_inf]). A pool
// past utilisation 1 misses everything.
// score = expected missed tasks/s + UTILISATION_WEIGHT x (rate-weighted utilisation): among
// deployments that miss nothing at the planned rates, the one with the most room left wins.
//
// Candidates: timeshare's own deployment (timesharePlan, so the planner is never worse than time
// sharing by its own score), the MPS plans it is given (the actor's refined allocation, or a greedy
// partition refined on the latency model), each plan's assignment pooled (every GPU it uses pooled
// over the models it gave that GPU: pooledAssignment), hybrids of each (the first k GPUs pooled over
// every model that fits, the rest keeping their partitions), and a bounded first-improvement local
// search from the best (add or drop a model on a pooled GPU, pool a partitioned GPU, partition a
// pooled one).
import { pooledMs, pooledSharePct } from '../model/pooledGpu.js';
import { bda, BDA_MAX_BATCH } from './bda.js';
import { poolQueue, type QueueEstimate, waitExceeds } from './queueing.js';
import { timeshareMaxBatch, timesharePlan, TIMESHARE_MAX_QUEUE_DELAY_MS } from './policies/timeshare.js';
import type { ClusterInfo, Deployment, GpuInfo, GpuMode, Placement } from './types.js';
import { deploymentProblem, memoryOnGpu, predictOnGpu } from './util.js';

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

const timeshareBatchMemo = new WeakMap<ClusterInfo, Map<number, { batch: number; ms: number }>>();

/** Time sharing's batch for a model on a GPU and its solo t_inf there (memoised per cluster). */
function pooledServer(cluster: ClusterInfo, gpu: GpuInfo, model: number): { batch: number; ms: number } {
  let memo = timeshareBatchMemo.get(cluster);
  if (!memo) timeshareBatchMemo.set(cluster, (memo = new Map<number, { batch: number; ms: number }>()));
  const key = gpu.index * 4096 + model;
  let s = memo.get(key);
  if (!s) {
    const batch = timeshareMaxBatch(gpu, model, cluster.models[model]!.sloMs);
    s = { batch, ms: predictOnGpu(gpu, [{ model, batch, pct: 100 }])[0]! };
    memo.set(key, s);
  }
  return s;
}

/** Most passes of the pooled servers' fixed point (batch, overlap slowdown, rate split). */
const POOLED_PASSES = 8;

/** Relative change below which the fixed point's batches, slowdowns and rate split count as settled. */
const SETTLED = 1e-3;

/** Most batches a pooled-GPU server is assumed to overlap with at once (itself included). */
const MAX_OVERLAP = 4;

/** Most overlap times memoised per cluster (~10 MB): a long-running scheduler sees ever more batch mixes. */
const OVERLAP_MEMO_MAX = 100_000;

interface Memo {
  /** Per GPU: the first GPU of its profile and pooled mode (GPUs of one profile share one latency model, so one memo per mode). */
  readonly kind: Int32Array;
  /** soloIn by (GPU kind, model, batch 1..BDA_MAX_BATCH); NaN: not computed yet. */
  readonly solo: Float64Array;
  /** Entries of `solo` per GPU: models x (BDA_MAX_BATCH + 1). */
  readonly perGpu: number;
  /** overlapMs by a numeric key of (GPU kind, models, batches), or a string one on large clusters;
   * cleared when it reaches OVERLAP_MEMO_MAX entries (the batches seen drift with the load). */
  readonly overlap: Map<number | string, number>;
  /** Whether overlap keys fit in a number exactly (up to 64 GPUs and 64 models). */
  readonly numericKeys: boolean;
}

const memos = new WeakMap<ClusterInfo, Memo>();

function memoOf(cluster: ClusterInfo): Memo {
  let m = memos.get(cluster);
  if (!m) {
    const perGpu = cluster.models.length * (BDA_MAX_BATCH + 1);
    const kind = Int32Array.from(cluster.gpus, (g) =>
      cluster.gpus.findIndex((x) => x.profileId === g.profileId && x.pooled === g.pooled),
    );
    m = {
      kind,
      solo: new Float64Array(cluster.gpus.length * perGpu).fill(NaN),
      perGpu,
      overlap: new Map<number | string, number>(),
      numericKeys: cluster.gpus.length <= 64 && cluster.models.length <= 64,
    };
    memos.set(cluster, m);
  }
  return m;
}

/** t_inf (ms) of a model alone at the whole GPU at a batch (memoised per cluster). */
function soloIn(memo: Memo, gpu: GpuInfo, model: number, batch: number): number {
  const key = memo.kind[gpu.index]! * memo.perGpu + model * (BDA_MAX_BATCH + 1) + batch;
  let ms = memo.solo[key]!;
  if (Number.isNaN(ms)) memo.solo[key] = ms = predictOnGpu(gpu, [{ model, batch, pct: 100 }])[0]!;
  return ms;
}

/** soloIn at a fractional batch (a mean batch): linear between the two whole batches around it. */
function soloMsAt(memo: Memo, gpu: GpuInfo, model: number, batch: number): number {
  const lo = Math.max(1, Math.floor(batch));
  const hi = Math.min(BDA_MAX_BATCH, lo + 1);
  const t = soloIn(memo, gpu, model, lo);
  return hi === lo ? t : t + (batch - lo) * (soloIn(memo, gpu, model, hi) - t);
}

/**
 * The mean batch a pooled server runs under the shared dispatch rule with time sharing's timeout 0
 * (src/sim/dispatch.ts: a free worker takes whatever is queued, up to its cap): a batch holds what
 * arrived while the previous one ran, Poisson with mean x = lambda t(previous), or, when nothing did
 * (probability e^-x), the server idles and the next arrival starts a batch of one. So the mean batch
 * m solves m = x + e^-x with x = lambda slow t(m), between 1 and the cap. (The rounded-up fixed point
 * b = ceil(lambda t(b)) it replaces counted every server as always busy: on paper-8 it gave batches
 * 2-3x what the simulator runs, alexnet 6 against 2.1, vgg19 15 against 5.7, at 1.25x.)
 */
function gatedMeanBatch(
  memo: Memo,
  gpu: GpuInfo,
  model: number,
  lambdaPerS: number,
  slow: number,
  cap: number,
  start: number,
): number {
  const perMs = (lambdaPerS * slow) / 1000;
  let m = Math.min(cap, Math.max(1, start));
  // Newton's method on m - f(m), f(m) = x + e^-x, from the previous pass's batch: t is linear
  // between whole batches, so this settles in a step or two; where f's slope nears 1 (the batches
  // grow to the cap) it falls back to plain iteration.
  for (let it = 0; it < 8; it++) {
    const lo = Math.min(Math.floor(m), BDA_MAX_BATCH);
    const hi = Math.min(BDA_MAX_BATCH, lo + 1);
    const tLo = soloIn(memo, gpu, model, lo);
    const slope = hi === lo ? 0 : soloIn(memo, gpu, model, hi) - tLo;
    const x = perMs * (tLo + (m - lo) * slope);
    const e = Math.exp(-x);
    const f = Math.min(cap, Math.max(1, x + e));
    if (Math.abs(f - m) < 1e-3) return f;
    const df = perMs * slope * (1 - e);
    m = Math.min(cap, Math.max(1, df < 0.9 ? m + (f - m) / (1 - df) : f));
  }
  return m;
}

/** The members of an overlap for overlapMs: model and (whole) batch of each, the first the one timed. */
const overlapMembers = { models: new Int32Array(MAX_OVERLAP), batches: new Int32Array(MAX_OVERLAP) };

/**
 * t_inf (ms) of the first `count` of overlapMembers (the first of them timed) running at once on a
 * pooled GPU, by the GPU's mode (src/model/pooledGpu.ts, the simulator's and the live system's rule):
 * overlapping, an even split of the GPU with the latency model's interference, never more than the
 * smaller of its solo time times `count` (fair turns) and the series; serial, its solo time after the
 * rest of the others' (half their time in the mean). Memoised per cluster.
 */
function overlapMs(memo: Memo, gpu: GpuInfo, count: number): number {
  const { models, batches } = overlapMembers;
  let key: number | string = memo.kind[gpu.index]!;
  if (memo.numericKeys) {
    for (let k = 0; k < count; k++) key = key * memo.perGpu + models[k]! * (BDA_MAX_BATCH + 1) + batches[k]!;
    key = key * (MAX_OVERLAP + 1) + count;
  } else
    key = `${memo.kind[gpu.index]!}|${models.subarray(0, count).join(',')}|${batches.subarray(0, count).join(',')}`;
  let ms = memo.overlap.get(key);
  if (ms === undefined) {
    const pct = pooledSharePct(count);
    const members: Placement[] = [];
    let series = 0;
    for (let k = 0; k < count; k++) {
      members.push({ model: models[k]!, gpu: gpu.index, batch: batches[k]!, pct });
      series += soloIn(memo, gpu, models[k]!, batches[k]!);
    }
    ms = pooledMs(
      gpu.pooled,
      gpu.pooled === 'serial' ? series : predictOnGpu(gpu, members)[0]!,
      soloIn(memo, gpu, models[0]!, batches[0]!),
      count,
      series,
    );
    if (memo.overlap.size >= OVERLAP_MEMO_MAX) memo.overlap.clear();
    memo.overlap.set(key, ms);
  }
  return ms;
}

/** scoreDeployment's per-pass scratch (see there), grown to the widest pooled GPU and the most placements seen. */
let scratch = {
  rho: new Float64Array(0),
  byBusy: new Int32Array(0),
  count: new Float64Array(1),
  lastStep: new Float64Array(0),
  prefixSig: new Int32Array(0),
  prefixMs: new Float64Array(0),
};

function passScratch(widest: number, n: number): typeof scratch {
  if (scratch.rho.length < widest || scratch.lastStep.length < n) {
    const w = Math.max(widest, scratch.rho.length);
    const m = Math.max(n, scratch.lastStep.length);
    scratch = {
      rho: new Float64Array(w),
      byBusy: new Int32Array(w),
      count: new Float64Array(w + 1),
      lastStep: new Float64Array(m),
      prefixSig: new Int32Array(m * MAX_OVERLAP),
      prefixMs: new Float64Array(m * MAX_OVERLAP),
    };
  }
  scratch.lastStep.fill(0, 0, n);
  scratch.prefixSig.fill(-1, 0, n * MAX_OVERLAP);
  return scratch;
}

/** predictOne's inputs for batchOneMs, reused (predictOne keeps none). */
const batchOne = { models: [] as number[], pcts: [] as number[] };

/** t_inf (ms) at batch 1 of the `k`-th of the placements `on` (indices into `ps`, all on `gpu`), beside the others. */
function batchOneMs(
  gpu: GpuInfo,
  ps: readonly Placement[],
  on: readonly number[],
  k: number,
  interference: boolean,
): number {
  const { models, pcts } = batchOne;
  for (let j = 0; j < on.length; j++) {
    const p = ps[on[j]!]!;
    models[j] = gpu.profileIndex[p.model]!;
    pcts[j] = p.pct;
  }
  return gpu.model.predictOne(models, pcts, on.length, k, 1, interference);
}

/**
 * One MPS GPU's batches and t_inf (ms) for its partitions (in the order given) carrying `rates`:
 * BDA's, or where BDA finds none, the largest batch whose worst task (one batch waiting, then its
 * own) still meets the SLO; the queue then says what it misses. BDA and that fallback look only at
 * the GPU's own partitions.
 */
function mpsGpu(
  cluster: ClusterInfo,
  g: GpuInfo,
  on: readonly Placement[],
  rates: readonly number[],
  interference: boolean,
  sloFraction: number,
): { batches: number[]; tInfMs: number[] } {
  const r = bda(
    cluster.gpus,
    on.map((p, k) => ({ placement: p, sloMs: cluster.models[p.model]!.sloMs, ratePerS: rates[k]! })),
    { interference, sloFraction },
  );
  const batches = [...r.batches];
  const tInfMs = [...r.tInfMs];
  on.forEach((p, k) => {
    if (r.feasible[k]) return;
    // Partitions after this one count at batch 1 here, as BDA's memory check (4a) counts them.
    const peers = on.map((q, j) => ({ ...q, batch: j <= k ? batches[j]! : 1 }));
    const budget = cluster.models[p.model]!.sloMs * sloFraction;
    for (let b = BDA_MAX_BATCH; b > batches[k]!; b--) {
      peers[k] = { ...peers[k]!, batch: b };
      const t = predictOnGpu(g, peers, interference)[k]!;
      if (2 * t <= budget && memoryOnGpu(g, peers) <= g.memMb) {
        batches[k] = b;
        tInfMs[k] = t;
        break;
      }
    }
  });
  return { batches, tInfMs };
}

/** A pool's queue estimate for arrivals of squared CV `cv2` (absent or NaN: Poisson): its mean wait scaled by cv2 (see PoolingOptions.arrivalCv2). */
function burstyQueue(q: QueueEstimate, cv2: number | undefined): QueueEstimate {
  if (cv2 === undefined || !Number.isFinite(cv2) || cv2 === 1 || !Number.isFinite(q.meanWaitS)) return q;
  return { ...q, meanWaitS: q.meanWaitS * Math.max(0, cv2) };
}

/** P(Z > z) for a standard normal Z (Abramowitz and Stegun 7.1.26, absolute error under 1.5e-7). */
export function normalTail(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const erfc =
    t *
    (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) *
    Math.exp(-x * x);
  return z >= 0 ? erfc / 2 : 1 - erfc / 2;
}

/** E[(Y - x)+] for Y normal with mean `mean` and standard deviation `sd` (> 0). */
function excessOver(mean: number, sd: number, x: number): number {
  const z = (mean - x) / sd;
  return (sd * Math.exp((-z * z) / 2)) / Math.sqrt(2 * Math.PI) + (mean - x) * (1 - normalTail(z));
}

/** Nodes (in standard deviations) and weights of the normal quadrature pooledBatchMiss integrates with. */
const BATCH_NODES = Array.from({ length: 25 }, (_, j) => -3 + j / 4);
const BATCH_WEIGHTS = (() => {
  const w = BATCH_NODES.map((z) => Math.exp((-z * z) / 2));
  const sum = w.reduce((x, y) => x + y, 0);
  return w.map((x) => x / sum);
})();

/**
 * The fraction of a pooled server's tasks that miss `budgetMs` because its batch size fluctuates
 * (timeout 0: each batch takes what arrived while the previous one ran). With t(b) = slow x (a + c b)
 * its time at batch b (the solo time's slope at the mean batch `fill`, times the overlap slowdown),
 * a batch holds Poisson(lambda t(b_prev)) tasks, an AR(1) process with gain k = lambda slow c: mean
 * `fill`, variance fill / (1 - k^2); k >= 1 means the batches grow until the cap. A task of batch
 * n + 1 arrived during batch n, uniformly over its t_n, so it waits the rest of t_n and then runs its
 * own t_{n+1}: it misses when its arrival falls in the first t_n + t_{n+1} - budget of t_n. Over the
 * tasks (a batch holds lambda t_n of them, so long batches count more): E[clamp(t_n + t_{n+1} -
 * budget, 0, t_n)] / E[t_n], with B_n normal (mean `fill`, that variance; within 1 and the cap) and
 * t_{n+1} given t_n normal with mean slow a + k t_n (the next batch is Poisson(lambda t_n)) and
 * variance (slow c)^2 lambda t_n. (It counted every task of a batch with 2 t(B) > budget as missed
 * until the seventh session: on a time-shared GPU at 2.5x the rates of a diurnal workload's peak it
 * predicted 33% missed for efficientnet and 28% for resnet50 where the simulator measured 0.2% and
 * 2.1%, and so inss left time sharing's plan for worse ones.) The queue model alone (mean batch,
 * mean slowdown) misses this: on paper-8x3 at 1.75x it predicted no misses for resnet50 beside vgg16
 * where the simulator measured 25-33%.
 * Only for a model with one server: with several, a task goes to whichever worker frees first and
 * is not tied to one server's batch cycle (applied to each of several servers it predicted misses
 * for vgg19 pooled on both V100s of v100-2-tight, which the simulator does not show, and moved
 * inss there to a plan that missed 3.6% at 1.25x).
 */
function pooledBatchMiss(
  cluster: ClusterInfo,
  gpu: GpuInfo,
  model: number,
  lambdaPerS: number,
  fill: number,
  cap: number,
  slow: number,
  budgetMs: number,
): number {
  if (!(lambdaPerS > 0)) return 0;
  const memo = memoOf(cluster);
  const here = soloMsAt(memo, gpu, model, fill);
  const c =
    fill + 1 <= cap
      ? soloMsAt(memo, gpu, model, fill + 1) - here
      : here - soloMsAt(memo, gpu, model, Math.max(1, fill - 1));
  if (!(c > 0)) return 2 * slow * here > budgetMs ? 1 : 0;
  const a = here - c * fill;
  const perMs = lambdaPerS / 1000;
  const k = perMs * slow * c;
  if (k >= 1) return 1;
  const sd = Math.sqrt(fill / (1 - k * k));
  let missed = 0;
  let time = 0;
  for (let j = 0; j < BATCH_NODES.length; j++) {
    const b = Math.min(cap, Math.max(1, fill + BATCH_NODES[j]! * sd));
    const t = slow * (a + c * b);
    // t_n + t_{n+1} - budget, normal: clamped to [0, t_n] it is E[(Y)+] - E[(Y - t_n)+].
    const mean = t + slow * a + k * t - budgetMs;
    const spread = slow * c * Math.sqrt(perMs * t);
    missed +=
      BATCH_WEIGHTS[j]! *
      (spread > 0 ? excessOver(mean, spread, 0) - excessOver(mean, spread, t) : Math.min(t, Math.max(0, mean)));
    time += BATCH_WEIGHTS[j]! * t;
  }
  return Math.min(1, missed / time);
}

const modesOf = (cluster: ClusterInfo, d: Deployment): GpuMode[] =>
  cluster.gpus.map((g) => d.gpuModes?.[g.index] ?? 'mps');

/** Scores a deployment (its MPS batches are re-chosen by BDA for the rates; pooled GPUs use time sharing's). */
export function scoreDeployment(
  cluster: ClusterInfo,
  d: Deployment,
  ratePerS: readonly number[],
  options: PoolingOptions,
): PlanScore {
  const modes = modesOf(cluster, d);
  const ps = d.placements;
  const n = ps.length;
  const nModels = cluster.models.length;
  const interference = options.interference ?? true;
  const batch = new Array<number>(n).fill(1);
  const tMs = new Array<number>(n).fill(NaN);
  const mu = new Array<number>(n).fill(0); // tasks/s of the server alone (mps: with its co-located partitions)
  const byGpu: number[][] = cluster.gpus.map(() => []);
  const byModel: number[][] = cluster.models.map(() => []);
  for (let i = 0; i < n; i++) {
    const q = ps[i]!;
    if (!byGpu[q.gpu] || !byModel[q.model]) return infeasible(d, nModels);
    byGpu[q.gpu]!.push(i);
    byModel[q.model]!.push(i);
  }
  for (let i = 0; i < n; i++) {
    const p = ps[i]!;
    const gpu = cluster.gpus[p.gpu];
    if (!gpu || (gpu.profileIndex[p.model] ?? -1) < 0) return infeasible(d, nModels);
    if (modes[p.gpu] === 'timeshare') {
      const s = pooledServer(cluster, gpu, p.model);
      batch[i] = s.batch;
      tMs[i] = s.ms;
      mu[i] = (1000 * s.batch) / s.ms;
    }
  }
  // MPS partitions: the batch-1 rate (with interference) decides the first split, then BDA sets
  // batches, GPU by GPU (mpsGpu).
  const mpsGpus: number[] = [];
  for (const g of cluster.gpus) {
    if (modes[g.index] === 'timeshare') continue;
    const on = byGpu[g.index]!;
    if (on.length === 0) continue;
    mpsGpus.push(g.index);
    for (let k = 0; k < on.length; k++) mu[on[k]!] = 1000 / batchOneMs(g, ps, on, k, interference);
  }
  const split = (rates: readonly number[]): number[] => {
    const total = new Array<number>(nModels).fill(0);
    for (let i = 0; i < n; i++) total[ps[i]!.model]! += rates[i]!;
    return ps.map((p, i) => (total[p.model]! > 0 ? (ratePerS[p.model]! * rates[i]!) / total[p.model]! : 0));
  };
  let lam = split(mu);
  if (mpsGpus.length > 0) {
    for (const gi of mpsGpus) {
      const on = byGpu[gi]!;
      const r = mpsGpu(
        cluster,
        cluster.gpus[gi]!,
        on.map((i) => ps[i]!),
        on.map((i) => lam[i]!),
        interference,
        options.sloFraction,
      );
      on.forEach((i, k) => {
        batch[i] = r.batches[k]!;
        tMs[i] = r.tInfMs[k]!;
        mu[i] = (1000 * batch[i]) / tMs[i];
      });
    }
    lam = split(mu);
  }
  // Pooled GPUs (timeout 0: a free worker takes whatever is queued, up to its batch): a server's
  // mean batch is gatedMeanBatch's (what arrives while the previous one runs, or one after an idle
  // spell), and its batches run alone at the whole GPU or overlapping the batches of the GPU's other
  // models that are running (each at an even split, never slower than in series). Its capacity is
  // at the full batch, slowed by the same overlap.
  const effMu = [...mu];
  const effMs = [...tMs];
  const fill = [...batch];
  const slow = new Array<number>(n).fill(1); // overlap slowdown of each pooled server, from the previous pass
  const anyPooled = modes.some((m) => m === 'timeshare');
  // Scratch reused by every pass (the fixed point runs up to POOLED_PASSES times over each pooled
  // GPU, for every candidate scored): the busy fractions, the busiest-first order, the count of busy
  // neighbours, and per placement the overlap times of its busiest neighbours' prefixes, reused while
  // the prefix (each member's placement and rounded batch) is the one of the pass before.
  // (Module scratch, grown as needed: scoreDeployment runs to its end without re-entering.)
  const memo = memoOf(cluster);
  let widest = 0;
  for (const g of cluster.gpus) if (modes[g.index] === 'timeshare') widest = Math.max(widest, byGpu[g.index]!.length);
  const { rho, byBusy, count, lastStep, prefixSig, prefixMs } = passScratch(widest, n);
  const { models, batches } = overlapMembers;
  for (let pass = 0; anyPooled && pass < POOLED_PASSES; pass++) {
    let moved = false; // a pooled server's batch or slowdown changed in this pass
    for (const g of cluster.gpus) {
      if (modes[g.index] !== 'timeshare') continue;
      const on = byGpu[g.index]!;
      const width = on.length;
      for (const i of on) {
        const b = gatedMeanBatch(memo, g, ps[i]!.model, lam[i]!, slow[i]!, batch[i]!, pass === 0 ? 1 : fill[i]!);
        if (Math.abs(fill[i]! - b) > SETTLED * b) moved = true;
        fill[i] = b;
      }
      // Busy fractions at the slowed batch times (each server's batches overlap the others').
      let rhoSum = 0;
      for (let j = 0; j < width; j++) {
        const i = on[j]!;
        rho[j] = Math.min(1, (lam[i]! * soloMsAt(memo, g, ps[i]!.model, fill[i]!) * slow[i]!) / (1000 * fill[i]!));
        rhoSum += rho[j]!;
      }
      // The GPU's servers, busiest first (ties: placement order); an insertion sort (a handful).
      for (let j = 0; j < width; j++) {
        let at = j;
        while (at > 0 && (rho[j]! - rho[byBusy[at - 1]!]! || on[byBusy[at - 1]!]! - on[j]!) > 0) {
          byBusy[at] = byBusy[at - 1]!;
          at--;
        }
        byBusy[at] = j;
      }
      for (let k = 0; k < width; k++) {
        const i = on[k]!;
        let slowdown = 1;
        if (width > 1 && rhoSum - rho[k]! > 0) {
          // How many of the others run beside this batch: each busy independently for its busy
          // fraction (a Poisson-binomial count), and overlapping n of them slows it as overlapping
          // the n busiest does (at most MAX_OVERLAP - 1). The expectation over the count, not the
          // slowdown at the mean count: the slowdown grows faster than the count (an even split of
          // the GPU), and at the mean it said 6.2 ms for resnet50 beside three models on
          // v100-2-tight at 1.75x where the simulator runs 11.0 ms.
          let counts = 1;
          count[0] = 1;
          for (let j = 0; j < width; j++) {
            if (j === k) continue;
            const r = rho[j]!;
            count[counts++] = 0;
            for (let c = counts - 1; c > 0; c--) count[c] = count[c]! * (1 - r) + count[c - 1]! * r;
            count[0] = count[0] * (1 - r);
          }
          models[0] = ps[i]!.model;
          batches[0] = Math.max(1, Math.round(fill[i]!));
          let members = 1;
          const solo = soloIn(memo, g, models[0], batches[0]);
          const slot = i * MAX_OVERLAP;
          let same = prefixSig[slot] === batches[0];
          prefixSig[slot] = batches[0]!;
          let ratio = 1;
          slowdown = count[0]!;
          for (let j = 0, c = 1; c < counts; c++) {
            if (members < MAX_OVERLAP) {
              if (byBusy[j] === k) j++;
              const other = on[byBusy[j++]!]!;
              models[members] = ps[other]!.model;
              batches[members] = Math.max(1, Math.round(fill[other]!));
              const at = slot + members;
              const sig = other * (BDA_MAX_BATCH + 1) + batches[members]!;
              members++;
              same = same && prefixSig[at] === sig;
              if (!same) {
                prefixSig[at] = sig;
                prefixMs[at] = overlapMs(memo, g, members);
              }
              ratio = prefixMs[at]! / solo;
            }
            slowdown += count[c]! * ratio;
          }
        }
        // Damped (the mean with the previous pass's) from the second pass on where the step turns
        // back: a batch and its slowdown feed each other and would otherwise oscillate (resnet50 on
        // paper-8x3 at 1.75x: batch 2, 13, 22, 2 over four passes undamped). A step that goes on in
        // the direction of the one before is taken whole: damped, a monotone approach closed only
        // a third of its gap a pass and ran out of passes (v100-4: 99% of the scores used all of them).
        const step = slowdown - slow[i]!;
        const damped = pass === 0 ? slowdown : step * lastStep[i]! > 0 ? slowdown : slow[i]! + step / 2;
        lastStep[i] = damped - slow[i]!;
        if (Math.abs(slow[i]! - damped) > SETTLED * damped) moved = true;
        slow[i] = damped;
        effMs[i] = soloMsAt(memo, g, ps[i]!.model, fill[i]!) * damped;
        effMu[i] = (1000 * batch[i]!) / (tMs[i]! * damped);
      }
    }
    const next = split(effMu);
    const settled = next.every((x, i) => Math.abs(x - lam[i]!) <= SETTLED * Math.max(1, x));
    lam = next;
    // A fixed point: the split, every batch and every slowdown as in the pass before. (The split
    // alone does not say it: with one server per model it never moves, and the batches were then
    // left at what the load gives without any overlap; on paper-8x3 at 1.75x that predicted
    // resnet50 at batch 2 and no misses beside vgg16, where the simulator runs batches of 7 and
    // misses 25-33%.)
    if (settled && !moved) break;
  }
  const violation = new Array<number>(nModels).fill(0);
  const utilisation = new Array<number>(nModels).fill(0);
  // On a serial pooled GPU a task's batch waits for the batch of another model running when it is
  // ready: the rest of it, uniform over its time. It misses when that rest exceeds its slack (its
  // budget less its own batch alone); each other model's server busy for its share of the GPU.
  const serialTurnMiss = (i: number, budgetMs: number): number => {
    const g = cluster.gpus[ps[i]!.gpu]!;
    const slackMs = budgetMs - soloMsAt(memo, g, ps[i]!.model, fill[i]!);
    if (slackMs < 0) return 1;
    let none = 1;
    for (const j of byGpu[g.index]!) {
      if (j === i || ps[j]!.model === ps[i]!.model) continue;
      const t = soloMsAt(memo, g, ps[j]!.model, fill[j]!);
      none *= 1 - Math.min(1, (lam[j]! * t) / (1000 * fill[j]!)) * Math.max(0, 1 - slackMs / t);
    }
    return 1 - none;
  };
  let missed = 0;
  let utilTerm = 0;
  for (const m of cluster.models) {
    const rate = ratePerS[m.index]!;
    if (!(rate > 0)) continue;
    const mine = byModel[m.index]!;
    const c = mine.length;
    const muSum = mine.reduce((s, i) => s + effMu[i]!, 0);
    if (c === 0 || !(muSum > 0)) {
      violation[m.index] = 1;
      utilisation[m.index] = Infinity;
      missed += rate;
      utilTerm += rate * 2;
      continue;
    }
    const q = burstyQueue(poolQueue(rate, new Array<number>(c).fill(muSum / c)), options.arrivalCv2?.[m.index]);
    const budgetMs = m.sloMs * options.sloFraction;
    // A batching server: a task that finds every server of its pool busy waits for the first to
    // finish its batch (a residual uniform on [0, t_inf]), then runs in the next batch. Each server
    // is busy a fraction lambda_i t_inf(b) / b of the time (b its batch at this load).
    const busy = mine.map((k) => Math.min(1, (lam[k]! * effMs[k]!) / (1000 * fill[k]!)));
    let v = 0;
    for (const i of mine) {
      const slackMs = budgetMs - effMs[i]!;
      let batchMiss = 1;
      if (slackMs >= 0) mine.forEach((k, j) => (batchMiss *= busy[j]! * Math.max(0, 1 - slackMs / effMs[k]!)));
      const queueMiss = q.utilisation >= 1 ? 1 : waitExceeds(q, slackMs / 1000);
      const dynamicMiss =
        c === 1 && modes[ps[i]!.gpu] === 'timeshare'
          ? pooledBatchMiss(
              cluster,
              cluster.gpus[ps[i]!.gpu]!,
              ps[i]!.model,
              lam[i]!,
              fill[i]!,
              batch[i]!,
              slow[i]!,
              budgetMs,
            )
          : 0;
      const turnMiss =
        modes[ps[i]!.gpu] === 'timeshare' && cluster.gpus[ps[i]!.gpu]!.pooled === 'serial'
          ? serialTurnMiss(i, budgetMs)
          : 0;
      v += (lam[i]! / rate) * Math.max(queueMiss, batchMiss, dynamicMiss, turnMiss);
    }
    violation[m.index] = Math.min(1, v);
    utilisation[m.index] = q.utilisation;
    missed += rate * violation[m.index]!;
    utilTerm += rate * Math.min(2, q.utilisation);
  }
  const order = ps.map((_, i) => i).sort((a, b) => ps[a]!.gpu - ps[b]!.gpu || ps[a]!.model - ps[b]!.model);
  const placements = order.map((i) => {
    const p = ps[i]!;
    return modes[p.gpu] === 'timeshare'
      ? { model: p.model, gpu: p.gpu, pct: 100, batch: batch[i]!, timeoutMs: TIMESHARE_MAX_QUEUE_DELAY_MS }
      : { model: p.model, gpu: p.gpu, pct: p.pct, batch: batch[i]! };
  });
  const deployment: Deployment = modes.some((x) => x === 'timeshare')
    ? { placements, gpuModes: modes }
    : { placements };
  if (deploymentProblem(cluster, deployment) !== null) return infeasible(deployment, nModels);
  return {
    deployment,
    missedPerS: missed,
    score: missed + UTILISATION_WEIGHT * utilTerm,
    violation,
    utilisation,
    meanBatch: order.map((i) => fill[i]!),
    batchMs: order.map((i) => effMs[i]!),
  };
}

/**
 * True when scoreDeployment would surely find `d` infeasible whatever batches it chooses: a
 * placement on a missing GPU or of a model the GPU's profile lacks, a model twice on one GPU, MPS
 * shares out of range or over 100% on a GPU, or a GPU's memory exceeded with its pooled models at
 * time sharing's batches and its partitions at batch 1 (the least any batch needs). A cheap exact
 * pre-check: false says nothing.
 */
export function cannotFit(cluster: ClusterInfo, d: Deployment): boolean {
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
    if (modes[p.gpu] === 'timeshare') mem[p.gpu]! += gpu.model.memoryMb(idx, pooledServer(cluster, gpu, p.model).batch);
    else {
      if (!(p.pct > 0 && p.pct <= 100)) return true;
      pct[p.gpu]! += p.pct;
      mem[p.gpu]! += gpu.model.memoryMb(idx, 1);
    }
  }
  for (const g of cluster.gpus) if (pct[g.index]! > 100 + 1e-6 || mem[g.index]! > g.memMb + 1e-6) return true;
  return false;
}

function infeasible(d: Deployment, nModels: number): PlanScore {
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

const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;

/** Models that fit on a pooled GPU at time sharing's batches, in the order given, while memory lasts. */
function fillPooled(cluster: ClusterInfo, gpu: GpuInfo, models: readonly number[]): number[] {
  let used = 0;
  const out: number[] = [];
  for (const m of models) {
    if ((gpu.profileIndex[m] ?? -1) < 0 || out.includes(m)) continue;
    const mb = gpu.model.memoryMb(gpu.profileIndex[m]!, pooledServer(cluster, gpu, m).batch);
    if (used + mb > gpu.memMb + 1e-6) continue;
    used += mb;
    out.push(m);
  }
  return out;
}

/** Partition shares for `models` on an MPS GPU in proportion to `demand`, multiples of the unit, at least one each. */
function partitionShares(gpu: GpuInfo, models: readonly number[], demand: readonly number[]): number[] | null {
  const unit = gpu.mpsUnitPct;
  const units = Math.floor(100 / unit + 1e-9);
  if (models.length === 0 || models.length > units) return null;
  const total = models.reduce((s, m) => s + Math.max(demand[m]!, 1e-9), 0);
  const got = models.map((m) => Math.max(1, Math.floor((units * Math.max(demand[m]!, 1e-9)) / total)));
  let left = units - got.reduce((s, u) => s + u, 0);
  for (let k = 0; left > 0; k = (k + 1) % models.length, left--) got[k]!++;
  while (got.reduce((s, u) => s + u, 0) > units) {
    const k = got.indexOf(Math.max(...got));
    got[k]!--;
  }
  return got.map((u) => round6(Math.min(100, u * unit)));
}

/** A model's demand in GPU-seconds per second on a GPU at the whole GPU (time sharing's batch). */
function demandOn(cluster: ClusterInfo, gpu: GpuInfo, ratePerS: readonly number[]): number[] {
  return cluster.models.map((m) =>
    (gpu.profileIndex[m.index] ?? -1) < 0
      ? 0
      : (ratePerS[m.index]! * pooledServer(cluster, gpu, m.index).ms) /
        (1000 * pooledServer(cluster, gpu, m.index).batch),
  );
}

/**
 * A greedy MPS partition to start the model-based planner from when no trained actor fits: models by
 * demand, largest first, each on the GPU with the most capacity left that holds it; then each GPU's
 * units split in proportion to its models' demand. One placement per model.
 */
export function greedyPartition(cluster: ClusterInfo, ratePerS: readonly number[]): Placement[] {
  const gpus = cluster.gpus;
  const left = gpus.map(() => 1);
  const mem = gpus.map(() => 0);
  const on: number[][] = gpus.map(() => []);
  const demand = gpus.map((g) => demandOn(cluster, g, ratePerS));
  const order = cluster.models
    .map((m) => m.index)
    .sort((a, b) => Math.max(...demand.map((d) => d[b]!)) - Math.max(...demand.map((d) => d[a]!)) || a - b);
  for (const m of order) {
    let best = -1;
    for (const g of gpus) {
      const idx = g.profileIndex[m] ?? -1;
      if (
        idx < 0 ||
        mem[g.index]! + g.model.memoryMb(idx, 1) > g.memMb ||
        (on[g.index]!.length + 1) * g.mpsUnitPct > 100 + 1e-9
      )
        continue;
      if (best < 0 || left[g.index]! - demand[g.index]![m]! > left[best]! - demand[best]![m]! + 1e-12) best = g.index;
    }
    if (best < 0) continue;
    on[best]!.push(m);
    left[best]! -= demand[best]![m]!;
    mem[best]! += gpus[best]!.model.memoryMb(gpus[best]!.profileIndex[m]!, 1);
  }
  const out: Placement[] = [];
  for (const g of gpus) {
    const shares = partitionShares(g, on[g.index]!, demand[g.index]!);
    if (!shares) continue;
    on[g.index]!.forEach((m, k) => out.push({ model: m, gpu: g.index, pct: shares[k]!, batch: 1 }));
  }
  return out;
}

/**
 * An MPS plan that uses every GPU: each model gets GPUs in proportion to its demand (GPU-seconds per
 * second at the whole GPU, averaged over the GPUs that hold it), so every model runs at about the
 * cluster's mean load: whole GPUs for the whole part (replicas, one queue), and the fractional parts
 * packed onto the GPUs left, each onto the GPU with the most room (split over two where it does not
 * fit), as MPS partitions in proportion to the parts. greedyPartition gives each model one
 * partition only, so on a cluster with more GPUs than models it leaves GPUs idle and a model whose
 * demand exceeds one GPU short (mixed-32x24 at 2.25x: 8 of 32 GPUs idle, resnet50-t1 and vgg19-t1
 * predicted past utilisation 1). A part under half an MPS unit is left to the model's whole GPUs.
 */
export function balancedPartition(cluster: ClusterInfo, ratePerS: readonly number[]): Placement[] {
  const gpus = cluster.gpus;
  const demandByGpu = gpus.map((g) => demandOn(cluster, g, ratePerS));
  const holds = (g: GpuInfo, m: number) => (g.profileIndex[m] ?? -1) >= 0;
  const demand = cluster.models.map((m) => {
    const on = gpus.filter((g) => holds(g, m.index));
    return on.length === 0 ? 0 : on.reduce((s, g) => s + demandByGpu[g.index]![m.index]!, 0) / on.length;
  });
  const total = demand.reduce((s, d) => s + d, 0);
  const out: Placement[] = [];
  if (!(total > 0)) return out;
  const level = total / gpus.length; // each GPU's load when every model runs at the same utilisation
  const free = gpus.map(() => 1); // fraction of each GPU not yet given
  const mem = gpus.map(() => 0);
  const parts: { model: number; gpu: number; size: number }[] = [];
  const fitsMem = (g: GpuInfo, m: number) => mem[g.index]! + g.model.memoryMb(g.profileIndex[m]!, 1) <= g.memMb + 1e-6;
  const take = (g: GpuInfo, m: number, size: number) => {
    parts.push({ model: m, gpu: g.index, size });
    free[g.index]! -= size;
    mem[g.index]! += g.model.memoryMb(g.profileIndex[m]!, 1);
  };
  const order = cluster.models
    .map((m) => m.index)
    .filter((m) => demand[m]! > 0)
    .sort((a, b) => demand[b]! - demand[a]! || a - b);
  const share = order.map((m) => demand[m]! / level); // GPUs' worth each model gets
  // Whole GPUs first, largest models first, each on the free GPU (lowest index) that holds it.
  order.forEach((m, k) => {
    for (let w = Math.floor(share[k]! + 1e-9); w > 0; w--) {
      const g = gpus.find((x) => free[x.index]! >= 1 - 1e-9 && holds(x, m) && fitsMem(x, m));
      if (!g) break;
      take(g, m, 1);
      share[k]! -= 1;
    }
  });
  // Fractional parts, largest first, each on the GPU with the most room (split when it does not fit).
  const minPart = Math.min(...gpus.map((g) => g.mpsUnitPct)) / 200;
  const rest = order.map((m, k) => ({ m, left: share[k]! })).sort((a, b) => b.left - a.left || a.m - b.m);
  for (const r of rest) {
    const hasWhole = parts.some((p) => p.model === r.m);
    let left = r.left;
    while (left > (hasWhole ? minPart : 0)) {
      let best: GpuInfo | undefined;
      for (const g of gpus) {
        const units = Math.floor(100 / g.mpsUnitPct + 1e-9);
        if (
          !holds(g, r.m) ||
          !fitsMem(g, r.m) ||
          parts.some((p) => p.gpu === g.index && p.model === r.m) ||
          parts.filter((p) => p.gpu === g.index).length >= units
        )
          continue;
        if (free[g.index]! > 1e-9 && (!best || free[g.index]! > free[best.index]! + 1e-12)) best = g;
      }
      if (!best) break;
      const size = Math.min(left, free[best.index]!);
      take(best, r.m, size);
      left -= size;
    }
  }
  for (const g of gpus) {
    const on = parts.filter((p) => p.gpu === g.index);
    if (on.length === 0) continue;
    const size = new Array<number>(cluster.models.length).fill(0);
    for (const p of on) size[p.model] = p.size;
    const shares = partitionShares(
      g,
      on.map((p) => p.model),
      size,
    );
    if (!shares) continue;
    on.forEach((p, k) => out.push({ model: p.model, gpu: g.index, pct: shares[k]!, batch: 1 }));
  }
  return out;
}

/** GPUs in the order hybrids pool them: fastest type first (most throughput per model), then index. */
function poolingOrder(cluster: ClusterInfo, ratePerS: readonly number[]): number[] {
  const work = cluster.gpus.map((g) => demandOn(cluster, g, ratePerS).reduce((s, x) => s + x, 0));
  return cluster.gpus.map((g) => g.index).sort((a, b) => work[a]! - work[b]! || a - b);
}

const timeshareMemo = new WeakMap<ClusterInfo, Deployment>();

/** timesharePlan (static: it depends on the cluster only), computed once per cluster. */
export function timeshareDeployment(cluster: ClusterInfo): Deployment {
  let d = timeshareMemo.get(cluster);
  if (!d) timeshareMemo.set(cluster, (d = timesharePlan(cluster)));
  return d;
}

/** Most hybrids tried per MPS plan: k = 1, 2, 3, 4, 6, 8, 12, 16, ... GPUs pooled (up to all but one). */
function hybridSizes(gpus: number): number[] {
  const out: number[] = [];
  for (let k = 1; k < gpus; k = k < 4 ? k + 1 : Math.round(k * 1.5)) out.push(k);
  return out;
}

/** Hybrids of an MPS plan: the first k GPUs (of poolingOrder) pooled over every model that fits, the rest as planned. */
export function hybrids(cluster: ClusterInfo, plan: Deployment, ratePerS: readonly number[]): Deployment[] {
  const order = poolingOrder(cluster, ratePerS);
  const byRate = cluster.models.map((m) => m.index).sort((a, b) => ratePerS[b]! - ratePerS[a]! || a - b);
  const out: Deployment[] = [];
  for (const k of hybridSizes(cluster.gpus.length)) {
    const pooled = new Set(order.slice(0, k));
    const modes: GpuMode[] = cluster.gpus.map((g) => (pooled.has(g.index) ? 'timeshare' : 'mps'));
    const placements: Placement[] = plan.placements.filter((p) => !pooled.has(p.gpu)).map((p) => ({ ...p }));
    for (const g of order.slice(0, k))
      for (const m of fillPooled(cluster, cluster.gpus[g]!, byRate))
        placements.push({ model: m, gpu: g, pct: 100, batch: 1 });
    out.push({ placements, gpuModes: modes });
  }
  return out;
}

/**
 * An MPS plan's assignment of models to GPUs, pooled: every GPU it uses in `timeshare` mode with the
 * models it gave that GPU (not every model that fits, as time sharing and the hybrids do). A model
 * with partitions on several GPUs is one queue over them. The oracle sweep (docs/results.md, "Physics
 * or design") found the fixed plans that carry the most on paper-8, v100-2-tight and bursty-6 to be of
 * this kind: pooled GPUs holding two or three models each, where time sharing loads every model on
 * every GPU and its batches overlap those of all the others.
 */
export function pooledAssignment(cluster: ClusterInfo, plan: Deployment): Deployment {
  const used = new Set(plan.placements.map((p) => p.gpu));
  const gpuModes: GpuMode[] = cluster.gpus.map((g) => (used.has(g.index) ? 'timeshare' : 'mps'));
  const seen = new Set<number>();
  const placements: Placement[] = [];
  for (const p of plan.placements) {
    const key = p.gpu * cluster.models.length + p.model;
    if (seen.has(key)) continue;
    seen.add(key);
    placements.push({ model: p.model, gpu: p.gpu, pct: 100, batch: 1 });
  }
  return { placements, gpuModes };
}

/** Neighbours of a deployment for the local search, those touching the worst-served models first. */
export function* moves(cluster: ClusterInfo, s: PlanScore, ratePerS: readonly number[]): Generator<Deployment> {
  const d = s.deployment;
  const modes = modesOf(cluster, d);
  const ps = d.placements;
  const worst = cluster.models
    .map((m) => m.index)
    .sort(
      (a, b) =>
        ratePerS[b]! * s.violation[b]! - ratePerS[a]! * s.violation[a]! ||
        s.utilisation[b]! - s.utilisation[a]! ||
        a - b,
    );
  const count = new Array<number>(cluster.models.length).fill(0);
  for (const p of ps) count[p.model]!++;
  const withModes = (placements: Placement[], m: GpuMode[]): Deployment => ({ placements, gpuModes: m });
  // Add the worst-served models to pooled GPUs that can hold them.
  for (const m of worst) {
    for (const g of cluster.gpus) {
      if (
        modes[g.index] !== 'timeshare' ||
        ps.some((p) => p.gpu === g.index && p.model === m) ||
        (g.profileIndex[m] ?? -1) < 0
      )
        continue;
      yield withModes([...ps, { model: m, gpu: g.index, pct: 100, batch: 1 }], modes);
    }
  }
  // Move one MPS unit to a worst-served model's partition from a co-located one.
  for (const m of worst) {
    if (!(s.violation[m]! > 0 || s.utilisation[m]! > 0.7)) continue;
    for (const p of ps) {
      if (p.model !== m || modes[p.gpu] !== 'mps') continue;
      const unit = cluster.gpus[p.gpu]!.mpsUnitPct;
      for (const q of ps) {
        if (q.gpu !== p.gpu || q.model === m || q.pct < 2 * unit - 1e-9) continue;
        yield withModes(
          ps.map((x) =>
            x === p ? { ...x, pct: round6(x.pct + unit) } : x === q ? { ...x, pct: round6(x.pct - unit) } : x,
          ),
          modes,
        );
      }
    }
  }
  // Pool a partitioned GPU (its models take turns at the whole GPU).
  for (const g of cluster.gpus) {
    if (modes[g.index] !== 'mps') continue;
    const m2 = [...modes];
    m2[g.index] = 'timeshare';
    yield withModes(
      ps.map((p) => (p.gpu === g.index ? { ...p, pct: 100 } : p)),
      m2,
    );
  }
  // Drop a model from a pooled GPU where it has other servers (less contention for the rest).
  for (const m of [...worst].reverse()) {
    if (count[m]! < 2) continue;
    for (const g of cluster.gpus)
      if (modes[g.index] === 'timeshare' && ps.some((p) => p.gpu === g.index && p.model === m))
        yield withModes(
          ps.filter((p) => !(p.gpu === g.index && p.model === m)),
          modes,
        );
  }
  // Partition a pooled GPU: its models get shares in proportion to their demand there.
  for (const g of cluster.gpus) {
    if (modes[g.index] !== 'timeshare') continue;
    const on = ps.filter((p) => p.gpu === g.index).map((p) => p.model);
    const shares = partitionShares(g, on, demandOn(cluster, g, ratePerS));
    if (!shares) continue;
    const m2 = [...modes];
    m2[g.index] = 'mps';
    yield withModes(
      [
        ...ps.filter((p) => p.gpu !== g.index),
        ...on.map((m, k) => ({ model: m, gpu: g.index, pct: shares[k]!, batch: 1 })),
      ],
      m2,
    );
  }
}

export interface PoolingPlan {
  readonly best: PlanScore;
  /** Which candidate family the best came from: 'timeshare', 'mps', 'pooled', 'hybrid' (+ 'search' when the local search improved it). */
  readonly source: string;
  readonly evaluations: number;
}

/**
 * The best deployment among timeshare's, the given MPS plans, each pooled (pooledAssignment), their
 * hybrids, and a local search from the best of those, by `scoreDeployment` at `ratePerS`.
 */
export function planPooling(
  cluster: ClusterInfo,
  ratePerS: readonly number[],
  mpsPlans: readonly Deployment[],
  options: PoolingOptions,
): PoolingPlan {
  let evaluations = 0;
  const evaluate = (d: Deployment) => {
    evaluations++;
    return scoreDeployment(cluster, d, ratePerS, options);
  };
  // A candidate that cannot fit never becomes the best (its score is Infinity), so after the first
  // it is not scored in full: more than half of the local search's moves fail on memory or shares.
  const evaluateCandidate = (d: Deployment) => {
    if (!cannotFit(cluster, d)) return evaluate(d);
    evaluations++;
    return infeasible(d, cluster.models.length);
  };
  let best = evaluate(timeshareDeployment(cluster));
  let source = 'timeshare';
  for (const plan of mpsPlans) {
    const s = evaluateCandidate(plan);
    if (s.score < best.score - 1e-9) [best, source] = [s, 'mps'];
    const pooled = evaluateCandidate(pooledAssignment(cluster, plan));
    if (pooled.score < best.score - 1e-9) [best, source] = [pooled, 'pooled'];
    for (const h of hybrids(cluster, plan, ratePerS)) {
      const hs = evaluateCandidate(h);
      if (hs.score < best.score - 1e-9) [best, source] = [hs, 'hybrid'];
    }
  }
  let improved = true;
  let searched = false;
  while (improved && evaluations < options.budget) {
    improved = false;
    for (const cand of moves(cluster, best, ratePerS)) {
      if (evaluations >= options.budget) break;
      const s = evaluateCandidate(cand);
      if (s.score < best.score - 1e-9 * Math.max(1, Math.abs(best.score))) {
        best = s;
        improved = searched = true;
        break;
      }
    }
  }
  return { best, source: searched ? `${source}+search` : source, evaluations };
}

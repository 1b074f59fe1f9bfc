// A pooled server's batches under the shared dispatch rule with time sharing's timeout 0 (src/sim/dispatch.ts:
// a free worker takes whatever is queued, up to its cap): their mean size, and the tasks a fluctuating batch
// size makes miss. Pure; the latency model's answers come memoised from the PoolingContext.
import { BDA_MAX_BATCH } from '../bda.js';
import type { GpuInfo } from '../types.js';
import { normalTail } from '../../workload/normal.js';
import type { PoolingContext } from './context.js';

/**
 * The mean batch a pooled server runs: a batch holds what arrived while the previous one ran,
 * Poisson with mean x = lambda t(previous), or, when nothing did (probability e^-x), the server idles
 * and the next arrival starts a batch of one. So the mean batch m solves m = x + e^-x with
 * x = lambda slow t(m), between 1 and the cap. (A rounded-up fixed point b = ceil(lambda t(b)) would
 * count every server as always busy and overstate the batches several times over.)
 */
export function gatedMeanBatch(
  ctx: PoolingContext,
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
    const tLo = ctx.soloMs(gpu, model, lo);
    const slope = hi === lo ? 0 : ctx.soloMs(gpu, model, hi) - tLo;
    const x = perMs * (tLo + (m - lo) * slope);
    const e = Math.exp(-x);
    const f = Math.min(cap, Math.max(1, x + e));
    if (Math.abs(f - m) < 1e-3) return f;
    const df = perMs * slope * (1 - e);
    m = Math.min(cap, Math.max(1, df < 0.9 ? m + (f - m) / (1 - df) : f));
  }
  return m;
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
 * variance (slow c)^2 lambda t_n.
 * Counting every task of a batch with 2 t(B) > budget as missed would overstate the misses on a
 * lightly loaded time-shared GPU many times over; the queue model alone (mean batch, mean slowdown)
 * would miss them where a model's batches grow beside a slow neighbour (docs/results.md).
 * Only for a model with one server: with several, a task goes to whichever worker frees first and
 * is not tied to one server's batch cycle (applied to each of several servers it predicts misses the
 * simulator does not show).
 */
export function pooledBatchMiss(
  ctx: PoolingContext,
  gpu: GpuInfo,
  model: number,
  lambdaPerS: number,
  fill: number,
  cap: number,
  slow: number,
  budgetMs: number,
  shrinking = false,
): number {
  if (!(lambdaPerS > 0)) return 0;
  const here = ctx.soloMsAt(gpu, model, fill);
  const c =
    fill + 1 <= cap
      ? ctx.soloMsAt(gpu, model, fill + 1) - here
      : here - ctx.soloMsAt(gpu, model, Math.max(1, fill - 1));
  if (!(c > 0)) return 2 * slow * here > budgetMs ? 1 : 0;
  const a = here - c * fill;
  const perMs = lambdaPerS / 1000;
  const k = perMs * slow * c;
  if (k >= 1) return 1;
  const sd = Math.sqrt(fill / (1 - k * k));
  if (shrinking) return shrinkingBatchMiss(lambdaPerS, fill, cap, slow, a, c, sd, budgetMs);
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

/**
 * pooledBatchMiss where the dispatch rule's shrinking batches are counted: a batch takes the largest number
 * of the oldest tasks with which the oldest still finishes by its deadline (docs/dispatch.md).
 * The tasks of batch n + 1 came during batch n (time t, batches normal as in pooledBatchMiss), uniformly: one
 * that came at fraction u of it has waited (1 - u) t when batch n + 1 starts. It misses when even a batch of
 * one after that wait is too late, or when it is not among the oldest `fit` that batch n + 1 can take in
 * time and a batch of one after batch n + 1 is too late for it too.
 */
function shrinkingBatchMiss(
  lambdaPerS: number,
  fill: number,
  cap: number,
  slow: number,
  a: number,
  c: number,
  sd: number,
  budgetMs: number,
): number {
  const perMs = lambdaPerS / 1000;
  const one = slow * (a + c);
  let missed = 0;
  let time = 0;
  for (let j = 0; j < BATCH_NODES.length; j++) {
    const b = Math.min(cap, Math.max(1, fill + BATCH_NODES[j]! * sd));
    const t = slow * (a + c * b);
    const lost = Math.min(1, Math.max(0, (t + one - budgetMs) / t)); // no batch saves them
    let late = lost;
    const n = perMs * t;
    const fit = Math.min(cap, n, Math.max(0, (budgetMs - t - slow * a) / (slow * c)));
    if (fit < n) {
      const next = fit >= 1 ? slow * (a + c * fit) : 0;
      late += Math.max(0, Math.min(1, Math.max(0, 1 - (budgetMs - next - one) / t)) - Math.max(lost, fit / n));
    }
    missed += BATCH_WEIGHTS[j]! * t * late;
    time += BATCH_WEIGHTS[j]! * t;
  }
  return Math.min(1, missed / time);
}

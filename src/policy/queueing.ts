// Queueing model of a model's servers, for the pooling planner (pooling.ts). Pure.
//
// A model's queue is served by c servers (its workers: MPS partitions, or turns on time-shared GPUs).
// Following SERF (../shared/papers/serf-interference-aware-queueing.txt, section IV-C) a pool is an
// M/D_interf/c queue: Poisson arrivals, deterministic service whose rate depends on how many servers
// are busy (mu_i: the per-server rate when i are busy, which is where interference enters), solved as
// the interference-aware M/M_interf/c birth-death chain (SERF eqs. 1-6) and corrected towards
// deterministic service with Cosmetatos' factor (eqs. 7-10). With one server that is the M/D/1 queue
// exactly (Cosmetatos' f(1) = 0 halves the M/M/1 wait, which is the Pollaczek-Khinchine M/D/1 wait);
// with constant mu_i and exponential service it is the textbook M/M/c (Erlang C).
//
// The tail, which SERF does not give: the probability that a task waits longer than t is taken as
// P(wait > 0) * exp(-t * P(wait > 0) / Wq), i.e. a task that waits at all waits an exponential time
// with the mean that makes the overall mean Wq. For M/M/c this is exact (the conditional wait is
// exponential with rate c*mu - lambda, and Wq = C / (c*mu - lambda)).

/** What the queue says about one model's pool of servers. */
export interface QueueEstimate {
  /** lambda / (c * mu_c): below 1 the queue is stable. */
  readonly utilisation: number;
  /** P(a task waits at all): the probability all c servers are busy (Erlang C when mu_i is constant). */
  readonly waitProbability: number;
  /** Mean wait in the queue, s (Infinity when unstable). */
  readonly meanWaitS: number;
}

export type ServiceKind = 'exponential' | 'deterministic';

/** Cosmetatos' correction factor for M/D/c against M/M/c at utilisation rho (SERF eqs. 7-9). */
export function cosmetatosFactor(c: number, rho: number): number {
  if (rho <= 0) return 0.5;
  const f = ((c - 1) * (Math.sqrt(4 + 5 * c) - 2)) / (16 * c);
  const g = (1 - rho) / rho;
  return 0.5 * (1 + f * g);
}

/**
 * The pool as SERF's M/M_interf/c queue (eqs. 1-6), with deterministic service when asked (eq. 10).
 * `muPerServer[i-1]` is a server's service rate (tasks/s) when i servers are busy, i = 1..c.
 */
export function poolQueue(
  lambdaPerS: number,
  muPerServer: readonly number[],
  service: ServiceKind = 'deterministic',
): QueueEstimate {
  const c = muPerServer.length;
  if (c === 0 || !(muPerServer[c - 1]! > 0))
    return {
      utilisation: lambdaPerS > 0 ? Infinity : 0,
      waitProbability: lambdaPerS > 0 ? 1 : 0,
      meanWaitS: lambdaPerS > 0 ? Infinity : 0,
    };
  if (!(lambdaPerS > 0)) return { utilisation: 0, waitProbability: 0, meanWaitS: 0 };
  const rho = lambdaPerS / (c * muPerServer[c - 1]!);
  if (rho >= 1) return { utilisation: rho, waitProbability: 1, meanWaitS: Infinity };
  // term_n = prod_{i<=n} rho_i / n!, rho_i = lambda / mu_i (eq. 1 without p0).
  let term = 1;
  let sumBelow = 1; // n = 0
  for (let n = 1; n <= c; n++) {
    term *= lambdaPerS / muPerServer[n - 1]! / n;
    if (n < c) sumBelow += term;
  }
  const tail = term / (1 - rho); // sum over n >= c
  const p0 = 1 / (sumBelow + tail); // eqs. 2-3
  const waitProbability = p0 * tail;
  const lq = (p0 * term * rho) / ((1 - rho) * (1 - rho)); // eq. 5
  const wqMm = lq / lambdaPerS; // eq. 6
  const meanWaitS = service === 'deterministic' ? cosmetatosFactor(c, rho) * wqMm : wqMm;
  return { utilisation: rho, waitProbability, meanWaitS };
}

/** P(wait > tS) under the exponential conditional-wait tail (see the file comment). */
export function waitExceeds(q: QueueEstimate, tS: number): number {
  if (q.utilisation >= 1) return 1;
  if (tS <= 0) return tS < 0 ? 1 : q.waitProbability;
  if (q.waitProbability <= 0 || q.meanWaitS <= 0) return 0;
  return q.waitProbability * Math.exp((-tS * q.waitProbability) / q.meanWaitS);
}

/** Erlang C: P(wait) in M/M/c with offered load a = lambda / mu (for tests and callers with equal servers). */
export function erlangC(c: number, a: number): number {
  if (a >= c) return 1;
  let term = 1;
  let sum = 1;
  for (let k = 1; k < c; k++) {
    term *= a / k;
    sum += term;
  }
  const last = (term * a) / c / (1 - a / c);
  return last / (sum + last);
}

/**
 * The fraction of tasks an M/M/c+D pool misses: c servers of rate `mu` (tasks/s), Poisson arrivals at
 * `lambda`, and every task that would wait longer than `patienceS` dropped (or served late, behind the
 * on-time ones: the dispatch rule's early drop and its delayed lane), so that it neither counts as met
 * nor holds up the tasks behind it. Monotone in the load and finite past utilisation 1, where it tends
 * to the excess, 1 - 1/rho, as the patience grows; with no patience it is the loss system's blocking.
 *
 * Exact for exponential service (Baccelli and Hebuterne's virtual-wait density for M/M/c+G, with
 * deterministic patience): below c busy the Erlang birth-death chain, above it the virtual wait's
 * density lambda pi_{c-1} exp(lambda min(x, D) - c mu x), and a task misses when that wait exceeds D.
 * `waitScale` multiplies every wait (as D / waitScale): Cosmetatos' factor for deterministic batches and
 * the arrivals' squared CV for bursts, as poolQueue's mean wait is scaled.
 */
export function impatientMiss(lambda: number, c: number, mu: number, patienceS: number, waitScale = 1): number {
  if (!(lambda > 0)) return 0;
  if (!(c >= 1) || !(mu > 0) || patienceS < 0) return 1;
  const d = waitScale > 0 ? patienceS / waitScale : Infinity;
  const a = lambda / mu;
  // u = pi_{c-1} / sum_{k<c} pi_k, by the ratio pi_k / pi_{k-1} = a / k.
  let term = 1;
  let sum = 1;
  for (let k = 1; k < c; k++) {
    term *= a / k;
    sum += term;
  }
  const u = term / sum;
  const cmu = c * mu;
  const delta = lambda - cmu;
  if (d === Infinity) return delta < 0 ? 0 : 1 - cmu / lambda;
  // With E = e^{delta d}: P(miss) = lambda u E / (c mu) / (1 + lambda u ((E - 1) / delta + E / (c mu))),
  // divided through by E where delta > 0 so that nothing overflows.
  const x = delta * d;
  if (x > 0) {
    const inv = Math.exp(-x);
    return (lambda * u) / cmu / (inv + lambda * u * ((1 - inv) / delta + 1 / cmu));
  }
  const e = Math.exp(x);
  const ramp = x === 0 ? d : (d * Math.expm1(x)) / x; // (E - 1) / delta
  return (lambda * u * e) / cmu / (1 + lambda * u * (ramp + e / cmu));
}

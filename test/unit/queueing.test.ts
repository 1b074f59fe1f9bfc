// The queueing model of the pooling planner against closed forms: M/M/c (Erlang C, exact), M/D/1
// (Pollaczek-Khinchine, exact), and SERF's interference-aware chain.
import { describe, expect, it } from 'vitest';
import { cosmetatosFactor, erlangC, impatientMiss, poolQueue, waitExceeds } from '../../src/policy/queueing.js';
import { Rng } from '../../src/workload/random.js';

/** Erlang C from the textbook closed form, written independently of queueing.ts. */
function erlangCClosedForm(c: number, a: number): number {
  const fact = (k: number): number => (k <= 1 ? 1 : k * fact(k - 1));
  let sum = 0;
  for (let k = 0; k < c; k++) sum += a ** k / fact(k);
  const top = (a ** c / fact(c)) * (c / (c - a));
  return top / (sum + top);
}

describe('poolQueue', () => {
  it.each([
    [1, 50, 100],
    [2, 150, 100],
    [4, 300, 100],
    [8, 700, 100],
  ])('M/M/%i at lambda %f, mu %f: P(wait) is Erlang C and Wq = C / (c mu - lambda)', (c, lambda, mu) => {
    const q = poolQueue(lambda, new Array<number>(c).fill(mu), 'exponential');
    const C = erlangCClosedForm(c, lambda / mu);
    expect(q.waitProbability).toBeCloseTo(C, 10);
    expect(erlangC(c, lambda / mu)).toBeCloseTo(C, 10);
    expect(q.meanWaitS).toBeCloseTo(C / (c * mu - lambda), 10);
    expect(q.utilisation).toBeCloseTo(lambda / (c * mu), 12);
    // The M/M/c waiting-time tail is exact: P(W > t) = C exp(-(c mu - lambda) t).
    for (const t of [0.001, 0.01, 0.05])
      expect(waitExceeds(q, t)).toBeCloseTo(C * Math.exp(-(c * mu - lambda) * t), 10);
  });

  it.each([0.1, 0.5, 0.9])(
    'M/D/1 at utilisation %f: Wq is the Pollaczek-Khinchine mean rho / (2 mu (1 - rho))',
    (rho) => {
      const mu = 200;
      const q = poolQueue(rho * mu, [mu], 'deterministic');
      expect(q.waitProbability).toBeCloseTo(rho, 10); // one server: P(wait) = P(busy) = rho
      expect(q.meanWaitS).toBeCloseTo(rho / (2 * mu * (1 - rho)), 10);
    },
  );

  it('M/D/c waits less than M/M/c (Cosmetatos factor in (0.5, 1), c > 1); more servers at one load wait less', () => {
    for (const c of [2, 4, 8]) {
      const f = cosmetatosFactor(c, 0.8);
      expect(f).toBeGreaterThan(0.5);
      expect(f).toBeLessThan(1);
      expect(poolQueue(0.8 * c * 100, new Array<number>(c).fill(100)).meanWaitS).toBeLessThan(
        poolQueue(0.8 * c * 100, new Array<number>(c).fill(100), 'exponential').meanWaitS,
      );
    }
    // Statistical multiplexing: one queue over 4 servers beats 4 separate queues at the same load.
    const pooled = poolQueue(320, [100, 100, 100, 100]);
    const split = poolQueue(80, [100]);
    expect(pooled.meanWaitS).toBeLessThan(split.meanWaitS / 2);
    expect(waitExceeds(pooled, 0.02)).toBeLessThan(waitExceeds(split, 0.02));
  });

  it("interference: servers slower when more are busy (SERF's mu_i) wait longer than at the 1-busy rate", () => {
    // And the wait is the one of the chain solved directly.
    const lambda = 150;
    const mu = [100, 90];
    const q = poolQueue(lambda, mu, 'exponential');
    // Birth-death chain: p1 = p0 lambda/mu1, p2 = p1 lambda/(2 mu2), p_{n+1} = p_n lambda/(2 mu2) for n >= 2.
    const r = lambda / (2 * mu[1]!);
    const p1 = lambda / mu[0]!;
    const p2 = (p1 * lambda) / (2 * mu[1]!);
    const p0 = 1 / (1 + p1 + p2 / (1 - r));
    expect(q.waitProbability).toBeCloseTo((p0 * p2) / (1 - r), 10);
    expect(q.meanWaitS).toBeCloseTo((p0 * p2 * r) / (1 - r) ** 2 / lambda, 10);
    expect(q.meanWaitS).toBeGreaterThan(poolQueue(lambda, [100, 100], 'exponential').meanWaitS);
  });

  it('unstable or empty pools', () => {
    expect(poolQueue(300, [100, 100]).utilisation).toBeCloseTo(1.5);
    expect(waitExceeds(poolQueue(300, [100, 100]), 1)).toBe(1);
    expect(poolQueue(0, [100]).meanWaitS).toBe(0);
    expect(waitExceeds(poolQueue(0, [100]), 0.01)).toBe(0);
    expect(poolQueue(10, []).utilisation).toBe(Infinity);
    expect(waitExceeds(poolQueue(50, [100]), -0.001)).toBe(1); // no time left for the wait: a miss
  });
});

/**
 * FCFS M/M/c where a task whose wait would pass `d` s leaves without service: each task's wait is known
 * when it arrives (its service time is drawn when it joins), so this is the M/M/c+D queue by definition.
 */
function simulateImpatient(lambda: number, c: number, mu: number, d: number, tasks: number, seed: number): number {
  const rng = new Rng(seed);
  const exp = (rate: number) => -Math.log(1 - rng.next()) / rate;
  const free = new Array<number>(c).fill(0);
  let t = 0;
  let missed = 0;
  for (let i = 0; i < tasks; i++) {
    t += exp(lambda);
    let k = 0;
    for (let j = 1; j < c; j++) if (free[j]! < free[k]!) k = j;
    const start = Math.max(t, free[k]!);
    if (start - t > d) missed++;
    else free[k] = start + exp(mu);
  }
  return missed / tasks;
}

describe('impatientMiss (M/M/c+D)', () => {
  it('matches a simulation of the queue, below, at and past utilisation 1', () => {
    for (const [rho, d, c] of [
      [0.9, 0.05, 2],
      [1.1, 0.05, 2],
      [0.95, 0.02, 4],
      [1, 0.1, 1],
      [0.7, 0, 3],
    ] as const) {
      const lambda = rho * c * 100;
      const simulated = simulateImpatient(lambda, c, 100, d, 400_000, 11);
      expect(Math.abs(impatientMiss(lambda, c, 100, d) - simulated)).toBeLessThan(0.005);
    }
  });

  it('is M/M/1+D in closed form, Erlang B with no patience, and the excess with unbounded patience', () => {
    // M/M/1+D: (1 - rho) rho e^{-(mu - lambda) D} / (1 - rho^2 e^{-(mu - lambda) D})
    const e = Math.exp(-(100 - 80) * 0.03);
    expect(impatientMiss(80, 1, 100, 0.03)).toBeCloseTo((0.2 * 0.8 * e) / (1 - 0.64 * e), 12);
    // Erlang B(3, 2): (a^3 / 3!) / sum_{k<=3} a^k / k!
    expect(impatientMiss(200, 3, 100, 0)).toBeCloseTo(8 / 6 / (1 + 2 + 2 + 8 / 6), 12);
    expect(impatientMiss(300, 2, 100, Infinity)).toBeCloseTo(1 - 200 / 300, 12);
    expect(impatientMiss(150, 2, 100, Infinity)).toBe(0);
    expect(impatientMiss(300, 2, 100, 1e6)).toBeCloseTo(1 - 200 / 300, 9); // no overflow
  });

  it('rises with the load and falls with the patience, smoothly through utilisation 1', () => {
    let last = 0;
    for (let rho = 0.5; rho <= 1.5; rho += 0.01) {
      const miss = impatientMiss(rho * 200, 2, 100, 0.05);
      expect(miss).toBeGreaterThan(last);
      expect(miss - last).toBeLessThan(0.02);
      last = miss;
    }
    expect(impatientMiss(190, 2, 100, 0.1)).toBeLessThan(impatientMiss(190, 2, 100, 0.05));
    expect(impatientMiss(190, 2, 100, 0.1, 2)).toBeCloseTo(impatientMiss(190, 2, 100, 0.05), 12);
  });

  it('counts every task missed with no servers or a negative patience, none with no load', () => {
    expect(impatientMiss(10, 0, 100, 1)).toBe(1);
    expect(impatientMiss(10, 2, 0, 1)).toBe(1);
    expect(impatientMiss(10, 2, 100, -0.001)).toBe(1);
    expect(impatientMiss(0, 2, 100, 1)).toBe(0);
  });
});

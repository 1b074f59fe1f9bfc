// The queueing model of the pooling planner against closed forms: M/M/c (Erlang C, exact), M/D/1
// (Pollaczek-Khinchine, exact), and SERF's interference-aware chain.
import { describe, expect, it } from 'vitest';
import { cosmetatosFactor, erlangC, poolQueue, waitExceeds } from '../../src/policy/queueing.js';

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

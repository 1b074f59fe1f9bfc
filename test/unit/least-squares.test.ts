// Least squares (tools/fit/leastSquares.ts): the linear solvers and the Levenberg-Marquardt minimiser
// that `inss profile derive` fits its surfaces with.
import { describe, expect, it } from 'vitest';
import { fitLine, fitProportional, leastSquares, levenbergMarquardt } from '../../tools/fit/leastSquares.js';

describe('linear least squares', () => {
  it('recovers an exact line and a proportional fit', () => {
    const x = [0, 1, 2, 3, 4];
    const line = fitLine(
      x,
      x.map((v) => 2.5 * v - 1),
    );
    expect(line.alpha).toBeCloseTo(2.5, 9);
    expect(line.beta).toBeCloseTo(-1, 9);
    expect(
      fitProportional(
        x,
        x.map((v) => 0.75 * v),
      ),
    ).toBeCloseTo(0.75, 9);
  });

  it('gives the least-squares solution of an overdetermined system', () => {
    // y = 1 + x with noise +-0.1 alternating: the fit is the noiseless line's best compromise.
    const rows = [
      [1, 0],
      [1, 1],
      [1, 2],
      [1, 3],
    ];
    const y = [1.1, 1.9, 3.1, 3.9];
    const [b, a] = leastSquares(rows, y) as [number, number];
    expect(a).toBeCloseTo(0.96, 9);
    expect(b).toBeCloseTo(1.06, 9);
  });

  it('refuses empty or mismatched input', () => {
    expect(() => leastSquares([], [])).toThrow(RangeError);
    expect(() => leastSquares([[1]], [1, 2])).toThrow(RangeError);
  });
});

describe('levenbergMarquardt', () => {
  it('fits an exponential decay from a poor start', () => {
    const t = Array.from({ length: 20 }, (_, i) => i * 0.5);
    const y = t.map((v) => 3 * Math.exp(-0.7 * v) + 0.5);
    const res = (p: readonly number[]) => t.map((v, i) => p[0]! * Math.exp(-p[1]! * v) + p[2]! - y[i]!);
    const [a, k, c] = levenbergMarquardt(res, [1, 0.1, 0]);
    expect(a).toBeCloseTo(3, 5);
    expect(k).toBeCloseTo(0.7, 5);
    expect(c).toBeCloseTo(0.5, 5);
  });

  it('minimises the Rosenbrock function written as residuals, and never returns a worse point', () => {
    const res = (p: readonly number[]) => [10 * (p[1]! - p[0]! ** 2), 1 - p[0]!];
    const cost = (p: readonly number[]) => res(p).reduce((s, r) => s + r * r, 0);
    const start = [-1.2, 1];
    const best = levenbergMarquardt(res, start, 400);
    expect(best[0]).toBeCloseTo(1, 4);
    expect(best[1]).toBeCloseTo(1, 4);
    expect(cost(levenbergMarquardt(res, start, 3))).toBeLessThanOrEqual(cost(start));
  });

  it('is deterministic', () => {
    const res = (p: readonly number[]) => [p[0]! - 2, 3 * (p[1]! + 1), p[0]! * p[1]! + 2];
    expect(levenbergMarquardt(res, [0, 0])).toEqual(levenbergMarquardt(res, [0, 0]));
  });
});

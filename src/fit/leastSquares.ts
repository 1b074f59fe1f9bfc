// Linear least squares for the latency model's linear coefficients (paper section 4.1: "fit all
// coefficients alpha and beta using the least squares method").
import { Matrix, solve } from 'ml-matrix';

/** Solves min ||A x - y||^2 (A given by rows). Needs at least as many rows as columns. */
export function leastSquares(rows: readonly (readonly number[])[], y: readonly number[]): number[] {
  if (rows.length === 0 || rows.length !== y.length) throw new RangeError('leastSquares: need matching, non-empty rows and targets');
  const a = new Matrix(rows.map((r) => [...r]));
  const b = Matrix.columnVector([...y]);
  return solve(a, b, true).to1DArray();
}

/** Fits `y = alpha * x + beta`. */
export function fitLine(x: readonly number[], y: readonly number[]): { alpha: number; beta: number } {
  const [alpha, beta] = leastSquares(x.map((v) => [v, 1]), y) as [number, number];
  return { alpha, beta };
}

/** Fits `y = c * x` through the origin. */
export function fitProportional(x: readonly number[], y: readonly number[]): number {
  let sxx = 0;
  let sxy = 0;
  for (let i = 0; i < x.length; i++) {
    sxx += x[i]! * x[i]!;
    sxy += x[i]! * y[i]!;
  }
  return sxx > 0 ? sxy / sxx : 0;
}

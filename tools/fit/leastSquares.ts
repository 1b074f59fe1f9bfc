// Least squares: linear, for the latency model's linear coefficients (paper section 4.1: "fit all
// coefficients alpha and beta using the least squares method"), and nonlinear (Levenberg-Marquardt,
// for the parametric surfaces of `inss profile derive`).
import { Matrix, solve } from 'ml-matrix';

/** Solves min ||A x - y||^2 (A given by rows). Needs at least as many rows as columns. */
export function leastSquares(rows: readonly (readonly number[])[], y: readonly number[]): number[] {
  if (rows.length === 0 || rows.length !== y.length)
    throw new RangeError('leastSquares: need matching, non-empty rows and targets');
  const a = new Matrix(rows.map((r) => [...r]));
  const b = Matrix.columnVector([...y]);
  return solve(a, b, true).to1DArray();
}

/** Fits `y = alpha * x + beta`. */
export function fitLine(x: readonly number[], y: readonly number[]): { alpha: number; beta: number } {
  const [alpha, beta] = leastSquares(
    x.map((v) => [v, 1]),
    y,
  ) as [number, number];
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

// ---------------------------------------------------------------------------------------------
// Levenberg-Marquardt (deterministic; forward-difference Jacobian; Marquardt's diagonal scaling)
// ---------------------------------------------------------------------------------------------

/** Minimises sum(residuals(theta)^2) from theta0. Returns the best theta found. */
export function levenbergMarquardt(
  residuals: (theta: readonly number[]) => number[],
  theta0: readonly number[],
  maxIterations = 400,
): number[] {
  let theta = [...theta0];
  let r = residuals(theta);
  let cost = sumSq(r);
  let lambda = 1e-2;
  const n = theta.length;
  for (let it = 0; it < maxIterations; it++) {
    const jac: number[][] = r.map(() => new Array<number>(n).fill(0));
    for (let j = 0; j < n; j++) {
      const step = 1e-6 * Math.max(1, Math.abs(theta[j]!));
      const t2 = [...theta];
      t2[j] = theta[j]! + step;
      const r2 = residuals(t2);
      for (let i = 0; i < r.length; i++) jac[i]![j] = (r2[i]! - r[i]!) / step;
    }
    const J = new Matrix(jac);
    const jtj = J.transpose().mmul(J);
    const jtr = J.transpose().mmul(Matrix.columnVector(r));
    let improved = false;
    for (let attempt = 0; attempt < 12; attempt++) {
      const a = jtj.clone();
      for (let j = 0; j < n; j++) a.set(j, j, jtj.get(j, j) * (1 + lambda) + 1e-12);
      const delta = solve(a, jtr.clone().mul(-1)).to1DArray();
      const cand = theta.map((v, j) => v + delta[j]!);
      const rc = residuals(cand);
      const cc = sumSq(rc);
      if (Number.isFinite(cc) && cc < cost) {
        const gain = cost - cc;
        theta = cand;
        r = rc;
        cost = cc;
        lambda = Math.max(lambda / 3, 1e-9);
        improved = gain > 1e-12 * Math.max(1, cost);
        break;
      }
      lambda *= 4;
    }
    if (!improved) break;
  }
  return theta;
}

function sumSq(r: readonly number[]): number {
  let s = 0;
  for (const v of r) s += v * v;
  return s;
}

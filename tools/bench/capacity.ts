// The capacity metric of `inss bench`: a policy's violation-versus-load curve on a grid of
// load multipliers, and its capacity at an attainment = the highest grid load at which that load AND
// EVERY LOWER ONE keep at least that fraction of tasks within SLO. Unlike a bisection, it assumes
// nothing about the curve's shape: SLO violation is not monotone in load for every policy (a policy
// may re-plan differently at a lower rate and miss more), and a dip below the limit above a failing
// load does not count. Pure.

/** A grid of load multipliers: fromX, fromX + stepX, ..., up to toX. */
export interface LoadGrid {
  readonly fromX: number;
  readonly toX: number;
  readonly stepX: number;
}

/** The suite's grid: 0.25x to 3x in steps of 0.25 (docs/results.md says why this step). */
export const DEFAULT_GRID: LoadGrid = { fromX: 0.25, toX: 3, stepX: 0.25 };

/** The attainments capacity is reported at: 99% and 95% of tasks within SLO. */
export const ATTAINMENTS = [0.99, 0.95] as const;

export function gridLoads(g: LoadGrid): number[] {
  if (!(g.fromX > 0) || !(g.stepX > 0) || !(g.toX >= g.fromX) || !Number.isFinite(g.toX))
    throw new RangeError(
      `load grid: need 0 < from <= to and step > 0, got from ${g.fromX}, to ${g.toX}, step ${g.stepX}`,
    );
  const n = Math.floor((g.toX - g.fromX) / g.stepX + 1e-9) + 1;
  if (n > 1000) throw new RangeError(`load grid: ${n} points is too many (at most 1000)`);
  // Rounded to 1e-9 so that 0.1-steps print and compare as written.
  return Array.from({ length: n }, (_, k) => Math.round((g.fromX + k * g.stepX) * 1e9) / 1e9);
}

/** Parses `from:to:step` (e.g. `0.25:3:0.25`), naming the flag in errors. */
export function parseGrid(text: string, flag: string): LoadGrid {
  const parts = text.split(':').map((s) => Number(s.trim()));
  if (parts.length !== 3 || parts.some((x) => !Number.isFinite(x)))
    throw new RangeError(`${flag}: expected from:to:step (e.g. 0.25:3:0.25), got '${text}'`);
  const g = { fromX: parts[0]!, toX: parts[1]!, stepX: parts[2]! };
  try {
    gridLoads(g);
  } catch (err) {
    throw new RangeError(`${flag}: ${(err as Error).message}`);
  }
  return g;
}

/** One point of a violation-versus-load curve. */
export interface CurvePoint {
  readonly loadScale: number;
  /** Late or dropped, percent of finished tasks. */
  readonly sloViolationPct: number;
  readonly goodputPerS: number;
}

/** The violation limit (percent) of an attainment: 0.99 -> 1%. */
export function violationLimitPct(attainment: number): number {
  return (1 - attainment) * 100;
}

/**
 * Capacity at `attainment` from a curve evaluated on a grid in increasing load: the load of the last
 * point before the first one over the limit (every point up to it within), 0 when the first point
 * fails. A curve cut short (see `gridCurve`) gives the right answer as long as it reaches a failing
 * point or the end of the grid.
 */
export function capacityOf(curve: readonly CurvePoint[], attainment: number): number {
  const limit = violationLimitPct(attainment) + 1e-9;
  let cap = 0;
  for (const p of curve) {
    if (!(p.sloViolationPct <= limit)) break;
    cap = p.loadScale;
  }
  return cap;
}

/**
 * Evaluates `run` on `loads` in increasing order. With `stopAtAttainment`, stops after the first
 * load below that attainment: past it no capacity at that attainment or any higher one can change
 * (the suite stops at the lowest reported attainment, 95%, to save time; the curve then ends there).
 */
export function gridCurve(
  run: (loadScale: number) => CurvePoint,
  loads: readonly number[],
  stopAtAttainment?: number,
): CurvePoint[] {
  const sorted = [...loads].sort((a, b) => a - b);
  const out: CurvePoint[] = [];
  for (const x of sorted) {
    const p = run(x);
    out.push(p);
    if (stopAtAttainment !== undefined && !(p.sloViolationPct <= violationLimitPct(stopAtAttainment) + 1e-9)) break;
  }
  return out;
}

/** Mean and range of a figure over seeds. */
export interface Spread {
  readonly mean: number;
  readonly min: number;
  readonly max: number;
  readonly n: number;
}

export function spread(values: readonly number[]): Spread {
  if (values.length === 0) return { mean: NaN, min: NaN, max: NaN, n: 0 };
  return {
    mean: values.reduce((s, v) => s + v, 0) / values.length,
    min: Math.min(...values),
    max: Math.max(...values),
    n: values.length,
  };
}

/** Parses `--seeds 1,2,3`: distinct non-negative integers. */
export function parseSeeds(text: string, flag = '--seeds'): number[] {
  const seeds = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
  if (seeds.length === 0 || seeds.some((s) => !Number.isInteger(s) || s < 0))
    throw new RangeError(`${flag}: expected comma-separated non-negative integers, got '${text}'`);
  if (new Set(seeds).size !== seeds.length) throw new RangeError(`${flag}: a seed is given twice in '${text}'`);
  return seeds;
}

// inss's margins as functions of the attainment target (src/policy/attainment.ts; docs/inss.md, "The
// attainment target"). At 0.99 they are the constants of inssTuning.ts exactly.
import { DEFAULT_ATTAINMENT_TARGET } from '../src/policy/attainment.js';
import {
  KEEP_MISSED_FRACTION,
  MEETS_MISSED_FRACTION,
  RATE_HEADROOM,
  SLO_FRACTION,
  SWITCH_SAVES_FRACTION,
} from './inssTuning.js';
import { normalQuantile } from '../src/workload/normal.js';

export interface InssMargins {
  /** Every measured rate is planned for x this (>= 1). */
  readonly rateHeadroom: number;
  /** Each task's latency is planned against SLO x this (in (0, 1]). */
  readonly sloFraction: number;
  /** A plan predicted to miss at most this fraction of the tasks meets the target (1 - target). */
  readonly meetsMissed: number;
  /** A deployment in force that meets the target is left only for one saving this fraction of the tasks. */
  readonly switchSaves: number;
  /** With no rate risen, a deployment in force predicted to miss at most this fraction is kept. */
  readonly keepMissed: number;
}

/** The fraction of tasks the target allows to miss, rounded so that 1 - 0.99 is 0.01 exactly. */
export function missAllowance(target: number): number {
  return Math.round((1 - target) * 1e9) / 1e9;
}

const DEFAULT_ALLOWANCE = missAllowance(DEFAULT_ATTAINMENT_TARGET);

/**
 * The margins for `target`. The three fractions of the tasks scale with the allowance (1 - target): the
 * planner's notion of "meets", of a switch worth its swaps and of a deployment worth keeping are all
 * relative to what the operator accepts to miss. In proportion to it for a stricter target than 0.99; for a
 * looser one with its square root (allowanceScale). The rate headroom and the SLO margin scale with
 * marginScale(target).
 */
export function inssMargins(target: number = DEFAULT_ATTAINMENT_TARGET): InssMargins {
  const r = allowanceScale(target);
  const k = marginScale(target);
  return {
    rateHeadroom: 1 + (RATE_HEADROOM - 1) * k,
    sloFraction: 1 - (1 - SLO_FRACTION) * k,
    meetsMissed: r === 1 ? MEETS_MISSED_FRACTION : MEETS_MISSED_FRACTION * r,
    switchSaves: r === 1 ? SWITCH_SAVES_FRACTION : SWITCH_SAVES_FRACTION * r,
    keepMissed: r === 1 ? KEEP_MISSED_FRACTION : KEEP_MISSED_FRACTION * r,
  };
}

/**
 * What part of the 99% target's headroom and SLO margin a target keeps: z(target) / z(0.99) for a target
 * above 0.99, z the standard normal quantile (1.33 at 0.999), and 1 at or below 0.99. Both margins absorb
 * what the planner cannot predict (arrivals above the measured rate, the latency model's error); the part
 * of a roughly normal fluctuation a plan must cover grows with that quantile, so a stricter target needs
 * more. A looser one does not need less: the fluctuation is the same, and a plan with less margin
 * saturates at a lower load (shrinking both margins at 0.95 lowered inss's 95% capacity on diurnal-6,
 * paper-6 and surge-6: docs/inss.md, "The attainment target").
 */
export function marginScale(target: number): number {
  if (target <= DEFAULT_ATTAINMENT_TARGET) return 1;
  return normalQuantile(target) / normalQuantile(DEFAULT_ATTAINMENT_TARGET);
}

/**
 * How the three fractions of the tasks scale from the 99% line's: the allowance's ratio to 0.01 at or below it
 * (0.1 at 0.999), its square root above it (2.24 at 0.95, not 5). A plan's predicted misses are a mean over
 * the run; its measured misses come in bursts (a flash crowd, a re-plan's swaps), and at a loose target the
 * rules that keep a plan predicted to miss up to the whole allowance kept plans through bursts that then
 * overran it: at 0.95 with the fractions in proportion (5% meets the target), inss@95 on surge-6 kept 2.42x
 * at the 95% line against 2.75x with the square root, and the other built-in scenarios gave the same
 * capacities either way (docs/inss.md, "The attainment target"). Always at most the allowance itself.
 */
export function allowanceScale(target: number): number {
  const r = missAllowance(target) / DEFAULT_ALLOWANCE;
  return r <= 1 ? r : Math.sqrt(r);
}

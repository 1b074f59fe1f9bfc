// The re-plan gate the policies share: has the load moved enough since the last plan to plan again?
// gpulet, iGniter, the oracle and inss each re-plan only when some model's rate moved by more than a
// fraction of the rate planned for (hysteresis: Poisson noise in the monitor's estimate must not
// swap workers every epoch). They differ only in the fraction, the floor and whether traffic that
// starts or stops counts on its own. Pure.

export interface ReplanGate {
  /** Re-plan when |now - prev| > fraction x max(prev, floorPerS) for some model. */
  readonly fraction: number;
  /** Rates below this (tasks/s) count as this much, so near-idle models do not trigger a re-plan. */
  readonly floorPerS: number;
  /** Also re-plan when a model's traffic starts (0 -> > 0) or stops (> 0 -> 0), however small (Gpulet). */
  readonly onStartStop?: boolean;
}

/**
 * Whether `now` moved past the gate from `prev` (rates per model, tasks/s, same order). A length change always counts.
 */
export function ratesMoved(prev: readonly number[], now: readonly number[], gate: ReplanGate): boolean {
  if (prev.length !== now.length) return true;
  return now.some((r, i) => {
    const p = prev[i]!;
    if (gate.onStartStop === true && p > 0 !== r > 0) return true;
    return Math.abs(r - p) > gate.fraction * Math.max(p, gate.floorPerS);
  });
}

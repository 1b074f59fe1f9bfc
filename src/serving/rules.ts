// Serving rules the discrete-event simulator (src/sim/simulator.ts) and the scheduler's control plane
// (scheduler/control.ts) both follow, each written once here so the running system does what the
// digital twin predicts. Pure.

/**
 * A queued task is dropped by expiry when it is strictly past its deadline (arrival + SLO): a task
 * exactly at its deadline may still be answered in time by a batch that takes no time.
 */
export function pastDeadline(arrivalMs: number, sloMs: number, nowMs: number): boolean {
  return nowMs > arrivalMs + sloMs;
}

/**
 * On a time-shared GPU that frees up, the order in which its models get to start a batch: the model
 * whose oldest waiting task is oldest first (models with nothing waiting last, in the order given).
 * `headArrivalMs(m)` is the arrival time of model m's oldest queued task, or Infinity when none waits.
 */
export function nextModelsOnFreedGpu(models: Iterable<number>, headArrivalMs: (m: number) => number): number[] {
  const unique = [...new Set(models)];
  const head = new Map(unique.map((m) => [m, headArrivalMs(m)]));
  return unique.sort((a, b) => head.get(a)! - head.get(b)!);
}

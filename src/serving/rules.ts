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
 * On a time-shared GPU that frees up, the order in which its models get to start a batch: earliest
 * deadline first, the model whose oldest waiting task's deadline (its arrival + its model's SLO) is
 * soonest (models with nothing waiting last, in the order given). A batch, once started, is not
 * preempted, so a lax model's old task must not hold the GPU ahead of a tight model's new one: with
 * SLOs of 25 and 400 ms on one GPU, oldest-first sends the 400 ms model's batch though its task has
 * hundreds of milliseconds left and the 25 ms model's has a few. `headDeadlineMs(m)`: that deadline,
 * or Infinity when none waits.
 */
export function nextModelsOnFreedGpu(models: Iterable<number>, headDeadlineMs: (m: number) => number): number[] {
  const unique = [...new Set(models)];
  const head = new Map(unique.map((m) => [m, headDeadlineMs(m)]));
  return unique.sort((a, b) => head.get(a)! - head.get(b)!);
}

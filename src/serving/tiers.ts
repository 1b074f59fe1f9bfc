// SLO tiers of one network served by shared workers: names that run the same network (`profileModel`, or the
// same repository model at several SLOs) may be served together, one worker batching across names in
// earliest-deadline-first order, instead of one copy of the weights and one share per name. The simulator
// (src/sim/) and the scheduler's control plane (scheduler/control/) both follow this module; the planner's side
// is src/policy/tiers.ts. Pure.
//
// The rule: a deployment's `sharedBy[m]` names the model whose lane and workers serve model m (m itself: apart).
// A task of a shared tier is held in that lane by its stamp, `arrival + budget(m) - budget(lane)`, in stamp order
// (a pipeline step's task is held the same way by its deadline stamp): the lane's budget after the stamp is the
// task's own deadline, so the dispatch rule (dispatch.ts) runs on the lane unchanged. Its head is the task due
// first; a batch of the oldest stamps is a batch of the earliest deadlines, and the rule's check that the head
// finishes by its deadline keeps every task of the batch within its own (each is due no earlier, and all finish
// together). The early drop, the time-outs and expiry follow the head's deadline, which is its own. The lane's
// arrival rate is the sum of its names' (`laneRatePerS`). Each task keeps its own name: it is answered, counted
// and timed as its name's, its latency from its own arrival.

/** What `tierGroups` reads of a served model. */
export interface TierModel {
  readonly name: string;
  readonly sloMs: number;
  readonly profileModel?: string | undefined;
}

/**
 * Per model, the model whose lane and workers serve it when same-network names share workers: of the names that
 * run one network, the one with the tightest SLO (the lowest index on a tie) serves them all. `apart`: models that
 * keep their own lane whatever their network (a pipeline's steps, a model whose cost depends on its input).
 */
export function tierGroups(models: readonly TierModel[], apart: ReadonlySet<number> = new Set()): number[] {
  const lead = new Map<string, number>();
  models.forEach((m, i) => {
    if (apart.has(i)) return;
    const net = m.profileModel ?? m.name;
    const l = lead.get(net);
    if (l === undefined || m.sloMs < models[l]!.sloMs) lead.set(net, i);
  });
  return models.map((m, i) => (apart.has(i) ? i : lead.get(m.profileModel ?? m.name)!));
}

/** Whether `sharedBy` puts two names in one lane. */
export function sharesAny(sharedBy: readonly number[] | undefined): boolean {
  return sharedBy !== undefined && sharedBy.some((l, m) => l !== m);
}

/** The lane model m's tasks are held in (`sharedBy` absent: its own). */
export function laneOf(sharedBy: readonly number[] | undefined, m: number): number {
  return sharedBy?.[m] ?? m;
}

/** The arrival rate of lane `lane`: the sum of the rates of the names it holds (tasks/s). */
export function laneRatePerS(
  sharedBy: readonly number[] | undefined,
  lane: number,
  ratesPerS: readonly number[],
): number {
  if (!sharedBy) return ratesPerS[lane]!;
  let sum = 0;
  for (let m = 0; m < sharedBy.length; m++) if (sharedBy[m] === lane) sum += ratesPerS[m]!;
  return sum;
}

/**
 * The stamp a task of budget `budgetMs` arriving at `arrivalMs` is held by in a lane of budget `laneBudgetMs`:
 * the lane's budget after it is the task's own deadline.
 */
export function tierStampMs(arrivalMs: number, budgetMs: number, laneBudgetMs: number): number {
  return arrivalMs + budgetMs - laneBudgetMs;
}

/** Validates a deployment's `sharedBy` for `n` models: a lane serves itself, and a name is in one lane. */
export function sharedByProblem(sharedBy: readonly number[], n: number): string | null {
  if (sharedBy.length !== n) return `sharedBy: ${sharedBy.length} entries for ${n} models`;
  for (let m = 0; m < n; m++) {
    const l = sharedBy[m]!;
    if (!Number.isInteger(l) || l < 0 || l >= n) return `sharedBy[${m}]: ${l} is not a model index`;
    if (sharedBy[l] !== l) return `sharedBy[${m}]: lane ${l} is itself served by ${sharedBy[l]}`;
  }
  return null;
}

// The simulator's task buffer (paper section 3.1): per model an on-time FIFO and a delayed one, of
// task arrival times, under the model's queue policy (src/serving/queuePolicy.ts), the scheduler's too.
// A task's on-time deadline is arrival + its SLO budget (or its policy's shorter timeout). A pipeline's step
// task (pipelines.ts) is held by its deadline stamp in place of an arrival, in stamp order, and its request's
// arrival (its origin) rides beside it in a lane of origins kept in the same order. A shared SLO tier's task
// (src/serving/tiers.ts) is held in its lane by its stamp, its name beside it in a lane of names.
import type { EpochStats } from '../serving/epochStats.js';
import { admit, DEFAULT_QUEUE_POLICY, onTimeBudgetMs, type QueuePolicy } from '../serving/queuePolicy.js';
import { pastDeadline } from '../serving/rules.js';
import { TaskQueue } from '../serving/taskQueue.js';
import { laneOf, tierStampMs } from '../serving/tiers.js';
import type { SimPipelines } from './pipelines.js';
import type { SimStats } from './stats.js';
import type { SimTrace } from './types.js';

/**
 * A batch's tasks: their arrivals (a step's: its stamps), for a step model their requests' arrivals, and in a
 * shared tiers' lane their names (`size` of them; left as they are in a lane of one name).
 */
export interface BatchSlots {
  arrivals: Float64Array;
  origins: Float64Array;
  names: Int32Array;
}

export class TaskBuffer {
  /** Per model, its on-time lane and its delayed one (tasks that timed out), of arrival times. */
  readonly onTime: TaskQueue<number>[];
  readonly delayed: TaskQueue<number>[];
  readonly policies: QueuePolicy[];
  /** Per model, a task's on-time deadline after its arrival (ms). */
  readonly onTimeMs: number[];
  /** Per model, its lanes' tasks' request arrivals, in the lanes' order: a pipeline's step models only. */
  private readonly originOnTime: (TaskQueue<number> | null)[];
  private readonly originDelayed: (TaskQueue<number> | null)[];
  /** Per lane that has held shared tiers (src/serving/tiers.ts), its tasks' names in the lanes' order. */
  private readonly nameOnTime: (TaskQueue<number> | null)[];
  private readonly nameDelayed: (TaskQueue<number> | null)[];
  /** The deployment's `sharedBy`: per model, the lane its tasks are held in (absent: its own). */
  private sharedBy: readonly number[] | undefined;

  /** `budgetMs`: per model, the SLO a task is budgeted in the task buffer (its way out excluded). */
  constructor(
    budgetMs: readonly number[],
    queuePolicies: readonly (QueuePolicy | undefined)[] | undefined,
    private readonly stats: SimStats,
    private readonly epoch: EpochStats,
    private readonly trace: SimTrace | undefined,
    private readonly pipelines?: SimPipelines,
  ) {
    this.onTime = budgetMs.map(() => TaskQueue.ofTimes());
    this.delayed = budgetMs.map(() => TaskQueue.ofTimes());
    this.policies = budgetMs.map((_, m) => queuePolicies?.[m] ?? DEFAULT_QUEUE_POLICY);
    this.onTimeMs = budgetMs.map((b, m) => onTimeBudgetMs(b, this.policies[m]!));
    const origins = () => budgetMs.map((_, m) => ((pipelines?.pipelineOf[m] ?? -1) >= 0 ? TaskQueue.ofTimes() : null));
    this.originOnTime = origins();
    this.originDelayed = origins();
    this.nameOnTime = budgetMs.map(() => null);
    this.nameDelayed = budgetMs.map(() => null);
  }

  /** The lane model m's tasks are held in. */
  laneOf(m: number): number {
    return laneOf(this.sharedBy, m);
  }

  /**
   * A deployment's `sharedBy` takes effect for the tasks that arrive from now on; a lane that takes another name's
   * tasks keeps a lane of names from then on (its tasks already held are its own).
   */
  route(sharedBy: readonly number[] | undefined): void {
    this.sharedBy = sharedBy;
    sharedBy?.forEach((l, m) => {
      if (l === m) return;
      this.nameOnTime[l] ??= namesOf(l, this.onTime[l]!.length);
      this.nameDelayed[l] ??= namesOf(l, this.delayed[l]!.length);
    });
  }

  /** Model m's budget changed (a pipeline's new split): a task's on-time deadline follows it from now on. */
  setBudget(m: number, budgetMs: number): void {
    this.onTimeMs[m] = onTimeBudgetMs(budgetMs, this.policies[m]!);
  }

  /**
   * A task of model m arriving (or stamped) at `arrivalMs` is queued at `nowMs`, makes room, or is dropped;
   * `originMs`: a step task's request arrival.
   */
  admit(m: number, arrivalMs: number, nowMs: number, originMs = arrivalMs): void {
    const l = this.laneOf(m);
    if (this.nameOnTime[l]) return this.admitTier(m, l, arrivalMs, nowMs);
    const q = this.onTime[m]!;
    const delayed = this.delayed[m]!;
    // A full queue makes room by dropping its oldest delayed task, or drops the arrival (queuePolicy.ts).
    const admission = admit(q.length, delayed.length, this.policies[m]!.maxQueueSize);
    if (admission === 'evict-delayed') this.evictDelayed(m, nowMs);
    if (admission === 'reject') this.dropped(m, nowMs);
    else {
      const origins = this.originOnTime[m];
      if (!origins) q.push(arrivalMs);
      else {
        // Step tasks come in as their batches end, not by their stamps: the lane keeps them in stamp order, as
        // the scheduler's queue keeps its tasks in arrival order (src/serving/taskQueue.ts).
        const at = q.orderedIndex(arrivalMs, (t) => t);
        q.insertAt(at, arrivalMs);
        origins.insertAt(at, originMs);
      }
    }
  }

  /** A task of tier m (l's own or another) arriving at `arrivalMs` is held in shared lane l by its stamp (tiers.ts). */
  private admitTier(m: number, l: number, arrivalMs: number, nowMs: number): void {
    const q = this.onTime[l]!;
    const admission = admit(q.length, this.delayed[l]!.length, this.policies[l]!.maxQueueSize);
    if (admission === 'evict-delayed') this.evictDelayed(l, nowMs);
    if (admission === 'reject') return this.dropped(m, nowMs);
    const stamp = tierStampMs(arrivalMs, this.onTimeMs[m]!, this.onTimeMs[l]!);
    const at = q.orderedIndex(stamp, (t) => t);
    q.insertAt(at, stamp);
    this.nameOnTime[l]!.insertAt(at, m);
  }

  /** Lane l's oldest delayed task is dropped to make room. */
  private evictDelayed(l: number, nowMs: number): void {
    this.delayed[l]!.shift();
    this.originDelayed[l]?.shift();
    this.dropped(this.nameDelayed[l]?.shift() ?? l, nowMs);
  }

  /** A task of model m (already taken off its queue) is dropped at `nowMs`; a step task drops its request. */
  dropped(m: number, nowMs: number): void {
    this.stats.dropped[m]! += 1;
    this.epoch.dropped(m);
    if (this.originOnTime[m]) this.pipelines!.droppedTasks(m, 1);
    this.trace?.drop?.(nowMs, m);
  }

  /** Model m's on-time head is dropped (it cannot meet its deadline). */
  dropHead(m: number, nowMs: number): void {
    this.onTime[m]!.shift();
    this.originOnTime[m]?.shift();
    this.dropped(this.nameOnTime[m]?.shift() ?? m, nowMs);
  }

  /** Model m's on-time head moves to its delayed lane. */
  delay(m: number, nowMs: number): void {
    this.delayed[m]!.push(this.onTime[m]!.shift());
    const o = this.originOnTime[m];
    if (o) this.originDelayed[m]!.push(o.shift());
    const names = this.nameOnTime[m];
    const name = names ? names.shift() : m;
    this.nameDelayed[m]?.push(name);
    this.stats.delayed[name]! += 1;
    this.trace?.delay?.(nowMs, name);
  }

  /** Model m's on-time head timed out: dropped, or moved to the delayed lane, by its queue policy. */
  timeOut(m: number, nowMs: number): void {
    if (this.policies[m]!.delay) this.delay(m, nowMs);
    else this.dropHead(m, nowMs);
  }

  /**
   * Takes the `size` oldest tasks of model m's on-time (or delayed) lane into a batch's slots: their arrivals
   * (stamps) and, for a step model, their requests' arrivals (`origins`, grown as needed); from a lane of shared
   * tiers, their own arrivals and their names (`names`), and then it returns true.
   */
  take(m: number, fromDelayed: boolean, slots: BatchSlots, size: number): boolean {
    const q = fromDelayed ? this.delayed[m]! : this.onTime[m]!;
    for (let i = 0; i < size; i++) slots.arrivals[i] = q.shift();
    const names = fromDelayed ? this.nameDelayed[m] : this.nameOnTime[m];
    if (names) {
      // A shared lane: each task's name, and its own arrival back from its stamp (src/serving/tiers.ts).
      if (slots.names.length < size) slots.names = new Int32Array(Math.max(size, slots.names.length * 2));
      for (let i = 0; i < size; i++) {
        const name = names.shift();
        slots.names[i] = name;
        slots.arrivals[i] = tierStampMs(slots.arrivals[i]!, this.onTimeMs[m]!, this.onTimeMs[name]!);
      }
    }
    const o = fromDelayed ? this.originDelayed[m] : this.originOnTime[m];
    if (!o) return names !== null;
    if (slots.origins.length < size) slots.origins = new Float64Array(Math.max(size, slots.origins.length * 2));
    for (let i = 0; i < size; i++) slots.origins[i] = o.shift();
    return names !== null;
  }

  /**
   * Hands model m's `n` oldest on-time (or delayed) tasks, with their requests' arrivals, to another front door's
   * buffer `to` (doors.ts), each in its place by time there.
   */
  handOver(m: number, to: TaskBuffer, n: number, fromDelayed = false): void {
    const q = (fromDelayed ? this.delayed : this.onTime)[m]!;
    const o = (fromDelayed ? this.originDelayed : this.originOnTime)[m];
    const into = (fromDelayed ? to.delayed : to.onTime)[m]!;
    const intoOrigins = (fromDelayed ? to.originDelayed : to.originOnTime)[m];
    const names = (fromDelayed ? this.nameDelayed : this.nameOnTime)[m];
    if (names) to.route(this.sharedBy);
    const intoNames = (fromDelayed ? to.nameDelayed : to.nameOnTime)[m];
    for (let i = 0; i < n && q.length > 0; i++) {
      const t = q.shift();
      const at = into.orderedIndex(t, (x) => x);
      into.insertAt(at, t);
      if (o) intoOrigins!.insertAt(at, o.shift());
      const name = names ? names.shift() : m;
      intoNames?.insertAt(at, name);
    }
  }

  /** On-time tasks already past their deadline can no longer meet it: they time out (src/serving/rules.ts). */
  expire(m: number, nowMs: number): void {
    const q = this.onTime[m]!;
    while (q.length > 0 && pastDeadline(q.peek(), this.onTimeMs[m]!, nowMs)) this.timeOut(m, nowMs);
  }

  /** Model m's tasks held on time (`delayed`: in a delayed lane), in its own lane or in a shared one. */
  held(m: number, delayed: boolean): number {
    const l = this.laneOf(m);
    const names = (delayed ? this.nameDelayed : this.nameOnTime)[l];
    const q = (delayed ? this.delayed : this.onTime)[l]!;
    if (!names) return l === m ? q.length : 0;
    let n = 0;
    for (let i = 0; i < names.length; i++) if (names.at(i) === m) n++;
    return n;
  }

  /** Arrival time of model m's oldest on-time task; Infinity when none waits. */
  headArrivalMs(m: number): number {
    const q = this.onTime[m]!;
    return q.length ? q.peek() : Infinity;
  }
}

/** A lane of names for `n` tasks of model l already held. */
function namesOf(l: number, n: number): TaskQueue<number> {
  const q = TaskQueue.ofTimes();
  for (let i = 0; i < n; i++) q.push(l);
  return q;
}

// The simulator's task buffer (paper section 3.1): per model an on-time FIFO and a delayed one, of
// task arrival times, under the model's queue policy (src/serving/queuePolicy.ts), the scheduler's too.
// A task's on-time deadline is arrival + its SLO budget (or its policy's shorter timeout).
import type { EpochStats } from '../serving/epochStats.js';
import { admit, DEFAULT_QUEUE_POLICY, onTimeBudgetMs, type QueuePolicy } from '../serving/queuePolicy.js';
import { pastDeadline } from '../serving/rules.js';
import { TaskQueue } from '../serving/taskQueue.js';
import type { SimStats } from './stats.js';
import type { SimTrace } from './types.js';

export class TaskBuffer {
  /** Per model, its on-time lane and its delayed one (tasks that timed out), of arrival times. */
  readonly onTime: TaskQueue<number>[];
  readonly delayed: TaskQueue<number>[];
  readonly policies: QueuePolicy[];
  /** Per model, a task's on-time deadline after its arrival (ms). */
  readonly onTimeMs: number[];

  /** `budgetMs`: per model, the SLO a task is budgeted in the task buffer (its way out excluded). */
  constructor(
    budgetMs: readonly number[],
    queuePolicies: readonly (QueuePolicy | undefined)[] | undefined,
    private readonly stats: SimStats,
    private readonly epoch: EpochStats,
    private readonly trace: SimTrace | undefined,
  ) {
    this.onTime = budgetMs.map(() => TaskQueue.ofTimes());
    this.delayed = budgetMs.map(() => TaskQueue.ofTimes());
    this.policies = budgetMs.map((_, m) => queuePolicies?.[m] ?? DEFAULT_QUEUE_POLICY);
    this.onTimeMs = budgetMs.map((b, m) => onTimeBudgetMs(b, this.policies[m]!));
  }

  /** A task of model m arriving at `arrivalMs` is queued at `nowMs`, makes room, or is dropped. */
  admit(m: number, arrivalMs: number, nowMs: number): void {
    const q = this.onTime[m]!;
    const delayed = this.delayed[m]!;
    // A full queue makes room by dropping its oldest delayed task, or drops the arrival (queuePolicy.ts).
    const admission = admit(q.length, delayed.length, this.policies[m]!.maxQueueSize);
    if (admission === 'evict-delayed') {
      delayed.shift();
      this.dropped(m, nowMs);
    }
    if (admission === 'reject') this.dropped(m, nowMs);
    else q.push(arrivalMs);
  }

  /** A task of model m (already taken off its queue) is dropped at `nowMs`. */
  dropped(m: number, nowMs: number): void {
    this.stats.dropped[m]! += 1;
    this.epoch.dropped(m);
    this.trace?.drop?.(nowMs, m);
  }

  /** Model m's on-time head moves to its delayed lane. */
  delay(m: number, nowMs: number): void {
    this.delayed[m]!.push(this.onTime[m]!.shift());
    this.stats.delayed[m]! += 1;
    this.trace?.delay?.(nowMs, m);
  }

  /** Model m's on-time head timed out: dropped, or moved to the delayed lane, by its queue policy. */
  timeOut(m: number, nowMs: number): void {
    if (this.policies[m]!.delay) this.delay(m, nowMs);
    else {
      this.onTime[m]!.shift();
      this.dropped(m, nowMs);
    }
  }

  /** On-time tasks already past their deadline can no longer meet it: they time out (src/serving/rules.ts). */
  expire(m: number, nowMs: number): void {
    const q = this.onTime[m]!;
    while (q.length > 0 && pastDeadline(q.peek(), this.onTimeMs[m]!, nowMs)) this.timeOut(m, nowMs);
  }

  /** Arrival time of model m's oldest on-time task; Infinity when none waits. */
  headArrivalMs(m: number): number {
    const q = this.onTime[m]!;
    return q.length ? q.peek() : Infinity;
  }
}

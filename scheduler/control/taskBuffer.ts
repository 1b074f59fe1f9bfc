// The task buffer: per model, the queue of tasks waiting on time, the delayed lane of those that timed
// out under a delaying queue policy (src/serving/queuePolicy.ts), and the one dispatch timer. It owns
// no rule: the dispatcher decides what leaves and when, and arms the timer through `arm`. Under a deployment
// whose tiers share workers, a tier's tasks are held in its lane by their stamps (src/serving/tiers.ts).
import { admit, type QueuePolicy, resolveQueuePolicy } from '../../src/serving/queuePolicy.js';
import { pastDeadline } from '../../src/serving/rules.js';
import { TaskQueue } from '../../src/serving/taskQueue.js';
import { laneOf, tierStampMs } from '../../src/serving/tiers.js';
import { type Finish, laneMsOf, type Task } from './records.js';
import type { ServedModelConfig } from './types.js';

export class TaskBuffer {
  private readonly queues: TaskQueue<Task>[];
  /** Per model, tasks that timed out and wait for a worker with nothing on time to start. */
  private readonly delayedQueues: TaskQueue<Task>[];
  private readonly policies: QueuePolicy[];
  private readonly timers: (NodeJS.Timeout | null)[];
  private readonly timerAt: number[];
  private stopped = false;
  /** The deployment's `sharedBy`: per model, the lane its tasks are held in (absent: its own). */
  sharedBy: readonly number[] | undefined;

  constructor(
    private readonly models: readonly ServedModelConfig[],
    private readonly clock: () => number,
    newQueue: () => TaskQueue<Task> = () => TaskQueue.ofTasks<Task>(laneMsOf),
  ) {
    this.queues = models.map(() => newQueue());
    this.delayedQueues = models.map(() => newQueue());
    this.policies = models.map((m) => resolveQueuePolicy(m.queuePolicy));
    this.timers = new Array<NodeJS.Timeout | null>(models.length).fill(null);
    this.timerAt = new Array<number>(models.length).fill(Infinity);
  }

  /** The lane model m's tasks are held in. */
  laneOf(m: number): number {
    return laneOf(this.sharedBy, m);
  }

  /**
   * Queues task t in its lane, a shared tier's by its stamp (`onTimeMs`: a model's on-time budget). A full queue
   * makes room by dropping its oldest delayed task, or refuses t (queuePolicy.ts), answered through `finish`.
   * Returns the lane, or -1 when t was refused.
   */
  enqueue(t: Task, onTimeMs: (m: number) => number, finish: Finish): number {
    const l = this.laneOf(t.model);
    const max = this.policies[l]!.maxQueueSize;
    const admission = this.admit(l);
    if (admission === 'reject') {
      const name = this.models[l]!.name;
      const error = `rejected: the queue of model '${name}' is full (maxQueueSize ${max} tasks, none of them late)`;
      finish(t, { ok: false, reason: 'queue-full', error }, 'dropped_queue_full');
      return -1;
    }
    if (admission === 'evict-delayed') {
      const old = this.delayedQueues[l]!.shift();
      const error =
        `dropped: the task missed its ${this.models[old.model]!.sloMs} ms SLO and waited for a free worker ` +
        `until its queue was full (maxQueueSize ${max})`;
      finish(old, { ok: false, reason: 'slo', error }, 'dropped_slo');
    }
    if (l !== t.model) t.laneMs = tierStampMs(t.arrivalMs, onTimeMs(t.model), onTimeMs(l));
    this.queues[l]!.push(t);
    return l;
  }

  /** Model m's tasks on time. */
  onTime(m: number): TaskQueue<Task> {
    return this.queues[m]!;
  }

  /** Model m's delayed lane. */
  delayed(m: number): TaskQueue<Task> {
    return this.delayedQueues[m]!;
  }

  policy(m: number): QueuePolicy {
    return this.policies[m]!;
  }

  /** Tasks of model m waiting in both lanes. */
  waiting(m: number): number {
    return this.queues[m]!.length + this.delayedQueues[m]!.length;
  }

  /** The arrival (a shared tier's: its stamp) of model m's oldest task on time; Infinity when none waits. */
  oldestArrivalMs(m: number): number {
    const q = this.queues[m]!;
    return q.length > 0 ? laneMsOf(q.peek()) : Infinity;
  }

  /** Whether model m's queue takes one more task (queuePolicy.ts `admit`). */
  admit(m: number): ReturnType<typeof admit> {
    return admit(this.queues[m]!.length, this.delayedQueues[m]!.length, this.policies[m]!.maxQueueSize);
  }

  /**
   * Arms model m's one timer for `atMs` (Infinity: disarms it); `fire` runs then with the instant it
   * was armed for. Re-arming for the same instant keeps the timer; nothing is armed once stopped.
   */
  arm(m: number, atMs: number, fire: (atMs: number) => void): void {
    if (atMs === this.timerAt[m]) return;
    const t = this.timers[m];
    if (t) clearTimeout(t);
    this.timers[m] = null;
    this.timerAt[m] = atMs;
    if (!Number.isFinite(atMs) || this.stopped) return;
    const delay = Math.max(0, atMs - this.clock());
    this.timers[m] = setTimeout(() => {
      this.timers[m] = null;
      this.timerAt[m] = Infinity;
      fire(atMs);
    }, delay);
  }

  /**
   * Model m's on-time tasks already past their deadline time out: they move to the delayed lane when
   * its policy delays, else `drop` answers each. `onTimeMs` is read for each task (answering one may
   * move the budget).
   */
  expire(m: number, nowMs: number, onTimeMs: () => number, drop: (t: Task) => void): void {
    const q = this.queues[m]!;
    while (q.length > 0 && pastDeadline(laneMsOf(q.peek()), onTimeMs(), nowMs)) {
      const t = q.shift();
      if (this.policies[m]!.delay) {
        this.delayedQueues[m]!.push(t);
        continue;
      }
      drop(t);
    }
  }

  /** Stops every timer for good and hands back every waiting task (to be answered). */
  stop(): Task[] {
    this.stopped = true;
    for (const t of this.timers) if (t) clearTimeout(t);
    return [...this.queues, ...this.delayedQueues].flatMap((q) => q.drain());
  }
}

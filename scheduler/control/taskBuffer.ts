// The task buffer: per model, the queue of tasks waiting on time, the delayed lane of those that timed
// out under a delaying queue policy (src/serving/queuePolicy.ts), and the one dispatch timer. It owns
// no rule: the dispatcher decides what leaves and when, and arms the timer through `arm`.
import { admit, type QueuePolicy, resolveQueuePolicy } from '../../src/serving/queuePolicy.js';
import { pastDeadline } from '../../src/serving/rules.js';
import type { Task } from './records.js';
import type { ServedModelConfig } from './types.js';

/** One model's tasks in order of arrival, oldest at the head. */
export interface TaskQueue<T> {
  readonly length: number;
  /** Adds a task in order of arrival (usually at the tail). */
  push(t: T): void;
  /** The oldest task; the queue must not be empty. */
  peek(): T;
  /** Removes and returns the oldest task; the queue must not be empty. */
  shift(): T;
  /** Puts tasks back at the head, keeping their order (a batch that did not run). */
  unshiftAll(ts: readonly T[]): void;
  /** Removes and returns every task. */
  drain(): T[];
}

/** A FIFO ordered by arrival, with amortised O(1) shift and the ability to put tasks back at the head. */
export class ArrivalFifo<T extends { readonly arrivalMs: number }> implements TaskQueue<T> {
  private items: T[] = [];
  private head = 0;
  get length(): number {
    return this.items.length - this.head;
  }
  /**
   * A request that arrived before others but whose body took longer to read and parse goes ahead of
   * them (the deadline order the dispatch rule and expiry read at the head). Usually the tail, so O(1).
   */
  push(t: T): void {
    let i = this.items.length;
    this.items.push(t);
    while (i > this.head && this.items[i - 1]!.arrivalMs > t.arrivalMs) {
      this.items[i] = this.items[i - 1]!;
      i--;
    }
    this.items[i] = t;
  }
  peek(): T {
    return this.items[this.head]!;
  }
  shift(): T {
    const t = this.items[this.head]!;
    // Let go of the task at once: a slot kept until the next compaction would hold its input (an
    // image of hundreds of KB) alive, up to 1024 per model.
    this.items[this.head++] = undefined as unknown as T;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return t;
  }
  unshiftAll(ts: readonly T[]): void {
    this.items = [...ts, ...this.items.slice(this.head)];
    this.head = 0;
  }
  drain(): T[] {
    const all = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return all;
  }
}

export class TaskBuffer {
  private readonly queues: TaskQueue<Task>[];
  /** Per model, tasks that timed out and wait for a worker with nothing on time to start. */
  private readonly delayedQueues: TaskQueue<Task>[];
  private readonly policies: QueuePolicy[];
  private readonly timers: (NodeJS.Timeout | null)[];
  private readonly timerAt: number[];
  private stopped = false;

  constructor(
    models: readonly ServedModelConfig[],
    private readonly clock: () => number,
    newQueue: () => TaskQueue<Task> = () => new ArrivalFifo<Task>(),
  ) {
    this.queues = models.map(() => newQueue());
    this.delayedQueues = models.map(() => newQueue());
    this.policies = models.map((m) => resolveQueuePolicy(m.queuePolicy));
    this.timers = new Array<NodeJS.Timeout | null>(models.length).fill(null);
    this.timerAt = new Array<number>(models.length).fill(Infinity);
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

  /** The arrival of model m's oldest task on time; Infinity when none waits. */
  oldestArrivalMs(m: number): number {
    const q = this.queues[m]!;
    return q.length > 0 ? q.peek().arrivalMs : Infinity;
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
    while (q.length > 0 && pastDeadline(q.peek().arrivalMs, onTimeMs(), nowMs)) {
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

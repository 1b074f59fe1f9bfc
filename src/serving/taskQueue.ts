// A model's task buffer lane: a FIFO in a growable ring buffer, generic in what it holds. The
// simulator holds arrival times (`TaskQueue.ofTimes()`, on a Float64Array: no allocation per task);
// the scheduler's control plane holds its task objects (`TaskQueue.ofTasks(arrivalMsOf)`), kept in
// arrival order, since a request whose body took longer to read may be queued after a later one (a
// pipeline step's task in its stamp's order, its `arrivalMs` being its stamp). The
// dispatch rule and expiry read the head, the oldest task. Pure.

/** The slots a queue keeps its elements in: an array, or a Float64Array for times. */
interface Slots<T> {
  [i: number]: T;
  readonly length: number;
}

const INITIAL_CAPACITY = 1024; // a power of two: indices wrap with a mask

export class TaskQueue<T> {
  private buf: Slots<T>;
  private head = 0;
  private n = 0;

  /**
   * `alloc(capacity)`: fresh slots (capacity a power of two). `arrivalMsOf`: when given, `push` keeps
   * the queue in arrival order; absent, `push` appends (the caller pushes in order).
   */
  constructor(
    private readonly alloc: (capacity: number) => Slots<T>,
    private readonly arrivalMsOf?: (t: T) => number,
  ) {
    this.buf = alloc(INITIAL_CAPACITY);
  }

  /** A queue of arrival times (ms), appended in order. */
  static ofTimes(): TaskQueue<number> {
    return new TaskQueue<number>((n) => new Float64Array(n));
  }

  /** A queue of tasks kept in order of `arrivalMsOf`; a shifted task's slot is let go at once. */
  static ofTasks<T>(arrivalMsOf: (t: T) => number): TaskQueue<T> {
    return new TaskQueue<T>((n) => new Array<T>(n), arrivalMsOf);
  }

  get length(): number {
    return this.n;
  }

  /**
   * Adds a task at the tail; with `arrivalMsOf`, it moves ahead of the tasks that arrived after it
   * (usually none, so O(1)): `orderedIndex`, the one rule of both sides' lanes.
   */
  push(t: T): void {
    this.insertAt(this.arrivalMsOf ? this.orderedIndex(this.arrivalMsOf(t), this.arrivalMsOf) : this.n, t);
  }

  /** The oldest task; call only when length > 0. */
  peek(): T {
    return this.buf[this.head]!;
  }

  /** The task `i` places from the head (0: the oldest); call only with 0 <= i < length. */
  at(i: number): T {
    return this.buf[(this.head + i) & (this.buf.length - 1)]!;
  }

  /** Takes the oldest task off; call only when length > 0. */
  shift(): T {
    const t = this.buf[this.head]!;
    // A slot of an object queue lets go of its task (and the input it holds); in a Float64Array, NaN.
    this.buf[this.head] = undefined as T;
    this.head = (this.head + 1) & (this.buf.length - 1);
    this.n--;
    return t;
  }

  /**
   * Where a task of time `ms` goes to keep a queue in time order (its place from the head, after every task no
   * later): by arrival, or for a pipeline's step task by its deadline stamp (src/serving/pipeline.ts), since step
   * tasks come in as their earlier steps' batches end, not by their stamps. The scheduler's queues (`push`) and the
   * simulator's step lanes (with their origins beside them) keep this order.
   */
  orderedIndex(ms: number, msOf: (t: T) => number): number {
    const mask = this.buf.length - 1;
    let i = this.n;
    while (i > 0 && msOf(this.buf[(this.head + i - 1) & mask]!) > ms) i--;
    return i;
  }

  /** Inserts a task `index` places from the head (0: the new head; `length`: the tail). */
  insertAt(index: number, t: T): void {
    if (this.n === this.buf.length) this.grow(this.n + 1);
    const mask = this.buf.length - 1;
    for (let i = this.n; i > index; i--) this.buf[(this.head + i) & mask] = this.buf[(this.head + i - 1) & mask]!;
    this.buf[(this.head + index) & mask] = t;
    this.n++;
  }

  /** Puts tasks back at the head, in their order (a batch its worker refused). */
  unshiftAll(ts: readonly T[]): void {
    if (this.n + ts.length > this.buf.length) this.grow(this.n + ts.length);
    const mask = this.buf.length - 1;
    this.head = (this.head - ts.length) & mask;
    for (let i = 0; i < ts.length; i++) this.buf[(this.head + i) & mask] = ts[i]!;
    this.n += ts.length;
  }

  /** Takes every task off, oldest first. */
  drain(): T[] {
    const all: T[] = [];
    while (this.n > 0) all.push(this.shift());
    return all;
  }

  private grow(atLeast: number): void {
    let capacity = this.buf.length * 2;
    while (capacity < atLeast) capacity *= 2;
    const next = this.alloc(capacity);
    const mask = this.buf.length - 1;
    for (let i = 0; i < this.n; i++) next[i] = this.buf[(this.head + i) & mask]!;
    this.buf = next;
    this.head = 0;
  }
}

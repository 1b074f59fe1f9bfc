// A FIFO of task arrival times (ms) in a growable ring buffer: the per-model task buffer.
export class TaskQueue {
  private buf = new Float64Array(1024);
  private head = 0;
  private n = 0;

  get length(): number {
    return this.n;
  }

  push(arrivalMs: number): void {
    if (this.n === this.buf.length) this.grow();
    this.buf[(this.head + this.n) & (this.buf.length - 1)] = arrivalMs;
    this.n++;
  }

  /** Arrival time of the oldest task; call only when length > 0. */
  peek(): number {
    return this.buf[this.head]!;
  }

  shift(): number {
    const v = this.buf[this.head]!;
    this.head = (this.head + 1) & (this.buf.length - 1);
    this.n--;
    return v;
  }

  private grow(): void {
    const next = new Float64Array(this.buf.length * 2);
    for (let i = 0; i < this.n; i++) next[i] = this.buf[(this.head + i) & (this.buf.length - 1)]!;
    this.buf = next;
    this.head = 0;
  }
}

// The dispatch rule's margin for a running system's jitter: how late its timers fire (an event loop
// busy parsing a large request, a garbage collection) as the p99 of the latest samples. The scheduler
// records each dispatch timer's lateness and takes the margin once per epoch (src/serving/dispatch.ts
// starts a waiting batch that much earlier); the simulator's timers are exact and its margin is its
// setting (0 by default). Pure: the caller measures.

/** Samples kept: the latest this many timer firings. */
const KEEP = 512;

export class LatenessWindow {
  private readonly samples = new Float64Array(KEEP);
  private n = 0;
  private next = 0;

  /** A timer armed for `dueMs` fired at `firedMs` (the same clock); early firings count as 0. */
  add(dueMs: number, firedMs: number): void {
    const late = firedMs - dueMs;
    this.samples[this.next] = Number.isFinite(late) && late > 0 ? late : 0;
    this.next = (this.next + 1) % KEEP;
    if (this.n < KEEP) this.n++;
  }

  /** The `q` quantile (0..1) of the samples held, ms; 0 before any. */
  quantileMs(q: number): number {
    if (this.n === 0) return 0;
    const s = this.samples.slice(0, this.n).sort();
    return s[Math.min(this.n - 1, Math.floor(q * this.n))]!;
  }
}

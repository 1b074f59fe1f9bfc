// A log-bucketed histogram for latency percentiles: constant memory, O(1) insert, quantiles within
// 1% of the true value. Values at or below `minValue` land in the first bucket.
export class LogHistogram {
  private readonly counts: Float64Array;
  private readonly logMin: number;
  private readonly invLogStep: number;
  private readonly step: number;
  private total = 0;
  private sum = 0;
  private maxSeen = 0;

  constructor(
    private readonly minValue = 0.01,
    maxValue = 1e7,
    relativeResolution = 0.01,
  ) {
    this.step = Math.log1p(relativeResolution);
    this.invLogStep = 1 / this.step;
    this.logMin = Math.log(minValue);
    this.counts = new Float64Array(Math.ceil((Math.log(maxValue) - this.logMin) * this.invLogStep) + 2);
  }

  add(value: number): void {
    const v = value > this.minValue ? value : this.minValue;
    let i = Math.floor((Math.log(v) - this.logMin) * this.invLogStep);
    if (i >= this.counts.length) i = this.counts.length - 1;
    this.counts[i]! += 1;
    this.total++;
    this.sum += value;
    if (value > this.maxSeen) this.maxSeen = value;
  }

  get count(): number {
    return this.total;
  }

  mean(): number {
    return this.total > 0 ? this.sum / this.total : NaN;
  }

  max(): number {
    return this.total > 0 ? this.maxSeen : NaN;
  }

  /** The q-quantile (0..1): the geometric middle of the bucket holding it; NaN when empty. */
  quantile(q: number): number {
    if (this.total === 0) return NaN;
    const target = Math.max(1, Math.ceil(q * this.total));
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]!;
      if (seen >= target) return Math.min(this.maxSeen, Math.exp(this.logMin + (i + 0.5) * this.step));
    }
    return this.maxSeen;
  }

  merge(other: LogHistogram): void {
    for (let i = 0; i < this.counts.length; i++) this.counts[i]! += other.counts[i]!;
    this.total += other.total;
    this.sum += other.sum;
    if (other.maxSeen > this.maxSeen) this.maxSeen = other.maxSeen;
  }
}

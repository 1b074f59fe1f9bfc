// Traffic envelopes (network calculus, as InferLine's tuner keeps them): per model and window size W,
// the most arrivals seen in any window of length W. Window sizes double from the shortest up to the
// longest (60 s by default). The envelope is kept per decision epoch: for each W, the most arrivals in
// any window (t - W, t] whose end t falls in the epoch (windows reach back into earlier epochs), since
// the largest count of a sliding window is always reached by one that ends at an arrival. Kept
// incrementally: per model a ring of the arrival times within the longest window and, per window size,
// the index of the oldest arrival still inside the window ending at the newest arrival; each arrival
// costs O(window sizes) amortized. Pure.

/** The longest window an envelope keeps by default (InferLine's): 60 s. */
export const ENVELOPE_LONGEST_MS = 60_000;

/** Window sizes (ms): `shortestMs` doubled while it stays within `longestMs` (at least the shortest). */
export function envelopeWindowsMs(shortestMs: number, longestMs = ENVELOPE_LONGEST_MS): number[] {
  if (!(shortestMs > 0)) throw new RangeError(`envelope shortest window must be > 0 ms, got ${shortestMs}`);
  const out = [shortestMs];
  while (out[out.length - 1]! * 2 <= longestMs) out.push(out[out.length - 1]! * 2);
  return out;
}

/** One model's arrivals within the longest window, and each window size's oldest arrival in it. */
class ModelEnvelope {
  /** Arrival times, a ring: absolute index i lives at times[i % capacity]. */
  private times = new Float64Array(256);
  /** Absolute index of the next arrival. */
  private n = 0;
  /** Per window size: absolute index of the oldest arrival inside (t - W, t], t the newest arrival. */
  private readonly oldest: Int32Array;
  /** Per window size: the most arrivals in a window ending in the current epoch. */
  readonly epochMax: Float64Array;

  constructor(private readonly windowsMs: readonly number[]) {
    this.oldest = new Int32Array(windowsMs.length);
    this.epochMax = new Float64Array(windowsMs.length);
  }

  arrival(tMs: number): void {
    const last = this.windowsMs.length - 1;
    // The longest window's oldest arrival is the oldest any window needs: the ring holds from it on.
    if (this.n - this.oldest[last]! >= this.times.length) this.grow();
    const cap = this.times.length;
    this.times[this.n % cap] = tMs;
    this.n += 1;
    for (let k = 0; k <= last; k++) {
      const from = tMs - this.windowsMs[k]!;
      let i = this.oldest[k]!;
      while (this.times[i % cap]! <= from) i++;
      this.oldest[k] = i;
      const count = this.n - i;
      if (count > this.epochMax[k]!) this.epochMax[k] = count;
    }
  }

  private grow(): void {
    const old = this.times;
    const next = new Float64Array(old.length * 2);
    for (let i = this.oldest[this.windowsMs.length - 1]!; i < this.n; i++) next[i % next.length] = old[i % old.length]!;
    this.times = next;
  }
}

export class TrafficEnvelope {
  readonly windowsMs: readonly number[];
  private readonly models: ModelEnvelope[];
  /** Per model, per closed epoch (oldest first), the most arrivals per window size. */
  private readonly history: Float64Array[][];

  /**
   * @param keepEpochs closed epochs remembered (`max` looks back at most this far).
   */
  constructor(
    nModels: number,
    windowsMs: readonly number[],
    private readonly keepEpochs: number,
  ) {
    if (windowsMs.length === 0 || windowsMs.some((w, i) => !(w > 0) || (i > 0 && w <= windowsMs[i - 1]!)))
      throw new RangeError('envelope windows must be positive and increasing');
    if (!(keepEpochs >= 1)) throw new RangeError(`envelope keepEpochs must be >= 1, got ${keepEpochs}`);
    this.windowsMs = [...windowsMs];
    this.models = Array.from({ length: nModels }, () => new ModelEnvelope(this.windowsMs));
    this.history = Array.from({ length: nModels }, () => []);
  }

  /** One arrival of model m at `tMs` (ms; a model's arrivals come in time order). */
  arrival(m: number, tMs: number): void {
    this.models[m]!.arrival(tMs);
  }

  /** Closes the current epoch: its per-window maxima join the history. */
  endEpoch(): void {
    this.models.forEach((e, m) => {
      const h = this.history[m]!;
      h.push(Float64Array.from(e.epochMax));
      if (h.length > this.keepEpochs) h.shift();
      e.epochMax.fill(0);
    });
  }

  /**
   * Model m's envelope over the last `epochs` closed epochs (default 1): per window size (windowsMs
   * order), the most arrivals in any window ending in them. Zeros before any epoch closed.
   */
  max(m: number, epochs = 1): number[] {
    const out = new Array<number>(this.windowsMs.length).fill(0);
    for (const e of this.history[m]!.slice(-epochs)) e.forEach((c, k) => (out[k] = Math.max(out[k]!, c)));
    return out;
  }
}

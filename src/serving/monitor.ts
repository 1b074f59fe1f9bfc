// The monitor's arrival-rate estimate, shared by the simulator and the scheduler's control plane: per
// model, arrivals are counted per decision epoch; the rate is the mean over the last `windowEpochs`
// epochs. One warm-up rule: until a full window of epochs has been seen, the estimate is at least the
// operator's initial rate (the scenario's), so the first decisions do not plan for an empty cluster
// while traffic ramps up. Pure.

/** Epochs in the monitor window: round(window / epoch), at least 1. */
export function windowEpochs(monitorWindowMs: number, epochMs: number): number {
  return Math.max(1, Math.round(monitorWindowMs / epochMs));
}

/** History longer than this many epochs is forgotten (the window never needs more). */
const KEEP_EPOCHS = 64;

export class RateMonitor {
  private readonly history: number[][];
  private readonly counts: number[];
  private readonly k: number;

  constructor(
    nModels: number,
    private readonly epochMs: number,
    monitorWindowMs: number,
  ) {
    this.history = Array.from({ length: nModels }, () => []);
    this.counts = new Array<number>(nModels).fill(0);
    this.k = windowEpochs(monitorWindowMs, epochMs);
  }

  /** One arrival of model m in the current epoch. */
  arrival(m: number): void {
    this.counts[m]! += 1;
  }

  /** Closes the current epoch: its counts join the history. */
  endEpoch(): void {
    this.counts.forEach((c, m) => {
      const h = this.history[m]!;
      h.push(c);
      if (h.length > KEEP_EPOCHS) h.shift();
    });
    this.counts.fill(0);
  }

  /** Tasks/s per model over the window (see the file header for the warm-up rule). */
  ratesPerS(initialRatePerS: readonly number[]): number[] {
    const seen = this.history.map((h) => h.slice(-this.k));
    const full = seen.every((h) => h.length >= this.k);
    return seen.map((h, m) => {
      const measured = (h.reduce((a, b) => a + b, 0) / (Math.max(1, h.length) * this.epochMs)) * 1000;
      return full ? measured : Math.max(measured, initialRatePerS[m] ?? 0);
    });
  }
}

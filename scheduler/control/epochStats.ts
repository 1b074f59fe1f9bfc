// One decision epoch's outcomes per model, and the policy's Observation built from them (the
// simulator's monitor counts the same: served, late, dropped, mean GPU time, mean latency).
import type { Deployment, Observation } from '../../src/policy/types.js';
import type { TaskOutcome } from '../metrics.js';
import type { TaskAnswer } from './types.js';

/** What the epoch's Observation carries besides its outcomes. */
export interface ObservationInputs {
  readonly nowMs: number;
  readonly ratePerS: readonly number[];
  readonly arrivalCv2: readonly number[];
  readonly queued: readonly number[];
  readonly current: Deployment;
}

export class EpochStats {
  private readonly served: number[];
  private readonly violated: number[];
  private readonly dropped: number[];
  private readonly execSumMs: number[];
  private readonly execN: number[];
  private readonly latencySumMs: number[];

  constructor(models: number) {
    const z = () => new Array<number>(models).fill(0);
    this.served = z();
    this.violated = z();
    this.dropped = z();
    this.execSumMs = z();
    this.execN = z();
    this.latencySumMs = z();
  }

  /**
   * A task of model m was answered `latencyMs` after its arrival: a result counts as served (and as
   * violated when late); an error counts as dropped when it is the service's (SLO, queue full, worker
   * failed), not when it is the client's or the deployment's.
   */
  answered(m: number, a: TaskAnswer, outcome: TaskOutcome, latencyMs: number): void {
    if (a.ok) {
      this.served[m]! += 1;
      this.latencySumMs[m]! += latencyMs;
      if (outcome === 'late') this.violated[m]! += 1;
    } else if (a.reason === 'slo' || a.reason === 'queue-full' || a.reason === 'worker-failed') {
      this.dropped[m]! += 1;
    }
  }

  /** A batch of model m ran `latencyMs` of GPU time (as its worker reports). */
  executed(m: number, latencyMs: number): void {
    this.execSumMs[m]! += latencyMs;
    this.execN[m]! += 1;
  }

  /** Starts the next epoch. */
  reset(): void {
    for (const a of [this.served, this.violated, this.dropped, this.execSumMs, this.execN, this.latencySumMs])
      a.fill(0);
  }

  /** The policy's view of the epoch so far (the outcomes copied: the counters go on). */
  observation(inputs: ObservationInputs): Observation {
    const mean = (s: number, n: number) => (n > 0 ? s / n : NaN);
    return {
      nowMs: inputs.nowMs,
      ratePerS: inputs.ratePerS,
      arrivalCv2: inputs.arrivalCv2,
      queued: inputs.queued,
      lastEpoch: {
        served: [...this.served],
        violated: [...this.violated],
        dropped: [...this.dropped],
        meanExecMs: this.execSumMs.map((s, m) => mean(s, this.execN[m]!)),
        meanLatencyMs: this.latencySumMs.map((s, m) => mean(s, this.served[m]!)),
      },
      current: inputs.current,
    };
  }
}

// What each decision epoch measured, per model, and the policy's Observation built from it: the one
// builder the simulator (src/sim/engine.ts) and the scheduler's control plane both fill, so a policy
// sees the same fields computed the same way in the twin and in the running system. Pure.
//
// The caller reports each outcome as it happens (`answered`, `dropped`, `batchTimed`), builds the
// observation at the epoch's end (`observe`, after the monitor's `endEpoch`), then calls `reset`.
import type { BatchRecord, BesideBatch, Deployment, Observation } from '../policy/types.js';
import type { RateMonitor } from './monitor.js';

/**
 * Batch records kept per model and epoch (Observation.lastEpoch.batches), the first ones: enough for an
 * online fit (src/policy/online/) to learn at every epoch, bounded so that a busy model costs nothing more.
 */
export const BATCH_RECORDS_PER_MODEL = 32;

/** What the serving side knows of a finished batch beyond its model and time (`batchTimed`). */
export interface BatchDetail {
  readonly gpu: number;
  readonly batch: number;
  readonly pct: number;
  readonly pooled: boolean;
  readonly beside: readonly BesideBatch[];
  /** The worker's GPU memory, measured (BatchRecord.memoryMb). */
  readonly memoryMb?: number;
}

/** The outcomes of the epoch that ended, per model (Observation.lastEpoch). */
export type EpochOutcomes = Observation['lastEpoch'];

/** All models together, this epoch so far: the simulator's timeline point. */
export interface EpochTotals {
  /** Tasks answered. */
  readonly served: number;
  /** Tasks answered within their SLO. */
  readonly good: number;
  /** Tasks answered after their SLO, dropped, or lost with a failed worker. */
  readonly missed: number;
}

export class EpochStats {
  private readonly served: Float64Array;
  private readonly violated: Float64Array;
  private readonly droppedN: Float64Array;
  private readonly execSumMs: Float64Array;
  private readonly execN: Float64Array;
  private readonly latencySumMs: Float64Array;
  private readonly recordsN: Uint16Array;
  private records: BatchRecord[] = [];

  constructor(readonly nModels: number) {
    this.served = new Float64Array(nModels);
    this.violated = new Float64Array(nModels);
    this.droppedN = new Float64Array(nModels);
    this.execSumMs = new Float64Array(nModels);
    this.execN = new Float64Array(nModels);
    this.latencySumMs = new Float64Array(nModels);
    this.recordsN = new Uint16Array(nModels);
  }

  /** A task of model m was answered `latencyMs` after it arrived; `late`: after its SLO. */
  answered(m: number, latencyMs: number, late: boolean): void {
    this.served[m]! += 1;
    this.latencySumMs[m]! += latencyMs;
    if (late) this.violated[m]! += 1;
  }

  /** `n` tasks of model m were dropped (timed out, queue full) or lost with a failed worker. */
  dropped(m: number, n = 1): void {
    this.droppedN[m]! += n;
  }

  /** A batch of model m took `execMs` of GPU time; `detail`, where known, makes it a batch record. */
  batchTimed(m: number, execMs: number, detail?: BatchDetail): void {
    this.execSumMs[m]! += execMs;
    this.execN[m]! += 1;
    if (detail && this.recordsN[m]! < BATCH_RECORDS_PER_MODEL) {
      this.recordsN[m]! += 1;
      this.records.push({ model: m, execMs, ...detail });
    }
  }

  /** Per model: served, violated, dropped, mean GPU time of a batch and mean task latency (NaN: none). */
  outcomes(): EpochOutcomes {
    const mean = (sum: Float64Array, n: Float64Array) => Array.from(sum, (s, m) => (n[m]! > 0 ? s / n[m]! : NaN));
    return {
      served: Array.from(this.served),
      violated: Array.from(this.violated),
      dropped: Array.from(this.droppedN),
      meanExecMs: mean(this.execSumMs, this.execN),
      meanLatencyMs: mean(this.latencySumMs, this.served),
      ...(this.records.length > 0 ? { batches: this.records } : {}),
    };
  }

  totals(): EpochTotals {
    let served = 0;
    let violated = 0;
    let dropped = 0;
    for (let m = 0; m < this.nModels; m++) {
      served += this.served[m]!;
      violated += this.violated[m]!;
      dropped += this.droppedN[m]!;
    }
    return { served, good: served - violated, missed: violated + dropped };
  }

  /**
   * The policy's observation at `nowMs`: the monitor's rates (its warm-up rule: at least
   * `initialRatePerS` until a full window is seen, src/serving/monitor.ts; with its tuner, the mean rates
   * beside the raised ones) and burstiness, the tasks
   * queued per model (on-time lane), this epoch's outcomes and the deployment in force.
   */
  observe(
    nowMs: number,
    monitor: RateMonitor,
    initialRatePerS: readonly number[],
    queued: readonly number[],
    current: Deployment,
  ): Observation {
    return {
      nowMs,
      ratePerS: monitor.ratesPerS(initialRatePerS),
      ...(monitor.tuned ? { meanRatePerS: monitor.meanRatesPerS(initialRatePerS) } : {}),
      arrivalCv2: monitor.arrivalCv2(),
      queued,
      lastEpoch: this.outcomes(),
      current,
    };
  }

  /** Starts a new epoch: every count and sum back to zero. */
  reset(): void {
    for (const a of [this.served, this.violated, this.droppedN, this.execSumMs, this.execN, this.latencySumMs])
      a.fill(0);
    this.recordsN.fill(0);
    this.records = [];
  }
}

// The values /metrics and Triton's statistics extension are read as: a model's counters since the
// service started, a worker as the control plane shows it, and the one model version inss serves.

/** The one model version inss serves (KServe/Triton's `version` label and field). */
export const MODEL_VERSION = '1';

/** A cumulative duration in Triton's statistics format: how many, and their total in nanoseconds. */
export interface Duration {
  count: number;
  ns: number;
}

/** One batch size's executions (Triton's batch_stats entry). */
export interface BatchSizeStats {
  readonly batchSize: number;
  readonly count: number;
  /** Total compute time of these executions, ns (as the worker reports it). */
  readonly computeNs: number;
}

/** Everything Triton's statistics extension reports for one model, since the service started. */
export interface ModelStats {
  /** Wall-clock ms since the epoch of the last finished request; 0 when none. */
  readonly lastInferenceMs: number;
  readonly inferenceCount: number;
  readonly executionCount: number;
  /** End-to-end durations of answered requests. */
  readonly success: Duration;
  /** End-to-end durations of requests that ended in an error (dropped, not deployed, worker failed, shutdown). */
  readonly fail: Duration;
  /** Time in the task buffer, per dispatched request. */
  readonly queue: Duration;
  /** The worker-reported batch time, counted once per request in the batch. */
  readonly computeInfer: Duration;
  readonly batches: readonly BatchSizeStats[];
}

/** A worker as the metrics and the Triton surface see it (Control.workerViews()). */
export interface WorkerView {
  readonly workerId: string;
  readonly model: string;
  /** Cluster GPU index. */
  readonly gpu: number;
  /** MPS share in force, percent (100 on a timeshare GPU: the whole GPU, in turns). */
  readonly pct: number;
  readonly batch: number;
  readonly timeoutMs: number;
  readonly role: 'active' | 'shadow' | 'retiring';
  readonly state: string;
  /** Takes batches now. */
  readonly serving: boolean;
}

// The simulator's inputs and results: what `simulate` (simulator.ts) takes and returns. The
// settings it shares with the scheduler are src/serving/settings.ts; these add the twin's own.
import type { ClusterInfo, Policy } from '../policy/types.js';
import type { MonitorKind } from '../serving/monitor.js';
import type { QueuePolicy } from '../serving/queuePolicy.js';
import { DEFAULT_SERVING_SETTINGS, type PooledPrediction } from '../serving/settings.js';
import type { TransportModel } from '../serving/transport.js';
import type { ArrivalStream } from '../workload/arrivals.js';
import type { GroundTruthSettings } from './groundTruth.js';

export interface SimSettings {
  readonly durationMs: number;
  /** Decision epoch: the policy is asked every `epochMs`. */
  readonly epochMs: number;
  /** Start and warm-up time of a shadow worker. */
  readonly swapMs: number;
  /** Window of the monitor's rate estimate (count of arrivals over the window). */
  readonly monitorWindowMs: number;
  /** The monitor's kind (src/serving/monitor.ts); absent: `mean`. */
  readonly monitor?: MonitorKind;
  /** Safety margin of the dispatch rule (c), as a fraction of the predicted batch time. */
  readonly dispatchSlack: number;
  /** How the dispatch rule predicts a batch on a pooled overlap GPU (src/serving/settings.ts); absent: `running`. */
  readonly pooledPrediction?: PooledPrediction;
  /**
   * Time each batch spends outside the GPU on its way to the worker and back (ms), before its GPU
   * time: 0 by default (batches start where they are decided). The running system measures it
   * (inss_batch_transport_seconds); with it, the simulator predicts the running system's task
   * latencies, its dispatch rule starts batches that much earlier, as the scheduler's does, and a
   * worker takes its next batch while one runs (pipelining, `nextBatchAtMs` in src/serving/dispatch.ts): the
   * next batch's transport overlaps the batch running.
   */
  readonly transportMs?: number;
  /**
   * The host's transport as the running system measured it (src/serving/transport.ts): each batch's
   * transport is `fixedMs + perMbMs x` its inputs' megabytes; with `wayIn` and `wayOutMs`, each task is
   * queued its request's way in after it arrives and answered the way out after its batch ends, and
   * the dispatch rule budgets its SLO less the way out; with `clientMs`, each task's latency also
   * counts its client's own leg (the budget does not). When given, it replaces `transportMs`.
   */
  readonly transport?: TransportModel;
  readonly groundTruth: GroundTruthSettings;
  /** Per served model, its queue policy (src/serving/queuePolicy.ts); absent entries: the default (delay). */
  readonly queuePolicies?: readonly (QueuePolicy | undefined)[];
  /**
   * Per served model, the samples each arrival carries (default 1): a request of k samples is k tasks
   * arriving at once, each admitted, queued, batched and counted on its own, as the live scheduler
   * takes a k-sample request (scheduler/infer.ts).
   */
  readonly samplesPerRequest?: readonly number[];
  /**
   * How much earlier than its latest start the dispatch rule starts a waiting batch (ms; default 0):
   * the running system's measured timer jitter, to replay it (the simulator's own timers are exact).
   */
  readonly dispatchMarginMs?: number;
  /**
   * Front doors (src/sim/doors.ts, docs/front-doors.md): each with its own queues over its share of the workers,
   * each model's tasks split over them by their workers; absent or 1: one door, every task in one queue.
   */
  readonly frontDoors?: number;
}

export const DEFAULT_SIM_SETTINGS: Omit<SimSettings, 'durationMs' | 'groundTruth'> = {
  ...DEFAULT_SERVING_SETTINGS,
  swapMs: 3000,
};

export interface SimInput {
  /** The cluster as the policy and the dispatch rule know it. */
  readonly cluster: ClusterInfo;
  /**
   * The cluster the ground truth times batches with (default `cluster`): the same GPUs and models, every model with
   * its true profile, where `cluster` leaves unprofiled ones without (profileIndex -1, docs/online-profiling.md).
   */
  readonly truthCluster?: ClusterInfo;
  /** One arrival stream per served model, in cluster.models order. */
  readonly streams: readonly ArrivalStream[];
  /** The rates an operator expects at the start (the first decision's observation). */
  readonly initialRatePerS: readonly number[];
  readonly policy: Policy;
  readonly settings: SimSettings;
  /** Milliseconds from a monotonic clock, to time decisions; omit for no timing. */
  readonly clock?: () => number;
  /**
   * Told of each batch start, drop and activation, as they happen (the conformance suite compares them with the
   * control plane's).
   */
  readonly trace?: SimTrace;
  /** Workers that die during the run (simulator.ts, "Worker failures"); none by default. */
  readonly failures?: readonly WorkerFailure[];
  /** One arrival stream per pipeline of `cluster.pipelines`, in its order (pipelines.ts); none without pipelines. */
  readonly pipelineStreams?: readonly ArrivalStream[];
}

/** The worker serving `model` on `gpu` (active or retiring) dies at `tMs` and is back `downMs` later. */
export interface WorkerFailure {
  readonly tMs: number;
  readonly model: number;
  readonly gpu: number;
  readonly downMs: number;
}

export interface SimTrace {
  /**
   * A batch of `model` starts on `gpu` at `size` (its tasks, or more where its worker pads: Placement.padBatch);
   * it will take `durationMs` (transport included);
   * the dispatch rule predicted `predictedMs` of GPU time for it (its cost plan's factor included).
   */
  batchStart?(tMs: number, model: number, gpu: number, size: number, durationMs: number, predictedMs: number): void;
  /** A task of `model` is dropped (it timed out and its policy rejects, or its queue was full). */
  drop?(tMs: number, model: number): void;
  /** A task of `model` timed out and moved to its delayed lane. */
  delay?(tMs: number, model: number): void;
  /** A new worker of `model` on `gpu` at `pct` is ready and serves. */
  activate?(tMs: number, model: number, gpu: number, pct: number): void;
  /** The worker of `model` on `gpu` died; `lost` tasks of the batch it ran are lost with it. */
  fail?(tMs: number, model: number, gpu: number, lost: number): void;
}

export interface Summary {
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
}

export interface ModelStats {
  readonly model: string;
  readonly arrivals: number;
  readonly served: number;
  /** Served within the SLO. */
  readonly good: number;
  /** Served after the SLO. */
  readonly late: number;
  /** Timed out on the on-time lane and moved to the delayed one (each is then served late, or dropped). */
  readonly delayed: number;
  /** Dropped (timed out under a reject policy, no room in a full queue) or lost with a failed worker. */
  readonly dropped: number;
  /** Still queued or running when the simulation ended (neither served nor dropped). */
  readonly unfinished: number;
  /** Of those, timed out and waiting in the delayed lane: they count as missed in `sloViolationPct`. */
  readonly unfinishedLate: number;
  readonly latencyMs: Summary;
  readonly queueMs: Summary;
  readonly execMs: Summary;
  readonly meanBatch: number;
}

/** A pipeline's requests, end to end (pipelines.ts): each counts once, whatever its steps. */
export interface PipelineStats {
  readonly pipeline: string;
  readonly arrivals: number;
  /** Answered by the last step. */
  readonly served: number;
  /** Answered within the pipeline's SLO of their arrival. */
  readonly good: number;
  readonly late: number;
  /** A step's task was dropped or lost. */
  readonly dropped: number;
  /** Still in some step's queue or batch at the end. */
  readonly unfinished: number;
  /** Of those, waiting in a step's delayed lane: they count as missed. */
  readonly unfinishedLate: number;
  /** End to end, answered requests. */
  readonly latencyMs: Summary;
}

export interface TimelinePoint {
  readonly tMs: number;
  readonly servedPerS: number;
  readonly goodPerS: number;
  readonly missedPerS: number;
}

/**
 * The run's figures. `models` holds every served model's tasks, a pipeline's step tasks included; the totals
 * (arrivals to latencyMs) count what clients see: the tasks of models that are no pipeline's steps, and each
 * pipeline request once (`pipelines`).
 */
export interface SimResult {
  readonly durationMs: number;
  readonly models: readonly ModelStats[];
  /** Per pipeline of the cluster, end to end; absent without pipelines. */
  readonly pipelines?: readonly PipelineStats[];
  readonly arrivals: number;
  readonly served: number;
  readonly good: number;
  readonly late: number;
  readonly dropped: number;
  readonly unfinished: number;
  readonly throughputPerS: number;
  readonly goodputPerS: number;
  /**
   * Late or dropped, percent of the tasks that finished (served or dropped); a task that timed out and
   * still waits in its delayed lane at the end counts as late (it has missed its SLO already).
   */
  readonly sloViolationPct: number;
  readonly latePct: number;
  readonly dropPct: number;
  readonly latencyMs: Summary;
  readonly timeline: readonly TimelinePoint[];
  /** Wall-clock time of each decision, ms (empty without a clock). */
  readonly decisionMs: readonly number[];
  readonly swaps: number;
  /** Times a GPU's workers (shadows included) needed more memory than it has. */
  readonly memoryOvercommits: number;
  /** Time-averaged MPS share held by workers per GPU, percent (timeshare GPUs count 100 while busy). */
  readonly gpuSharePct: readonly number[];
  readonly batches: number;
  /** Simulated events per wall second are the caller's to compute; this counts events. */
  readonly events: number;
}

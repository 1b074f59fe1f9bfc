// The scheduling-policy port: every policy (InSS, Gpulet, GSLICE, iGniter, static-even, timeshare,
// oracle) implements `Policy` and is created by a `PolicyFactory` registered by name in
// cli/registry.ts. A policy is pure: it sees the cluster and an observation with the time in
// it, and returns the deployment it wants; the simulator (or the scheduler service) applies it.
import type { ServedCost } from '../model/costDistribution.js';
import type { LatencyModel } from '../model/predictor.js';
import type { PooledGpuMode } from '../model/pooledGpu.js';
import type { Pipeline } from '../serving/pipeline.js';
import type { ModelProfile } from '../profile/schema.js';

/** One GPU of the cluster as a policy sees it. */
export interface GpuInfo {
  /** Index in the cluster, 0-based; placements refer to GPUs by this index. */
  readonly index: number;
  readonly profileId: string;
  /** The compiled latency model of this GPU's profile (shared by GPUs of one type). */
  readonly model: LatencyModel;
  /**
   * Per served model (ServedModel.index): its index in `model`, the GPU's latency model; -1 if the profile lacks it.
   */
  readonly profileIndex: readonly number[];
  readonly memMb: number;
  /** MPS allocation unit (%): every share a policy emits is a multiple of it. */
  readonly mpsUnitPct: number;
  readonly smCount: number;
  /**
   * What this GPU does with different models' batches at once when pooled (src/model/pooledGpu.ts): its agent's report,
   * or the scenario's.
   */
  readonly pooled: PooledGpuMode;
}

/** A model served by the cluster. */
export interface ServedModel {
  /** Index in the scenario's model list; observations are arrays in this order. */
  readonly index: number;
  readonly name: string;
  readonly sloMs: number;
  /** The profile model it runs (its latency and memory); absent: the one named `name`. */
  readonly profileModel?: string;
  /** Its per-sample cost varies with the input (src/model/costDistribution.ts); absent: every sample the same. */
  readonly cost?: ServedCost;
}

/**
 * A pipeline the cluster serves (src/serving/pipeline.ts): `stepModels[k]` is the served model (ServedModel.index)
 * step k runs. A step model serves its pipeline only; its `sloMs` in the cluster is its step's even budget, what a
 * policy that knows nothing of pipelines plans it with.
 */
export interface ClusterPipeline extends Pipeline {
  readonly stepModels: readonly number[];
}

export interface ClusterInfo {
  readonly gpus: readonly GpuInfo[];
  readonly models: readonly ServedModel[];
  /** Pipelines over the served models; absent or empty: none. */
  readonly pipelines?: readonly ClusterPipeline[];
  /**
   * Names that run one network share workers where the policy supports it (the scenario's `shareTiers`, the flag
   * `--share-tiers`; src/policy/tiers.ts): inss plans each network's tiers as one model. Absent: apart.
   */
  readonly shareTiers?: boolean;
}

/**
 * One worker: a model on a GPU with an MPS share and a batch size. `timeoutMs`, when set, caps how
 * long the oldest queued task waits for its batch to fill (Gpulet's SLO/2); when absent the task
 * buffer's deadline rule decides (docs/simulator.md).
 */
export interface Placement {
  readonly model: number;
  readonly gpu: number;
  /** MPS active-thread percentage, in (0, 100]. Ignored on a GPU in `timeshare` mode. */
  readonly pct: number;
  readonly batch: number;
  readonly timeoutMs?: number;
  /**
   * Every batch runs at `batch` (at most the model's max batch size): one with fewer tasks is padded with
   * copies of its first sample, whose answers are thrown away (`runBatchSize`, src/serving/padding.ts). The
   * online profiler sets it on a model it is learning, on a GPU it has alone, so that its fit sees the batch
   * sizes the load does not fill (docs/online-profiling.md). Absent: batches run at the tasks they hold.
   */
  readonly padBatch?: boolean;
}

/**
 * `mps`: placements on the GPU run concurrently with their shares (spatial sharing).
 * `timeshare`: one batch at a time on the whole GPU, models taking turns (temporal sharing only).
 */
export type GpuMode = 'mps' | 'timeshare';

export interface Deployment {
  readonly placements: readonly Placement[];
  /** Per GPU; absent means every GPU is `mps`. */
  readonly gpuModes?: readonly GpuMode[];
  /**
   * Per pipeline name, its SLO split across its steps (src/serving/pipeline.ts); a pipeline absent here runs
   * with its SLO split evenly.
   */
  readonly pipelineBudgetsMs?: Readonly<Record<string, readonly number[]>>;
  /**
   * Per model, the model whose lane and workers serve it (src/serving/tiers.ts): SLO tiers of one network served
   * together by the workers placed for their tightest tier. Absent: every model by its own workers.
   */
  readonly sharedBy?: readonly number[];
  /**
   * Models a policy profiled while serving them (src/policy/online/policy.ts): per GPU profile id, model name -> its
   * fitted profile. The serving side predicts their batches with it (the dispatch rule: a batch's size and drops, and
   * its neighbours' times on a pooled GPU), as it does a model its profiles carry, in place of a fit it was started
   * with (src/policy/online/clusterMap.ts, `withLearned`). The same object until a profile in it changes.
   * Absent: none.
   */
  readonly learned?: LearnedProfiles;
}

/** Per GPU profile id, model name -> a profile fitted online (`Deployment.learned`). */
export type LearnedProfiles = Readonly<Record<string, Readonly<Record<string, ModelProfile>>>>;

/** What the monitor tells a policy at a decision epoch. */
export interface Observation {
  readonly nowMs: number;
  /** Estimated arrival rate per model (tasks/s), in `ClusterInfo.models` order. */
  readonly ratePerS: readonly number[];
  /**
   * Per model, the window's mean rate (tasks/s) where the monitor's tuner raised `ratePerS` above it on a burst
   * (src/serving/tuner.ts); absent with the mean-rate monitor, where the two are the same.
   */
  readonly meanRatePerS?: readonly number[];
  /**
   * Per model, the squared coefficient of variation of its inter-arrival gaps over the monitor window (1: Poisson;
   * absent: unknown).
   */
  readonly arrivalCv2?: readonly number[];
  /** Tasks waiting in each model's queue. */
  readonly queued: readonly number[];
  /** Measured over the last epoch, per model: tasks served and SLO violations (for self-tuning policies). */
  readonly lastEpoch: {
    readonly served: readonly number[];
    readonly violated: readonly number[];
    readonly dropped: readonly number[];
    /** Mean GPU execution latency of batches per model, ms (NaN where none ran). */
    readonly meanExecMs: readonly number[];
    /** Mean task latency per model, ms (NaN where none completed). */
    readonly meanLatencyMs: readonly number[];
    /**
     * Batches that finished this epoch, each with what ran beside it on its GPU when it started: the telemetry
     * an online fit of a model's latency profile learns from (src/policy/online/). At most
     * `BATCH_RECORDS_PER_MODEL` (src/serving/epochStats.ts) per model and epoch, the first ones; absent where the
     * side that serves does not report them.
     */
    readonly batches?: readonly BatchRecord[];
  };
  /** The deployment now in force (empty at the start). */
  readonly current: Deployment;
}

/** One model's batch running beside another on its GPU (ServedModel index, batch size, MPS share %). */
export interface BesideBatch {
  readonly model: number;
  readonly batch: number;
  readonly pct: number;
}

/** One finished batch as the serving side measured it. */
export interface BatchRecord {
  /** ServedModel index. */
  readonly model: number;
  /** Cluster GPU index. */
  readonly gpu: number;
  /** The batch size it ran at: its tasks, or more where its placement pads (`Placement.padBatch`). */
  readonly batch: number;
  /** The share it ran at, %: its MPS share, or on a pooled GPU the even split it ran at (100 alone). */
  readonly pct: number;
  /** Its GPU execution time, ms (t_inf: upload, scheduling, running and feedback; no queueing). */
  readonly execMs: number;
  /** It ran on a pooled (time-shared) GPU, where overlapping batches follow src/model/pooledGpu.ts. */
  readonly pooled: boolean;
  /** The other models' batches running on its GPU when it started. */
  readonly beside: readonly BesideBatch[];
  /** The most GPU memory its worker's process used while it ran (MB), as measured; absent where not measured. */
  readonly memoryMb?: number;
}

export interface Policy {
  readonly name: string;
  /** Called once per decision epoch. May keep state between calls; must not read a clock. */
  decide(obs: Observation): Deployment;
  /** What it decides with, when that depends on the cluster (e.g. inss: a trained actor or the model-based planner). */
  readonly note?: string;
}

export interface PolicyOptions {
  /** A trained policy's contents (parsed JSON), for policies that load one; the CLI reads the file. */
  readonly policyData?: unknown;
  readonly seed?: number;
  /**
   * The fraction of tasks to plan for within SLO, in (0.5, 1) (src/policy/attainment.ts; default 0.99):
   * the scenario's `attainmentTarget` or the operator's override. Read by inss; the baselines ignore it.
   */
  readonly attainmentTarget?: number;
}

export interface PolicyFactory {
  readonly name: string;
  readonly description: string;
  /**
   * Why this policy cannot run on the cluster with these options (too large for it, needs a trained
   * policy, a policy file that does not fit or does not parse), or null when it can. Pure and cheap.
   * Callers ask before `create`; `create` on a cluster `supports` refused is a caller bug and throws
   * a RangeError, and any error `create` throws on a supported cluster is a real failure.
   */
  supports(cluster: ClusterInfo, options: PolicyOptions): string | null;
  create(cluster: ClusterInfo, options: PolicyOptions): Policy;
}

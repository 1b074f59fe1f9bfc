// A model of a model repository in Triton's layout (docs/model-repository.md): DIR/<name>/config.pbtxt
// and DIR/<name>/<version>/model.onnx or model.pt. What the scheduler serves it by (its signature and
// batch limit), what an agent launches its worker from (its backend and file), and what
// GET /v2/models/<name>/config answers (the configuration as loaded). Pure types.
import type { CostClass } from '../model/costDistribution.js';
import type { ModelSignature } from '../protocol/tensor.js';
import type { QueuePolicyConfig } from '../serving/queuePolicy.js';

/** The backends inss runs: ONNX Runtime (the Node worker) and PyTorch's TorchScript (the Python worker). */
export type RepositoryBackend = 'onnxruntime' | 'pytorch';

/** Triton's `platform` string for each backend. */
export const PLATFORM_OF: Readonly<Record<RepositoryBackend, string>> = {
  onnxruntime: 'onnxruntime_onnx',
  pytorch: 'pytorch_libtorch',
};

export interface RepositoryModel {
  readonly name: string;
  readonly backend: RepositoryBackend;
  /**
   * Triton's max_batch_size. 0: the model takes no batch dimension (its inputs are exactly `dims`); inss
   * then runs each request alone. Otherwise the largest batch a request carries and inss forms.
   */
  readonly maxBatchSize: number;
  /** Inputs and outputs in the configuration's order; shapes without the batch dimension. */
  readonly signature: ModelSignature;
  /** The latency SLO (ms) from `parameters { key: "slo_ms" ... }`; absent: the scenario's or the default. */
  readonly sloMs?: number;
  /**
   * The input-dependent cost from `parameters { key: "cost_classes" ... }` (src/model/costDistribution.ts):
   * a sample's cost relative to the others', with weights; absent: every sample costs the profile's.
   */
  readonly costClasses?: readonly CostClass[];
  /** dynamic_batching, when configured: the preferred batch sizes and the longest a task waits to fill one. */
  readonly dynamicBatching?: {
    readonly preferredBatchSize: readonly number[];
    readonly maxQueueDelayMicroseconds: number;
  };
  /** dynamic_batching.default_queue_policy as inss's queue policy (src/serving/queuePolicy.ts), when given. */
  readonly queuePolicy?: QueuePolicyConfig;
  /** The version served (the highest the version policy allows) and every version it allows. */
  readonly version: string;
  readonly versions: readonly string[];
  /** Absolute path of the served version's model file. */
  readonly file: string;
  /** The configuration as Triton's JSON form of ModelConfig (what GET /v2/models/<name>/config returns). */
  readonly config: Readonly<Record<string, unknown>>;
}

/**
 * What a worker for a repository model is told of it (`--signature`, JSON): the tensors in order and
 * whether the model takes a batch dimension (max_batch_size > 0).
 */
export interface WorkerSignature extends ModelSignature {
  readonly batchDim: boolean;
}

/** A model of the repository that is not served, and why (listed UNAVAILABLE by the repository index). */
export interface UnavailableModel {
  readonly name: string;
  readonly reason: string;
}

/** The SLO (ms) of a repository model that neither its `slo_ms` parameter nor the scenario gives one. */
export const DEFAULT_REPOSITORY_SLO_MS = 100;

/** One step of a repository ensemble: the model it runs and how its tensors are wired (Triton's names). */
export interface EnsembleStep {
  /** The step model (`model_name`), a model of the same repository. */
  readonly model: string;
  /** `model_version`: -1 (the version served) or a version number. */
  readonly version: number;
  /** The step model's input -> the ensemble tensor it reads (`input_map`). */
  readonly inputMap: Readonly<Record<string, string>>;
  /** The step model's output -> the ensemble tensor it becomes (`output_map`). */
  readonly outputMap: Readonly<Record<string, string>>;
}

/**
 * A Triton ensemble (`platform: "ensemble"`), served as a pipeline (src/serving/pipeline.ts): its steps run
 * in the order listed, under one end-to-end SLO. It has no model file and no worker of its own.
 */
export interface RepositoryEnsemble {
  readonly name: string;
  /** Triton's max_batch_size: at most each step model's, 0 only when every step model's is 0. */
  readonly maxBatchSize: number;
  /** The ensemble's own inputs (what a request carries) and outputs (what it is answered). */
  readonly signature: ModelSignature;
  /** The end-to-end SLO (ms) from `parameters { key: "slo_ms" ... }`; absent: DEFAULT_REPOSITORY_SLO_MS. */
  readonly sloMs?: number;
  readonly steps: readonly EnsembleStep[];
  readonly version: string;
  readonly versions: readonly string[];
  /** The configuration as Triton's JSON (what GET /v2/models/<name>/config returns). */
  readonly config: Readonly<Record<string, unknown>>;
}

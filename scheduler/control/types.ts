// The control plane's public types: what the HTTP and gRPC layers hand it (tasks), what it answers,
// and how it is built (`ControlOptions`). scheduler/control.ts re-exports them all.
import type { Logger } from 'pino';
import type { ServedCost } from '../../src/model/costDistribution.js';
import type { ClusterInfo, Policy } from '../../src/policy/types.js';
import type { Profile } from '../../src/profile/schema.js';
import type { ToAgent } from '../../src/protocol/agent.js';
import type { ModelSignature, SampleEncoding, TensorRef } from '../../src/protocol/tensor.js';
import type { RepositoryEnsemble, RepositoryModel } from '../../src/repository/types.js';
import type { QueuePolicyConfig } from '../../src/serving/queuePolicy.js';
import type { ServingSettings } from '../../src/serving/settings.js';
import type { ControlObserver } from '../observer.js';
import type { PlacementRow } from '../store.js';
import type { DirectLink } from '../workerLink.js';

export interface ServedModelConfig {
  readonly name: string;
  readonly sloMs: number;
  readonly signature: ModelSignature;
  /**
   * The largest batch dimension one request may carry (Triton's max_batch_size); default
   * DEFAULT_MAX_BATCH_SIZE. When set, also the largest batch the dispatcher sends the model's workers
   * (whatever the placement's batch); 0: the model has no batch dimension, each batch is one task and
   * its tensors are exactly their specs' shapes. Absent (the zoo's models): batches as placed.
   */
  readonly maxBatchSize?: number;
  /**
   * The network it runs when that is another served name's (the scenario's `profileModel`): served only as a
   * shared SLO tier, by the workers of the network's tightest tier, named as the network (src/serving/tiers.ts).
   */
  readonly profileModel?: string;
  /** Its queue policy (src/serving/queuePolicy.ts; the scenario's `models[i].queuePolicy`); absent: the default. */
  readonly queuePolicy?: QueuePolicyConfig;
  /**
   * Its input-dependent cost (src/model/costDistribution.ts): a repository model's `cost_classes`, planned
   * as the simulator plans a scenario's `cost`; absent: every sample costs the profile's.
   */
  readonly cost?: ServedCost;
  /** The repository model it is (--model-repository; src/repository/types.ts); absent for a scenario's zoo model. */
  readonly repository?: RepositoryModel;
  /**
   * The repository ensemble it is: a pipeline of served models (scheduler/pipelineFront.ts), an endpoint of the
   * protocols only; the control plane never holds one.
   */
  readonly ensemble?: RepositoryEnsemble;
}

/** The scenario's serving settings (src/serving/settings.ts), the same the simulator runs by. */
export type ControlSettings = ServingSettings;

/** Sends a message to an agent; false when it is not connected. */
export interface AgentLink {
  /** `payload`: the frame's payload as parts written one after another (not copied together). */
  send(agentId: string, msg: ToAgent, payload?: readonly Uint8Array[]): boolean;
}

/** One input of a task's sample (Control.submit takes one per input of the signature, in its order). */
export interface TaskInput {
  readonly name: string;
  readonly datatype: TensorRef['datatype'];
  readonly shape: readonly number[];
  /** How `data` holds the sample (scheduler/kserve.ts InferInput); absent: the tensor's own bytes. */
  readonly encoding?: SampleEncoding;
  readonly data: Buffer;
}

/**
 * When the task's request reached the scheduler (its headers read, by the control plane's clock): the
 * task's deadline and latency count from then, and the time to its submission is the request's way in
 * (docs/serving.md, "The path in the twin"). Absent: the task arrives when it is submitted.
 */
export interface TaskArrival {
  readonly receivedMs: number;
  /**
   * A pipeline step's task (scheduler/pipelineFront.ts): its deadline stamp (src/serving/pipelineChain.ts),
   * which may be ahead of the clock. Its deadline and latency count from the stamp; the monitor counts it as
   * arriving when submitted.
   */
  readonly stampMs?: number;
  /**
   * Whether the time from `receivedMs` to the task's submission is its request's way in (measured for the twin).
   * Absent: whether it has no stamp. A pipeline's first step is its request read and parsed: its way in is
   * measured whatever its stamp (the plan's split moves it); a later step's is not.
   */
  readonly wayIn?: boolean;
}

export interface TaskOutput {
  readonly name: string;
  readonly datatype: TensorRef['datatype'];
  readonly shape: number[];
  readonly data: Buffer;
}

/**
 * Why a task got an error instead of a result: 'slo', it timed out under a reject policy or was the
 * oldest delayed task when its queue was full; 'queue-full', its model already held its policy's
 * `maxQueueSize` tasks, all on time (the client may retry: the service is overloaded, as 503);
 * 'bad-input', the worker could not decode its image.
 */
export type TaskErrorReason = 'slo' | 'queue-full' | 'not-deployed' | 'worker-failed' | 'shutdown' | 'bad-input';

export type TaskAnswer =
  | { readonly ok: true; readonly outputs: readonly TaskOutput[]; readonly latencyMs: number }
  | { readonly ok: false; readonly reason: TaskErrorReason; readonly error: string };

export interface ControlOptions {
  readonly models: readonly ServedModelConfig[];
  /** Profiles by id, for the GPUs agents report. */
  readonly profiles: ReadonlyMap<string, Profile>;
  readonly policyName: string;
  /**
   * Creates the policy for a cluster; throws when it cannot run there (the error is logged and shown
   * in readiness).
   */
  readonly createPolicy: (cluster: ClusterInfo) => Policy;
  readonly link: AgentLink;
  /** The direct path to workers' data sockets; absent: every batch goes through its agent. */
  readonly direct?: DirectLink;
  readonly clock: () => number;
  readonly wallClock?: () => Date;
  readonly logger: Logger;
  /** Who records what happens (scheduler/observer.ts): the metrics, the SQLite store. */
  readonly observers: readonly Partial<ControlObserver>[];
  /**
   * The placements the last run persisted (a restarted scheduler adopts its workers with their batch
   * sizes).
   */
  readonly storedPlacements?: () => readonly PlacementRow[];
  readonly settings?: Partial<ControlSettings>;
  /**
   * An agent disconnected this long (ms) leaves the plan: its models are re-placed on the other agents'
   * GPUs until it is back (docs/reliability.md, "A lost host"). 0 or absent: never; its placements wait.
   */
  readonly agentLostMs?: number;
  /** This front door dispatches to the worker (docs/front-doors.md); absent: to every worker. */
  readonly holds?: (w: { readonly agentId: string; readonly localGpu: number; readonly data: unknown }) => boolean;
  /** Rates to plan for before traffic is seen (per model name); default 0 (the first epochs learn them). */
  readonly initialRatePerS?: Readonly<Record<string, number>>;
  /**
   * The generation of the first worker this control plane creates (each next one gets one more).
   * Default: the wall clock in ms, so a restarted scheduler's workers never share a generation with
   * those of the run before it; tests with a manual clock give a fixed one.
   */
  readonly firstGeneration?: number;
}

// The control plane's records: a task waiting or in a batch, a worker it placed or adopted, a batch in
// flight. The managers in this folder share them; each record has one owner that mutates it (the task
// buffer its tasks, the worker set its workers, the batches their batches, the path meter a worker's
// transport estimate).
import type { Placement } from '../../src/policy/types.js';
import type { SampleEncoding } from '../../src/protocol/tensor.js';
import { type DataEndpoint, type WorkerIdentity, workerKey, type WorkerStatus } from '../../src/protocol/agent.js';
import type { WorkerView as PlanView } from '../../src/serving/workerSet.js';
import { WorkerTimes } from '../../src/serving/dispatch.js';
import type { TaskOutcome } from '../metrics.js';
import type { ServedModelConfig, TaskAnswer } from './types.js';

export interface Task {
  readonly model: number;
  readonly arrivalMs: number;
  /** Its sample of every input of the model's signature, in signature order (one for the zoo's models). */
  readonly inputs: readonly Buffer[];
  /**
   * A model with a variable input dimension only: each input's sample shape (without the batch
   * dimension), in signature order, which the batch pads to its longest (src/serving/padding.ts).
   * Absent: every input has its spec's fixed shape.
   */
  readonly shapes?: readonly (readonly number[])[];
  /** How the first input's bytes are sent when not as its tensor (an image input: UINT8, JPEG, PNG). */
  readonly encoding: SampleEncoding | undefined;
  readonly answer: (a: TaskAnswer) => void;
  /** When it was submitted (arrivalMs + the request's way in). */
  readonly submittedMs: number;
  dispatchedMs: number;
  /**
   * A shared SLO tier's task (src/serving/tiers.ts): the stamp it is held by in its lane, `arrivalMs` plus its
   * budget less the lane's; absent, it is held by `arrivalMs`.
   */
  laneMs?: number;
}

/** When a task stands in its lane's order: its stamp in a lane of shared tiers, else its arrival. */
export function laneMsOf(t: Task): number {
  return t.laneMs ?? t.arrivalMs;
}

/** Answers a task (exactly once), records its outcome and counts it in the epoch's statistics. */
export type Finish = (t: Task, a: TaskAnswer, outcome: TaskOutcome) => void;

export type Role = 'active' | 'shadow' | 'retiring';

export interface Worker {
  readonly workerId: string;
  /** Part of its identity (src/protocol/agent.ts): given at creation, or adopted from its agent. */
  readonly generation: number;
  readonly agentId: string;
  readonly localGpu: number;
  /** Index into the cluster's GPUs. */
  gpu: number;
  readonly model: number;
  readonly pct: number;
  batch: number;
  timeoutMs: number;
  /** Every other batch runs at `batch`, padded (Placement.padBatch; src/serving/padding.ts `runBatchSize`). */
  padBatch: boolean;
  /** The previous batch was padded. */
  padTurn: boolean;
  role: Role;
  /** In the desired set sent to its agent; false once it is let go (it finishes what it holds). */
  wanted: boolean;
  /** The agent's last word on it. */
  state: WorkerStatus['state'] | 'unknown';
  pid: number | null;
  replaces: Worker | null;
  /** Its batches sent and not yet answered, oldest first (at most PIPELINE_DEPTH). */
  inFlight: Batch[];
  readonly predicted: WorkerTimes;
  /** Moving average of (round trip of a batch) - (time the worker reports for it), ms. */
  overheadMs: number;
  /** Batches answered since the last epoch (an idle worker's overhead estimate decays). */
  batchesThisEpoch: number;
  /** When its last batch was answered (a batch sent before that waited behind it: pipelining). */
  lastAnsweredMs: number;
  /**
   * GPU time its worker reported for batches on the direct path this epoch (the agent sees none of
   * them), and their count.
   */
  directLatencySumMs: number;
  directBatches: number;
  /** Its data socket as its agent last reported it (null: none; its batches go through the agent). */
  data: DataEndpoint | null;
}

export interface Batch {
  readonly batchId: string;
  readonly worker: Worker;
  readonly tasks: Task[];
  /** The batch size it runs at: its tasks, or more where its worker pads (the rest copies of the first task). */
  readonly size: number;
  readonly sentMs: number;
  /** Sent on the worker's data socket (true) or through its agent. */
  readonly direct: boolean;
  /** Wall-clock ms when it was written (per-hop tracing against the worker's timestamps). */
  readonly sentWallMs: number;
  readonly bytes: number;
  /** Its predicted GPU time when it was sent (when the worker may take the next one: pipelining). */
  readonly predictedMs: number;
  /** It was sent to a time-shared GPU and counts in that GPU's batches in flight (`gpuRunning`). */
  readonly timeshared: boolean;
}

/** A new worker's fixed fields; the rest start empty (unknown state, nothing in flight, no estimate). */
export interface WorkerSpec {
  readonly workerId: string;
  readonly generation: number;
  readonly agentId: string;
  readonly localGpu: number;
  readonly gpu: number;
  readonly model: number;
  readonly pct: number;
  readonly batch: number;
  readonly timeoutMs: number;
  /** Placement.padBatch (absent: false). */
  readonly padBatch?: boolean;
  readonly role: Role;
}

export function newWorker(spec: WorkerSpec): Worker {
  return {
    ...spec,
    padBatch: spec.padBatch === true,
    padTurn: false,
    wanted: true,
    state: 'unknown',
    pid: null,
    replaces: null,
    inFlight: [],
    predicted: new WorkerTimes(),
    overheadMs: 0,
    batchesThisEpoch: 0,
    lastAnsweredMs: -Infinity,
    directLatencySumMs: 0,
    directBatches: 0,
    data: null,
  };
}

/** What the worker is, as its agent and its batches name it. */
export function identity(w: Worker, models: readonly ServedModelConfig[]): WorkerIdentity {
  return {
    workerId: w.workerId,
    model: models[w.model]!.name,
    gpu: w.localGpu,
    pct: w.pct,
    generation: w.generation,
  };
}

/** The key of the worker's direct connection (its whole identity). */
export function linkKey(w: Worker, models: readonly ServedModelConfig[]): string {
  return workerKey(identity(w, models));
}

/** The control plane's workers as the shared worker-set plan reads them (src/serving/workerSet.ts). */
export const PLAN_VIEW: PlanView<Worker> = {
  model: (w) => w.model,
  gpu: (w) => w.gpu,
  pct: (w) => w.pct,
  phase: (w) => (!w.wanted ? 'draining' : w.role === 'shadow' ? 'starting' : w.role),
  replaces: (w) => w.replaces,
};

/** The placements the wanted active and shadow workers run (the deployment in force, as the worker set holds it). */
export function placementsOf(workers: readonly Worker[]): Placement[] {
  return workers
    .filter((w) => w.wanted && (w.role === 'active' || w.role === 'shadow'))
    .map((w) => ({
      model: w.model,
      gpu: w.gpu,
      pct: w.pct,
      batch: w.batch,
      ...(Number.isNaN(w.timeoutMs) ? {} : { timeoutMs: w.timeoutMs }),
      ...(w.padBatch ? { padBatch: true } : {}),
    }));
}

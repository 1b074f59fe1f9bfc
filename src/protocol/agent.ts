// Scheduler <-> agent messages (protocol version 1): the headers of frames.ts frames, one frame per
// WebSocket binary message. The agent authenticates the WebSocket upgrade with
// `Authorization: Bearer <token>`. docs/serving.md and docs/worker-protocol.md describe the exchange (worker identity:
// docs/worker-protocol.md).
import { z } from 'zod';
import { DEFAULT_POOLED_GPU_MODE, POOLED_GPU_MODES } from '../model/pooledGpu.js';
import { TensorRefSchema } from './tensor.js';

export const AGENT_PROTOCOL_VERSION = 1;
const v = z.literal(AGENT_PROTOCOL_VERSION);

export const AgentGpuSchema = z
  .object({
    /** The GPU's index on its machine (CUDA_VISIBLE_DEVICES), or the simulated GPU's index. */
    index: z.number().int().nonnegative(),
    uuid: z.string(),
    name: z.string(),
    memMb: z.number().nonnegative(),
    /** The inss profile that describes this GPU type (null when no profile matches it). */
    profile: z.string().nullable(),
    simulated: z.boolean(),
    /**
     * What the GPU does with different models' batches at once when the scheduler pools it
     * (src/model/pooledGpu.ts): `overlap` where its workers share an MPS server (or a simulated GPU
     * configured so), `serial` where they are separate processes the driver time-slices. Absent: overlap.
     */
    pooled: z.enum(POOLED_GPU_MODES).default(DEFAULT_POOLED_GPU_MODE),
  })
  .strict();
export type AgentGpu = z.output<typeof AgentGpuSchema>;

export const WorkerStateSchema = z.enum(['starting', 'ready', 'draining', 'failed']);
export type WorkerState = z.infer<typeof WorkerStateSchema>;

/**
 * What a worker is: its id, the model it runs, its GPU (the agent's local index), its MPS share and a
 * generation the scheduler gives it when it creates it (unique per scheduler run and increasing across
 * restarts). Two workers are the same worker only when all five agree: an agent reconciles by the whole
 * identity, refuses a batch whose identity is not its worker's, and a restarted scheduler adopts a
 * running worker by what it is (docs/worker-protocol.md, "Worker identity").
 */
export const WorkerIdentitySchema = z
  .object({
    workerId: z.string().min(1),
    model: z.string().min(1),
    gpu: z.number().int().nonnegative(),
    pct: z.number().positive().max(100),
    generation: z.number().int().nonnegative(),
  })
  .strict();
export type WorkerIdentity = z.infer<typeof WorkerIdentitySchema>;

/**
 * A ready worker's data socket, for the direct path (scheduler -> worker, no agent in between):
 * `address` is `unix:PATH` or `tcp:HOST:PORT` (protocol/worker.ts `parseDataAddress`), `secret` the
 * one its `attach` frame must carry. The agent reports it over its authenticated WebSocket only.
 */
export const DataEndpointSchema = z.object({ address: z.string().min(1), secret: z.string().min(1) }).strict();
export type DataEndpoint = z.infer<typeof DataEndpointSchema>;

export const WorkerStatusSchema = WorkerIdentitySchema.extend({
  state: WorkerStateSchema,
  pid: z.number().int().optional(),
  message: z.string().optional(),
  /** Set once the worker is ready and listens on a data socket; absent: batches go through the agent. */
  data: DataEndpointSchema.optional(),
}).strict();
export type WorkerStatus = z.infer<typeof WorkerStatusSchema>;

export const DesiredWorkerSchema = WorkerIdentitySchema;
export type DesiredWorker = WorkerIdentity;

/** One string per identity (all five fields), for maps keyed by worker. */
export function workerKey(w: WorkerIdentity): string {
  return `${w.workerId}|${w.model}|${w.gpu}|${w.pct}|${w.generation}`;
}

export function sameWorker(a: WorkerIdentity, b: WorkerIdentity): boolean {
  return (
    a.workerId === b.workerId &&
    a.model === b.model &&
    a.gpu === b.gpu &&
    a.pct === b.pct &&
    a.generation === b.generation
  );
}

/** "w2 (mobilenet on GPU 0 at 50%, generation 7)", for errors and logs. */
export function describeWorker(w: WorkerIdentity): string {
  return `${w.workerId} (${w.model} on GPU ${w.gpu} at ${w.pct}%, generation ${w.generation})`;
}

export const BatchErrorReasonSchema = z.enum([
  'worker-failed',
  'worker-retired',
  'unknown-worker',
  'wrong-worker',
  'bad-batch',
]);
export type BatchErrorReason = z.infer<typeof BatchErrorReasonSchema>;

export const FromAgentSchema = z.discriminatedUnion('type', [
  z
    .object({
      v,
      type: z.literal('hello'),
      agentId: z.string().min(1).max(200),
      hostname: z.string(),
      workerKind: z.string(),
      gpus: z.array(AgentGpuSchema),
      /** Workers still running from before a reconnect (the scheduler adopts or stops them). */
      workers: z.array(WorkerStatusSchema),
    })
    .strict(),
  z.object({ v, type: z.literal('workers'), workers: z.array(WorkerStatusSchema) }).strict(),
  z
    .object({
      v,
      type: z.literal('telemetry'),
      gpus: z.array(
        z
          .object({ index: z.number().int(), utilPct: z.number().nullable(), memUsedMb: z.number().nullable() })
          .strict(),
      ),
      workers: z.array(
        z
          .object({
            workerId: z.string(),
            batches: z.number().int().nonnegative(),
            meanLatencyMs: z.number().nullable(),
          })
          .strict(),
      ),
    })
    .strict(),
  z
    .object({
      v,
      type: z.literal('result'),
      batchId: z.string(),
      workerId: z.string(),
      latencyMs: z.number().nonnegative(),
      outputs: z.array(TensorRefSchema),
      /** The worker's GPU memory while it ran the batch (MB), where it measured it (the worker protocol's). */
      memoryMb: z.number().positive().finite().optional(),
    })
    .strict(),
  z
    .object({
      v,
      type: z.literal('batchError'),
      batchId: z.string(),
      workerId: z.string(),
      reason: BatchErrorReasonSchema,
      message: z.string(),
    })
    .strict(),
]);
export type FromAgent = z.infer<typeof FromAgentSchema>;

/** The hub's first answer, with the heartbeat's beat (every link's: the agents' and the front doors'). */
export const LinkWelcomeSchema = z
  .object({ v, type: z.literal('welcome'), heartbeatMs: z.number().int().positive() })
  .strict();
/** Why the hub refuses a message before it closes the link (every link's). */
export const LinkErrorSchema = z.object({ v, type: z.literal('error'), message: z.string() }).strict();

export const ToAgentSchema = z.discriminatedUnion('type', [
  LinkWelcomeSchema,
  /** The whole set of workers this agent should run; it reconciles toward it (shadow swaps for new shares). */
  z
    .object({
      v,
      type: z.literal('desired'),
      generation: z.number().int().nonnegative(),
      workers: z.array(DesiredWorkerSchema),
    })
    .strict(),
  /**
   * A batch for one worker, named by its whole identity: an agent whose worker is not that one refuses it
   * (`wrong-worker`).
   */
  WorkerIdentitySchema.extend({
    v,
    type: z.literal('batch'),
    batchId: z.string(),
    size: z.number().int().positive(),
    inputs: z.array(TensorRefSchema),
  }).strict(),
  LinkErrorSchema,
]);
export type ToAgent = z.infer<typeof ToAgentSchema>;

/** Rejects a message that fails its schema with the field path (the peer is told, then closed). */
export function describeZodError(e: z.ZodError): string {
  return e.issues.map((i) => `${i.path.join('.') || '(message)'}: ${i.message}`).join('; ');
}

// Agent <-> worker messages (protocol version 1), the headers of the frames of frames.ts on the
// worker's stdin (agent -> worker) and stdout (worker -> agent). The worker writes its logs to stderr.
// docs/worker-protocol.md is the reference a worker in another language follows.
import { z } from 'zod';
import { TensorRefSchema } from './tensor.js';

export const WORKER_PROTOCOL_VERSION = 1;
const v = z.literal(WORKER_PROTOCOL_VERSION);

/** A batch another worker is running on the same GPU when this one starts (simulated GPUs only). */
export const RunningBatchSchema = z.object({ model: z.string(), batch: z.number().int().positive(), pct: z.number().positive().max(100) }).strict();
export type RunningBatch = z.infer<typeof RunningBatchSchema>;

export const ToWorkerSchema = z.discriminatedUnion('type', [
  z
    .object({
      v,
      type: z.literal('batch'),
      id: z.string().min(1),
      /** The model the batch is for: a worker running another model refuses it (an `error` for its id). */
      model: z.string().min(1),
      size: z.number().int().positive(),
      inputs: z.array(TensorRefSchema),
      /** Set by an agent that simulates its GPU: the batches running beside this one now. */
      running: z.array(RunningBatchSchema).optional(),
    })
    .strict(),
]);
export type ToWorker = z.infer<typeof ToWorkerSchema>;

export const FromWorkerSchema = z.discriminatedUnion('type', [
  /** Sent once, after the model is loaded and warmed up: the worker takes batches from now on. */
  z.object({ v, type: z.literal('ready'), model: z.string(), pid: z.number().int(), warmupMs: z.number().nonnegative(), device: z.string() }).strict(),
  /** The answer to batch `id`: outputs whose first dimension is the batch size, bytes in the payload. */
  z.object({ v, type: z.literal('result'), id: z.string(), latencyMs: z.number().nonnegative(), outputs: z.array(TensorRefSchema) }).strict(),
  /** Batch `id` failed; the worker goes on taking batches. */
  z.object({ v, type: z.literal('error'), id: z.string(), message: z.string() }).strict(),
  /** The worker cannot go on (sent before it exits, when it can). */
  z.object({ v, type: z.literal('fatal'), message: z.string() }).strict(),
]);
export type FromWorker = z.infer<typeof FromWorkerSchema>;

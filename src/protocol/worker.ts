// Worker messages (protocol version 1), the headers of the frames of frames.ts: on the worker's stdin
// (agent -> worker) and stdout (worker -> agent), and on its data socket (scheduler <-> worker, the
// direct path: `attach`, then batches and their answers). The worker writes its logs to stderr.
// docs/worker-protocol.md is the reference a worker in another language follows.
import { z } from 'zod';
import { WorkerIdentitySchema } from './agent.js';
import { TensorRefSchema } from './tensor.js';

export const WORKER_PROTOCOL_VERSION = 1;
const v = z.literal(WORKER_PROTOCOL_VERSION);

/** A batch another worker is running on the same GPU when this one starts (simulated GPUs only). */
export const RunningBatchSchema = z
  .object({ model: z.string(), batch: z.number().int().positive(), pct: z.number().positive().max(100) })
  .strict();
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
      /**
       * The whole identity of the worker the batch is for (the direct path always sends it): a worker
       * whose identity (INSS_WORKER_IDENTITY) differs refuses it with an `error` of reason `wrong-worker`.
       */
      worker: WorkerIdentitySchema.optional(),
      /**
       * Shared memory (docs/worker-protocol.md): one entry per sample of the (one) input, `[offset,
       * byteLength]` of the bytes in the region the worker mapped at `attach`, or null for a sample whose
       * bytes are in the payload (in order). Only on a data connection whose worker answered `attached`
       * with `shm: true`.
       */
      slots: z.array(z.tuple([z.number().int().nonnegative(), z.number().int().positive()]).nullable()).optional(),
    })
    .strict(),
  /**
   * The first frame on a data-socket connection: the secret the agent gave the worker
   * (INSS_WORKER_SECRET) and reported to the scheduler. A worker closes a connection whose first
   * frame is not an `attach` with its secret, before reading anything else from it.
   */
  z
    .object({
      v,
      type: z.literal('attach'),
      secret: z.string().min(1),
      /**
       * The scheduler's shared-memory region (a Unix data address only): a worker that can map it
       * (read-only) answers `attached` with `shm: true`, and batches on this connection may carry
       * `slots`; one that cannot answers `shm: false` with why, or nothing (both: batches carry their bytes).
       */
      shm: z
        .object({ path: z.string().min(1), bytes: z.number().int().positive() })
        .strict()
        .optional(),
    })
    .strict(),
]);
export type ToWorker = z.infer<typeof ToWorkerSchema>;

export const FromWorkerSchema = z.discriminatedUnion('type', [
  /** Sent once, after the model is loaded and warmed up: the worker takes batches from now on. */
  z
    .object({
      v,
      type: z.literal('ready'),
      model: z.string(),
      pid: z.number().int(),
      warmupMs: z.number().nonnegative(),
      device: z.string(),
      /**
       * Where its data socket listens (`unix:PATH` or `tcp:HOST:PORT`), when it was asked for one
       * (INSS_WORKER_LISTEN).
       */
      listen: z.string().min(1).optional(),
    })
    .strict(),
  /** The answer to batch `id`: outputs whose first dimension is the batch size, bytes in the payload. */
  z
    .object({
      v,
      type: z.literal('result'),
      id: z.string(),
      latencyMs: z.number().nonnegative(),
      outputs: z.array(TensorRefSchema),
      /** The most GPU memory the worker's process used while it ran the batch (MB), where it can measure it. */
      memoryMb: z.number().positive().finite().optional(),
      /**
       * Wall-clock ms (Unix epoch, fractional) when the batch's last byte was read and when the answer was written:
       * per-hop tracing.
       */
      receivedAtMs: z.number().optional(),
      answeredAtMs: z.number().optional(),
    })
    .strict(),
  /** Batch `id` failed; the worker goes on taking batches. `wrong-worker`: it was not this worker's (nothing ran). */
  z
    .object({
      v,
      type: z.literal('error'),
      id: z.string(),
      message: z.string(),
      reason: z.literal('wrong-worker').optional(),
    })
    .strict(),
  /** The answer to an `attach` that named a shared-memory region: whether the worker mapped it (else why not). */
  z.object({ v, type: z.literal('attached'), shm: z.boolean(), message: z.string().optional() }).strict(),
  /** The worker cannot go on (sent before it exits, when it can). */
  z.object({ v, type: z.literal('fatal'), message: z.string() }).strict(),
]);
export type FromWorker = z.infer<typeof FromWorkerSchema>;

/** The worker's environment for the direct path (set by the agent, agent/agent.ts; docs/worker-protocol.md). */
export const WORKER_ENV = {
  /** `unix:PATH` or `tcp:HOST:PORT` (port 0: any): where the worker's data socket listens. */
  listen: 'INSS_WORKER_LISTEN',
  /** The secret a data connection's `attach` must carry. */
  secret: 'INSS_WORKER_SECRET',
  /** The worker's whole identity (JSON of WorkerIdentity): batches naming another are refused. */
  identity: 'INSS_WORKER_IDENTITY',
  /** `off`: do not map the scheduler's shared-memory region (its batches then carry their bytes). */
  shm: 'INSS_WORKER_SHM',
} as const;

/** A data-socket address: `unix:PATH` or `tcp:HOST:PORT`. */
export type DataAddress =
  | { readonly kind: 'unix'; readonly path: string }
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number };

/** Parses `unix:PATH` / `tcp:HOST:PORT` (IPv6 hosts in brackets); a string naming why when it is neither. */
export function parseDataAddress(s: string): DataAddress | string {
  if (s.startsWith('unix:')) {
    const path = s.slice(5);
    return path.length > 0 ? { kind: 'unix', path } : `'${s}': the unix socket path is empty`;
  }
  const m = /^tcp:(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(s);
  if (m) {
    const port = Number(m[2]);
    if (port > 65535) return `'${s}': port ${port} is over 65535`;
    return { kind: 'tcp', host: m[1]!.replace(/^\[|\]$/g, ''), port };
  }
  return `'${s}': expected unix:PATH or tcp:HOST:PORT`;
}

export function formatDataAddress(a: DataAddress): string {
  return a.kind === 'unix' ? `unix:${a.path}` : `tcp:${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`;
}

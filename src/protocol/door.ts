// Scheduler <-> front door messages (protocol version 1; docs/front-doors.md): the headers of frames.ts frames
// over the door's link (scheduler/linkHub.ts, path /doors), authenticated like an agent's. The scheduler pushes
// each door its table (the doors, the agents and their GPUs, every worker with the door its GPU belongs to); the
// door reports the load it served, for the planner.
import { z } from 'zod';
import {
  AGENT_PROTOCOL_VERSION,
  AgentGpuSchema,
  DataEndpointSchema,
  LinkErrorSchema,
  LinkWelcomeSchema,
  WorkerIdentitySchema,
  WorkerStateSchema,
} from './agent.js';
import { ModelProfileSchema } from '../profile/schema.js';

/** The agents' version: the link's `welcome` and `error` are theirs. */
export const DOOR_PROTOCOL_VERSION = AGENT_PROTOCOL_VERSION;
const v = z.literal(DOOR_PROTOCOL_VERSION);

/** The most rows a load report carries (a door reports every 250 ms). */
const MAX_ROWS = 100_000;

/** A worker as the scheduler's table gives it: its identity and state, and what dispatch needs. */
export const DoorWorkerSchema = WorkerIdentitySchema.extend({
  agentId: z.string().min(1).max(200),
  state: z.union([WorkerStateSchema, z.literal('unknown')]),
  data: DataEndpointSchema.optional(),
  batch: z.number().int().positive(),
  /** The batch timeout in force (ms); null: none. */
  timeoutMs: z.number().nonnegative().nullable(),
  /** Every other batch padded to `batch` (Placement.padBatch); absent: no. */
  padBatch: z.boolean().optional(),
  role: z.enum(['active', 'shadow', 'retiring']),
  wanted: z.boolean(),
  /** The door its GPU belongs to (-1: none yet). */
  door: z.number().int().min(-1),
}).strict();
export type DoorWorker = z.infer<typeof DoorWorkerSchema>;

export const DoorAgentSchema = z
  .object({
    agentId: z.string().min(1).max(200),
    hostname: z.string(),
    workerKind: z.string(),
    connected: z.boolean(),
    gpus: z.array(AgentGpuSchema),
    /** Per GPU of `gpus`, in order: how the planner runs it (src/policy/types.ts GpuMode). */
    modes: z.array(z.enum(['mps', 'timeshare'])),
  })
  .strict();
export type DoorAgent = z.infer<typeof DoorAgentSchema>;

/** A gRPC endpoint peers dial, host:port. */
const GrpcAddress = z
  .string()
  .min(3)
  .max(300)
  .regex(/^\S+:\d+$/, 'host:port');

export const DoorPeerSchema = z
  .object({
    index: z.number().int().nonnegative(),
    id: z.string().min(1),
    url: z.string().url(),
    grpc: GrpcAddress.optional(),
  })
  .strict();

export const ToDoorSchema = z.discriminatedUnion('type', [
  LinkWelcomeSchema,
  z
    .object({
      v,
      type: z.literal('table'),
      /** This door's index (the scheduler is door 0). */
      door: z.number().int().positive(),
      /** The doors alive now, the scheduler's included. */
      doors: z.array(DoorPeerSchema),
      agents: z.array(DoorAgentSchema),
      workers: z.array(DoorWorkerSchema),
      /** The profiles the policy learned while serving (Deployment.learned): the door's dispatch predicts with them. */
      learned: z.record(z.string(), z.record(z.string(), ModelProfileSchema)).optional(),
    })
    .strict(),
  LinkErrorSchema,
]);
export type ToDoor = z.infer<typeof ToDoorSchema>;
export type DoorTable = Extract<ToDoor, { type: 'table' }>;

export const DoorLoadRowSchema = z
  .object({
    model: z.string().min(1),
    arrivals: z.number().int().nonnegative(),
    served: z.number().int().nonnegative(),
    violated: z.number().int().nonnegative(),
    dropped: z.number().int().nonnegative(),
    /** The served tasks' latencies, summed (ms). */
    latencySumMs: z.number().nonnegative(),
  })
  .strict();

export const FromDoorSchema = z.discriminatedUnion('type', [
  z
    .object({
      v,
      type: z.literal('hello'),
      doorId: z.string().min(1).max(200),
      /** Where peers forward requests for models this door holds (its HTTP base URL). */
      url: z.string().url(),
      /** Where peers forward gRPC requests (host:port); absent: it serves no gRPC. */
      grpc: GrpcAddress.optional(),
    })
    .strict(),
  /** Since the last report: per model, tasks answered (arrivals), and each batch's time (ms). */
  z
    .object({
      v,
      type: z.literal('load'),
      models: z.array(DoorLoadRowSchema).max(MAX_ROWS),
      batches: z
        .array(z.object({ model: z.string().min(1), latencyMs: z.number().nonnegative() }).strict())
        .max(MAX_ROWS),
    })
    .strict(),
]);
export type FromDoor = z.infer<typeof FromDoorSchema>;
export type DoorLoad = Extract<FromDoor, { type: 'load' }>;

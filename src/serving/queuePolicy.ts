// A model's queue policy, as Triton's `ModelQueuePolicy` (timeout_action, default_timeout_microseconds,
// max_queue_size), followed by the simulator (src/sim/simulator.ts) and the scheduler's control plane
// (scheduler/control.ts) alike. Pure. The rule (src/serving/dispatch.ts, docs/dispatch.md):
//
// - A task *times out* when the dispatch rule finds it can no longer be answered within its deadline,
//   arrival + min(SLO less the expected way out, `timeoutMs`): the head that even a batch of one
//   started now would finish late, a head a full batch cannot serve in time under a backlog, or a task
//   past its deadline at an epoch's expiry.
// - `reject`: a task that times out is dropped (answered `slo`), the dispatcher's early drop.
// - `delay` (the default): it moves to its model's *delayed lane* and is still served, late, whenever a
//   worker of the model would otherwise wait (Triton's "delayed until all requests that have not timed
//   out are processed"), in a batch that ends before the on-time lane's latest start (dispatch.ts).
// - `maxQueueSize`: the model's tasks held (on time and delayed) never exceed it. A task arriving at a
//   full queue makes room by dropping the oldest delayed task (serving it would keep an on-time task
//   out); with no delayed task to drop, the new task is rejected at submission (`queue-full`).
import { z } from 'zod';

export const QueuePolicySchema = z
  .object({
    /**
     * What becomes of a task that can no longer meet its deadline: served late when a worker is free (delay), or
     * dropped (reject).
     */
    timeoutAction: z.enum(['delay', 'reject']).default('delay'),
    /** The deadline a task times out at, ms after its arrival (default and at most: the model's SLO). */
    timeoutMs: z.number().finite().positive().optional(),
    /** Tasks of the model held at most, on time and delayed (default DEFAULT_MAX_QUEUE_SIZE). */
    maxQueueSize: z.number().int().positive().optional(),
  })
  .strict();
export type QueuePolicyConfig = z.input<typeof QueuePolicySchema>;

/**
 * The default bound on a model's held tasks. Large enough for any burst an idle cluster serves (a
 * thousand-task burst on one model is served, late where it must be); finite so that under overload
 * the delayed lane, which only gaps in the on-time work drain, stays bounded in memory.
 */
export const DEFAULT_MAX_QUEUE_SIZE = 4096;

/** A model's queue policy in force (every field resolved). */
export interface QueuePolicy {
  readonly delay: boolean;
  /** NaN: the SLO. */
  readonly timeoutMs: number;
  readonly maxQueueSize: number;
}

export const DEFAULT_QUEUE_POLICY: QueuePolicy = { delay: true, timeoutMs: NaN, maxQueueSize: DEFAULT_MAX_QUEUE_SIZE };

/** The policy in force for a model's configuration (absent: the default). */
export function resolveQueuePolicy(c: QueuePolicyConfig | undefined): QueuePolicy {
  if (c === undefined) return DEFAULT_QUEUE_POLICY;
  return {
    delay: (c.timeoutAction ?? 'delay') === 'delay',
    timeoutMs: c.timeoutMs ?? NaN,
    maxQueueSize: c.maxQueueSize ?? DEFAULT_MAX_QUEUE_SIZE,
  };
}

/**
 * The budget the on-time lane's deadline gives a task, ms after its arrival: the dispatch budget (SLO
 * less the answer's way out) or the policy's timeout, whichever is shorter.
 */
export function onTimeBudgetMs(dispatchBudgetMs: number, p: QueuePolicy): number {
  return Number.isNaN(p.timeoutMs) ? dispatchBudgetMs : Math.min(dispatchBudgetMs, p.timeoutMs);
}

/**
 * What happens to a task arriving at a model that holds `onTime` + `delayed` tasks:
 * 'accept'; 'evict-delayed' (drop the oldest delayed task, then accept); 'reject' (answer `queue-full`).
 */
export type Admission = 'accept' | 'evict-delayed' | 'reject';

export function admit(onTime: number, delayed: number, maxQueueSize: number): Admission {
  if (onTime + delayed < maxQueueSize) return 'accept';
  return delayed > 0 ? 'evict-delayed' : 'reject';
}

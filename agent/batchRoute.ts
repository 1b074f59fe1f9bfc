// Which worker may run a batch the scheduler relays through the agent, decided from the worker table
// alone: a batch goes only to the running, ready worker of its whole identity (src/protocol/agent.ts).
import {
  type BatchErrorReason,
  type DesiredWorker,
  describeWorker,
  type WorkerIdentity,
  workerKey,
  type WorkerState,
} from '../src/protocol/agent.js';
import type { RunningBatch } from '../src/protocol/worker.js';

/** What the routing reads of a managed worker. */
export interface RoutedWorker {
  readonly spec: DesiredWorker;
  readonly state: WorkerState;
  /** Batches it runs now: batch id -> size. */
  readonly busy: ReadonlyMap<string, number>;
}

/**
 * `run`: the worker takes the batch. `refuse`: answer the batch with this error; `wrong-worker` when
 * another worker holds the id (another model, GPU, share or generation: it must never take the batch),
 * `worker-retired` when the worker drains, `worker-failed` when it is desired but not running or ready,
 * `unknown-worker` when the agent does not know it.
 */
export type BatchRoute<W> =
  | { readonly kind: 'run'; readonly worker: W }
  | { readonly kind: 'refuse'; readonly reason: BatchErrorReason; readonly message: string };

export function routeBatch<W extends RoutedWorker>(
  workers: ReadonlyMap<string, W>,
  desired: ReadonlyMap<string, DesiredWorker>,
  id: WorkerIdentity,
): BatchRoute<W> {
  const key = workerKey(id);
  const w = workers.get(key);
  if (!w) {
    const other = [...workers.values()].find((x) => x.spec.workerId === id.workerId);
    if (other)
      return {
        kind: 'refuse',
        reason: 'wrong-worker',
        message:
          `batch for worker ${describeWorker(id)} refused: ` +
          `worker ${id.workerId} here is ${describeWorker(other.spec)}`,
      };
    return {
      kind: 'refuse',
      reason: desired.has(key) ? 'worker-failed' : 'unknown-worker',
      message: `worker ${describeWorker(id)} is not running on this agent`,
    };
  }
  if (w.state !== 'ready')
    return {
      kind: 'refuse',
      reason: w.state === 'draining' ? 'worker-retired' : 'worker-failed',
      message: `worker ${id.workerId} is ${w.state}`,
    };
  return { kind: 'run', worker: w };
}

/** The batches other workers run on `w`'s GPU now: what a simulated GPU tells `w` runs beside its own. */
export function runningBeside<W extends RoutedWorker>(workers: Iterable<W>, w: W): RunningBatch[] {
  const running: RunningBatch[] = [];
  for (const x of workers) {
    if (x === w || x.spec.gpu !== w.spec.gpu) continue;
    for (const b of x.busy.values()) running.push({ model: x.spec.model, batch: b, pct: x.spec.pct });
  }
  return running;
}

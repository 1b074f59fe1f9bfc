// The agent's record of one worker process: its desired identity, its state, the batches it runs and
// its counts for telemetry, its data socket. A launch that failed is a worker in state 'failed' with
// the reason, restarted with backoff like one that died.
import type { DataEndpoint, DesiredWorker, WorkerState } from '../src/protocol/agent.js';
import { WorkerProcess } from './workerProcess.js';

export interface Managed {
  spec: DesiredWorker;
  proc: WorkerProcess;
  state: WorkerState;
  message?: string;
  restarts: number;
  restartAtMs: number;
  /** Batches this worker is running now (for `running` on simulated GPUs). */
  busy: Map<string, number>;
  batches: number;
  latencySumMs: number;
  /** The secret its data connections must attach with (given at spawn). */
  secret: string;
  /** Its data socket, once it is ready and listens on one. */
  data?: DataEndpoint;
}

/** The backoff before restart `restarts + 1` of a worker that died or failed to launch. */
export function restartDelayMs(restarts: number): number {
  return Math.min(10_000, 500 * 2 ** restarts);
}

export function managedWorker(
  spec: DesiredWorker,
  proc: WorkerProcess | null,
  restarts: number,
  failure?: string,
): Managed {
  const w: Managed = {
    spec,
    proc: proc ?? new WorkerProcess({ command: '', args: [], env: {} }),
    state: failure ? 'failed' : 'starting',
    restarts,
    restartAtMs: failure ? Date.now() + restartDelayMs(restarts) : 0,
    busy: new Map(),
    batches: 0,
    latencySumMs: 0,
    secret: '',
  };
  if (failure) w.message = failure;
  return w;
}

// What the composition root (cli/serve/agent.ts) gives the node agent (agent/agent.ts).
import type { Logger } from 'pino';
import type { AgentTls } from './connect.js';
import type { DataPath } from './dataSocket.js';
import type { AgentGpu, DesiredWorker } from '../src/protocol/agent.js';
import type { WorkerLaunch } from './workerProcess.js';

export interface AgentOptions {
  /** ws://host:port/agents of the scheduler. */
  readonly schedulerUrl: string;
  readonly token: string;
  /**
   * For wss://: the CA (PEM) to trust for the scheduler's certificate, and optionally a host-name check
   * (agent/connect.ts).
   */
  readonly tls?: AgentTls;
  /** Stable across restarts (default: the host name), so the scheduler gives back the same workers. */
  readonly agentId?: string;
  readonly gpus: readonly AgentGpu[];
  readonly workerKind: string;
  /** How to start the worker for a desired (model, GPU, share): the composition root decides. */
  readonly launch: (w: DesiredWorker, gpu: AgentGpu) => WorkerLaunch;
  readonly logger: Logger;
  readonly telemetryMs?: number;
  readonly reconnectMinMs?: number;
  readonly reconnectMaxMs?: number;
  /**
   * Where workers listen for the scheduler's batches (the direct path): `unix` (the default) a socket
   * per worker in a private temporary directory, for a scheduler on this host; `tcp` a port per worker
   * on `host` (e.g. 0.0.0.0), reported to the scheduler as `advertise` (this host's address as the
   * scheduler reaches it); `off`: no data socket, every batch is relayed by the agent.
   */
  readonly dataPath?: DataPath;
  /** Reads GPU utilisation and memory (nvidia-smi) for telemetry; absent: computed from the workers. */
  readonly readGpus?: () => Promise<readonly { index: number; utilPct: number | null; memUsedMb: number | null }[]>;
}

// The WebSocket hub agents connect to (path /agents on the scheduler's HTTP port): a link hub
// (scheduler/linkHub.ts: token, frames, heartbeats) for the messages of protocol/agent.ts, handed to its
// `AgentEvents` (the control plane), given with the server it listens on, so no message arrives before there
// is one to take it. A bad frame or message closes the connection without touching the cluster state.
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import {
  AGENT_PROTOCOL_VERSION,
  type FromAgent,
  FromAgentSchema,
  type ToAgent,
  type WorkerStatus,
} from '../src/protocol/agent.js';
import { DEFAULT_HEARTBEAT_MS } from '../src/protocol/heartbeat.js';
import type { AgentLink } from './control.js';
import { LinkHub, linkSpec, routeUpgrades, type UpgradeTarget } from './linkHub.js';

export const AGENT_PATH = '/agents';

/** What the hub tells of its agents, each message validated (scheduler/control.ts implements it). */
export interface AgentEvents {
  agentConnected(hello: Extract<FromAgent, { type: 'hello' }>): void;
  agentDisconnected(agentId: string): void;
  workersReported(agentId: string, statuses: readonly WorkerStatus[]): void;
  telemetry(agentId: string, msg: Extract<FromAgent, { type: 'telemetry' }>): void;
  batchResult(agentId: string, msg: Extract<FromAgent, { type: 'result' }>, payload: Buffer): void;
  batchError(agentId: string, msg: Extract<FromAgent, { type: 'batchError' }>): void;
}

const AGENT_LINK = linkSpec<FromAgent>(
  AGENT_PATH,
  'agent',
  'agentId',
  AGENT_PROTOCOL_VERSION,
  FromAgentSchema,
  (h) => h.agentId,
);

export class AgentHub implements AgentLink {
  private readonly hub: LinkHub<FromAgent>;

  /**
   * `token`: the shared token (any agent id; null: none); `agentTokens`: agent id -> its own token,
   * with which only that id may register (scheduler/auth.ts); `heartbeatMs`: the beat (--heartbeat-ms).
   */
  constructor(
    token: string | null,
    private readonly log: Logger,
    agentTokens: ReadonlyMap<string, string> = new Map(),
    readonly heartbeatMs: number = DEFAULT_HEARTBEAT_MS,
  ) {
    this.hub = new LinkHub(AGENT_LINK, token, log, agentTokens, heartbeatMs);
  }

  /**
   * Accepts agents on `server`'s upgrades from now on, telling `events` of them (the control plane,
   * created after the hub because it sends through it); `others`: the hubs of the server's other links.
   */
  attach(server: Server, events: AgentEvents, others: readonly UpgradeTarget[] = []): void {
    this.hub.start({
      hello: (agentId, m) => {
        this.log.info(
          { agentId, gpus: m.gpus.length, workers: m.workers.length, kind: m.workerKind },
          'agent registered',
        );
        events.agentConnected(m);
      },
      message: (agentId, m, payload) => {
        switch (m.type) {
          case 'workers':
            return events.workersReported(agentId, m.workers);
          case 'telemetry':
            return events.telemetry(agentId, m);
          case 'result':
            return events.batchResult(agentId, m, payload);
          case 'batchError':
            return events.batchError(agentId, m);
        }
      },
      closed: (agentId) => events.agentDisconnected(agentId),
    });
    routeUpgrades(server, [this.hub, ...others]);
  }

  send(agentId: string, msg: ToAgent, payload: readonly Uint8Array[] = []): boolean {
    return this.hub.send(agentId, msg, payload);
  }

  close(): void {
    this.hub.close('scheduler shutting down');
  }
}

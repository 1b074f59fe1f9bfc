// The WebSocket hub agents connect to (path /agents on the scheduler's HTTP port). It authenticates
// the upgrade (`Authorization: Bearer <token>`, compared in constant time: the shared token admits
// any agent id, an agent's own token only its id, scheduler/auth.ts), validates every frame
// (frames.ts + the zod schemas of protocol/agent.ts) and hands the messages to its `AgentEvents` (the
// control plane), given with the server it listens on, so no message arrives before there is one to take it.
// The first message must be `hello`; a bad frame or message gets an `error` message and the
// connection is closed (1008), without touching the cluster state. A second connection with the
// same agent id replaces the first. Heartbeats (src/protocol/heartbeat.ts): the hub pings every
// connection each beat and drops one that was silent `LOST_AFTER_BEATS` beats in a row, as a closed one.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer } from 'ws';
import {
  AGENT_PROTOCOL_VERSION,
  describeZodError,
  type FromAgent,
  FromAgentSchema,
  type ToAgent,
  type WorkerStatus,
} from '../src/protocol/agent.js';
import { decodeFrame, encodeFrame, FrameError, framePieces } from '../src/protocol/frames.js';
import { DEFAULT_HEARTBEAT_MS, Silence } from '../src/protocol/heartbeat.js';
import { agentIdentity } from './auth.js';
import type { AgentLink } from './control.js';

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

export class AgentHub implements AgentLink {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 30 });
  private readonly sockets = new Map<string, WebSocket>();
  /** Every open connection (registered or not) and how long it has been silent. */
  private readonly silence = new Map<WebSocket, { silence: Silence; agentId: () => string | null }>();
  private beats: NodeJS.Timeout | null = null;

  /**
   * `token`: the shared token (any agent id; null: none); `agentTokens`: agent id -> its own token,
   * with which only that id may register (scheduler/auth.ts); `heartbeatMs`: the beat (--heartbeat-ms).
   */
  constructor(
    private readonly token: string | null,
    private readonly log: Logger,
    private readonly agentTokens: ReadonlyMap<string, string> = new Map(),
    readonly heartbeatMs: number = DEFAULT_HEARTBEAT_MS,
  ) {}

  /**
   * Accepts agents on `server`'s upgrades from now on, telling `events` of them (the control plane,
   * created after the hub because it sends through it).
   */
  attach(server: Server, events: AgentEvents): void {
    this.beats ??= setInterval(() => this.beat(), this.heartbeatMs).unref();
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== AGENT_PATH) {
        socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
        return;
      }
      const identity = agentIdentity(req.headers.authorization, this.token, this.agentTokens);
      if (!identity) {
        this.log.warn({ remote: req.socket.remoteAddress }, 'agent connection refused: bad or missing token');
        socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) =>
        this.accept(ws, 'agentId' in identity ? identity.agentId : null, events),
      );
    });
  }

  send(agentId: string, msg: ToAgent, payload: readonly Uint8Array[] = []): boolean {
    const ws = this.sockets.get(agentId);
    if (ws?.readyState !== WebSocket.OPEN) return false;
    // One WebSocket message in fragments (head, then each payload part): the tensors are not copied
    // into one buffer first. The fragments go out back to back, so nothing interleaves.
    const pieces = framePieces(msg, payload);
    pieces.forEach((p, i) => ws.send(p, { binary: true, fin: i === pieces.length - 1 }));
    return true;
  }

  close(): void {
    if (this.beats) clearInterval(this.beats);
    for (const ws of this.sockets.values()) ws.close(1001, 'scheduler shutting down');
    this.wss.close();
  }

  /** One beat: a connection silent too long is dropped (its `close` tells the control plane); the others are pinged. */
  private beat(): void {
    for (const [ws, s] of this.silence) {
      if (!s.silence.beat()) {
        if (ws.readyState === WebSocket.OPEN) ws.ping();
        continue;
      }
      this.silence.delete(ws);
      this.log.warn(
        { agentId: s.agentId(), silentMs: s.silence.missedBeats * this.heartbeatMs },
        'agent unreachable: no heartbeat answered; dropping its connection, its tasks go to other workers',
      );
      ws.terminate();
    }
  }

  /** `bound`: the only agent id this connection's token allows (null: any). */
  private accept(ws: WebSocket, bound: string | null, control: AgentEvents): void {
    let agentId: string | null = null;
    const silence = new Silence();
    this.silence.set(ws, { silence, agentId: () => agentId });
    ws.on('pong', () => silence.heard());
    const refuse = (why: string) => {
      this.log.warn({ agentId, err: why }, 'agent message refused; closing its connection');
      if (ws.readyState === WebSocket.OPEN)
        ws.send(encodeFrame({ v: AGENT_PROTOCOL_VERSION, type: 'error', message: why }));
      ws.close(1008, why.slice(0, 120));
    };
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      silence.heard();
      if (!isBinary) return refuse('messages must be binary frames');
      let frame;
      try {
        frame = decodeFrame(data);
      } catch (e) {
        return refuse(e instanceof FrameError ? e.message : String(e));
      }
      const parsed = FromAgentSchema.safeParse(frame.header);
      if (!parsed.success) return refuse(`bad message: ${describeZodError(parsed.error)}`);
      const m = parsed.data;
      if (agentId === null) {
        if (m.type !== 'hello') return refuse(`the first message must be 'hello', got '${m.type}'`);
        if (bound !== null && m.agentId !== bound)
          return refuse(`this token is agent '${bound}'s; it cannot register as '${m.agentId.slice(0, 64)}'`);
        agentId = m.agentId;
        const old = this.sockets.get(agentId);
        this.sockets.set(agentId, ws);
        if (old && old !== ws) old.close(4000, 'replaced by a new connection of the same agent');
        ws.send(encodeFrame({ v: AGENT_PROTOCOL_VERSION, type: 'welcome', heartbeatMs: this.heartbeatMs }));
        this.log.info(
          { agentId, gpus: m.gpus.length, workers: m.workers.length, kind: m.workerKind },
          'agent registered',
        );
        control.agentConnected(m);
        return;
      }
      switch (m.type) {
        case 'hello':
          return refuse('hello sent twice');
        case 'workers':
          return control.workersReported(agentId, m.workers);
        case 'telemetry':
          return control.telemetry(agentId, m);
        case 'result':
          return control.batchResult(agentId, m, frame.payload);
        case 'batchError':
          return control.batchError(agentId, m);
      }
    });
    ws.on('close', () => {
      this.silence.delete(ws);
      if (agentId !== null && this.sockets.get(agentId) === ws) {
        this.sockets.delete(agentId);
        control.agentDisconnected(agentId);
      }
    });
    ws.on('error', (e) => this.log.warn({ agentId, err: e.message }, 'agent connection error'));
  }
}

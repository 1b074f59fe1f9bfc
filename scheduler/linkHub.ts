// A WebSocket hub of authenticated links on the scheduler's HTTP port: the agents' (scheduler/hub.ts, path
// /agents) and the front doors' (scheduler/doorDesk.ts, path /doors). Each link's upgrade is authenticated
// (`Authorization: Bearer <token>`, compared in constant time: the shared token admits any id, a peer's own token
// only its id, scheduler/auth.ts), every frame validated (frames.ts + the link's zod schema) and handed to the
// hub's `LinkEvents`. The first message must be `hello`; a bad frame or message gets an `error` message and the
// connection is closed (1008). A second connection with the same id replaces the first. Heartbeats
// (src/protocol/heartbeat.ts): the hub pings every connection each beat and drops one that was silent
// `LOST_AFTER_BEATS` beats in a row, as a closed one.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer } from 'ws';
import type { z } from 'zod';
import { describeZodError } from '../src/protocol/agent.js';
import { decodeFrame, encodeFrame, FrameError, framePieces } from '../src/protocol/frames.js';
import { DEFAULT_HEARTBEAT_MS, Silence } from '../src/protocol/heartbeat.js';
import { agentIdentity } from './auth.js';

/** What a kind of link is: its path, its peers' name in logs, its protocol version and messages. */
export interface LinkSpec<In extends { type: string }> {
  readonly path: string;
  readonly what: string;
  /** The id's field in the hub's log lines (`agentId`, `doorId`). */
  readonly idField: string;
  readonly version: number;
  readonly schema: z.ZodType<In>;
  /** The id a `hello` registers. */
  readonly idOf: (hello: Extract<In, { type: 'hello' }>) => string;
}

export function linkSpec<In extends { type: string }>(
  path: string,
  what: string,
  idField: string,
  version: number,
  schema: z.ZodType<In>,
  idOf: LinkSpec<In>['idOf'],
): LinkSpec<In> {
  return { path, what, idField, version, schema, idOf };
}

/** What the hub tells of its peers, each message validated. */
export interface LinkEvents<In extends { type: string }> {
  hello(id: string, m: Extract<In, { type: 'hello' }>): void;
  message(id: string, m: Exclude<In, { type: 'hello' }>, payload: Buffer): void;
  closed(id: string): void;
}

export class LinkHub<In extends { type: string }> {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 30 });
  private readonly sockets = new Map<string, WebSocket>();
  /** Every open connection (registered or not) and how long it has been silent. */
  private readonly silence = new Map<WebSocket, { silence: Silence; id: () => string | null }>();
  private beats: NodeJS.Timeout | null = null;
  private events: LinkEvents<In> | null = null;

  /**
   * `token`: the shared token (any id; null: none); `tokens`: id -> its own token, with which only that id may
   * register (scheduler/auth.ts); `heartbeatMs`: the beat (--heartbeat-ms).
   */
  constructor(
    readonly spec: LinkSpec<In>,
    private readonly token: string | null,
    private readonly log: Logger,
    private readonly tokens: ReadonlyMap<string, string> = new Map(),
    readonly heartbeatMs: number = DEFAULT_HEARTBEAT_MS,
  ) {}

  /** Takes peers from now on, telling `events` of them. */
  start(events: LinkEvents<In>): void {
    this.events = events;
    this.beats ??= setInterval(() => this.beat(), this.heartbeatMs).unref();
  }

  /** The ids registered now. */
  ids(): string[] {
    return [...this.sockets.keys()];
  }

  /** An upgrade to this hub's path: authenticated, then accepted. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const identity = agentIdentity(req.headers.authorization, this.token, this.tokens);
    if (!identity || !this.events) {
      this.log.warn({ remote: req.socket.remoteAddress }, `${this.spec.what} connection refused: bad or missing token`);
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const events = this.events;
    this.wss.handleUpgrade(req, socket, head, (ws) =>
      this.accept(ws, 'agentId' in identity ? identity.agentId : null, events),
    );
  }

  send(id: string, msg: object, payload: readonly Uint8Array[] = []): boolean {
    const ws = this.sockets.get(id);
    if (ws?.readyState !== WebSocket.OPEN) return false;
    // One WebSocket message in fragments (head, then each payload part): the tensors are not copied
    // into one buffer first. The fragments go out back to back, so nothing interleaves.
    const pieces = framePieces(msg, payload);
    pieces.forEach((p, i) => ws.send(p, { binary: true, fin: i === pieces.length - 1 }));
    return true;
  }

  close(why: string): void {
    if (this.beats) clearInterval(this.beats);
    for (const ws of this.sockets.values()) ws.close(1001, why);
    this.wss.close();
  }

  /** One beat: a connection silent too long is dropped (its `close` tells the events); the others are pinged. */
  private beat(): void {
    for (const [ws, s] of this.silence) {
      if (!s.silence.beat()) {
        if (ws.readyState === WebSocket.OPEN) ws.ping();
        continue;
      }
      this.silence.delete(ws);
      this.log.warn(
        { [this.spec.idField]: s.id(), silentMs: s.silence.missedBeats * this.heartbeatMs },
        `${this.spec.what} unreachable: no heartbeat answered; dropping its connection`,
      );
      ws.terminate();
    }
  }

  /** `bound`: the only id this connection's token allows (null: any). */
  private accept(ws: WebSocket, bound: string | null, events: LinkEvents<In>): void {
    const { what, version } = this.spec;
    let id: string | null = null;
    const silence = new Silence();
    this.silence.set(ws, { silence, id: () => id });
    ws.on('pong', () => silence.heard());
    const refuse = (why: string) => {
      this.log.warn({ [this.spec.idField]: id, err: why }, `${what} message refused; closing its connection`);
      if (ws.readyState === WebSocket.OPEN) ws.send(encodeFrame({ v: version, type: 'error', message: why }));
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
      const parsed = this.spec.schema.safeParse(frame.header);
      if (!parsed.success) return refuse(`bad message: ${describeZodError(parsed.error)}`);
      const m = parsed.data;
      if (id === null) {
        if (m.type !== 'hello') return refuse(`the first message must be 'hello', got '${m.type}'`);
        const hello = m as Extract<In, { type: 'hello' }>;
        const named = this.spec.idOf(hello);
        if (bound !== null && named !== bound)
          return refuse(`this token is ${what} '${bound}'s; it cannot register as '${named.slice(0, 64)}'`);
        id = named;
        const old = this.sockets.get(id);
        this.sockets.set(id, ws);
        if (old && old !== ws) old.close(4000, `replaced by a new connection of the same ${what}`);
        ws.send(encodeFrame({ v: version, type: 'welcome', heartbeatMs: this.heartbeatMs }));
        events.hello(id, hello);
        return;
      }
      if (m.type === 'hello') return refuse('hello sent twice');
      events.message(id, m as Exclude<In, { type: 'hello' }>, frame.payload);
    });
    ws.on('close', () => {
      this.silence.delete(ws);
      if (id !== null && this.sockets.get(id) === ws) {
        this.sockets.delete(id);
        events.closed(id);
      }
    });
    ws.on('error', (e) => this.log.warn({ [this.spec.idField]: id, err: e.message }, `${what} connection error`));
  }
}

/** A hub as the server's upgrade listener sees it. */
export interface UpgradeTarget {
  readonly spec: { readonly path: string };
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/** Routes `server`'s WebSocket upgrades to the hub of their path; any other path is 404. */
export function routeUpgrades(server: Server, hubs: readonly UpgradeTarget[]): void {
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? '').split('?')[0];
    const hub = hubs.find((h) => h.spec.path === path);
    if (hub) return hub.upgrade(req, socket, head);
    socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
  });
}

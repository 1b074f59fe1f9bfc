// The client end of a link to the scheduler's hub (scheduler/linkHub.ts): the agent's (agent/agent.ts) and a
// front door's (scheduler/frontDoor.ts). It connects with its token (and TLS settings, agent/connect.ts),
// says `hello` on each connection, validates each message against its schema (a bad frame or message closes
// the connection), watches the scheduler's heartbeat once `welcome` gives the beat, and reconnects with
// exponential backoff whenever the connection closes or goes silent.
import type { Logger } from 'pino';
import WebSocket from 'ws';
import type { z } from 'zod';
import { describeZodError } from '../src/protocol/agent.js';
import { decodeFrame, encodeFrame } from '../src/protocol/frames.js';
import { type AgentTls, HANDSHAKE_TIMEOUT_MS, upgradeRefusal, watchScheduler } from './connect.js';

export interface LinkClientOptions<In extends { type: string }> {
  readonly url: string;
  readonly token: string;
  readonly tls?: AgentTls;
  readonly log: Logger;
  readonly reconnectMinMs?: number;
  readonly reconnectMaxMs?: number;
  readonly schema: z.ZodType<In>;
  /** The `hello` to send on each new connection. */
  readonly hello: () => object;
  /** Each validated message but `welcome`, with its frame's payload. */
  readonly message: (m: In, payload: Buffer) => void;
  readonly connected?: () => void;
  readonly disconnected?: () => void;
}

export class LinkClient<In extends { type: string }> {
  private ws: WebSocket | null = null;
  private closed = false;
  private backoffMs: number;
  private reconnectTimer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: LinkClientOptions<In>) {
    this.backoffMs = opts.reconnectMinMs ?? 200;
  }

  start(): void {
    this.connect();
  }

  stop(): void {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.ws?.close();
  }

  /** Sends a message when connected; false when not. */
  send(msg: object, payload?: Uint8Array): boolean {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(encodeFrame(msg, payload));
    return true;
  }

  private connect(): void {
    if (this.closed) return;
    const { url, log } = this.opts;
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${this.opts.token}` },
      maxPayload: 1 << 30,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      ...this.opts.tls,
    });
    this.ws = ws;
    ws.binaryType = 'nodebuffer';
    ws.on('open', () => {
      this.backoffMs = this.opts.reconnectMinMs ?? 200;
      log.info({ url }, 'connected to the scheduler');
      this.send(this.opts.hello());
      this.opts.connected?.();
    });
    ws.on('message', (data: Buffer) => this.onMessage(ws, data));
    // The refusal hook: a non-101 answer must end this attempt (ws does not abort it when this listener
    // exists), so that `close` fires and the backoff below retries; agent/connect.ts names the reason.
    ws.on('unexpected-response', (_req, res) => {
      const refusal = upgradeRefusal(res.statusCode);
      log[refusal.level]({ status: res.statusCode, url }, refusal.reason);
      ws.terminate();
    });
    ws.on('error', (e) => log.warn({ err: e.message }, 'scheduler connection error'));
    ws.on('close', () => {
      if (this.ws === ws) this.ws = null;
      this.opts.disconnected?.();
      if (this.closed) return;
      const delay = this.backoffMs;
      this.backoffMs = Math.min(this.opts.reconnectMaxMs ?? 5000, this.backoffMs * 2);
      log.info({ retryInMs: delay }, 'scheduler connection closed; reconnecting');
      this.reconnectTimer = setTimeout(() => this.connect(), delay);
    });
  }

  private onMessage(ws: WebSocket, data: Buffer): void {
    const { log } = this.opts;
    let frame;
    try {
      frame = decodeFrame(data);
    } catch (e) {
      log.error({ err: (e as Error).message }, 'bad frame from the scheduler; closing');
      ws.close(1002, 'bad frame');
      return;
    }
    const parsed = this.opts.schema.safeParse(frame.header);
    if (!parsed.success) {
      log.error({ err: describeZodError(parsed.error) }, 'bad message from the scheduler; closing');
      ws.close(1002, 'bad message');
      return;
    }
    const m = parsed.data as In & { heartbeatMs?: number };
    if (m.type === 'welcome')
      return watchScheduler(ws, m.heartbeatMs!, (silentMs) => {
        log.warn({ silentMs }, 'the scheduler is silent: no heartbeat; dropping the connection');
        ws.terminate();
      });
    this.opts.message(m, frame.payload);
  }
}

// The scheduler's direct connections to workers' data sockets (the direct path, docs/serving.md "The
// path of a batch"): batches go from the scheduler to the worker and answers come back on the same
// connection, with no agent in between. One connection per worker, opened when its agent reports it
// ready with a data endpoint (a Unix socket on this host, or TCP), authenticated by the worker's secret
// in the first frame (`attach`). It wraps one external effect (node:net) and decides nothing: the
// control plane (scheduler/control.ts) says which connections to keep and what to send.
// Contract: `open` is idempotent per key; `send` returns false unless the connection is established
// (the caller then sends through the agent), and writes the frame as pieces (head, then each task's
// input) in one writev, without copying the payload into one buffer; `events.frame` gets each whole
// frame the worker sends; `events.closed` is called once when the connection ends, however it ends
// (the worker exited, an error, `close`), after which the key is free to be opened again.
import { connect, type Socket } from 'node:net';
import type { DataEndpoint } from '../src/protocol/agent.js';
import { FrameDecoder, frameHead } from '../src/protocol/frames.js';
import { parseDataAddress, WORKER_PROTOCOL_VERSION } from '../src/protocol/worker.js';

export interface DirectEvents {
  frame(header: unknown, payload: Buffer): void;
  closed(why: string): void;
}

/** The control plane's port to the direct path (a fake in unit tests, `DirectLinks` in the service). */
export interface DirectLink {
  open(key: string, endpoint: DataEndpoint, events: DirectEvents): void;
  /** Whether a connection under `key` is open or opening. */
  has(key: string): boolean;
  send(key: string, header: object, parts: readonly Uint8Array[]): boolean;
  close(key: string): void;
}

interface Conn {
  readonly socket: Socket;
  readonly address: string;
  connected: boolean;
}

export class DirectLinks implements DirectLink {
  private readonly conns = new Map<string, Conn>();
  /**
   * Addresses that could not be reached at all (an agent on another host reporting a Unix socket of
   * its own host): not tried again, so their workers' batches go through the agent without a warning
   * per status report.
   */
  private readonly unreachable = new Set<string>();

  constructor(private readonly log: { warn(o: object, msg: string): void; debug(o: object, msg: string): void }) {}

  open(key: string, endpoint: DataEndpoint, events: DirectEvents): void {
    const had = this.conns.get(key);
    if ((had && had.address === endpoint.address) || this.unreachable.has(endpoint.address)) return;
    if (had) had.socket.destroy();
    const a = parseDataAddress(endpoint.address);
    if (typeof a === 'string') {
      this.log.warn({ key, err: a }, 'worker data endpoint is not an address; its batches go through the agent');
      return;
    }
    const socket = a.kind === 'unix' ? connect({ path: a.path }) : connect({ host: a.host, port: a.port, noDelay: true });
    const c: Conn = { socket, address: endpoint.address, connected: false };
    this.conns.set(key, c);
    const decoder = new FrameDecoder();
    let why = 'closed';
    socket.on('connect', () => {
      socket.write(frameHead({ v: WORKER_PROTOCOL_VERSION, type: 'attach', secret: endpoint.secret }, 0));
      c.connected = true;
      this.log.debug({ key, address: endpoint.address }, 'direct connection to a worker open');
    });
    socket.on('data', (chunk: Buffer) => {
      let frames;
      try {
        frames = decoder.push(chunk);
      } catch (e) {
        why = `the worker's data socket is not a frame stream: ${(e as Error).message}`;
        socket.destroy();
        return;
      }
      for (const f of frames) events.frame(f.header, f.payload);
    });
    socket.on('error', (e) => {
      why = e.message;
    });
    socket.on('close', () => {
      if (this.conns.get(key) === c) this.conns.delete(key);
      if (!c.connected) {
        this.unreachable.add(endpoint.address);
        this.log.warn({ key, address: endpoint.address, err: why }, 'cannot reach a worker data socket; its batches go through the agent');
      }
      events.closed(why);
    });
  }

  has(key: string): boolean {
    return this.conns.has(key);
  }

  send(key: string, header: object, parts: readonly Uint8Array[]): boolean {
    const c = this.conns.get(key);
    if (!c?.connected || c.socket.destroyed) return false;
    const total = parts.reduce((n, p) => n + p.length, 0);
    c.socket.cork();
    c.socket.write(frameHead(header, total));
    for (const p of parts) c.socket.write(p);
    c.socket.uncork();
    return true;
  }

  close(key: string): void {
    this.conns.get(key)?.socket.end();
  }

  closeAll(): void {
    for (const c of this.conns.values()) c.socket.destroy();
  }
}

// The scheduler's direct connections to workers' data sockets (the direct path, docs/serving.md "The
// path of a batch"): batches go from the scheduler to the worker and answers come back on the same
// connection, with no agent in between. One connection per worker, opened when its agent reports it
// ready with a data endpoint (a Unix socket on this host, or TCP), authenticated by the worker's secret
// in the first frame (`attach`). It wraps one external effect (node:net) and decides nothing: the
// control plane (scheduler/control.ts) says which connections to keep and what to send.
//
// The sockets live on a thread of their own (workerLinkThread.ts) when the compiled thread is there:
// a large batch crosses a Unix socket one socket buffer at a time, one event-loop turn each, and on
// the scheduler's loop, busy reading HTTP bodies, each turn would wait behind them (docs/serving.md,
// "The link thread"). Request bodies are read into shared memory (bodyReader.ts), so a batch's inputs reach
// the thread without a copy. From sources (no compiled thread) the sockets run on the event loop.
// Contract: `open` is idempotent per key; `send` returns false unless the connection is established
// (the caller then sends through the agent), and writes the frame as pieces (head, then each task's
// input) in one writev, without copying the payload into one buffer; `events.frame` gets each whole
// frame the worker sends; `events.closed` is called once when the connection ends, however it ends
// (the worker exited, an error, `close`, the link thread stopped), after which the key is free to be
// opened again. A batch sent in the moment before its connection's end is known here is answered by
// that end (the control plane fails or requeues the worker's batches in flight), as one whose worker
// died after reading it.
// Shared memory (docs/worker-protocol.md "Shared memory"): with the scheduler's region (shmRegion.ts),
// `attach` on a Unix connection names it; once the worker answers `attached` with `shm: true`, `send`
// puts each part that lies in the region into the frame's `slots` as [offset, length] instead of its
// bytes (the others go as bytes: mixed batches). Until then, and for workers that cannot map it, bytes.
import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { DataEndpoint } from '../src/protocol/agent.js';
import { FrameDecoder, frameHead } from '../src/protocol/frames.js';
import type { SampleSlot } from '../src/protocol/shm.js';
import {
  type DataAddress,
  FromWorkerSchema,
  parseDataAddress,
  WORKER_PROTOCOL_VERSION,
} from '../src/protocol/worker.js';
import type { ShmRegion } from './shmRegion.js';

/** The region an `attach` names. */
export interface AttachShm {
  readonly path: string;
  readonly bytes: number;
}

export interface DirectEvents {
  frame(header: unknown, payload: Buffer): void;
  closed(why: string): void;
}

/** The control plane's port to the direct path (a fake in unit tests, `DirectLinks` in the service). */
export interface DirectLink {
  open(key: string, endpoint: DataEndpoint, events: DirectEvents): void;
  /** Whether a connection under `key` is open or opening. */
  has(key: string): boolean;
  /** `bySlot` false: every part goes inline (shared-memory slots are for a one-input model's samples). */
  send(key: string, header: object, parts: readonly Uint8Array[], bySlot?: boolean): boolean;
  /** `abort`: destroy the connection at once instead of ending it once what was written is sent. */
  close(key: string, abort?: boolean): void;
}

/** What the sockets report, by connection id (one per `open`). */
export interface SocketEvents {
  connected(cid: number): void;
  frame(cid: number, header: unknown, payload: Uint8Array): void;
  /** Once per connection; `connected`: whether it had connected (else the address was unreachable). */
  closed(cid: number, why: string, connected: boolean): void;
}

/** The sockets themselves, on whichever event loop runs them (the link thread's, or the scheduler's). */
export class SocketLinks {
  private readonly sockets = new Map<number, Socket>();

  constructor(private readonly events: SocketEvents) {}

  open(cid: number, a: DataAddress, secret: string, shm?: AttachShm): void {
    const socket =
      a.kind === 'unix' ? connect({ path: a.path }) : connect({ host: a.host, port: a.port, noDelay: true });
    this.sockets.set(cid, socket);
    const decoder = new FrameDecoder();
    let why = 'closed';
    let connected = false;
    socket.on('connect', () => {
      socket.write(frameHead({ v: WORKER_PROTOCOL_VERSION, type: 'attach', secret, ...(shm ? { shm } : {}) }, 0));
      connected = true;
      this.events.connected(cid);
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
      for (const f of frames) this.events.frame(cid, f.header, f.payload);
    });
    socket.on('error', (e) => {
      why = e.message;
    });
    socket.on('close', () => {
      this.sockets.delete(cid);
      this.events.closed(cid, why, connected);
    });
  }

  /** Writes a frame (its head, then its payload's pieces) in one writev; nothing once the socket ended. */
  send(cid: number, head: Uint8Array, parts: readonly Uint8Array[]): void {
    const s = this.sockets.get(cid);
    if (!s || s.destroyed) return;
    s.cork();
    s.write(head);
    for (const p of parts) s.write(p);
    s.uncork();
  }

  /** Ends the connection once what was written is sent. */
  close(cid: number): void {
    this.sockets.get(cid)?.end();
  }

  destroy(cid: number): void {
    this.sockets.get(cid)?.destroy();
  }

  /** Destroys every connection; nothing is left to keep the process alive. */
  stop(): Promise<void> {
    for (const s of this.sockets.values()) s.destroy();
    return Promise.resolve();
  }
}

/** Messages to the link thread, and from it. */
export type ToLinkThread =
  | { op: 'open'; cid: number; address: DataAddress; secret: string; shm?: AttachShm }
  | { op: 'send'; cid: number; head: Uint8Array; parts: Uint8Array[] }
  | { op: 'close' | 'destroy'; cid: number };
export type FromLinkThread =
  | { ev: 'connected'; cid: number }
  | { ev: 'frame'; cid: number; header: unknown; payload: Uint8Array }
  | { ev: 'closed'; cid: number; why: string; connected: boolean };

type Sockets = Pick<SocketLinks, 'open' | 'send' | 'close' | 'destroy' | 'stop'>;

/**
 * A part as the thread gets it: a view of shared memory goes as it is (the thread reads the same
 * bytes); any other is copied to a buffer of its own size first (a view of a large buffer, a shared
 * memory region's, would otherwise be cloned whole).
 */
function forThread(p: Uint8Array): Uint8Array {
  return p.buffer instanceof SharedArrayBuffer || p.byteLength === p.buffer.byteLength ? p : new Uint8Array(p);
}

/** SocketLinks on the link thread (workerLinkThread.ts), started on first use and again after it stops. */
class ThreadSockets implements Sockets {
  private worker: Worker | null = null;

  constructor(
    private readonly file: string,
    private readonly events: SocketEvents & { threadStopped(why: string, failed: boolean): void },
  ) {}

  private post(m: ToLinkThread): void {
    if (!this.worker) {
      // No flags of the scheduler's own command line (an --input-type, say, stops a thread at start).
      const w = new Worker(this.file, { execArgv: [] });
      w.unref();
      w.on('message', (e: FromLinkThread) => {
        if (e.ev === 'connected') this.events.connected(e.cid);
        else if (e.ev === 'frame') this.events.frame(e.cid, e.header, e.payload);
        else this.events.closed(e.cid, e.why, e.connected);
      });
      let why = 'the link thread exited';
      let failed = false;
      w.on('error', (err) => {
        why = `the link thread failed: ${err.message}`;
        failed = true;
      });
      w.on('exit', () => {
        if (this.worker !== w) return; // stopped
        this.worker = null;
        this.events.threadStopped(why, failed);
      });
      this.worker = w;
    }
    this.worker.postMessage(m);
  }

  open(cid: number, address: DataAddress, secret: string, shm?: AttachShm): void {
    this.post({ op: 'open', cid, address, secret, ...(shm ? { shm } : {}) });
  }

  send(cid: number, head: Uint8Array, parts: readonly Uint8Array[]): void {
    this.post({ op: 'send', cid, head, parts: parts.map(forThread) });
  }

  close(cid: number): void {
    if (this.worker) this.post({ op: 'close', cid });
  }

  destroy(cid: number): void {
    if (this.worker) this.post({ op: 'destroy', cid });
  }

  /** Ends the thread, and with it every connection (a thread left running keeps the process alive). */
  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }
}

interface Conn {
  readonly cid: number;
  readonly key: string;
  readonly address: string;
  readonly events: DirectEvents;
  connected: boolean;
  /** The worker mapped the region (answered `attached` with `shm: true`): batches may carry slots. */
  shm: boolean;
}

/** The compiled link thread, when there is one (not when running from sources). */
const THREAD_FILE = fileURLToPath(new URL('./workerLinkThread.js', import.meta.url));

export class DirectLinks implements DirectLink {
  private readonly byKey = new Map<string, Conn>();
  private readonly byCid = new Map<number, Conn>();
  private nextCid = 1;
  /**
   * Addresses that could not be reached at all (an agent on another host reporting a Unix socket of
   * its own host): not tried again, so their workers' batches go through the agent without a warning
   * per status report.
   */
  private readonly unreachable = new Set<string>();
  private sockets: Sockets;
  private readonly region: ShmRegion | null;
  private readonly sent: (shm: number, inline: number) => void;

  constructor(
    private readonly log: {
      warn(o: object, msg: string): void;
      info(o: object, msg: string): void;
      debug(o: object, msg: string): void;
    },
    /**
     * `threadFile`: the compiled link thread (default: the one beside this module, when built); null:
     * none. `region`: the shared-memory region, offered to workers on Unix sockets. `sent`: told of
     * each batch sent, how many samples went by descriptor and how many as bytes (metrics).
     */
    opts: { threadFile?: string | null; region?: ShmRegion | null; sent?: (shm: number, inline: number) => void } = {},
  ) {
    this.region = opts.region ?? null;
    this.sent = opts.sent ?? (() => undefined);
    const events: SocketEvents = {
      connected: (cid) => {
        const c = this.byCid.get(cid);
        if (!c) return;
        c.connected = true;
        this.log.debug({ key: c.key, address: c.address }, 'direct connection to a worker open');
      },
      frame: (cid, header, payload) => {
        const c = this.byCid.get(cid);
        if (!c) return;
        if ((header as { type?: unknown } | null)?.type === 'attached') return this.attached(c, header);
        c.events.frame(header, Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength));
      },
      closed: (cid, why, connected) => this.ended(cid, why, connected),
    };
    const file = opts.threadFile === undefined ? THREAD_FILE : opts.threadFile;
    const threaded = file !== null && existsSync(file);
    // A thread that fails leaves its connections ended (their workers' batches go through the agent
    // until they are opened again), and the sockets run on this event loop from then on.
    const threadStopped = (why: string, failed: boolean) => {
      for (const cid of [...this.byCid.keys()]) this.ended(cid, why, true);
      if (!failed) return;
      this.log.warn({ err: why }, "the direct path's link thread failed; its sockets run on the event loop");
      this.sockets = new SocketLinks(events);
    };
    this.sockets = threaded ? new ThreadSockets(file, { ...events, threadStopped }) : new SocketLinks(events);
  }

  /**
   * Whether some open connection's worker mapped the region: while none has (workers over TCP, none
   * able to map it), bodies are better read into shared buffers, which the link thread sends without
   * a copy, than into slots, which it would copy (bodyReader.ts asks).
   */
  get mapsRegion(): boolean {
    for (const c of this.byKey.values()) if (c.shm) return true;
    return false;
  }

  /** Whether the sockets run on the link thread (else on this event loop). */
  get threaded(): boolean {
    return this.sockets instanceof ThreadSockets;
  }

  /** A worker's answer to an attach that named the region. */
  private attached(c: Conn, header: unknown): void {
    const m = FromWorkerSchema.safeParse(header);
    if (!m.success || m.data.type !== 'attached') {
      this.log.warn({ key: c.key }, 'bad attached message on a worker data socket; its batches carry their bytes');
      return;
    }
    c.shm = m.data.shm && this.region !== null;
    if (c.shm) this.log.debug({ key: c.key }, 'worker mapped the shared-memory region: batches by descriptor');
    else
      this.log.info(
        { key: c.key, why: m.data.message ?? '' },
        'worker cannot map the shared-memory region: its batches carry their bytes',
      );
  }

  private ended(cid: number, why: string, connected: boolean): void {
    const c = this.byCid.get(cid);
    if (!c) return;
    this.byCid.delete(cid);
    if (this.byKey.get(c.key) === c) this.byKey.delete(c.key);
    if (!connected) {
      this.unreachable.add(c.address);
      this.log.warn(
        { key: c.key, address: c.address, err: why },
        'cannot reach a worker data socket; its batches go through the agent',
      );
    }
    c.events.closed(why);
  }

  open(key: string, endpoint: DataEndpoint, events: DirectEvents): void {
    const had = this.byKey.get(key);
    if ((had && had.address === endpoint.address) || this.unreachable.has(endpoint.address)) return;
    if (had) this.sockets.destroy(had.cid);
    const a = parseDataAddress(endpoint.address);
    if (typeof a === 'string') {
      this.log.warn({ key, err: a }, 'worker data endpoint is not an address; its batches go through the agent');
      return;
    }
    const c: Conn = { cid: this.nextCid++, key, address: endpoint.address, events, connected: false, shm: false };
    this.byKey.set(key, c);
    this.byCid.set(c.cid, c);
    // Only a worker on this host can map the region: one reached over a Unix socket.
    this.sockets.open(
      c.cid,
      a,
      endpoint.secret,
      this.region && a.kind === 'unix' ? { path: this.region.path, bytes: this.region.bytes } : undefined,
    );
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  send(key: string, header: object, parts: readonly Uint8Array[], bySlot = true): boolean {
    const c = this.byKey.get(key);
    if (!c?.connected) return false;
    const region = c.shm && bySlot ? this.region : null;
    const slots: SampleSlot[] | null =
      region && parts.some((p) => region.holds(p))
        ? parts.map((p) => (region.holds(p) ? [p.byteOffset, p.byteLength] : null))
        : null;
    const inline = slots ? parts.filter((_, i) => slots[i] === null) : parts;
    this.sockets.send(
      c.cid,
      frameHead(
        slots ? { ...header, slots } : header,
        inline.reduce((n, p) => n + p.length, 0),
      ),
      inline,
    );
    this.sent(parts.length - inline.length, inline.length);
    return true;
  }

  close(key: string, abort = false): void {
    const c = this.byKey.get(key);
    if (c && abort) this.sockets.destroy(c.cid);
    else if (c) this.sockets.close(c.cid);
  }

  /**
   * Ends every connection and the link thread, for the service's shutdown (the thread would keep the
   * process alive); what the connections report after this is not passed on.
   */
  async stop(): Promise<void> {
    this.byKey.clear();
    this.byCid.clear();
    await this.sockets.stop();
  }
}

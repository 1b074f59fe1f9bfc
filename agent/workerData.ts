// A Node worker's data socket (the direct path, docs/worker-protocol.md "The data socket"): the
// scheduler connects to it, sends `attach` with the worker's secret, then batch frames; the worker
// answers each batch on the connection it came on. Used by the Node workers (agent/nodeWorker.ts); a
// worker in another language implements the same (native/torch_worker.py).
// Contract: `listenData` resolves once listening, with the address to report in `ready`; every whole
// frame after a good `attach` goes to `onFrame` with a `reply` that writes a frame back (prefix and
// header, then the payload, corked into one writev: the payload is not copied into one buffer).
// A connection whose first frame is not an `attach` with the secret is closed without reading on.
// An `attach` naming the scheduler's shared-memory region (docs/worker-protocol.md "Shared memory") is
// answered `attached`: `mapRegion` maps it (or says why it cannot; absent: the worker cannot), and the
// connection's frames go to `onFrame` with that mapping (null: their batches carry their bytes).
import { rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { type FrameAlloc, FrameDecoder, frameHead } from '../src/protocol/frames.js';
import {
  type DataAddress,
  formatDataAddress,
  type FromWorker,
  ToWorkerSchema,
  WORKER_PROTOCOL_VERSION,
} from '../src/protocol/worker.js';

export type Reply = (msg: FromWorker, payload?: Uint8Array) => void;

/** A whole frame from a data connection, with the region that connection's worker mapped (or null). */
export type OnDataFrame = (
  header: unknown,
  payload: Buffer,
  receivedAtMs: number,
  reply: Reply,
  region: Buffer | null,
) => void;

/** Maps the region an `attach` names, read-only: the mapping, or why not. */
export type MapRegion = (shm: { readonly path: string; readonly bytes: number }) => Buffer | string;

export interface DataServer {
  /** The address it listens on, as `ready` reports it (a TCP port 0 resolved to the real port). */
  readonly address: string;
  /** Stops accepting connections (those open stay, so batches received are still answered). */
  close(): void;
}

/** Wall-clock ms since the Unix epoch, fractional: comparable across processes of one host (per-hop tracing). */
export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Writes one frame to a socket as pieces (no copy of the payload), in one writev. */
export function writeFrame(socket: Socket, msg: object, payload?: Uint8Array): void {
  if (socket.destroyed) return;
  socket.cork();
  socket.write(frameHead(msg, payload?.length ?? 0));
  if (payload && payload.length > 0) socket.write(payload);
  socket.uncork();
}

/** `alloc`: where a frame that spans chunks is read into (a worker's BufferPool; default a fresh buffer). */
export async function listenData(
  addr: DataAddress,
  secret: string,
  onFrame: OnDataFrame,
  log: (line: string) => void,
  alloc?: FrameAlloc,
  mapRegion?: MapRegion,
): Promise<DataServer> {
  const server: Server = createServer({ noDelay: true }, (socket) =>
    serveConnection(socket, secret, onFrame, log, alloc, mapRegion),
  );
  if (addr.kind === 'unix') rmSync(addr.path, { force: true }); // a stale socket file of a worker that died
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (addr.kind === 'unix') server.listen(addr.path, resolve);
    else server.listen(addr.port, addr.host, resolve);
  });
  const bound = server.address();
  const address =
    addr.kind === 'tcp' && bound !== null && typeof bound === 'object'
      ? formatDataAddress({ kind: 'tcp', host: addr.host, port: bound.port })
      : formatDataAddress(addr);
  return { address, close: () => server.close() };
}

function serveConnection(
  socket: Socket,
  secret: string,
  onFrame: OnDataFrame,
  log: (line: string) => void,
  alloc?: FrameAlloc,
  mapRegion?: MapRegion,
): void {
  const decoder = new FrameDecoder(alloc);
  let attached = false;
  let region: Buffer | null = null;
  const reply: Reply = (msg, payload) => writeFrame(socket, msg, payload);
  socket.on('error', (e) => log(`data connection error: ${e.message}`));
  socket.on('data', (chunk: Buffer) => {
    let frames;
    try {
      frames = decoder.push(chunk);
    } catch (e) {
      log(`data connection closed: not a frame stream (${(e as Error).message})`);
      socket.destroy();
      return;
    }
    const at = wallMs();
    for (const f of frames) {
      if (!attached) {
        const m = ToWorkerSchema.safeParse(f.header);
        if (!m.success || m.data.type !== 'attach' || m.data.secret !== secret) {
          log("data connection closed: its first frame is not an attach with this worker's secret");
          socket.destroy();
          return;
        }
        attached = true;
        const shm = m.data.shm;
        if (shm) {
          const mapped = mapRegion ? mapRegion(shm) : 'this worker has no shared-memory support';
          region = typeof mapped === 'string' ? null : mapped;
          reply({
            v: WORKER_PROTOCOL_VERSION,
            type: 'attached',
            shm: region !== null,
            ...(typeof mapped === 'string' ? { message: mapped } : {}),
          });
        }
        continue;
      }
      onFrame(f.header, f.payload, at, reply, region);
    }
  });
}

/** The `error` a worker answers a frame it cannot parse with (its id when it has one). */
export function badMessage(header: unknown, why: string): FromWorker {
  const id = (header as { id?: unknown } | null)?.id;
  return {
    v: WORKER_PROTOCOL_VERSION,
    type: 'error',
    id: typeof id === 'string' ? id : '',
    message: `bad message: ${why}`,
  };
}

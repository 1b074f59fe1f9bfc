// Reading request bodies (the data plane): a body with a Content-Length of at least POOLED_BODY_BYTES is read
// straight into a recycled buffer of its size (frames.ts BufferPool, of shared memory: the link thread,
// scheduler/workerLink.ts, writes the task's input to its worker from these bytes without a copy), each chunk
// copied in as it arrives, instead of Fastify's list of chunks concatenated into a new buffer at the end. Why: Node
// counts every new Buffer's bytes toward the heap's limit, so image bodies at hundreds a second would run the
// scheduler's full garbage collection several times a second, each one marking the whole heap
// (docs/benchmarks.md, "The serving path against a bare server"). The route gives a body back
// (`giveBack`) once its task was answered with a result: the worker answered its batch, so every byte
// of it was written (a task that failed keeps its body to the garbage collector: its batch may still
// sit in a socket's queue).
// With a shared-memory region (shmRegion.ts, `inss up --shm-mb`), a binary body (the KServe binary tensor
// extension: an Inference-Header-Content-Length, so its tensor is a view of the body) is read into a slot of it
// instead, its tensor placed at a cache-line boundary, so a worker on this host that mapped the region reads it in
// place; JSON bodies (their tensors are new arrays), bodies that find the region full, and all bodies while no
// worker has mapped it (`regionRead`) take the pool. A slot is freed for any answer, once both its exchange ended
// (the response closed: answered, refused or aborted) and its task, if one was submitted, was answered (`watch`,
// `taskStarted`, `taskEnded`, called by the infer route, kserveRoutes.ts). Until then no new body is written over
// it; after, a worker still reading it (a batch already failed, a worker let go) computes an answer that nobody
// takes (control.ts takes one answer per batch, from the batch's own worker).
// Contract: the same answers as Fastify's own reader: 413 when the Content-Length or the bytes
// received pass the route's limit, 400 when the bytes received do not match the Content-Length, the
// stream's error as a 400; anything else (a chunked body, a small one) is read as Fastify would.
import type { ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { BufferPool } from '../src/protocol/frames.js';
import type { ShmRegion } from './shmRegion.js';

/** Bodies smaller than this are read the ordinary way (they come from the allocator's shared slab). */
export const POOLED_BODY_BYTES = 64 * 1024;

type Done = (err: Error | null, body?: Buffer) => void;

/** A request exchange while a region is on: its body's slot, whether its response is open, its task pending. */
interface Exchange {
  body: Buffer | null;
  open: boolean;
  task: boolean;
}

function httpError(status: number, message: string): Error {
  return Object.assign(new Error(message), { statusCode: status });
}

export class BodyReader {
  private readonly pool: BufferPool;
  private readonly exchanges = new WeakMap<object, Exchange>();
  private readonly slotBodies = new WeakMap<Buffer, Exchange>();

  /**
   * `keep`: free buffers kept per size class, about the bodies in flight at once (64 for a closed loop
   * of 64 clients: 64 x 640 KB = 42 MB for 602 KB image bodies); `maxFreeBytes`: in all, whatever
   * the sizes clients send.
   */
  constructor(
    keep = 64,
    maxFreeBytes = 64 << 20,
    /** Where binary bodies go first (null: none, every large body takes the pool). */
    private readonly region: ShmRegion | null = null,
    /** Whether a worker reads the region now (else its slots would only cost the link thread a copy). */
    private readonly regionRead: () => boolean = () => true,
  ) {
    // Shared memory: the link thread writes a batch's inputs to its worker from these very bytes.
    this.pool = new BufferPool(keep, maxFreeBytes, true);
  }

  /** A Fastify content-type parser (the form without `parseAs`: it reads the payload stream itself). */
  readonly parse = (req: FastifyRequest, payload: NodeJS.ReadableStream, done: Done): void => {
    const limit = req.routeOptions.bodyLimit ?? Infinity;
    const length = Number(req.headers['content-length']);
    if (length > limit) return done(httpError(413, 'request body is too large'));
    // A pooled buffer only when the bytes that arrive are the Content-Length's (no transforming
    // preParsing stream in between, which the guard adds only to chunked bodies).
    const into =
      Number.isInteger(length) && length >= POOLED_BODY_BYTES && payload === req.raw
        ? this.into(length, req.headers['inference-header-content-length'], this.exchanges.get(req.raw))
        : null;
    const chunks: Buffer[] = [];
    let received = 0;
    const off = () => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onEnd);
    };
    const onData = (chunk: Buffer | string) => {
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      if (received + b.length > limit || (into !== null && received + b.length > into.length)) {
        off();
        if (into !== null) this.drop(into);
        done(
          received + b.length > limit
            ? httpError(413, 'request body is too large')
            : httpError(400, 'Request body size did not match Content-Length'),
        );
        return;
      }
      if (into !== null) b.copy(into, received);
      else chunks.push(b);
      received += b.length;
    };
    const onEnd = (err?: (Error & { statusCode?: number }) | null) => {
      off();
      if (err !== undefined && err !== null) {
        if (into !== null) this.drop(into);
        if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400;
        return done(err);
      }
      if (!Number.isNaN(length) && received !== length) {
        if (into !== null) this.drop(into);
        return done(httpError(400, 'Request body size did not match Content-Length'));
      }
      const ex = into !== null && this.region?.holds(into) ? this.exchanges.get(req.raw) : undefined;
      if (ex && into) {
        ex.body = into;
        this.slotBodies.set(into, ex);
        this.settle(ex); // a response that closed while the body came in
      }
      done(null, into ?? Buffer.concat(chunks, received));
    };
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onEnd);
    payload.resume();
  };

  /** A slot of the region for a binary body (its tensor after `jsonHeader` bytes), else a pooled buffer. */
  private into(length: number, jsonHeader: string | string[] | undefined, ex: Exchange | undefined): Buffer {
    const h = typeof jsonHeader === 'string' ? Number(jsonHeader) : NaN;
    const slot =
      this.region !== null && ex !== undefined && Number.isInteger(h) && h >= 0 && h < length && this.regionRead()
        ? this.region.take(length, h)
        : null;
    return slot ?? this.pool.take(length);
  }

  /** A body this reader took and never handed out. */
  private drop(body: Buffer): void {
    if (this.region?.holds(body)) this.region.release(body);
    else this.pool.give(body);
  }

  /** A pooled body `parse` gave, once nothing reads it any more (others, slots among them, are ignored). */
  giveBack(body: Buffer): void {
    this.pool.give(body);
  }

  /**
   * For an onRequest hook, with a region on: from now on a slot body of this request is freed once
   * `res` closed and its task (taskStarted) ended. Without a call, a request's body takes no slot.
   */
  watch(raw: object, res: ServerResponse): void {
    if (this.region === null) return;
    const ex: Exchange = { body: null, open: true, task: false };
    this.exchanges.set(raw, ex);
    res.once('close', () => {
      ex.open = false;
      this.settle(ex);
    });
  }

  /** A task was submitted with this body's bytes (others are ignored). */
  taskStarted(body: Buffer): void {
    const ex = this.slotBodies.get(body);
    if (ex) ex.task = true;
  }

  /** The task of taskStarted was answered, with a result or not. */
  taskEnded(body: Buffer): void {
    const ex = this.slotBodies.get(body);
    if (!ex) return;
    ex.task = false;
    this.settle(ex);
  }

  private settle(ex: Exchange): void {
    if (ex.open || ex.task || ex.body === null) return;
    this.region?.release(ex.body);
    this.slotBodies.delete(ex.body);
    ex.body = null;
  }
}

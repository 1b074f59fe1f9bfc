// Parses infer request bodies off the event loop: a JSON body of a legitimate 3x224x224 image is
// ~3 MB and takes tens of milliseconds to parse and validate, so a few hundred of them parsed inline
// would hold every other client, health probes included, for seconds. Bodies whose
// JSON part is small (binary tensor data, small models) are parsed inline; larger ones go to a few
// worker threads (parseWorker.ts), one job per thread at a time, in arrival order. The bytes waiting
// are capped: beyond the cap a body is answered 503 at once instead of queueing behind the others.
// Without the compiled worker (running from sources), or with 0 threads, every body is parsed inline.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { type InferInput, type InferParse, type ParseModel, parseInferRequest } from './kserve.js';

/** JSON parts up to this size are parsed on the event loop (well under a millisecond). */
const INLINE_JSON_BYTES = 64 * 1024;

type Headers = { contentType?: string | undefined; inferenceHeaderLength?: string | undefined };
type Model = ParseModel;

export interface ParseJob {
  readonly id: number;
  readonly body: Uint8Array;
  readonly headers: Headers;
  readonly model: Model;
}

export type ParseOutcome = InferParse | { readonly ok: false; readonly status: 500 | 503; readonly error: string };

interface Pending {
  readonly job: ParseJob;
  readonly resolve: (r: ParseOutcome) => void;
}

interface Thread {
  worker: Worker;
  job: Pending | null;
}

/** The bytes a body's JSON part has: the Inference-Header-Content-Length when it is a number, else all. */
function jsonPartBytes(body: Buffer, headers: Headers): number {
  const n = Number(headers.inferenceHeaderLength?.trim() ?? 'x');
  return Number.isInteger(n) && n >= 0 ? Math.min(n, body.length) : body.length;
}

/** A parse result as it arrives from a thread: its tensors are Uint8Arrays; the codec hands out Buffers. */
function revive(r: InferParse): InferParse {
  if (!r.ok) return r;
  const buffer = (d: Uint8Array) => Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  const inputs = r.request.inputs.map((i): InferInput => ({
    ...i,
    data: buffer(i.data),
    ...(i.images ? { images: i.images.map((m) => ({ ...m, data: buffer(m.data) })) } : {}),
  }));
  return { ok: true, request: { ...r.request, inputs } };
}

export class ParsePool {
  private readonly threads: Thread[] = [];
  private readonly queue: Pending[] = [];
  private queuedBytes = 0;
  private nextId = 0;
  private closed = false;

  constructor(
    threads: number,
    private readonly maxQueueBytes: number,
    private readonly log: Logger,
  ) {
    const file = fileURLToPath(new URL('./parseWorker.js', import.meta.url));
    if (threads > 0 && !existsSync(file))
      log.warn({ file }, 'no compiled parse worker (running from sources): large bodies are parsed on the event loop');
    else for (let k = 0; k < threads; k++) this.threads.push(this.spawn(file));
  }

  /** Whether a body of this size and these headers goes to a thread (its JSON part is large). */
  offThread(bytes: number, headers: Headers): boolean {
    return this.threads.length > 0 && headers.inferenceHeaderLength === undefined && bytes > INLINE_JSON_BYTES;
  }

  /**
   * Holds `bytes` of the queue for a body still to be read (its Content-Length), so that a body that
   * cannot be parsed soon is refused before it is read; the error text when the queue is full.
   */
  reserve(bytes: number): string | undefined {
    if (this.queuedBytes + bytes > this.maxQueueBytes) {
      return (
        `server busy: ${this.queuedBytes} bytes of request JSON are being read or parsed (limit ` +
        `${this.maxQueueBytes}); retry, or send tensors as binary data`
      );
    }
    this.queuedBytes += bytes;
    return undefined;
  }

  release(bytes: number): void {
    this.queuedBytes -= bytes;
  }

  /**
   * Parses inline when the JSON part is small or there are no threads; else on a thread. `reserved`:
   * the bytes reserve() held for this body (released here); a body read without a reservation
   * (chunked) reserves its size now.
   */
  parse(body: Buffer, headers: Headers, model: Model, reserved = 0): Promise<ParseOutcome> | ParseOutcome {
    this.release(reserved);
    const jsonBytes = jsonPartBytes(body, headers);
    if (this.threads.length === 0 || jsonBytes <= INLINE_JSON_BYTES) return parseInferRequest(body, headers, model);
    const busy = this.reserve(jsonBytes);
    if (busy) return { ok: false, status: 503, error: busy };
    return new Promise((resolve) => {
      // A view of shared memory goes as it is; one of a larger buffer (a slot of the shared-memory
      // region, shmRegion.ts) is copied, or the whole region would be cloned into the message.
      const own =
        body.buffer instanceof SharedArrayBuffer || body.byteLength === body.buffer.byteLength
          ? body
          : Buffer.from(body);
      const job: ParseJob = { id: this.nextId++, body: own, headers, model };
      this.queue.push({
        job,
        resolve: (r) => {
          this.queuedBytes -= jsonBytes;
          resolve(r);
        },
      });
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.resolve({ ok: false, status: 503, error: 'server shutting down' });
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }

  private spawn(file: string): Thread {
    // A memory cap per thread: whatever a body does to it, the scheduler process lives on.
    const t: Thread = { worker: new Worker(file, { resourceLimits: { maxOldGenerationSizeMb: 1024 } }), job: null };
    t.worker.unref();
    t.worker.on('message', (m: { id: number; result: InferParse }) => {
      const p = t.job;
      t.job = null;
      if (p && p.job.id === m.id) p.resolve(revive(m.result));
      this.dispatch();
    });
    // A thread that dies (out of memory on a hostile body) fails its job and is replaced.
    t.worker.on('error', (e) => this.log.error({ err: e.message }, 'parse thread failed'));
    t.worker.on('exit', () => {
      const p = t.job;
      t.job = null;
      p?.resolve({ ok: false, status: 500, error: 'the request could not be parsed (the parse thread failed)' });
      if (this.closed) return;
      const i = this.threads.indexOf(t);
      if (i >= 0) this.threads[i] = this.spawn(file);
      this.dispatch();
    });
    return t;
  }

  private dispatch(): void {
    for (const t of this.threads) {
      if (t.job !== null) continue;
      const p = this.queue.shift();
      if (!p) return;
      t.job = p;
      t.worker.postMessage(p.job);
    }
  }
}

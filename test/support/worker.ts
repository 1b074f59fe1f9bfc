// Spawn a worker process and talk the worker protocol to it (docs/worker-protocol.md), for the
// worker contract suite and the PyTorch worker's tests. Unlike agent/workerProcess.ts this keeps
// every message, in order, for the test to inspect, and lets a test send what an agent never would
// (malformed batches, signals at chosen moments).
import { type ChildProcess, spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { encodeFrame, FrameDecoder } from '../../src/protocol/frames.js';
import { tensorBytes } from '../../src/protocol/tensor.js';
import {
  type FromWorker,
  FromWorkerSchema,
  parseDataAddress,
  WORKER_PROTOCOL_VERSION,
} from '../../src/protocol/worker.js';

export interface WorkerMessage {
  readonly msg: FromWorker;
  readonly payload: Buffer;
}

export interface WorkerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export const IMAGE_SHAPE = [3, 224, 224] as const;

/**
 * A deterministic FP32 image batch [size, 3, 224, 224], values in [-1, 1) from a 32-bit LCG seeded
 * by `seed` (the bytes are little-endian, as the protocol carries them).
 */
export function imageBatch(size: number, seed = 1): Buffer {
  const n = size * IMAGE_SHAPE[0] * IMAGE_SHAPE[1] * IMAGE_SHAPE[2];
  const out = Buffer.alloc(n * 4);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out.writeFloatLE(s / 2 ** 31 - 1, i * 4);
  }
  return out;
}

/** The FP32 values of a little-endian payload (copied: a frame's payload need not be 4-byte aligned). */
export function floats(payload: Buffer): Float32Array {
  const copy = Buffer.from(payload);
  return new Float32Array(copy.buffer, copy.byteOffset, copy.length / 4);
}

/** A batch message for `model`'s worker; `shape`/`byteLength` may be overridden to make it wrong. */
export function batchMessage(
  id: string,
  model: string,
  size: number,
  override: { shape?: number[]; byteLength?: number } = {},
): object {
  const shape = override.shape ?? [size, ...IMAGE_SHAPE];
  const byteLength = override.byteLength ?? tensorBytes('FP32', shape);
  return {
    v: WORKER_PROTOCOL_VERSION,
    type: 'batch',
    id,
    model,
    size,
    inputs: [{ name: 'input', datatype: 'FP32', shape, byteLength }],
  };
}

/**
 * One worker child process. Every stdout frame is validated with FromWorkerSchema; an invalid one,
 * a broken frame stream, the process exiting or a timeout makes `next()` reject with the stderr tail.
 */
export class WorkerUnderTest {
  readonly child: ChildProcess;
  /** Its --model: the model every batch from sendBatch names. */
  readonly model: string;
  readonly exited: Promise<WorkerExit>;
  private readonly decoder = new FrameDecoder();
  private readonly inbox: WorkerMessage[] = [];
  private waiter: { resolve: (m: WorkerMessage) => void; reject: (e: Error) => void } | null = null;
  private failure: Error | null = null;
  private stderrText = '';
  private exit: WorkerExit | null = null;

  constructor(
    readonly command: string,
    readonly args: readonly string[],
    env: Readonly<Record<string, string>> = {},
  ) {
    this.model = args[args.indexOf('--model') + 1] ?? '';
    this.child = spawn(command, [...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    this.child.stdout!.on('data', (chunk: Buffer) => this.onData(chunk));
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.stderrText = (this.stderrText + chunk.toString('utf8')).slice(-8000);
    });
    this.child.stdin!.on('error', () => undefined); // EPIPE once it has exited; the exit is reported
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        this.exit = { code, signal };
        this.fail(new Error(`worker exited (code ${String(code)}, signal ${String(signal)}) with no message pending`));
        resolve(this.exit);
      });
      this.child.on('error', (e) => {
        this.fail(new Error(`cannot start ${command}: ${e.message}`));
        this.exit = { code: null, signal: null };
        resolve(this.exit);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The last 8000 characters the worker wrote to stderr (its log). */
  get stderr(): string {
    return this.stderrText;
  }

  send(header: object, payload?: Uint8Array): void {
    this.child.stdin!.write(encodeFrame(header, payload));
  }

  /** Sends a well-formed batch of `size` images (seeded by `seed`); returns the input bytes. */
  sendBatch(id: string, size: number, seed = 1): Buffer {
    const input = imageBatch(size, seed);
    this.send(batchMessage(id, this.model, size), input);
    return input;
  }

  /** The next message, in the order the worker sent them. */
  next(timeoutMs = 30_000): Promise<WorkerMessage> {
    const queued = this.inbox.shift();
    if (queued) return Promise.resolve(queued);
    if (this.failure) return Promise.reject(this.withLog(this.failure));
    if (this.waiter) throw new Error('next() is already waiting');
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = null;
        reject(this.withLog(new Error(`no message from the worker within ${timeoutMs} ms`)));
      }, timeoutMs);
      this.waiter = {
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(this.withLog(e));
        },
      };
    });
  }

  /** The next message, which must be of the given type. */
  async expect<T extends FromWorker['type']>(
    type: T,
    timeoutMs = 30_000,
  ): Promise<{ msg: Extract<FromWorker, { type: T }>; payload: Buffer }> {
    const m = await this.next(timeoutMs);
    if (m.msg.type !== type) throw this.withLog(new Error(`expected '${type}', got ${JSON.stringify(m.msg)}`));
    return m as { msg: Extract<FromWorker, { type: T }>; payload: Buffer };
  }

  closeStdin(): void {
    this.child.stdin!.end();
  }

  signal(sig: NodeJS.Signals): void {
    this.child.kill(sig);
  }

  /** SIGKILL if it is still running, and wait for it (test cleanup). */
  async dispose(): Promise<void> {
    if (this.exit === null) this.child.kill('SIGKILL');
    await this.exited;
  }

  private onData(chunk: Buffer): void {
    let frames;
    try {
      frames = this.decoder.push(chunk);
    } catch (e) {
      this.fail(new Error(`worker stdout is not a frame stream: ${(e as Error).message}`));
      return;
    }
    for (const f of frames) {
      const parsed = FromWorkerSchema.safeParse(f.header);
      if (!parsed.success) {
        this.fail(
          new Error(
            `invalid worker message ${JSON.stringify(f.header)}: ` +
              `${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
          ),
        );
        return;
      }
      const m = { msg: parsed.data, payload: f.payload };
      if (this.waiter) {
        const w = this.waiter;
        this.waiter = null;
        w.resolve(m);
      } else {
        this.inbox.push(m);
      }
    }
  }

  private fail(e: Error): void {
    this.failure ??= e;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.reject(e);
    }
  }

  private withLog(e: Error): Error {
    const tail = this.stderrText.trim().split('\n').slice(-15).join('\n');
    return new Error(`${e.message}\n--- worker stderr (tail) ---\n${tail}`);
  }
}

/**
 * A connection to a worker's data socket (the direct path), as the scheduler makes it
 * (scheduler/workerLink.ts): `attach` with `secret` first (unless `secret` is null), then frames;
 * every frame the worker answers is validated with FromWorkerSchema and kept in order.
 */
export class DataClient {
  readonly socket: Socket;
  /** Resolves when the connection has ended (either side). */
  readonly closed: Promise<void>;
  private readonly decoder = new FrameDecoder();
  private readonly inbox: WorkerMessage[] = [];
  private waiter: ((m: WorkerMessage | null) => void) | null = null;
  private ended = false;

  /** `shm`: the shared-memory region the attach names (docs/worker-protocol.md "Shared memory"). */
  constructor(address: string, secret: string | null, shm?: { path: string; bytes: number }) {
    const a = parseDataAddress(address);
    if (typeof a === 'string') throw new Error(a);
    this.socket = a.kind === 'unix' ? connect({ path: a.path }) : connect({ host: a.host, port: a.port });
    if (secret !== null) this.send({ v: WORKER_PROTOCOL_VERSION, type: 'attach', secret, ...(shm ? { shm } : {}) });
    this.socket.on('data', (chunk: Buffer) => {
      for (const f of this.decoder.push(chunk)) {
        const m = { msg: FromWorkerSchema.parse(f.header), payload: f.payload };
        if (this.waiter) {
          const w = this.waiter;
          this.waiter = null;
          w(m);
        } else this.inbox.push(m);
      }
    });
    this.socket.on('error', () => undefined); // a refused connection ends in 'close'
    this.closed = new Promise((resolve) =>
      this.socket.on('close', () => {
        this.ended = true;
        this.waiter?.(null);
        resolve();
      }),
    );
  }

  send(header: object, payload?: Uint8Array): void {
    this.socket.write(encodeFrame(header, payload));
  }

  /** The next frame the worker sent on this connection; rejects when it closed first or after `timeoutMs`. */
  next(timeoutMs = 30_000): Promise<WorkerMessage> {
    const queued = this.inbox.shift();
    if (queued) return Promise.resolve(queued);
    if (this.ended) return Promise.reject(new Error('the data connection closed'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no frame on the data connection within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.waiter = (m) => {
        clearTimeout(timer);
        if (m) resolve(m);
        else reject(new Error('the data connection closed'));
      };
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

// One worker child process (simulated or PyTorch) and the worker protocol over its stdin/stdout.
// Used only by the agent. Contract:
// - `start()` spawns it; `ready` resolves when it says `ready` (or rejects when it exits first);
// - `run(batch)` sends a batch (naming the model it is for: a worker of another model refuses it) and resolves with the
// worker's answer; every call resolves exactly once:
//   a result, a batch error from the worker, or a failure because the process died (SIGKILL, a crash);
// - `stop()` sends SIGTERM (the worker answers what it holds, then exits) and SIGKILL after a grace time.
import { EventEmitter } from 'node:events';
import { execa, type ResultPromise } from 'execa';
import { FrameDecoder, framePieces } from '../src/protocol/frames.js';
import type { TensorRef } from '../src/protocol/tensor.js';
import {
  type FromWorker,
  FromWorkerSchema,
  type RunningBatch,
  WORKER_PROTOCOL_VERSION,
} from '../src/protocol/worker.js';

export interface WorkerLaunch {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

export type BatchOutcome =
  | {
      readonly kind: 'result';
      readonly latencyMs: number;
      readonly outputs: readonly TensorRef[];
      readonly payload: Buffer;
      readonly memoryMb?: number;
    }
  | { readonly kind: 'error'; readonly message: string }
  | { readonly kind: 'died'; readonly message: string };

type SpawnOptions = {
  env: Readonly<Record<string, string>>;
  extendEnv: true;
  stdin: 'pipe';
  stdout: 'pipe';
  stderr: 'pipe';
  buffer: false;
  reject: false;
  encoding: 'buffer';
  cleanup: true;
};

interface InFlight {
  readonly resolve: (o: BatchOutcome) => void;
}

export class WorkerProcess extends EventEmitter<{ exit: [message: string]; stderr: [line: string] }> {
  private proc: ResultPromise<SpawnOptions> | null = null;
  private readonly inFlight = new Map<string, InFlight>();
  private readonly decoder = new FrameDecoder();
  private exited = false;
  private exitMessage = '';
  private readyResolve!: (info: Extract<FromWorker, { type: 'ready' }>) => void;
  private readyReject!: (e: Error) => void;
  /** Resolves when the worker has warmed up; rejects if it exits (or fails) first. */
  readonly ready: Promise<Extract<FromWorker, { type: 'ready' }>>;

  constructor(readonly launch: WorkerLaunch) {
    super();
    this.ready = new Promise((res, rej) => {
      this.readyResolve = res;
      this.readyReject = rej;
    });
    this.ready.catch(() => undefined); // observed by whoever awaits it; never an unhandled rejection
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  get alive(): boolean {
    return this.proc !== null && !this.exited;
  }

  get pending(): number {
    return this.inFlight.size;
  }

  start(): void {
    const options: SpawnOptions = {
      env: this.launch.env,
      extendEnv: true,
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      buffer: false,
      reject: false,
      encoding: 'buffer',
      cleanup: true,
    };
    const p = execa(this.launch.command, [...this.launch.args], options);
    this.proc = p;
    p.stdout.on('data', (chunk: Buffer) => this.onData(chunk));
    let errTail = '';
    p.stderr.on('data', (chunk: Buffer) => {
      errTail = (errTail + chunk.toString('utf8')).slice(-4000);
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) this.emit('stderr', line);
    });
    p.stdin.on('error', () => undefined); // EPIPE after a crash; the exit handler reports it
    void p.then((r) => {
      const how = r.signal ? `killed by ${r.signal}` : `exited with code ${String(r.exitCode)}`;
      const lines = errTail
        .trim()
        .split('\n')
        .filter((l) => l.trim() && !l.trimStart().startsWith('at '));
      const tail = lines.slice(-3).join(' | ');
      this.onExit(
        `worker ${how}${this.exitMessage ? `: ${this.exitMessage}` : ''}` +
          (tail && !this.exitMessage ? ` (stderr: ${tail})` : ''),
      );
    });
  }

  /** Sends one batch; resolves exactly once (see the file header). */
  run(
    id: string,
    model: string,
    size: number,
    inputs: readonly TensorRef[],
    payload: Buffer,
    running?: readonly RunningBatch[],
  ): Promise<BatchOutcome> {
    if (!this.alive) return Promise.resolve({ kind: 'died', message: this.exitMessage || 'worker is not running' });
    return new Promise((resolve) => {
      this.inFlight.set(id, { resolve });
      const msg = {
        v: WORKER_PROTOCOL_VERSION,
        type: 'batch' as const,
        id,
        model,
        size,
        inputs: [...inputs],
        ...(running ? { running: [...running] } : {}),
      };
      const stdin = this.proc?.stdin;
      if (!stdin) return;
      stdin.cork();
      for (const p of framePieces(msg, [payload])) stdin.write(p);
      stdin.uncork();
    });
  }

  /** SIGTERM now; SIGKILL after `graceMs` if it has not exited. Resolves when it has exited. */
  async stop(graceMs = 5000): Promise<void> {
    if (!this.proc || this.exited) return;
    const p = this.proc;
    p.kill('SIGTERM');
    const timer = setTimeout(() => p.kill('SIGKILL'), graceMs);
    await p.catch(() => undefined);
    clearTimeout(timer);
  }

  /** SIGKILL at once (a failed MPS server, tests); `reason` becomes the error of its batches in flight. */
  kill(reason?: string): void {
    if (reason !== undefined) this.exitMessage = reason;
    this.proc?.kill('SIGKILL');
  }

  private onData(chunk: Buffer): void {
    let frames;
    try {
      frames = this.decoder.push(chunk);
    } catch (e) {
      this.exitMessage = `protocol error on stdout: ${(e as Error).message}`;
      this.kill();
      return;
    }
    for (const f of frames) {
      const parsed = FromWorkerSchema.safeParse(f.header);
      if (!parsed.success) {
        this.exitMessage =
          `bad message on stdout: ` +
          `${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`;
        this.kill();
        return;
      }
      const m = parsed.data;
      switch (m.type) {
        case 'ready':
          this.readyResolve(m);
          break;
        case 'result':
          this.settle(m.id, {
            kind: 'result',
            latencyMs: m.latencyMs,
            outputs: m.outputs,
            payload: f.payload,
            ...(m.memoryMb !== undefined ? { memoryMb: m.memoryMb } : {}),
          });
          break;
        case 'error':
          this.settle(m.id, { kind: 'error', message: m.message });
          break;
        case 'fatal':
          this.exitMessage = m.message;
          break;
      }
    }
  }

  private settle(id: string, o: BatchOutcome): void {
    const f = this.inFlight.get(id);
    if (!f) return; // an answer to nothing we sent: ignore (the worker echoes ids)
    this.inFlight.delete(id);
    f.resolve(o);
  }

  private onExit(message: string): void {
    this.exited = true;
    this.readyReject(new Error(message));
    for (const [id, f] of this.inFlight) {
      this.inFlight.delete(id);
      f.resolve({ kind: 'died', message });
    }
    this.emit('exit', message);
  }
}

// Control of the NVIDIA MPS control daemon (`nvidia-cuda-mps-control`), with inss's own pipe and log
// directories, so it never collides with an operator's daemon in /tmp/nvidia-mps. One daemon per GPU
// (CUDA_VISIBLE_DEVICES set for it, its own directories): a client fault that brings an MPS server
// down then affects the workers of one GPU only. Expected failures are result values, not exceptions.
import { mkdirSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';

export interface MpsOptions {
  /** Default `nvidia-cuda-mps-control`; tests pass a stand-in. */
  readonly controlCommand?: string;
  readonly pipeDir: string;
  readonly logDir: string;
  /** CUDA_VISIBLE_DEVICES for the daemon (one GPU per daemon). */
  readonly gpu?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** How long a control command may take before the daemon counts as unresponsive. Default 5 s. */
  readonly timeoutMs?: number;
}

export type MpsFailure = 'not-installed' | 'start-failed' | 'unresponsive' | 'server-failed' | 'stop-failed';
export type MpsResult = { readonly ok: true } | { readonly ok: false; readonly reason: MpsFailure; readonly message: string };

/** Lines of control.log that mean an MPS server failed (a client fault, an exception). */
const FAILED_LINE = /(failed|fault|exception|error)/i;

export class MpsDaemon {
  private readonly command: string;
  private logOffset = 0;

  constructor(readonly opts: MpsOptions) {
    this.command = opts.controlCommand ?? 'nvidia-cuda-mps-control';
  }

  private env(): Record<string, string> {
    return {
      ...(this.opts.env ?? {}),
      CUDA_MPS_PIPE_DIRECTORY: this.opts.pipeDir,
      CUDA_MPS_LOG_DIRECTORY: this.opts.logDir,
      ...(this.opts.gpu !== undefined ? { CUDA_VISIBLE_DEVICES: this.opts.gpu } : {}),
    };
  }

  /** What a worker (an MPS client) needs in its environment to join this daemon with a share. */
  clientEnv(pct: number): Record<string, string> {
    return { ...this.env(), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(pct) };
  }

  private async control(input: string | null, args: readonly string[] = []): Promise<{ ok: true; stdout: string } | { ok: false; reason: MpsFailure; message: string }> {
    const r = await execa(this.command, [...args], { env: this.env(), extendEnv: true, reject: false, timeout: this.opts.timeoutMs ?? 5000, ...(input !== null ? { input } : { stdin: 'ignore' }) });
    if ((r as { code?: string }).code === 'ENOENT' || /ENOENT/.test(String(r.message ?? ''))) return { ok: false, reason: 'not-installed', message: `${this.command} is not installed (no NVIDIA driver with MPS)` };
    if (r.timedOut) return { ok: false, reason: 'unresponsive', message: `${this.command} did not answer within ${this.opts.timeoutMs ?? 5000} ms` };
    if (r.exitCode !== 0) return { ok: false, reason: 'start-failed', message: `${this.command} ${args.join(' ')} exited with ${String(r.exitCode)}: ${`${String(r.stdout)} ${String(r.stderr)}`.trim().slice(0, 300)}` };
    return { ok: true, stdout: String(r.stdout) };
  }

  /** Starts the daemon (`-d`) and checks that it answers. */
  async start(): Promise<MpsResult> {
    mkdirSync(this.opts.pipeDir, { recursive: true });
    mkdirSync(this.opts.logDir, { recursive: true });
    this.logOffset = this.logLength();
    const r = await this.control(null, ['-d']);
    if (!r.ok) return r;
    for (let i = 0; i < 50 && !existsSync(join(this.opts.pipeDir, 'control')); i++) await sleep(20);
    return this.healthy();
  }

  /**
   * Whether the daemon answers `get_server_list` in time and its log shows no failed server since
   * the last start (a client fault puts the server in a failed state in which new clients are refused).
   */
  async healthy(): Promise<MpsResult> {
    const r = await this.control('get_server_list\n');
    if (!r.ok) return r.reason === 'start-failed' ? { ok: false, reason: 'unresponsive', message: r.message } : r;
    const failed = this.newLogLines().find((l) => FAILED_LINE.test(l));
    if (failed) return { ok: false, reason: 'server-failed', message: `control.log: ${failed.trim().slice(0, 300)}` };
    return { ok: true };
  }

  /** Asks the daemon to quit and waits for its control pipe to go away. */
  async stop(): Promise<MpsResult> {
    if (!existsSync(join(this.opts.pipeDir, 'control'))) return { ok: true };
    const r = await this.control('quit\n');
    if (!r.ok && r.reason === 'not-installed') return r;
    for (let i = 0; i < 100 && existsSync(join(this.opts.pipeDir, 'control')); i++) await sleep(20);
    return existsSync(join(this.opts.pipeDir, 'control')) ? { ok: false, reason: 'stop-failed', message: 'the MPS control daemon did not quit' } : { ok: true };
  }

  async restart(): Promise<MpsResult> {
    await this.stop();
    return this.start();
  }

  private logPath(): string {
    return join(this.opts.logDir, 'control.log');
  }

  private logLength(): number {
    try {
      return readFileSync(this.logPath()).length;
    } catch {
      return 0;
    }
  }

  private newLogLines(): string[] {
    let text: Buffer;
    try {
      text = readFileSync(this.logPath());
    } catch {
      return [];
    }
    return text.subarray(this.logOffset).toString('utf8').split('\n');
  }
}

/**
 * Watches a daemon: every `intervalMs` it checks health; on a failure it restarts the daemon (with
 * backoff while restarts fail) and then calls `onRecovered`, where the agent answers the tasks in
 * flight on that GPU with errors and restarts its workers (clients of a failed server cannot recover).
 */
export class MpsSupervisor {
  private timer: NodeJS.Timeout | null = null;
  private checking = false;
  private failures = 0;

  constructor(
    private readonly daemon: MpsDaemon,
    private readonly opts: { intervalMs: number; onFailure: (why: MpsResult & { ok: false }) => void; onRecovered: () => Promise<void> | void; maxBackoffMs?: number },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.check(), this.opts.intervalMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One health check (also called by the interval). Resolves when any recovery is done. */
  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const h = await this.daemon.healthy();
      if (h.ok) return;
      this.opts.onFailure(h);
      for (;;) {
        const r = await this.daemon.restart();
        if (r.ok) break;
        this.failures++;
        await sleep(Math.min(this.opts.maxBackoffMs ?? 10_000, 200 * 2 ** this.failures));
        if (!this.timer) return;
      }
      this.failures = 0;
      await this.opts.onRecovered();
    } finally {
      this.checking = false;
    }
  }
}

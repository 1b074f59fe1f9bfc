// `MpsDaemon`: one nvidia-cuda-mps-control daemon with inss's own pipe and log directories, started,
// queried and stopped through its executable (agent/mps.ts says why one per GPU).
import { mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import {
  daemonPidFromLog,
  findServerFailure,
  MAX_SOCKET_PATH_BYTES,
  MPS_CONTROL_SOCKET,
  MPS_PID_FILE,
  mpsClientEnv,
  type MpsFailed,
  type MpsHealth,
  type MpsResult,
  type MpsStopResult,
  parseServerList,
} from './mpsParse.js';

export interface MpsOptions {
  /** Default `nvidia-cuda-mps-control` on the PATH; tests pass a stand-in. */
  readonly controlCommand?: string;
  /** CUDA_MPS_PIPE_DIRECTORY: the control socket lives here; created if missing. */
  readonly pipeDir: string;
  /** CUDA_MPS_LOG_DIRECTORY: control.log and server.log; created if missing. */
  readonly logDir: string;
  /** CUDA_VISIBLE_DEVICES for the daemon: one GPU, preferably its UUID. Unset: every GPU. */
  readonly gpu?: string;
  /** Added to this process's environment for the daemon and the control commands. */
  readonly env?: Readonly<Record<string, string>>;
  /** How long one control command may take before the daemon counts as unresponsive. Default 5 s. */
  readonly timeoutMs?: number;
  /** How long `start` waits for a new daemon to answer. Default 10 s. */
  readonly startTimeoutMs?: number;
  /** How long `stop` waits for the daemon to exit after `quit` before signalling it. Default 10 s. */
  readonly stopTimeoutMs?: number;
}

type Control = { readonly ok: true; readonly stdout: string } | MpsFailed;

const NOT_RUNNING = /Cannot find MPS control daemon/i;
const ALREADY_RUNNING = /already running/i;

/** The last lines of a file, for a failure message; '' when it cannot be read. */
function tail(path: string, lines = 5): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join(' | ');
  } catch {
    return '';
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** Whether `pid` is a live (not zombie) process; on Linux also whether its command line contains `name`. */
function isLiveProcess(pid: number, names: readonly string[]): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // alive, someone else's
  }
  let stat: string;
  let cmdline: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return true; // no /proc: trust kill(0)
  }
  if (stat.charAt(stat.lastIndexOf(')') + 2) === 'Z') return false;
  return names.some((n) => cmdline.includes(n));
}

/** The pids of `pid`'s children (Linux; empty elsewhere). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * One MPS control daemon with its own pipe and log directories. Not safe for concurrent calls on
 * one instance: the agent calls it from one place (start, the supervisor's checks, stop), each call
 * awaited. Every method resolves within its timeouts; none throws for an outcome of the daemon.
 */
export class MpsDaemon {
  readonly opts: MpsOptions;
  private readonly command: string;
  /** Sizes of control.log and server.log when the current daemon started: failures before do not count. */
  private logOffsets = { control: 0, server: 0 };

  constructor(opts: MpsOptions) {
    this.opts = opts;
    this.command = opts.controlCommand ?? 'nvidia-cuda-mps-control';
  }

  private get timeoutMs(): number {
    return this.opts.timeoutMs ?? 5000;
  }

  private get socketPath(): string {
    return join(this.opts.pipeDir, MPS_CONTROL_SOCKET);
  }

  private logPath(name: 'control' | 'server'): string {
    return join(this.opts.logDir, `${name}.log`);
  }

  /**
   * The environment of the daemon and of the control commands: this process's, `opts.env`, the
   * two directories, the GPU, and PCI bus order (so an index means nvidia-smi's index, not CUDA's
   * fastest-first order). Without CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: set on the daemon it would
   * become every server's default; each client sets its own.
   */
  private env(): Record<string, string> {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...process.env, ...this.opts.env })) if (v !== undefined) env[k] = v;
    delete env.CUDA_MPS_ACTIVE_THREAD_PERCENTAGE;
    env.CUDA_MPS_PIPE_DIRECTORY = this.opts.pipeDir;
    env.CUDA_MPS_LOG_DIRECTORY = this.opts.logDir;
    if (this.opts.gpu !== undefined) {
      env.CUDA_VISIBLE_DEVICES = this.opts.gpu;
      env.CUDA_DEVICE_ORDER = 'PCI_BUS_ID';
    }
    return env;
  }

  /** What a worker needs to be this daemon's client with `pct` percent of the SMs (see mpsClientEnv). */
  clientEnv(pct: number): Record<string, string> {
    return mpsClientEnv(this.opts, pct);
  }

  /** Runs the control executable with `args`, feeding `input` on stdin, and classifies the outcome. */
  private async run(args: readonly string[], input: string | null): Promise<Control> {
    const r = await execa(this.command, [...args], {
      env: this.env(),
      extendEnv: false,
      reject: false,
      timeout: this.timeoutMs,
      forceKillAfterDelay: 1000,
      ...(input !== null ? { input } : { stdin: 'ignore' as const }),
    });
    const code = (r as { code?: unknown }).code;
    if (code === 'ENOENT')
      return {
        ok: false,
        reason: 'not-installed',
        message: `${this.command} is not installed (no NVIDIA driver with MPS on this machine)`,
      };
    if (typeof code === 'string')
      return { ok: false, reason: 'not-installed', message: `${this.command} could not be run: ${code}` };
    const what = `${this.command} ${args.length > 0 ? args.join(' ') : JSON.stringify(input?.trim() ?? '')}`;
    if (r.timedOut)
      return { ok: false, reason: 'unresponsive', message: `${what} did not answer within ${this.timeoutMs} ms` };
    const said = `${String(r.stdout)}\n${String(r.stderr)}`.trim();
    if (NOT_RUNNING.test(said))
      return { ok: false, reason: 'not-running', message: `no MPS control daemon answers on ${this.opts.pipeDir}` };
    if (r.exitCode !== 0) {
      const reason = ALREADY_RUNNING.test(said)
        ? 'already-running'
        : args.includes('-d')
          ? 'start-failed'
          : 'unresponsive';
      return {
        ok: false,
        reason,
        message:
          `${what} exited with ${String(r.exitCode ?? r.signal)}: ` +
          `${said.replace(/\s*\n\s*/g, ' | ').slice(0, 300) || '(no output)'}`,
      };
    }
    return { ok: true, stdout: String(r.stdout) };
  }

  /** The running daemon's pid (pid file, else control.log), if that process is alive; else null. */
  daemonPid(): number | null {
    const names = ['nvidia-cuda-mps-control', basename(this.command)];
    let pid: number | null = null;
    try {
      pid = Number(readFileSync(join(this.opts.pipeDir, MPS_PID_FILE), 'utf8').trim());
    } catch {
      pid = null;
    }
    if (pid === null || !Number.isInteger(pid) || pid <= 0) {
      try {
        pid = daemonPidFromLog(readFileSync(this.logPath('control'), 'utf8'));
      } catch {
        pid = null;
      }
    }
    return pid !== null && isLiveProcess(pid, names) ? pid : null;
  }

  /**
   * Starts the daemon (`-d`, which forks and returns) with the pipe and log directories, creating
   * them, and waits until it answers `get_server_list` (up to `startTimeoutMs`). `already-running`
   * when a daemon already uses the pipe directory. Called by the agent once per GPU at start and by
   * the supervisor after a failure.
   */
  async start(): Promise<MpsResult> {
    if (Buffer.byteLength(this.socketPath) > MAX_SOCKET_PATH_BYTES) {
      return {
        ok: false,
        reason: 'start-failed',
        message:
          `the MPS control socket path ${this.socketPath} is ${Buffer.byteLength(this.socketPath)} ` +
          `bytes, over the ${MAX_SOCKET_PATH_BYTES}-byte limit of a Unix socket: use a shorter state ` +
          `directory`,
      };
    }
    try {
      mkdirSync(this.opts.pipeDir, { recursive: true, mode: 0o700 });
      mkdirSync(this.opts.logDir, { recursive: true, mode: 0o700 });
    } catch (e) {
      return {
        ok: false,
        reason: 'start-failed',
        message: `cannot create the MPS directories: ${(e as Error).message}`,
      };
    }
    this.logOffsets = { control: fileSize(this.logPath('control')), server: fileSize(this.logPath('server')) };
    const started = await this.run(['-d'], null);
    if (!started.ok) return started.reason === 'unresponsive' ? { ...started, reason: 'start-failed' } : started;
    const deadline = Date.now() + (this.opts.startTimeoutMs ?? 10_000);
    let last: MpsFailed | null = null;
    while (Date.now() < deadline) {
      const r = await this.run([], 'get_server_list\n');
      if (r.ok) return { ok: true };
      if (r.reason === 'not-installed') return r;
      last = r;
      await sleep(50);
    }
    const log = tail(this.logPath('control'));
    return {
      ok: false,
      reason: 'start-failed',
      message:
        `the MPS control daemon did not answer within ${this.opts.startTimeoutMs ?? 10_000} ms ` +
        `(${last?.message ?? 'no answer'})${log ? `; control.log: ${log}` : ''}`,
    };
  }

  /**
   * Whether the daemon answers `get_server_list` within `timeoutMs` and its logs show no failed
   * server since it started. A failure stays reported until the daemon is restarted: a faulted
   * server refuses new clients until its clients exit. Called by the supervisor every interval.
   */
  async healthy(): Promise<MpsHealth> {
    const r = await this.run([], 'get_server_list\n');
    if (!r.ok) return r;
    const failed = findServerFailure(this.logSinceStart('control')) ?? findServerFailure(this.logSinceStart('server'));
    if (failed !== null)
      return { ok: false, reason: 'server-failed', message: `an MPS server failed: ${failed.slice(0, 300)}` };
    return { ok: true, serverPids: parseServerList(r.stdout) };
  }

  /**
   * Stops the daemon: `quit`, then waits up to `stopTimeoutMs` for it to exit; if it does not (or
   * does not answer), SIGTERM, then SIGKILL, to the daemon and its MPS servers, and removes the
   * stale socket. `not-running` when no daemon was there (a stale socket is removed too). Workers
   * still connected lose their server: stop them first.
   */
  async stop(): Promise<MpsStopResult> {
    const pid = this.daemonPid();
    const servers = pid === null ? [] : childrenOf(pid).filter((c) => isLiveProcess(c, ['nvidia-cuda-mps-server']));
    const q = await this.run([], 'quit\n');
    if (!q.ok && q.reason === 'not-installed') return q;
    if (!q.ok && q.reason === 'not-running' && pid === null) {
      this.removeStaleEntries();
      return { ok: true, how: 'not-running' };
    }
    if (q.ok) {
      const deadline = Date.now() + (this.opts.stopTimeoutMs ?? 10_000);
      while (Date.now() < deadline) {
        if (
          pid === null
            ? !this.socketAnswers()
            : !isLiveProcess(pid, ['nvidia-cuda-mps-control', basename(this.command)])
        ) {
          this.removeStaleEntries();
          return { ok: true, how: 'quit' };
        }
        await sleep(50);
      }
    }
    if (pid === null)
      return {
        ok: false,
        reason: 'stop-failed',
        message:
          `the MPS control daemon on ${this.opts.pipeDir} did not quit ` +
          `(${q.ok ? 'it accepted quit' : q.message}) and its pid is unknown`,
      };
    const killed = await this.kill([pid, ...servers]);
    if (!killed)
      return {
        ok: false,
        reason: 'stop-failed',
        message: `the MPS control daemon ${pid} survived quit, SIGTERM and SIGKILL`,
      };
    this.removeStaleEntries();
    return { ok: true, how: 'killed' };
  }

  /** stop, then start. A daemon that cannot be stopped is not started twice. */
  async restart(): Promise<MpsResult> {
    const stopped = await this.stop();
    if (!stopped.ok) return stopped;
    return this.start();
  }

  /** Whether a daemon still answers: used after `quit` where the pid is unknown. */
  private socketAnswers(): boolean {
    try {
      statSync(this.socketPath);
      return true;
    } catch {
      return false;
    }
  }

  private removeStaleEntries(): void {
    rmSync(this.socketPath, { force: true });
    rmSync(join(this.opts.pipeDir, MPS_PID_FILE), { force: true });
  }

  /** SIGTERM, up to 2 s, SIGKILL, up to 2 s; whether all of `pids` are gone. */
  private async kill(pids: readonly number[]): Promise<boolean> {
    const names = ['nvidia-cuda-mps-control', 'nvidia-cuda-mps-server', basename(this.command)];
    const alive = () => pids.filter((p) => isLiveProcess(p, names));
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      for (const p of alive()) {
        try {
          process.kill(p, signal);
        } catch {
          // gone meanwhile, or not ours to signal: the check below tells
        }
      }
      for (let i = 0; i < 40 && alive().length > 0; i++) await sleep(50);
      if (alive().length === 0) return true;
    }
    return false;
  }

  private logSinceStart(name: 'control' | 'server'): string {
    try {
      return readFileSync(this.logPath(name)).subarray(this.logOffsets[name]).toString('utf8');
    } catch {
      return '';
    }
  }
}

// Control of the NVIDIA MPS control daemon (`nvidia-cuda-mps-control`) with inss's own pipe and log
// directories, so it never collides with an operator's daemon in /tmp/nvidia-mps.
//
// One daemon per GPU. The agent gives each daemon one GPU (`gpu`, which becomes the daemon's
// CUDA_VISIBLE_DEVICES) and its own directories. Reasons: a client fault puts the MPS server of
// that GPU into a failed state in which it refuses new clients until its clients exit; with one
// daemon (one server) for several GPUs, that also blocks new workers on the healthy GPUs (NVIDIA's
// forum: a fault on one A30 refused new clients on the other), and recovery (killing the clients,
// restarting the daemon) would stop every worker on the machine. Per GPU, a fault costs one GPU's
// workers. Pass the GPU's UUID (from nvidia-smi), not its index: see `mpsClientEnv`.
//
// The pure parts (reading the daemon's answers and logs, the client environment, the backoff) are
// exported functions; `MpsDaemon` runs the executable; `MpsSupervisor` watches one daemon.
// Expected failures are result values with a reason; nothing here throws for an outcome of the
// daemon.
import { mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';

/** The control socket the daemon creates in its pipe directory. */
export const MPS_CONTROL_SOCKET = 'control';
/** Where recent drivers write the daemon's pid, in its pipe directory. */
export const MPS_PID_FILE = 'nvidia-cuda-mps-control.pid';
/**
 * Linux's limit on a Unix socket path (sun_path is 108 bytes with its NUL). Past it the real daemon
 * starts, fails to bind, and every client then says "Cannot find MPS control daemon process".
 */
export const MAX_SOCKET_PATH_BYTES = 107;

/**
 * Why an MPS operation failed; each asks something different of the caller:
 * - `not-installed`: no nvidia-cuda-mps-control (no NVIDIA driver with MPS): run without MPS or not at all;
 * - `start-failed`: `-d` failed, or the daemon never answered after it (the message has the log's tail);
 * - `already-running`: a daemon already uses these directories (stop it first, or use it);
 * - `not-running`: no daemon answers on the pipe directory (start it);
 * - `unresponsive`: the daemon did not answer a command in time, or answered with an error;
 * - `server-failed`: the daemon answers but its log shows a failed MPS server (a client fault):
 *   the server refuses new clients until its clients exit, so the GPU's workers must go;
 * - `stop-failed`: the daemon outlived `quit`, SIGTERM and SIGKILL.
 */
export type MpsFailure =
  | 'not-installed'
  | 'start-failed'
  | 'already-running'
  | 'not-running'
  | 'unresponsive'
  | 'server-failed'
  | 'stop-failed';
export interface MpsFailed {
  readonly ok: false;
  readonly reason: MpsFailure;
  readonly message: string;
}
export type MpsResult = { readonly ok: true } | MpsFailed;
/** `serverPids`: the MPS servers the daemon runs (none until the first client connects). */
export type MpsHealth = { readonly ok: true; readonly serverPids: readonly number[] } | MpsFailed;
/** How the daemon went: it was not running, it obeyed `quit`, or it had to be killed. */
export type MpsStopResult = { readonly ok: true; readonly how: 'not-running' | 'quit' | 'killed' } | MpsFailed;

// ---------------------------------------------------------------------------------------------
// Pure parts

/** The server pids in what `get_server_list` prints (one a line; anything else is ignored). */
export function parseServerList(stdout: string): number[] {
  return stdout
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => /^\d+$/.test(l))
    .map(Number);
}

/**
 * Lines of control.log or server.log that mean an MPS server failed. The real daemon's wording
 * for a client fault is not documented and has not been seen on a GPU by this project, so this is
 * deliberately broad: a failed/faulted server, a fatal exception, a server exiting non-zero.
 * Benign lines it must not match: "exited with status 0", "Server is not ready, push client to
 * pending list", "User did not send valid credentials".
 */
const SERVER_FAILURE = [
  /\b(fail|failed|failure|fault|faulted|fatal)\b/i,
  /\bexception\b/i,
  /exited with status [1-9]/i,
];

/** The first line of `logText` that says an MPS server failed, or null. */
export function findServerFailure(logText: string): string | null {
  const line = logText.split(/\r?\n/).find((l) => SERVER_FAILURE.some((re) => re.test(l)));
  return line === undefined ? null : line.trim();
}

/** The daemon's pid from its log: the last "[... Control PID] Starting control daemon" line. */
export function daemonPidFromLog(logText: string): number | null {
  const all = [...logText.matchAll(/Control\s+(\d+)\]\s+Starting control daemon/g)];
  const last = all.at(-1);
  return last?.[1] === undefined ? null : Number(last[1]);
}

/** A GPU named by UUID (`GPU-...`, `MIG-...`) rather than by index. */
function isUuid(gpu: string): boolean {
  return /^(GPU|MIG)-/i.test(gpu.trim());
}

/**
 * What a worker (an MPS client) needs in its environment to join the daemon with `pct` percent of
 * the GPU's SMs. CUDA_VISIBLE_DEVICES for one GPU: the daemon exposes its GPU to clients as device 0
 * (NVIDIA: the server remaps the devices it sees), so a client given the daemon's physical index
 * would fail on any GPU but the first. A UUID names the same GPU before and after the remap, and
 * also where the client falls back to running without MPS (no daemon answering), so with a UUID
 * the client gets the UUID and with an index it gets "0". A daemon over several GPUs ("0,1") or all
 * of them (`gpu` undefined) leaves the choice to the caller: no CUDA_VISIBLE_DEVICES.
 * Throws on a share outside (0, 100]: the scheduler never emits one.
 */
export function mpsClientEnv(
  daemon: { readonly pipeDir: string; readonly logDir: string; readonly gpu?: string | undefined },
  pct: number,
): Record<string, string> {
  if (!Number.isFinite(pct) || pct <= 0 || pct > 100)
    throw new RangeError(`CUDA_MPS_ACTIVE_THREAD_PERCENTAGE must be in (0, 100], got ${pct}`);
  const env: Record<string, string> = {
    CUDA_MPS_PIPE_DIRECTORY: daemon.pipeDir,
    CUDA_MPS_LOG_DIRECTORY: daemon.logDir,
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(pct),
  };
  const gpu = daemon.gpu?.trim();
  if (gpu !== undefined && gpu !== '' && !gpu.includes(',')) env.CUDA_VISIBLE_DEVICES = isUuid(gpu) ? gpu : '0';
  return env;
}

/** The wait before restart attempt `failedRestarts + 1`: doubling from `initialMs`, at most `maxMs`. */
export function restartBackoffMs(
  failedRestarts: number,
  backoff: { readonly initialMs?: number; readonly maxMs?: number } = {},
): number {
  const initialMs = backoff.initialMs ?? 200;
  const maxMs = backoff.maxMs ?? 10_000;
  return Math.min(maxMs, initialMs * 2 ** Math.max(0, failedRestarts - 1));
}

// ---------------------------------------------------------------------------------------------
// The daemon

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
        message: `${what} exited with ${String(r.exitCode ?? r.signal)}: ${said.replace(/\s*\n\s*/g, ' | ').slice(0, 300) || '(no output)'}`,
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
        message: `the MPS control socket path ${this.socketPath} is ${Buffer.byteLength(this.socketPath)} bytes, over the ${MAX_SOCKET_PATH_BYTES}-byte limit of a Unix socket: use a shorter state directory`,
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
      message: `the MPS control daemon did not answer within ${this.opts.startTimeoutMs ?? 10_000} ms (${last?.message ?? 'no answer'})${log ? `; control.log: ${log}` : ''}`,
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
        message: `the MPS control daemon on ${this.opts.pipeDir} did not quit (${q.ok ? 'it accepted quit' : q.message}) and its pid is unknown`,
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

// ---------------------------------------------------------------------------------------------
// The supervisor

/** The supervisor's clock, injectable so tests control time. */
export interface SupervisorClock {
  /** Calls `fn` once after `ms`; returns a function that cancels the call. */
  after(ms: number, fn: () => void): () => void;
  /** Resolves after `ms` (the backoff between failed restarts). */
  sleep(ms: number): Promise<void>;
}

export const systemClock: SupervisorClock = {
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
  sleep: (ms) => sleep(ms),
};

export interface MpsSupervisorOptions {
  /** Time between the end of one health check and the start of the next. */
  readonly intervalMs: number;
  /**
   * Called once per detected failure, before the daemon is restarted. The agent stops the GPU's
   * workers here, answering their tasks in flight with errors: clients of a failed server cannot
   * recover, the failed server waits for them to exit, and `quit` waits for them too.
   */
  readonly onFailure?: (why: MpsFailed) => void | Promise<void>;
  /** Called once per failure after the daemon answers again; the agent starts the GPU's workers again. */
  readonly onRecovered: () => void | Promise<void>;
  /** Called after each failed restart, before the backoff (for logs). */
  readonly onRestartFailed?: (why: MpsFailed, failedRestarts: number) => void;
  /** Backoff between failed restarts: doubling from `initialMs` (200 ms) to `maxMs` (10 s). */
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number };
  readonly clock?: SupervisorClock;
}

/** What one check did: nothing to do, a failure recovered, stopped during recovery, or skipped as one was running. */
export type SupervisorCheck = 'healthy' | 'recovered' | 'stopped' | 'busy';

/**
 * Watches one daemon: a health check every `intervalMs` (checks never overlap); on a failure,
 * `onFailure`, then restarts with backoff until one succeeds (or `stop`), then `onRecovered`.
 * Callbacks that throw are bugs and reject the check.
 */
export class MpsSupervisor {
  private readonly clock: SupervisorClock;
  private cancelNext: (() => void) | null = null;
  private running: Promise<SupervisorCheck> | null = null;
  private stopped = false;

  constructor(
    private readonly daemon: Pick<MpsDaemon, 'healthy' | 'restart'>,
    private readonly opts: MpsSupervisorOptions,
  ) {
    this.clock = opts.clock ?? systemClock;
  }

  /** Starts the periodic checks (the first after `intervalMs`). */
  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** No further checks; a recovery in progress ends at its next backoff. See `idle`. */
  stop(): void {
    this.stopped = true;
    this.cancelNext?.();
    this.cancelNext = null;
  }

  /** Resolves when no check is running (after `stop`, before stopping the daemon). */
  async idle(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  /** One health check, with recovery on failure; resolves when done. */
  check(): Promise<SupervisorCheck> {
    if (this.running) return Promise.resolve('busy');
    const run = this.checkOnce().finally(() => {
      this.running = null;
    });
    this.running = run;
    return run;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.cancelNext = this.clock.after(this.opts.intervalMs, () => {
      this.cancelNext = null;
      void this.check().finally(() => this.schedule());
    });
  }

  private async checkOnce(): Promise<SupervisorCheck> {
    const health = await this.daemon.healthy();
    if (health.ok) return 'healthy';
    await this.opts.onFailure?.(health);
    let failedRestarts = 0;
    for (;;) {
      if (this.stopped) return 'stopped';
      const r = await this.daemon.restart();
      if (r.ok) break;
      failedRestarts++;
      this.opts.onRestartFailed?.(r, failedRestarts);
      if (this.stopped) return 'stopped';
      await this.clock.sleep(restartBackoffMs(failedRestarts, this.opts.backoff));
    }
    await this.opts.onRecovered();
    return 'recovered';
  }
}

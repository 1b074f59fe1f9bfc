// The pure parts of MPS control (agent/mps.ts): the daemon's file names and limits, the result types
// with their failure reasons, readers of its answers and logs, the client environment and the restart
// backoff. No process, file or clock here.
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

// MPS control against a stand-in executable that behaves as nvidia-cuda-mps-control does, including
// its failures (test/support/bin/fake-nvidia-cuda-mps-control): a real detached daemon process with a
// Unix control socket, a pid file and a control.log in the directories it is given. The pure parsers
// and the client environment are test/unit/mps.test.ts's.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import {
  MAX_SOCKET_PATH_BYTES,
  MpsDaemon,
  MpsSupervisor,
  type MpsHealth,
  type MpsResult,
  type SupervisorClock,
} from '../../agent/mps.js';
import { REPO_ROOT } from '../support/paths.js';

const FAKE = join(REPO_ROOT, 'test', 'support', 'bin', 'fake-nvidia-cuda-mps-control');
const UUID = 'GPU-3f5a2b1c-9d8e-4f70-a1b2-c3d4e5f60718';

interface Made {
  d: MpsDaemon;
  dir: string;
  pipeDir: string;
  logDir: string;
}
const made: Made[] = [];

/** A daemon on fresh temporary directories (short paths: the socket path limit applies). */
function daemon(
  opts: { timeoutMs?: number; gpu?: string; env?: Record<string, string>; stopTimeoutMs?: number } = {},
): Made {
  const dir = mkdtempSync(join(tmpdir(), 'inss-mps-'));
  const pipeDir = join(dir, 'pipe');
  const logDir = join(dir, 'log');
  const d = new MpsDaemon({
    controlCommand: FAKE,
    pipeDir,
    logDir,
    gpu: opts.gpu ?? UUID,
    timeoutMs: opts.timeoutMs ?? 3000,
    startTimeoutMs: 5000,
    stopTimeoutMs: opts.stopTimeoutMs ?? 3000,
    ...(opts.env ? { env: opts.env } : {}),
  });
  const m = { d, dir, pipeDir, logDir };
  made.push(m);
  return m;
}

/** Every daemon a test started is gone afterwards, whatever state the test left it in. */
async function cleanUp(m: Made): Promise<void> {
  rmSync(join(m.pipeDir, 'hang'), { force: true });
  const pid = m.d.daemonPid();
  await m.d.stop();
  if (pid !== null && alive(pid)) process.kill(pid, 'SIGKILL');
  rmSync(m.dir, { recursive: true, force: true });
}
afterEach(async () => {
  for (const m of made.splice(0)) await cleanUp(m);
});
afterAll(async () => {
  for (const m of made.splice(0)) await cleanUp(m);
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
  } catch {
    return false;
  }
}

/** A command to the daemon as a user would type it (`echo CMD | nvidia-cuda-mps-control`). */
async function control(m: Made, cmd: string): Promise<string> {
  const r = await execa(FAKE, [], {
    input: `${cmd}\n`,
    env: { CUDA_MPS_PIPE_DIRECTORY: m.pipeDir, CUDA_MPS_LOG_DIRECTORY: m.logDir },
    reject: false,
  });
  return `${String(r.stdout)}${String(r.stderr)}`.trim();
}

describe('clientEnv', () => {
  it('gives a worker the pipe, the log, its share, and the GPU by UUID', () => {
    const { d, pipeDir, logDir } = daemon();
    expect(d.clientEnv(40)).toEqual({
      CUDA_MPS_PIPE_DIRECTORY: pipeDir,
      CUDA_MPS_LOG_DIRECTORY: logDir,
      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '40',
      CUDA_VISIBLE_DEVICES: UUID,
    });
    expect(d.clientEnv(12.5).CUDA_MPS_ACTIVE_THREAD_PERCENTAGE).toBe('12.5');
  });
});

describe('MpsDaemon', () => {
  it('starts with its own directories, answers, and stops on quit', async () => {
    const m = daemon();
    expect(await m.d.start()).toEqual({ ok: true });
    expect(existsSync(join(m.pipeDir, 'control'))).toBe(true);
    const pid = m.d.daemonPid();
    expect(pid).not.toBeNull();
    expect(readFileSync(join(m.logDir, 'control.log'), 'utf8')).toMatch(
      new RegExp(`Control ${pid}\\] Starting control daemon using socket ${m.pipeDir}/control`),
    );
    expect(await m.d.healthy()).toEqual({ ok: true, serverPids: [] });
    expect(await control(m, 'fake_client_connect 4321')).toBe('connected');
    const health = await m.d.healthy();
    expect(health.ok && health.serverPids.length).toBe(1);

    expect(await m.d.stop()).toEqual({ ok: true, how: 'quit' });
    expect(existsSync(join(m.pipeDir, 'control'))).toBe(false);
    expect(alive(pid!)).toBe(false);
    expect(await m.d.healthy()).toMatchObject({ ok: false, reason: 'not-running' });
  });

  it('runs the daemon on its GPU in PCI order, without a share of its own', async () => {
    const m = daemon({ env: { CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '30', INSS_TEST_MARK: 'x' } });
    expect((await m.d.start()).ok).toBe(true);
    const environ = Object.fromEntries(
      readFileSync(`/proc/${m.d.daemonPid()!}/environ`, 'utf8')
        .split('\0')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
    expect(environ).toMatchObject({
      CUDA_VISIBLE_DEVICES: UUID,
      CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
      CUDA_MPS_PIPE_DIRECTORY: m.pipeDir,
      CUDA_MPS_LOG_DIRECTORY: m.logDir,
      INSS_TEST_MARK: 'x',
    });
    expect(environ).not.toHaveProperty('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE');
  });

  it('a second start while it runs is already-running, and the first daemon is untouched', async () => {
    const m = daemon();
    expect((await m.d.start()).ok).toBe(true);
    const pid = m.d.daemonPid();
    expect(await m.d.start()).toMatchObject({
      ok: false,
      reason: 'already-running',
      message: /An instance of this daemon is already running/,
    });
    expect(m.d.daemonPid()).toBe(pid);
    expect((await m.d.healthy()).ok).toBe(true);
  });

  it('stop when nothing runs is fine, also where the directories do not exist', async () => {
    const m = daemon();
    expect(await m.d.stop()).toEqual({ ok: true, how: 'not-running' });
    expect((await m.d.start()).ok).toBe(true);
    expect((await m.d.stop()).ok).toBe(true);
    expect(await m.d.stop()).toEqual({ ok: true, how: 'not-running' });
  });

  it('without the executable every operation says not-installed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-mps-'));
    try {
      const d = new MpsDaemon({
        controlCommand: join(REPO_ROOT, 'no-such-mps-control'),
        pipeDir: join(dir, 'pipe'),
        logDir: join(dir, 'log'),
      });
      expect(await d.start()).toMatchObject({
        ok: false,
        reason: 'not-installed',
        message: /no-such-mps-control is not installed/,
      });
      expect(await d.healthy()).toMatchObject({ ok: false, reason: 'not-installed' });
      expect(await d.stop()).toMatchObject({ ok: false, reason: 'not-installed' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a daemon that refuses to start: start-failed with what it said', async () => {
    const m = daemon();
    mkdirSync(m.pipeDir, { recursive: true });
    writeFileSync(join(m.pipeDir, 'refuse-start'), '');
    expect(await m.d.start()).toMatchObject({ ok: false, reason: 'start-failed', message: /Permission denied/ });
  });

  it('a pipe directory too long for a Unix socket is refused before anything runs', async () => {
    const base = mkdtempSync(join(tmpdir(), 'inss-mps-'));
    const pipeDir = join(base, 'p'.repeat(MAX_SOCKET_PATH_BYTES));
    const d = new MpsDaemon({ controlCommand: FAKE, pipeDir, logDir: join(base, 'log') });
    try {
      expect(await d.start()).toMatchObject({ ok: false, reason: 'start-failed', message: /over the 107-byte limit/ });
      expect(existsSync(pipeDir)).toBe(false);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('an unresponsive daemon is detected by the timeout, and stop kills it', async () => {
    const m = daemon();
    expect((await m.d.start()).ok).toBe(true);
    const pid = m.d.daemonPid()!;
    writeFileSync(join(m.pipeDir, 'hang'), '');
    // A second handle on the same daemon with short limits: only the check and the stop are timed, as
    // starting the stand-in (a Node process) can take more than 500 ms on a busy machine.
    const impatient = new MpsDaemon({ ...m.d.opts, timeoutMs: 500, stopTimeoutMs: 500 });
    const t0 = Date.now();
    expect(await impatient.healthy()).toMatchObject({
      ok: false,
      reason: 'unresponsive',
      message: /did not answer within 500 ms/,
    });
    expect(Date.now() - t0).toBeLessThan(4000);
    expect(await impatient.stop()).toEqual({ ok: true, how: 'killed' });
    expect(alive(pid)).toBe(false);
    expect(existsSync(join(m.pipeDir, 'control'))).toBe(false);
  });

  it('a daemon that died is not-running, and a new one reclaims its stale socket', async () => {
    const m = daemon();
    expect((await m.d.start()).ok).toBe(true);
    const pid = m.d.daemonPid()!;
    process.kill(pid, 'SIGKILL');
    await vi.waitFor(() => expect(alive(pid)).toBe(false));
    expect(existsSync(join(m.pipeDir, 'control'))).toBe(true); // stale
    expect(await m.d.healthy()).toMatchObject({ ok: false, reason: 'not-running' });
    expect(await m.d.start()).toEqual({ ok: true });
    expect(m.d.daemonPid()).not.toBe(pid);
  });

  it('a client fault: the server fails, refuses new clients, and a restart clears it', async () => {
    const m = daemon();
    expect((await m.d.start()).ok).toBe(true);
    expect(await control(m, 'fake_client_connect 100')).toBe('connected');
    writeFileSync(join(m.pipeDir, 'fault'), '');
    await vi.waitFor(async () =>
      expect(await m.d.healthy()).toMatchObject({ ok: false, reason: 'server-failed', message: /has failed/ }),
    );
    expect(await control(m, 'fake_client_connect 101')).toMatch(/refused/);
    expect((await m.d.healthy()).ok).toBe(false); // it stays failed
    expect(await m.d.restart()).toEqual({ ok: true });
    expect(existsSync(join(m.pipeDir, 'fault'))).toBe(false);
    expect(await m.d.healthy()).toEqual({ ok: true, serverPids: [] });
    expect(await control(m, 'fake_client_connect 102')).toBe('connected');
  });
});

describe('MpsSupervisor', () => {
  it('a client fault is detected, the daemon restarted, and recovery called once', async () => {
    const m = daemon();
    expect((await m.d.start()).ok).toBe(true);
    const events: string[] = [];
    const s = new MpsSupervisor(m.d, {
      intervalMs: 50,
      onFailure: (why) => void events.push(`failure:${why.reason}`),
      onRecovered: () => void events.push('recovered'),
    });
    s.start();
    await new Promise((r) => setTimeout(r, 300));
    expect(events).toEqual([]);
    const pidBefore = m.d.daemonPid();
    writeFileSync(join(m.pipeDir, 'fault'), '');
    await vi.waitFor(() => expect(events).toContain('recovered'), { timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 500)); // several more checks
    s.stop();
    await s.idle();
    expect(events).toEqual(['failure:server-failed', 'recovered']);
    expect(m.d.daemonPid()).not.toBe(pidBefore);
    expect(await m.d.healthy()).toEqual({ ok: true, serverPids: [] });
  });

  it('restarts with backoff while restarts fail, then recovers once', async () => {
    const healthy: MpsHealth[] = [{ ok: false, reason: 'not-running', message: 'gone' }];
    const restarts: MpsResult[] = [
      { ok: false, reason: 'start-failed', message: 'no' },
      { ok: false, reason: 'start-failed', message: 'no' },
      { ok: true },
    ];
    const events: string[] = [];
    const clock: SupervisorClock = {
      after: () => () => {},
      sleep: (ms) => {
        events.push(`sleep:${ms}`);
        return Promise.resolve();
      },
    };
    const fake = {
      healthy: (): Promise<MpsHealth> => Promise.resolve(healthy.shift() ?? { ok: true, serverPids: [] }),
      restart: () => {
        events.push('restart');
        return Promise.resolve(restarts.shift()!);
      },
    };
    const s = new MpsSupervisor(fake, {
      intervalMs: 1000,
      clock,
      onFailure: (why) => void events.push(`failure:${why.reason}`),
      onRestartFailed: (_why, n) => void events.push(`restart-failed:${n}`),
      onRecovered: () => void events.push('recovered'),
    });
    expect(await s.check()).toBe('recovered');
    expect(events).toEqual([
      'failure:not-running',
      'restart',
      'restart-failed:1',
      'sleep:200',
      'restart',
      'restart-failed:2',
      'sleep:400',
      'restart',
      'recovered',
    ]);
    expect(await s.check()).toBe('healthy');
  });

  it('checks on its clock, never two at once, and not after stop', async () => {
    const pending: (() => void)[] = [];
    const clock: SupervisorClock = {
      after: (_ms, fn) => {
        pending.push(fn);
        return () => pending.splice(pending.indexOf(fn), 1);
      },
      sleep: () => Promise.resolve(),
    };
    let checks = 0;
    let release: () => void = () => {};
    const fake = {
      healthy: async (): Promise<MpsHealth> => {
        checks++;
        await new Promise<void>((r) => (release = r));
        return { ok: true, serverPids: [] };
      },
      restart: () => Promise.resolve({ ok: true } as const),
    };
    const s = new MpsSupervisor(fake, { intervalMs: 1000, clock, onRecovered: () => {} });
    s.start();
    expect(pending).toHaveLength(1);
    pending.shift()!();
    expect(checks).toBe(1);
    expect(await s.check()).toBe('busy'); // one is running
    release();
    await s.idle();
    await vi.waitFor(() => expect(pending).toHaveLength(1)); // the next is scheduled after this one ended
    s.stop();
    expect(pending).toHaveLength(0);
  });
});

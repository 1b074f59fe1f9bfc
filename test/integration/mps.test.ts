// MPS control against a stand-in executable that behaves as nvidia-cuda-mps-control does, including
// its failures (test/support/bin/fake-nvidia-cuda-mps-control). On a GPU it runs the real one.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MpsDaemon, MpsSupervisor } from '../../agent/mps.js';
import { REPO_ROOT } from '../support/paths.js';

const FAKE = join(REPO_ROOT, 'test', 'support', 'bin', 'fake-nvidia-cuda-mps-control');
const daemons: MpsDaemon[] = [];

function daemon(timeoutMs = 2000): { d: MpsDaemon; pipeDir: string; logDir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'inss-mps-'));
  const pipeDir = join(dir, 'pipe');
  const logDir = join(dir, 'log');
  const d = new MpsDaemon({ controlCommand: FAKE, pipeDir, logDir, gpu: '0', timeoutMs });
  daemons.push(d);
  return { d, pipeDir, logDir };
}

afterEach(async () => {
  for (const d of daemons.splice(0)) {
    rmSync(join(d.opts.pipeDir, 'hang'), { force: true });
    await d.stop();
    rmSync(join(d.opts.pipeDir, '..'), { recursive: true, force: true });
  }
});

describe('MpsDaemon', () => {
  it('starts with its own directories, answers, and stops', async () => {
    const { d, logDir } = daemon();
    expect(await d.start()).toEqual({ ok: true });
    expect(await d.healthy()).toEqual({ ok: true });
    expect(readFileSync(join(logDir, 'control.log'), 'utf8')).toMatch(/Startup/);
    expect(await d.stop()).toEqual({ ok: true });
    expect(await d.healthy()).toMatchObject({ ok: false, reason: 'unresponsive' });
  });

  it('a second start while it runs fails with the daemon message', async () => {
    const { d } = daemon();
    expect((await d.start()).ok).toBe(true);
    expect(await d.start()).toMatchObject({ ok: false, reason: 'start-failed', message: /already running/ });
  });

  it('stop when not running is fine; not installed is said so', async () => {
    const { d } = daemon();
    expect(await d.stop()).toEqual({ ok: true });
    const missing = new MpsDaemon({ controlCommand: join(REPO_ROOT, 'no-such-mps-control'), pipeDir: join(tmpdir(), 'x-pipe'), logDir: join(tmpdir(), 'x-log') });
    expect(await missing.start()).toMatchObject({ ok: false, reason: 'not-installed' });
  });

  it('a daemon that refuses to start', async () => {
    const { d, pipeDir } = daemon();
    const { mkdirSync } = await import('node:fs');
    mkdirSync(pipeDir, { recursive: true });
    writeFileSync(join(pipeDir, 'refuse-start'), '');
    expect(await d.start()).toMatchObject({ ok: false, reason: 'start-failed', message: /permission denied/ });
  });

  it('an unresponsive daemon is detected by the timeout', async () => {
    const { d, pipeDir } = daemon(500);
    expect((await d.start()).ok).toBe(true);
    writeFileSync(join(pipeDir, 'hang'), '');
    expect(await d.healthy()).toMatchObject({ ok: false, reason: 'unresponsive' });
  });

  it('clientEnv gives a worker the pipe, the log, the GPU and its share', () => {
    const { d, pipeDir, logDir } = daemon();
    expect(d.clientEnv(40)).toEqual({ CUDA_MPS_PIPE_DIRECTORY: pipeDir, CUDA_MPS_LOG_DIRECTORY: logDir, CUDA_VISIBLE_DEVICES: '0', CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '40' });
  });
});

describe('MpsSupervisor', () => {
  it('a failed server is detected, the daemon restarted, and recovery called once', async () => {
    const { d, pipeDir } = daemon();
    expect((await d.start()).ok).toBe(true);
    const failures: string[] = [];
    let recovered = 0;
    const s = new MpsSupervisor(d, { intervalMs: 60_000, onFailure: (why) => failures.push(why.reason), onRecovered: () => void recovered++ });
    s.start();
    await s.check();
    expect(failures).toEqual([]);
    writeFileSync(join(pipeDir, 'fault'), '');
    await new Promise((r) => setTimeout(r, 100)); // the daemon logs the failed server
    await s.check();
    expect(failures).toEqual(['server-failed']);
    expect(recovered).toBe(1);
    expect(await d.healthy()).toEqual({ ok: true });
    await s.check();
    expect(recovered).toBe(1);
    s.stop();
  });
});

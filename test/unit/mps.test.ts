// The pure parts of MPS control (agent/mps.ts): parsing what nvidia-cuda-mps-control prints and logs,
// the restart backoff, and the environment a worker gets. test/integration/mps.test.ts drives a daemon.
import { describe, expect, it } from 'vitest';
import {
  daemonPidFromLog,
  findServerFailure,
  mpsClientEnv,
  parseServerList,
  restartBackoffMs,
} from '../../agent/mps.js';

describe('the pure parts', () => {
  it('parseServerList reads one pid a line and ignores the rest', () => {
    expect(parseServerList('')).toEqual([]);
    expect(parseServerList('13929\n 14001 \r\nsomething else\n')).toEqual([13929, 14001]);
  });

  it('findServerFailure finds a failed server and passes over what a healthy daemon logs', () => {
    const healthy = [
      '[2013-08-05 12:50:23.347 Control 13894] Starting new server 13929 for user 500',
      '[2013-08-05 12:50:24.870 Control 13894] NEW SERVER 13929: Ready',
      '[2013-08-05 13:02:10.866 Control 13894] NEW CLIENT 19276 from user 500: Server already exists',
      '[2026-05-31 23:48:21.671 Control 11107] NEW CLIENT 11801 from user 1000: ' +
        'Server is not ready, push client to pending list',
      '[2026-05-31 23:48:21.671 Control 11107] User did not send valid credentials',
      '[2013-08-05 13:02:26.226 Control 13894] Server 13929 exited with status 0',
      '[2013-08-05 13:00:09.270 Server 13929] Client 14777 disconnected',
    ].join('\n');
    expect(findServerFailure(healthy)).toBeNull();
    expect(
      findServerFailure(`${healthy}\n[2013-08-05 13:02:26.226 Control 13894] Server 13929 exited with status 1\n`),
    ).toMatch(/status 1$/);
    expect(findServerFailure('[2013-08-06 10:51:31.706 Server 29489] MPS server failed to start')).toMatch(
      /failed to start/,
    );
    expect(findServerFailure('[x Server 1] Client 2 raised a fatal GPU exception')).toMatch(/fatal/);
  });

  it('daemonPidFromLog takes the last start of the daemon', () => {
    const log = [
      '[2026-02-06 09:34:17.770 Control   261] Starting control daemon using socket /p/control',
      '[2026-02-06 09:40:00.000 Control 9001] Starting control daemon using socket /p/control',
    ].join('\n');
    expect(daemonPidFromLog(log)).toBe(9001);
    expect(daemonPidFromLog('nothing')).toBeNull();
  });

  it('restartBackoffMs doubles from 200 ms up to 10 s', () => {
    expect([1, 2, 3, 4, 10].map((n) => restartBackoffMs(n))).toEqual([200, 400, 800, 1600, 10_000]);
    expect(restartBackoffMs(3, { initialMs: 10, maxMs: 25 })).toBe(25);
  });
});

describe('mpsClientEnv', () => {
  it('a daemon given a GPU index shows it to its clients as device 0', () => {
    expect(mpsClientEnv({ pipeDir: '/p', logDir: '/l', gpu: '3' }, 100)).toEqual({
      CUDA_MPS_PIPE_DIRECTORY: '/p',
      CUDA_MPS_LOG_DIRECTORY: '/l',
      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '100',
      CUDA_VISIBLE_DEVICES: '0',
    });
  });

  it('a daemon over several or all GPUs leaves CUDA_VISIBLE_DEVICES to the caller', () => {
    expect(mpsClientEnv({ pipeDir: '/p', logDir: '/l', gpu: '0,1' }, 50)).not.toHaveProperty('CUDA_VISIBLE_DEVICES');
    expect(mpsClientEnv({ pipeDir: '/p', logDir: '/l' }, 50)).not.toHaveProperty('CUDA_VISIBLE_DEVICES');
  });

  it('a share outside (0, 100] is a bug', () => {
    for (const pct of [0, -5, 101, Number.NaN])
      expect(() => mpsClientEnv({ pipeDir: '/p', logDir: '/l' }, pct)).toThrow(RangeError);
  });
});

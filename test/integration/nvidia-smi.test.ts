// queryGpus runs a real executable: a stand-in that prints recorded nvidia-smi outputs and exits
// as nvidia-smi does (test/support/bin/fake-nvidia-smi), and a path where nothing is installed.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { queryGpus } from '../../agent/nvidiaSmi.js';
import { REPO_ROOT } from '../support/paths.js';

const FAKE = join(REPO_ROOT, 'test', 'support', 'bin', 'fake-nvidia-smi');
const run = (env: Record<string, string>, timeoutMs?: number) =>
  queryGpus({ command: FAKE, env, ...(timeoutMs !== undefined ? { timeoutMs } : {}) });

describe('queryGpus', () => {
  it('lists the GPUs of an eight-GPU server', async () => {
    const r = await run({ FAKE_SMI_FIXTURE: 'eight-a100.csv' });
    expect(r.kind).toBe('ok');
    if (r.kind === 'ok') expect(r.gpus.map((g) => g.name)).toEqual(Array<string>(8).fill('NVIDIA A100-SXM4-80GB'));
  });

  it('lists one GPU with its memory and utilisation', async () => {
    expect(await run({ FAKE_SMI_FIXTURE: 'one-h200.csv' })).toEqual({
      kind: 'ok',
      gpus: [
        {
          index: 0,
          uuid: 'GPU-5a1b6c7d-8e9f-0a1b-2c3d-4e5f6a7b8c9d',
          name: 'NVIDIA H200',
          memTotalMb: 143771,
          memUsedMb: 0,
          utilPct: 0,
        },
      ],
    });
  });

  it('a GPU with no utilisation value', async () => {
    expect(await run({ FAKE_SMI_FIXTURE: 'not-available.csv' })).toMatchObject({
      kind: 'ok',
      gpus: [{ utilPct: null }, { utilPct: 0 }],
    });
  });

  it('a machine whose driver is not loaded: no-driver (exit 9)', async () => {
    expect(await run({ FAKE_SMI_FIXTURE: 'no-driver.txt', FAKE_SMI_EXIT: '9' })).toEqual({
      kind: 'no-driver',
      reason:
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. " +
        'Make sure that the latest NVIDIA driver is installed and running.',
    });
  });

  it('a driver with no device: no-driver (exit 6)', async () => {
    expect(await run({ FAKE_SMI_FIXTURE: 'no-devices.txt', FAKE_SMI_EXIT: '6' })).toEqual({
      kind: 'no-driver',
      reason: 'No devices were found',
    });
  });

  it('no nvidia-smi at all: no-driver', async () => {
    expect(await queryGpus({ command: join(REPO_ROOT, 'no-such-nvidia-smi') })).toMatchObject({
      kind: 'no-driver',
      reason: /no-such-nvidia-smi is not installed/,
    });
  });

  it('an nvidia-smi that is not executable: failed', async () => {
    expect(await queryGpus({ command: join(REPO_ROOT, 'package.json') })).toMatchObject({
      kind: 'failed',
      reason: /could not be run: EACCES/,
    });
  });

  it('garbage, a truncated line, a wrong field count: malformed with the line', async () => {
    expect(await run({ FAKE_SMI_FIXTURE: 'garbage.txt' })).toMatchObject({
      kind: 'malformed',
      error: /^line 1: 1 fields/,
    });
    expect(await run({ FAKE_SMI_FIXTURE: 'truncated.csv' })).toMatchObject({
      kind: 'malformed',
      error: /^line 1: 4 fields/,
    });
    expect(await run({ FAKE_SMI_FIXTURE: 'wrong-field-count.csv' })).toMatchObject({
      kind: 'malformed',
      error: /^line 1: 7 fields/,
    });
  });

  it('another non-zero exit: failed, with what nvidia-smi said on stderr', async () => {
    expect(
      await run({
        FAKE_SMI_FIXTURE: 'garbage.txt',
        FAKE_SMI_EXIT: '18',
        FAKE_SMI_STDERR: 'Failed to initialize NVML: Driver/library version mismatch',
      }),
    ).toEqual({
      kind: 'failed',
      reason: `${FAKE} exited with 18: Failed to initialize NVML: Driver/library version mismatch`,
    });
  });

  it('an empty list (exit 0, no line): no-driver', async () => {
    expect(await run({ FAKE_SMI_FIXTURE: 'empty.txt' })).toEqual({ kind: 'no-driver', reason: `${FAKE} lists no GPU` });
  });

  it('a hung nvidia-smi: failed after the timeout', async () => {
    const t0 = Date.now();
    expect(await run({ FAKE_SMI_HANG: '1' }, 500)).toEqual({
      kind: 'failed',
      reason: `${FAKE} did not answer within 500 ms`,
    });
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('a hung nvidia-smi that ignores SIGTERM is killed', async () => {
    expect(await run({ FAKE_SMI_HANG: 'ignore-term' }, 300)).toMatchObject({
      kind: 'failed',
      reason: /did not answer within 300 ms/,
    });
  });
});

describe('inss agent without --simulate', () => {
  it('on a machine without GPUs says so and how to simulate, exit 2', async () => {
    const { runCli } = await import('../support/cli.js');
    const r = await runCli(['agent', '--scheduler', 'ws://127.0.0.1:1', '--token', 't']);
    expect(r.code).toBe(2);
    // This machine has no NVIDIA driver; on one that has, the message lists its GPUs instead.
    expect(r.stderr).toMatch(/--simulate <profile>:<count>/);
  });
});

describe('inss profile measure', () => {
  it('on a machine without an NVIDIA GPU says what is missing, exit 2, and writes nothing', async () => {
    const { runCli } = await import('../support/cli.js');
    const { existsSync } = await import('node:fs');
    const out = join(REPO_ROOT, 'no-such-profile-written.json');
    const r = await runCli(['profile', 'measure', '--id', 'x', '--out', out, '--quiet']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/needs an NVIDIA GPU/);
    expect(existsSync(out)).toBe(false);
  });
});

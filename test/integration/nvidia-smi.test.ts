// queryGpus runs a real executable: a stand-in that behaves as nvidia-smi does (test/support/bin).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { queryGpus } from '../../agent/nvidiaSmi.js';
import { REPO_ROOT } from '../support/paths.js';

const FAKE = join(REPO_ROOT, 'test', 'support', 'bin', 'fake-nvidia-smi');
const run = (env: Record<string, string>, timeoutMs?: number) => queryGpus({ command: FAKE, env: { ...process.env, ...env } as Record<string, string>, ...(timeoutMs ? { timeoutMs } : {}) });

describe('queryGpus', () => {
  it('lists the GPUs of a normal machine', async () => {
    const r = await run({ FAKE_SMI_FIXTURE: 'several.csv' });
    expect(r.kind).toBe('ok');
    if (r.kind === 'ok') expect(r.gpus).toHaveLength(4);
  });
  it('a machine with no driver', async () => {
    expect(await run({ FAKE_SMI_FIXTURE: 'no-driver.txt', FAKE_SMI_EXIT: '9' })).toMatchObject({ kind: 'no-driver', reason: /couldn't communicate/ });
  });
  it('a driver with no device', async () => {
    expect(await run({ FAKE_SMI_FIXTURE: 'no-devices.txt', FAKE_SMI_EXIT: '6' })).toMatchObject({ kind: 'no-driver', reason: /No devices were found/ });
  });
  it('no nvidia-smi at all', async () => {
    expect(await queryGpus({ command: join(REPO_ROOT, 'no-such-nvidia-smi') })).toMatchObject({ kind: 'no-driver', reason: /not installed/ });
  });
  it('garbage output', async () => {
    expect(await run({ FAKE_SMI_FIXTURE: 'garbage.txt' })).toMatchObject({ kind: 'malformed' });
  });
  it('a hung nvidia-smi times out', async () => {
    expect(await run({ FAKE_SMI_HANG: '1', FAKE_SMI_FIXTURE: 'one-h200.csv' }, 1000)).toMatchObject({ kind: 'failed', reason: /did not answer/ });
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

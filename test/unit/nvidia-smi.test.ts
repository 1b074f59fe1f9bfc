import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { matchProfile, parseGpuQuery } from '../../agent/nvidiaSmi.js';
import { REPO_ROOT } from '../support/paths.js';

const fixture = (name: string) => readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'nvidia-smi', name), 'utf8');

describe('parseGpuQuery on recorded nvidia-smi outputs', () => {
  it('one H200', () => {
    expect(parseGpuQuery(fixture('one-h200.csv'))).toEqual({ kind: 'ok', gpus: [{ index: 0, uuid: 'GPU-5a1b6c7d-8e9f-0a1b-2c3d-4e5f6a7b8c9d', name: 'NVIDIA H200', memTotalMb: 143771, memUsedMb: 0, utilPct: 0 }] });
  });

  it('several GPUs of mixed names, CRLF and a trailing blank line', () => {
    const r = parseGpuQuery(fixture('several.csv'));
    expect(r.kind).toBe('ok');
    if (r.kind !== 'ok') return;
    expect(r.gpus.map((g) => [g.index, g.name, g.memUsedMb, g.utilPct])).toEqual([
      [0, 'NVIDIA A100-SXM4-80GB', 4, 0],
      [1, 'NVIDIA A100-SXM4-80GB', 60213, 97],
      [2, 'NVIDIA A100-SXM4-80GB', 4, 0],
      [3, 'NVIDIA GeForce RTX 2060 SUPER', 12, 3],
    ]);
  });

  it('[N/A] utilisation and memory used become null', () => {
    const r = parseGpuQuery(fixture('not-available.csv'));
    expect(r).toMatchObject({ kind: 'ok', gpus: [{ name: 'Tesla V100-SXM2-16GB', memTotalMb: 16160, memUsedMb: null, utilPct: null }] });
  });

  it.each([
    ['truncated.csv', /line 1: 4 fields, expected 6/],
    ['garbage.txt', /line 1: 1 fields/],
    ['duplicate-index.csv', /line 2: GPU index 0 appears twice/],
    ['no-driver.txt', /line 1: 1 fields, expected 6/],
  ])('%s is malformed with a reason', (name, error) => {
    const r = parseGpuQuery(fixture(name));
    expect(r.kind).toBe('malformed');
    if (r.kind === 'malformed') expect(r.error).toMatch(error);
  });

  it('refuses a non-numeric total and an impossible utilisation', () => {
    expect(parseGpuQuery('0, GPU-0a, X, [N/A], 0, 0')).toMatchObject({ kind: 'malformed', error: /memory.total/ });
    expect(parseGpuQuery('0, GPU-0a, X, 100, 0, 140')).toMatchObject({ kind: 'malformed', error: /utilization.gpu/ });
  });
});

describe('matchProfile', () => {
  const profiles = [
    { id: 'rtx2060s', gpuName: 'NVIDIA GeForce RTX 2060 Super' },
    { id: 'rtx2060', gpuName: 'NVIDIA GeForce RTX 2060' },
    { id: 'v100', gpuName: 'NVIDIA Tesla V100-SXM2-16GB' },
  ];
  it('matches by name up to case, spaces and a leading NVIDIA, exactly', () => {
    expect(matchProfile('NVIDIA GeForce RTX 2060 SUPER', profiles)).toBe('rtx2060s');
    expect(matchProfile('NVIDIA GeForce RTX 2060', profiles)).toBe('rtx2060');
    expect(matchProfile('Tesla V100-SXM2-16GB', profiles)).toBe('v100');
    expect(matchProfile('NVIDIA H200', profiles)).toBeNull();
  });
});

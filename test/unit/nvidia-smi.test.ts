// The nvidia-smi parser and profile matching on recorded outputs (test/fixtures/nvidia-smi/).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  GPU_QUERY_ARGS,
  matchProfile,
  normaliseGpuName,
  parseGpuQuery,
  type GpuQueryResult,
  type SmiGpu,
} from '../../agent/nvidiaSmi.js';
import { REPO_ROOT } from '../support/paths.js';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'nvidia-smi');
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');

function gpusOf(r: GpuQueryResult): readonly SmiGpu[] {
  if (r.kind !== 'ok') throw new Error(`expected ok, got ${r.error}`);
  return r.gpus;
}

describe('the nvidia-smi command', () => {
  it('asks for exactly the fields the parser reads, as CSV without header or units', () => {
    expect(GPU_QUERY_ARGS).toEqual([
      '--query-gpu=index,uuid,name,memory.total,memory.used,utilization.gpu',
      '--format=csv,noheader,nounits',
    ]);
  });
});

describe('parseGpuQuery on recorded nvidia-smi outputs', () => {
  it('one H200', () => {
    expect(parseGpuQuery(fixture('one-h200.csv'))).toEqual({
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

  it('one H100 (a name with spaces)', () => {
    expect(gpusOf(parseGpuQuery(fixture('one-h100.csv')))).toEqual([
      {
        index: 0,
        uuid: 'GPU-7c9e6a2f-3b1d-4e8a-9f0c-5d2e1a3b4c6d',
        name: 'NVIDIA H100 80GB HBM3',
        memTotalMb: 81559,
        memUsedMb: 0,
        utilPct: 0,
      },
    ]);
  });

  it('eight A100s of a DGX, idle and busy', () => {
    const gpus = gpusOf(parseGpuQuery(fixture('eight-a100.csv')));
    expect(gpus.map((g) => g.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(new Set(gpus.map((g) => g.name))).toEqual(new Set(['NVIDIA A100-SXM4-80GB']));
    expect(new Set(gpus.map((g) => g.uuid)).size).toBe(8);
    expect(gpus.map((g) => [g.memUsedMb, g.utilPct])).toEqual([
      [4, 0],
      [60213, 97],
      [4, 0],
      [31337, 42],
      [4, 0],
      [78011, 100],
      [4, 0],
      [12, 3],
    ]);
  });

  it('mixed names, CRLF, extra spaces around commas and a trailing blank line', () => {
    const gpus = gpusOf(parseGpuQuery(fixture('several.csv')));
    expect(gpus.map((g) => [g.index, g.name, g.memTotalMb, g.memUsedMb, g.utilPct])).toEqual([
      [0, 'Tesla V100-SXM2-16GB', 16384, 0, 0],
      [1, 'NVIDIA GeForce RTX 2060 SUPER', 8192, 1320, 57],
      [2, 'NVIDIA GeForce RTX 2060', 6144, 5, 0],
      [3, 'NVIDIA A100-PCIE-40GB', 40960, 3, 0],
    ]);
  });

  it('[N/A] utilisation (a GPU in MIG mode) becomes null, the other GPU keeps its numbers', () => {
    const gpus = gpusOf(parseGpuQuery(fixture('not-available.csv')));
    expect(gpus.map((g) => [g.memUsedMb, g.utilPct])).toEqual([
      [37, null],
      [5, 0],
    ]);
  });

  it('the GPU of the stand-in agent test: an RTX 2060 SUPER', () => {
    expect(gpusOf(parseGpuQuery(fixture('rtx2060s.csv')))).toMatchObject([
      { index: 0, name: 'NVIDIA GeForce RTX 2060 SUPER', memUsedMb: 12, utilPct: 3 },
    ]);
  });

  it.each([
    ['truncated.csv', /^line 1: 4 fields, expected 6/],
    ['wrong-field-count.csv', /^line 1: 7 fields, expected 6/],
    ['garbage.txt', /^line 1: 1 fields, expected 6 .*Segmentation fault/],
    ['duplicate-index.csv', /^line 2: index 0 appears twice/],
    ['no-driver.txt', /^line 1: 1 fields, expected 6/],
    ['no-devices.txt', /^line 1: 1 fields, expected 6/],
  ])('%s is malformed, naming the line and what is wrong', (name, error) => {
    const r = parseGpuQuery(fixture(name));
    expect(r.kind).toBe('malformed');
    if (r.kind === 'malformed') expect(r.error).toMatch(error);
  });

  it('every recorded output has a test above', () => {
    expect(readdirSync(FIXTURES).sort()).toEqual(
      [
        'duplicate-index.csv',
        'eight-a100.csv',
        'empty.txt',
        'garbage.txt',
        'no-devices.txt',
        'no-driver.txt',
        'not-available.csv',
        'one-h100.csv',
        'one-h200.csv',
        'rtx2060s.csv',
        'several.csv',
        'truncated.csv',
        'wrong-field-count.csv',
      ].sort(),
    );
  });

  const UUID = 'GPU-5a1b6c7d-8e9f-0a1b-2c3d-4e5f6a7b8c9d';
  it.each([
    [`0, ${UUID}, X, [N/A], 0, 0`, /line 1: memory.total '\[N\/A\]'/],
    [`0, ${UUID}, X, 0, 0, 0`, /memory.total '0'/],
    [`0, ${UUID}, X, 80GB, 0, 0`, /memory.total '80GB'/],
    [`0, ${UUID}, X, 100, lots, 0`, /memory.used 'lots'/],
    [`0, ${UUID}, X, 100, 0, 140`, /utilization.gpu '140'/],
    [`0, ${UUID}, X, 100, 0, -1`, /utilization.gpu '-1'/],
    [`one, ${UUID}, X, 100, 0, 0`, /index 'one'/],
    [`0, 5a1b6c7d, X, 100, 0, 0`, /uuid '5a1b6c7d'/],
    [`0, ${UUID}, , 100, 0, 0`, /name ''/],
    [`\n\n0, ${UUID}, X, 100, 0`, /^line 3: 5 fields/],
  ])('refuses %j', (line, error) => {
    expect(parseGpuQuery(line)).toMatchObject({ kind: 'malformed', error });
  });

  it('[Not Supported] and other bracketed markers mean no value where a value may be missing', () => {
    expect(gpusOf(parseGpuQuery(`0, ${UUID}, X, 100, [Not Supported], [Unknown Error]`))).toMatchObject([
      { memUsedMb: null, utilPct: null },
    ]);
  });

  it('sorts by index and reads an empty output as no GPU', () => {
    expect(gpusOf(parseGpuQuery(`1, ${UUID}1, B, 100, 0, 0\n0, ${UUID}, A, 100, 0, 0\n`)).map((g) => g.name)).toEqual([
      'A',
      'B',
    ]);
    expect(parseGpuQuery(fixture('empty.txt'))).toEqual({ kind: 'ok', gpus: [] });
    expect(parseGpuQuery('\r\n\n')).toEqual({ kind: 'ok', gpus: [] });
  });
});

describe('matchProfile', () => {
  // The names of the built-in profiles (profiles/*.json, gpu.name).
  const builtIn = ['rtx2060', 'rtx2060s', 'v100'].map((id) => ({
    id,
    gpuName: (JSON.parse(readFileSync(join(REPO_ROOT, 'profiles', `${id}.json`), 'utf8')) as { gpu: { name: string } })
      .gpu.name,
  }));

  it('the built-in profiles are named as the test below assumes', () => {
    expect(builtIn.map((p) => p.gpuName)).toEqual([
      'NVIDIA GeForce RTX 2060',
      'NVIDIA GeForce RTX 2060 Super',
      'NVIDIA Tesla V100-SXM2-16GB',
    ]);
  });

  it.each([
    ['NVIDIA GeForce RTX 2060 SUPER', 'rtx2060s'],
    ['NVIDIA GeForce RTX 2060', 'rtx2060'],
    ['Tesla V100-SXM2-16GB', 'v100'],
    ['NVIDIA Tesla V100-SXM2-16GB', 'v100'],
    ['  nvidia   geforce rtx 2060  super ', 'rtx2060s'],
    ['NVIDIA GeForce RTX 2060 SUPER (Max-Q)', null],
    ['NVIDIA GeForce RTX 2060 12GB', null],
    ['Tesla V100-SXM2-32GB', null],
    ['Tesla V100', null],
    ['NVIDIA H200', null],
    ['', null],
  ])('%j takes profile %j (exact match after normalising)', (name, id) => {
    expect(matchProfile(name, builtIn)).toBe(id);
  });

  it('the first of two matching profiles wins', () => {
    expect(
      matchProfile('NVIDIA H100 80GB HBM3', [
        { id: 'h100-measured', gpuName: 'NVIDIA H100 80GB HBM3' },
        { id: 'h100-derived', gpuName: 'H100 80GB HBM3' },
      ]),
    ).toBe('h100-measured');
  });

  it('normalises only case, spaces and a leading NVIDIA', () => {
    expect(normaliseGpuName(' NVIDIA  GeForce RTX 2060 SUPER ')).toBe('geforce rtx 2060 super');
    expect(normaliseGpuName('Tesla V100-SXM2-16GB')).toBe('tesla v100-sxm2-16gb');
    expect(normaliseGpuName('NVIDIAX')).toBe('nvidiax');
  });
});

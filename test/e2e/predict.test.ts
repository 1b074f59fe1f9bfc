// `inss predict` driven as a user would: JSON lines on stdin, one answer line each on stdout.
import { describe, expect, it } from 'vitest';
import { LatencyModel } from '../../src/model/predictor.js';
import { loadProfile } from '../../cli/profiles.js';
import { runCli } from '../support/cli.js';

describe('inss predict', () => {
  it('answers every line in order, errors on their own lines, and exits non-zero at the end', async () => {
    const lines = [
      '{"models":[{"model":"resnet50","batch":8,"pct":60},{"model":"vgg19","batch":8,"pct":40}]}',
      '{"models":[{"model":"nosuchnet","batch":1,"pct":50}]}',
      '{"models":[{"model":"resnet50","batch":1,"pct":0}]}',
      '{"models":[{"model":"resnet50","batch":1,"pct":120}]}',
      '{"models":[{"model":"resnet50","batch":1,"pct":60},{"model":"vgg19","batch":1,"pct":50}]}',
      '{"models":[{"model":"resnet50","batch":0,"pct":50}]}',
      '{"models":[{"model":"resnet50"',
      '',
      '{"models":[{"model":"alexnet","batch":4,"pct":100}]}',
    ];
    const r = await runCli(['predict', '--profile', 'v100'], lines.join('\n') + '\n');
    expect(r.code).toBe(1);
    const out = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { latencyMs?: number[]; throughputPerS?: number[]; error?: string });
    expect(out).toHaveLength(8); // the blank line is skipped
    const model = LatencyModel.compile(loadProfile('v100'));
    const expected = model.predict([
      { model: 'resnet50', batch: 8, pct: 60 },
      { model: 'vgg19', batch: 8, pct: 40 },
    ]);
    expect(out[0]!.latencyMs![0]).toBeCloseTo(expected.latencyMs[0]!, 5);
    expect(out[0]!.latencyMs![1]).toBeCloseTo(expected.latencyMs[1]!, 5);
    expect(out[0]!.throughputPerS![0]).toBeCloseTo(expected.throughputPerS[0]!, 3);
    expect(out[1]!.error).toMatch(/unknown model 'nosuchnet'/);
    expect(out[2]!.error).toMatch(/pct: must be in \(0, 100\]/);
    expect(out[3]!.error).toMatch(/pct: must be in \(0, 100\]/);
    expect(out[4]!.error).toMatch(/sum to 110%/);
    expect(out[5]!.error).toMatch(/batch: must be an integer >= 1/);
    expect(out[6]!.error).toMatch(/malformed JSON/);
    expect(out[7]!.latencyMs).toHaveLength(1);
  });

  it('exits 0 when every line is good', async () => {
    const r = await runCli(['predict', '--profile', 'v100'], '{"models":[{"model":"ssd","batch":2,"pct":50}]}\n');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout) as unknown).toMatchObject({
      latencyMs: [expect.any(Number)],
      throughputPerS: [expect.any(Number)],
    });
  });

  it('rejects an unknown profile with a clear message and status 2', async () => {
    const r = await runCli(['predict', '--profile', 'nosuchgpu'], '');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown profile 'nosuchgpu'.*built in: .*v100/);
  });

  it('rejects a profile file that fails validation, naming the field', async () => {
    const r = await runCli(['predict', '--profile', 'package.json'], '');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/package.json: invalid profile: .*schemaVersion/);
  });

  it('has --help on every subcommand', async () => {
    for (const args of [
      ['--help'],
      ['predict', '--help'],
      ['profile', '--help'],
      ['profile', 'fit', '--help'],
      ['profile', 'list', '--help'],
      ['profile', 'show', '--help'],
    ]) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/Usage: inss/);
    }
  });
});

describe('inss profile fit', () => {
  it('fits the V100 profile from the shared data and reports its errors', async () => {
    const out = `/tmp/inss-test-v100-${process.pid}.json`;
    const r = await runCli([
      'profile',
      'fit',
      '--igniter-dir',
      'data/v100',
      '--id',
      'v100',
      '--kind',
      'fitted',
      '--out',
      out,
    ]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/LWR leave-one-out error: mean \d\.\d+%/);
    expect(r.stderr).toMatch(/co-located runs \(72 latencies\)/);
    const p = loadProfile(out);
    expect(p.provenance.command).toContain('inss profile fit --igniter-dir');
  });

  it('refuses to run without a source of measurements', async () => {
    const r = await runCli(['profile', 'fit', '--id', 'x', '--out', '/tmp/x.json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/exactly one of --measurements and --igniter-dir/);
  });

  it('rejects a measurement file with a bad field, naming it', async () => {
    const { writeFileSync } = await import('node:fs');
    const f = `/tmp/inss-test-meas-${process.pid}.json`;
    writeFileSync(
      f,
      JSON.stringify({
        format: 'inss-measurements/1',
        gpu: { name: 'g', smCount: 0, memMb: 1, l2Mb: 1, pcieBytesPerMs: 1, mpsUnitPct: 5 },
        models: {},
        solo: [],
      }),
    );
    const r = await runCli(['profile', 'fit', '--measurements', f, '--id', 'x', '--out', '/tmp/x.json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/gpu\.smCount/);
  });
});

// `inss bench` as a user runs it.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

interface BenchJson {
  scenario: string;
  results: {
    policy: string;
    throughputPerS: number;
    goodputPerS: number;
    sloViolationPct: number;
    dropPct: number;
    p99Ms: number;
    decisionMsP99: number;
    arrivals: number;
    served: number;
    dropped: number;
    unfinished: number;
  }[];
  skipped: { policy: string; reason: string }[];
}

const stable = (j: BenchJson) => j.results.map(({ decisionMsP99: _d, ...r }) => ({ ...r, wallMs: undefined }));

describe('inss bench', () => {
  it(
    'runs every registered policy on paper-6 (side by side on worker threads) and prints JSON with the promised ' +
      'fields and plots',
    async () => {
      const out = mkdtempSync(join(tmpdir(), 'inss-bench-'));
      const first = await runCli(['bench', '--scenario', 'paper-6', '--json', '--jobs', '2', '--out', out]);
      expect(first.code, first.stderr).toBe(0);
      const a = JSON.parse(first.stdout) as BenchJson;
      expect(a.scenario).toBe('paper-6');
      expect(a.results.length + a.skipped.length).toBeGreaterThanOrEqual(3);
      for (const r of a.results) {
        for (const key of [
          'throughputPerS',
          'goodputPerS',
          'sloViolationPct',
          'dropPct',
          'p99Ms',
          'decisionMsP99',
        ] as const)
          expect(typeof r[key], key).toBe('number');
        expect(typeof r.policy).toBe('string');
        expect(r.arrivals).toBe(r.served + r.dropped + r.unfinished); // nothing lost
      }
      expect(readFileSync(join(out, 'throughput.svg'), 'utf8')).toMatch(/^<svg/);
      expect(readFileSync(join(out, 'slo-violations.svg'), 'utf8')).toMatch(/^<svg/);
    },
    180_000,
  );

  it('the same seed gives the same numbers, in this process (--jobs 1) and on worker threads (--jobs 2)', async () => {
    const args = ['bench', '--scenario', 'paper-6', '--policies', 'inss,timeshare', '--json'];
    const [here, threads] = await Promise.all([runCli([...args, '--jobs', '1']), runCli([...args, '--jobs', '2'])]);
    expect(here.code, here.stderr).toBe(0);
    expect(threads.code, threads.stderr).toBe(0);
    const a = JSON.parse(here.stdout) as BenchJson;
    expect(a.results.map((r) => r.policy)).toEqual(['inss', 'timeshare']);
    expect(a.results[0]!.arrivals).toBeGreaterThan(0);
    expect(stable(JSON.parse(threads.stdout) as BenchJson)).toEqual(stable(a));
  }, 180_000);

  it(
    '--suite: scenarios x seeds x policies on the load grid, one table, inss running where no policy is shipped, ' +
      'JSON and plots, a progress line per cell',
    async () => {
      const out = mkdtempSync(join(tmpdir(), 'inss-suite-'));
      const r = await runCli([
        'bench',
        '--suite',
        'v100-2-tight',
        '--policies',
        'inss,inss-paper,static-even,igniter-h',
        '--seeds',
        '1,2',
        '--grid',
        '0.5:1:0.5',
        '--jobs',
        '1',
        '--skip-unsupported',
        '--out',
        out,
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(
        /\| scenario \| inss \| inss-paper \| static-even \| igniter-h \| inss \/ best other \|/,
      );
      expect(r.stdout).toMatch(/\| v100-2-tight \| [\d.]+( \([\d.-]+\))? \| n\/r \| [\d.]+/);
      expect(r.stderr.split('\n').filter((l) => /^\[\d+\/8\] v100-2-tight /.test(l))).toHaveLength(8);
      const j = JSON.parse(readFileSync(join(out, 'suite.json'), 'utf8')) as {
        cells: { policy: string; runnable: boolean; reason?: string; note?: string; curve: { loadScale: number }[] }[];
      };
      expect(j.cells).toHaveLength(8);
      for (const c of j.cells.filter((x) => x.policy === 'inss-paper'))
        expect(c.reason).toMatch(/needs a trained policy/);
      for (const c of j.cells.filter((x) => x.policy === 'inss')) expect(c.note).toMatch(/model-based planner/);
      for (const c of j.cells.filter((x) => x.policy !== 'inss-paper')) expect(c.curve[0]!.loadScale).toBe(0.5);
      expect(readFileSync(join(out, 'v100-2-tight-violation-vs-load.svg'), 'utf8')).toMatch(/^<svg/);
    },
    180_000,
  );

  it(
    '--suite --timeshare-gpu both: the suite under each pooled-GPU mode, each in its own folder; both is for ' +
      'suites only',
    async () => {
      const out = mkdtempSync(join(tmpdir(), 'inss-suite-both-'));
      const r = await runCli([
        'bench',
        '--suite',
        'v100-2-tight',
        '--policies',
        'timeshare',
        '--seeds',
        '1',
        '--grid',
        '0.5:0.5:0.5',
        '--jobs',
        '1',
        '--timeshare-gpu',
        'both',
        '--out',
        out,
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(
        /## Pooled GPUs overlap[\s\S]*\| v100-2-tight \|[\s\S]*## Pooled GPUs serial[\s\S]*\| v100-2-tight \|/,
      );
      for (const mode of ['overlap', 'serial']) {
        const j = JSON.parse(readFileSync(join(out, mode, 'suite.json'), 'utf8')) as {
          suite: { timeshareGpu: string };
          cells: unknown[];
        };
        expect(j.suite.timeshareGpu).toBe(mode);
        expect(j.cells).toHaveLength(1);
      }
      const alone = await runCli([
        'bench',
        '--scenario',
        'v100-2-tight',
        '--policies',
        'timeshare',
        '--timeshare-gpu',
        'both',
      ]);
      expect(alone.code).toBe(2);
      expect(alone.stderr).toMatch(/--timeshare-gpu both: only with --suite/);
      const bad = await runCli(['bench', '--scenario', 'v100-2-tight', '--timeshare-gpu', 'mps']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--timeshare-gpu: must be overlap, serial or both \(with --suite\), got 'mps'/);
    },
    180_000,
  );

  it(
    'a policy that cannot run is an error naming it and why (exit 2), in the suite and alone, unless ' +
      '--skip-unsupported',
    async () => {
      const suite = await runCli([
        'bench',
        '--suite',
        'v100-2-tight',
        '--policies',
        'inss-paper,static-even',
        '--seeds',
        '1',
        '--grid',
        '0.5:0.5:0.5',
        '--jobs',
        '1',
      ]);
      expect(suite.code).toBe(2);
      expect(suite.stderr).toMatch(
        /inss-paper cannot run on scenario v100-2-tight: .*needs a trained policy.*--skip-unsupported/,
      );
      const one = await runCli(['bench', '--scenario', 'v100-2-tight', '--policies', 'inss-paper,static-even']);
      expect(one.code).toBe(2);
      expect(one.stdout).toBe('');
      const skipped = await runCli([
        'bench',
        '--scenario',
        'v100-2-tight',
        '--policies',
        'inss-paper,static-even',
        '--skip-unsupported',
        '--json',
      ]);
      expect(skipped.code, skipped.stderr).toBe(0);
      const j = JSON.parse(skipped.stdout) as BenchJson;
      expect(j.skipped.map((x) => x.policy)).toEqual(['inss-paper']);
      expect(skipped.stderr).toMatch(/inss-paper: skipped: .*needs a trained policy/);
    },
    120_000,
  );

  it(
    'runs inss on a scenario it has never seen (a file passed by path, no policy shipped for it) with the ' +
      'model-based planner',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'inss-unseen-'));
      const f = join(dir, 'unseen.json');
      const model = (name: string, sloMs: number, ratePerS: number) => ({
        name,
        sloMs,
        arrival: { process: 'gamma', cv: 2 },
        rate: { kind: 'constant', ratePerS },
      });
      writeFileSync(
        f,
        JSON.stringify({
          name: 'unseen-3',
          gpus: [
            { profile: 'rtx2060s', count: 1 },
            { profile: 'rtx2060', count: 2 },
          ],
          models: [model('resnet18', 30, 200), model('vgg19', 200, 40), model('mobilenet', 45, 300)],
          durationS: 20,
          seed: 4,
        }),
      );
      const r = await runCli(['bench', '--scenario', f, '--policies', 'inss,timeshare', '--json']);
      expect(r.code, r.stderr).toBe(0);
      const j = JSON.parse(r.stdout) as BenchJson & { results: { note?: string }[] };
      expect(j.skipped).toEqual([]);
      expect(j.results.map((x) => x.policy)).toEqual(['inss', 'timeshare']);
      expect(j.results[0]!.note).toMatch(/model-based planner/);
      expect(j.results[0]!.served).toBeGreaterThan(0);
      expect(j.results[0]!.arrivals).toBe(j.results[0]!.served + j.results[0]!.dropped + j.results[0]!.unfinished);
    },
    120_000,
  );

  it(
    'profileModel: one network served under two names runs in the simulator; the live scheduler refuses it with ' +
      'the reason',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'inss-alias-'));
      const f = join(dir, 'alias.json');
      const rate = { kind: 'constant', ratePerS: 100 };
      writeFileSync(
        f,
        JSON.stringify({
          name: 'alias-2',
          gpus: [{ profile: 'v100', count: 2 }],
          models: [
            { name: 'resnet50', sloMs: 40, rate },
            { name: 'resnet50-batch', profileModel: 'resnet50', sloMs: 200, rate },
          ],
          durationS: 10,
        }),
      );
      const r = await runCli(['bench', '--scenario', f, '--policies', 'inss,timeshare', '--json']);
      expect(r.code, r.stderr).toBe(0);
      const j = JSON.parse(r.stdout) as BenchJson & { results: { served: number }[] };
      expect(j.results.every((x) => x.served > 0)).toBe(true);
      const live = await runCli(['scheduler', '--scenario', f, '--port', '0']);
      expect(live.code).not.toBe(0);
      expect(live.stderr).toMatch(/models\[1\]\.profileModel: live workers load a model by its name; .*shareTiers/);
    },
    120_000,
  );

  it('prints a table by default', async () => {
    const r = await runCli(['bench', '--scenario', 'v100-4', '--policies', 'static-even']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/policy\s+thr\/s\s+goodput\/s\s+SLO viol%/);
    expect(r.stdout).toMatch(/^static-even\s+\d/m);
  });

  it('rejects a bad scenario file before running anything, naming each field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-scn-'));
    const f = join(dir, 'bad.json');
    writeFileSync(
      f,
      JSON.stringify({
        name: 'bad',
        gpus: [{ profile: 'v100', count: 0 }],
        models: [{ name: 'alexnet', sloMs: -5, rate: { kind: 'constant', ratePerS: 1 } }],
        durationS: 10,
      }),
    );
    const r = await runCli(['bench', '--scenario', f]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/gpus\.0\.count/);
    expect(r.stderr).toMatch(/models\.0\.sloMs/);
    expect(r.stdout).toBe('');
  });

  it('runs inss at an attainment target under its label, and rejects a target out of range', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-target-'));
    const f = join(dir, 'short.json');
    writeFileSync(
      f,
      JSON.stringify({
        name: 'short',
        gpus: [{ profile: 'v100', count: 1 }],
        models: [{ name: 'alexnet', sloMs: 20, rate: { kind: 'constant', ratePerS: 200 } }],
        durationS: 5,
        attainmentTarget: 0.97,
      }),
    );
    const r = await runCli(['bench', '--scenario', f, '--policies', 'inss,static-even', '--attainment-target', '0.95']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^inss@95\s+\d/m);
    expect(r.stdout).toMatch(/^static-even\s+\d/m);
    const label = await runCli(['bench', '--scenario', f, '--policies', 'inss@99', '--json']);
    expect(label.code, label.stderr).toBe(0);
    expect((JSON.parse(label.stdout) as BenchJson).results.map((x) => x.policy)).toEqual(['inss@99']);
    const flag = await runCli(['bench', '--scenario', f, '--attainment-target', '1']);
    expect(flag.code).not.toBe(0);
    expect(flag.stderr).toMatch(/--attainment-target.*\(0\.5, 1\)/);
    writeFileSync(f, JSON.stringify({ ...JSON.parse(readFileSync(f, 'utf8')), attainmentTarget: 1.5 }));
    const field = await runCli(['bench', '--scenario', f]);
    expect(field.code).toBe(2);
    expect(field.stderr).toMatch(/attainmentTarget/);
  });

  it('rejects an unknown policy or scenario by name', async () => {
    const p = await runCli(['bench', '--scenario', 'v100-4', '--policies', 'nosuch']);
    expect(p.code).toBe(2);
    expect(p.stderr).toMatch(/unknown policy 'nosuch' \(known: .*static-even/);
    const s = await runCli(['bench', '--scenario', 'nosuch']);
    expect(s.code).toBe(2);
    expect(s.stderr).toMatch(/unknown scenario 'nosuch' \(built in: .*paper-6/);
  });
});

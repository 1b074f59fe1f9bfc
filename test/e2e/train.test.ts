// A short `inss train` run as part of the tests (long runs are benchmarks): files, resume, the
// SQLite record, and the trained policy used by `inss bench`.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { PolicyFileSchema } from '../../rl/policyFile.js';
import { runCli } from '../support/cli.js';

const small = JSON.stringify({ hidden: [16, 16], batchSize: 16, learningStarts: 16 });

describe('inss train', () => {
  it('trains, checkpoints, resumes, records each run, and the policy runs in bench', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-train-'));
    const out = join(dir, 'run');
    const state = join(dir, 'state');
    const args = [
      'train',
      '--scenario',
      'v100-4',
      '--steps',
      '20',
      '--settings',
      small,
      '--out',
      out,
      '--state-dir',
      state,
      '--quiet',
      '--checkpoint-every',
      '1',
    ];
    const a = await runCli([...args, '--episodes', '2']);
    expect(a.code, a.stderr).toBe(0);
    for (const f of [
      'checkpoint.json',
      'curves.csv',
      'reward.svg',
      'throughput.svg',
      'slo-violation.svg',
      'policy.json',
    ])
      expect(existsSync(join(out, f)), f).toBe(true);
    const csv = readFileSync(join(out, 'curves.csv'), 'utf8').trim().split('\n');
    expect(csv[0]).toBe('episode,reward,throughput_per_s,slo_violation_pct,alpha,entropy,loss_q,loss_actor,seconds');
    expect(csv).toHaveLength(3);

    const b = await runCli([...args, '--episodes', '3', '--resume']);
    expect(b.code, b.stderr).toBe(0);
    expect(readFileSync(join(out, 'curves.csv'), 'utf8').trim().split('\n')).toHaveLength(4);
    const policy = PolicyFileSchema.parse(JSON.parse(readFileSync(join(out, 'policy.json'), 'utf8')));
    expect(policy.trainedWith.episodes).toBe(3);

    const db = new Database(join(state, 'inss.db'), { readonly: true });
    const runs = db.prepare('SELECT status, episodes_done FROM training_runs ORDER BY id').all();
    db.close();
    expect(runs).toEqual([
      { status: 'finished', episodes_done: 2 },
      { status: 'finished', episodes_done: 3 },
    ]);

    const bench = await runCli([
      'bench',
      '--scenario',
      'v100-4',
      '--policies',
      'inss,inss-ni',
      '--policy-file',
      join(out, 'policy.json'),
      '--json',
    ]);
    expect(bench.code, bench.stderr).toBe(0);
    const res = JSON.parse(bench.stdout) as { results: { policy: string }[] };
    expect(res.results.map((r) => r.policy)).toEqual(['inss', 'inss-ni']);
  }, 120_000);

  it('rejects bad settings before training, naming the field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-train-'));
    const r = await runCli([
      'train',
      '--scenario',
      'v100-4',
      '--episodes',
      '1',
      '--settings',
      '{"gamma": 2}',
      '--out',
      join(dir, 'o'),
      '--state-dir',
      dir,
      '--quiet',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/gamma/);
    const resume = await runCli([
      'train',
      '--scenario',
      'v100-4',
      '--resume',
      '--out',
      join(dir, 'none'),
      '--state-dir',
      dir,
      '--quiet',
    ]);
    expect(resume.code).toBe(2);
    expect(resume.stderr).toMatch(/no checkpoint/);
  });
});

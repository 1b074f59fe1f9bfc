// `inss bench --suite ... --ceiling-only` as a user runs it: the ceilings alone, no policy run; flags checked.
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

interface CeilingJson {
  seeds: number[];
  timeshareGpu: string;
  ceilings: { scenario: string; ceiling: Record<string, { mean: number; n: number }> | null; reason?: string }[];
}

describe('inss bench --ceiling-only', () => {
  it('prints each scenario ceiling at 99% and 95% over the seeds, serial below overlap', async () => {
    const args = ['bench', '--suite', 'v100-2-tight,mix-5', '--ceiling-only', '--seeds', '1,2', '--json'];
    const [overlap, serial] = await Promise.all([
      runCli([...args, '--timeshare-gpu', 'overlap']),
      runCli([...args, '--timeshare-gpu', 'serial']),
    ]);
    expect(overlap.code, overlap.stderr).toBe(0);
    expect(serial.code, serial.stderr).toBe(0);
    const o = JSON.parse(overlap.stdout) as CeilingJson;
    const s = JSON.parse(serial.stdout) as CeilingJson;
    expect(o.ceilings.map((c) => c.scenario)).toEqual(['v100-2-tight', 'mix-5']);
    o.ceilings.forEach((c, i) => {
      const ser = s.ceilings[i]!.ceiling!;
      expect(c.ceiling!['99']!.n).toBe(2);
      expect(ser['95']!.mean).toBeGreaterThan(ser['99']!.mean);
      expect(c.ceiling!['99']!.mean).toBeGreaterThanOrEqual(ser['99']!.mean);
    });
  }, 120_000);

  it('is an error without --suite or beside a flag that runs policies (exit 2, naming the flag)', async () => {
    const alone = await runCli(['bench', '--scenario', 'mix-5', '--ceiling-only']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--ceiling-only: only with --suite/);
    const policies = await runCli(['bench', '--suite', 'mix-5', '--ceiling-only', '--policies', 'inss']);
    expect(policies.code).toBe(2);
    expect(policies.stderr).toMatch(/--policies: not with --ceiling-only/);
  }, 60_000);
});

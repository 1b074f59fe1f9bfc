// Long jobs speak in logs: `inss train` with its stderr piped (not a terminal) prints one progress line
// per episode, no bar and no terminal control codes. (`inss bench --suite`'s line per cell is checked
// in bench.test.ts; `inss profile measure` needs a GPU and uses the same reporter, cli/progress.ts.)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

it('inss train prints one line per episode when stderr is a pipe', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'inss-progress-'));
  try {
    const settings = JSON.stringify({ hidden: [16, 16], batchSize: 16, learningStarts: 16 });
    const r = await runCli([
      'train',
      '--scenario',
      'v100-4',
      '--steps',
      '10',
      '--episodes',
      '3',
      '--settings',
      settings,
      '--out',
      join(dir, 'run'),
      '--state-dir',
      dir,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/\x1b\[|\r/); // eslint-disable-line no-control-regex
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('['));
    expect(lines).toHaveLength(3);
    lines.forEach((l, i) => {
      const n = i + 1;
      expect(l).toMatch(
        new RegExp(
          `^\\[${n}/3\\] episode ${n}: reward -?\\d+ \\| thr \\d+/s \\| SLO viol [\\d.]+% \\| [\\d.]+ s ` +
            `\\(\\d+ (s|min \\d+ s) elapsed, (about .+ left|done)\\)$`,
        ),
      );
    });
    expect(lines[2]).toMatch(/, done\)$/);
    expect(r.stderr).toContain('trained 3 episodes');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);

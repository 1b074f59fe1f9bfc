// `inss scheduler` serves a name that runs another's network only as a shared SLO tier (src/serving/tiers.ts):
// with --share-tiers, as a tier of the served model named as the network whose SLO is the tightest; otherwise
// it refuses the scenario, naming the field. Real process.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { writeScenario } from '../support/scenario.js';
import { startInss, stopAll, waitFor } from '../support/system.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-tiers-'));
const tiers = (name: string, fastSloMs: number) =>
  writeScenario(join(dir, `${name}.json`), {
    name,
    gpus: { rtx2060s: 1 },
    models: [
      { name: 'mobilenet', sloMs: fastSloMs, ratePerS: 20 },
      { name: 'mobilenet-bulk', profileModel: 'mobilenet', sloMs: 300, ratePerS: 40 },
    ],
  });
const good = tiers('tiers', 60);
const looseLead = tiers('loose-lead', 500);

afterEach(stopAll);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the scheduler and SLO tiers of one network', () => {
  it('refuses a tier without --share-tiers, and one whose network-named model is not the tightest', async () => {
    for (const [file, args] of [
      [good, []],
      [looseLead, ['--share-tiers']],
    ] as const) {
      const r = await runCli(['scheduler', '--port', '0', '--scenario', file, ...args]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/models\[1\]\.profileModel: .*--share-tiers.*tightest/);
    }
  });

  it('serves both names with --share-tiers', async () => {
    const s = startInss([
      'scheduler',
      '--port',
      '0',
      '--scenario',
      good,
      '--share-tiers',
      '--state-dir',
      mkdtempSync(join(dir, 'state-')),
      '--token',
      't',
      '--log-level',
      'warn',
    ]);
    const base = await waitFor(s, /endpoint (http:\/\/[^ ]+)\/v2/);
    for (const name of ['mobilenet', 'mobilenet-bulk']) {
      const r = await fetch(`${base}/v2/models/${name}`);
      expect(r.status).toBe(200);
    }
  });
});

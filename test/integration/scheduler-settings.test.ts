// `inss scheduler` runs by the scenario's epoch and monitor window, as the simulator does
// (src/serving/settings.ts); --epoch-ms and --monitor-window-ms override them, validated. Real process.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { writeScenario } from '../support/scenario.js';
import { startInss, stopAll, waitFor } from '../support/system.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-settings-'));
const scenarioFile = writeScenario(join(dir, 'half.json'), {
  name: 'half',
  description: 'one model, a 0.5 s epoch and a 2 s monitor window',
  gpus: { rtx2060s: 1 },
  models: [{ name: 'resnet50', sloMs: 80, ratePerS: 20 }],
  epochS: 0.5,
  monitorWindowS: 2,
});

afterEach(stopAll);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function settingsOf(args: string[]): Promise<unknown> {
  const s = startInss([
    'scheduler',
    '--port',
    '0',
    '--scenario',
    scenarioFile,
    '--state-dir',
    mkdtempSync(join(dir, 'state-')),
    '--token',
    't',
    '--policy',
    'static-even',
    '--log-level',
    'warn',
    ...args,
  ]);
  const base = await waitFor(s, /endpoint (http:\/\/[^ ]+)\/v2/);
  return ((await (await fetch(`${base}/v2/inss/cluster`)).json()) as { settings: unknown }).settings;
}

describe('the scheduler takes its epoch and monitor window from the scenario', () => {
  it('by default, and from the flags when given', async () => {
    expect(await settingsOf([])).toEqual({
      epochMs: 500,
      monitorWindowMs: 2000,
      dispatchSlack: 0.1,
      monitor: 'mean',
      pooledPrediction: 'running',
    });
    expect(await settingsOf(['--monitor-window-ms', '4000'])).toEqual({
      epochMs: 500,
      monitorWindowMs: 4000,
      dispatchSlack: 0.1,
      monitor: 'mean',
      pooledPrediction: 'running',
    });
    expect(await settingsOf(['--monitor', 'envelope'])).toMatchObject({ monitor: 'envelope' });
    expect(await settingsOf(['--pooled-prediction', 'solo'])).toMatchObject({ pooledPrediction: 'solo' });
  });

  it('refuses a flag that is not a positive whole number of ms', async () => {
    const r = await runCli(['scheduler', '--port', '0', '--scenario', scenarioFile, '--epoch-ms', '0']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--epoch-ms/);
    const m = await runCli(['scheduler', '--port', '0', '--scenario', scenarioFile, '--monitor', 'peak']);
    expect(m.code).not.toBe(0);
    expect(m.stderr).toMatch(/--monitor.*mean or envelope/);
    const p = await runCli(['scheduler', '--port', '0', '--scenario', scenarioFile, '--pooled-prediction', 'peak']);
    expect(p.code).not.toBe(0);
    expect(p.stderr).toMatch(/--pooled-prediction.*solo or running/);
  });
});

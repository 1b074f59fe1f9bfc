// The dashboard in a real browser: `inss up` (simulated GPUs, the igniter policy, which re-plans shares
// from the measured rates), Debian's Chromium driven by playwright-core, and `inss loadgen` stepping the
// load so the policy gives a model a larger share: the page must show the running system's GPUs and
// models, then the shadow swap and the new share as they happen, with no console error.
// Set INSS_DASHBOARD_SCREENSHOTS=docs/img to save the screenshots docs/dashboard.md shows.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInss, startUp, stopAll } from '../support/system.js';
import { type ScenarioSpec, writeScenario } from '../support/scenario.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SHOTS = process.env.INSS_DASHBOARD_SCREENSHOTS ? resolve(process.env.INSS_DASHBOARD_SCREENSHOTS) : null;

// Two simulated GPUs and three models at a low planned rate: few worker processes on a loaded machine.
const SCENARIO: ScenarioSpec = {
  name: 'dashboard-test',
  description: 'The dashboard browser test: two GPUs, three models, a low planned rate.',
  gpus: { rtx2060s: 1, rtx2060: 1 },
  models: [
    { name: 'alexnet', sloMs: 40, ratePerS: 5 },
    { name: 'resnet50', sloMs: 100, ratePerS: 5 },
    { name: 'mobilenet', sloMs: 60, ratePerS: 5 },
  ],
  durationS: 60,
  swapS: 3,
};

interface Cluster {
  gpus: { index: number }[];
  workers: { workerId: string; model: string; gpu: number; pct: number; role: string }[];
}

const HAVE_CHROMIUM = existsSync(CHROMIUM);
const SKIPPED = ` (skipped: ${CHROMIUM} is absent; install Debian's package chromium: apt-get install chromium)`;

describe.skipIf(!HAVE_CHROMIUM)(`the dashboard in headless Chromium${HAVE_CHROMIUM ? '' : SKIPPED}`, () => {
  const state = mkdtempSync(join(tmpdir(), 'inss-dash-'));
  let base = '';
  let browser: Browser;
  let page: Page;
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    const scenario = writeScenario(join(state, 'scenario.json'), SCENARIO);
    ({ base } = await startUp(state, ['--scenario', scenario, '--policy', 'igniter']));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await stopAll();
    rmSync(state, { recursive: true, force: true });
  });

  it('shows the GPUs, models, workers and agent of the running system, without console errors', async () => {
    await page.goto(`${base}/dashboard`);
    // The page counts its updates on <body data-updates> (a string expression: this runs in the page).
    await page.waitForFunction('Number(document.body.dataset.updates ?? 0) >= 2', undefined, { timeout: 30_000 });
    const cluster = (await (await fetch(`${base}/v2/inss/cluster`)).json()) as Cluster;
    expect(await page.locator('#gpus .gpu[data-gpu]').count()).toBe(cluster.gpus.length);
    for (const m of SCENARIO.models)
      await expect(page.locator(`#models tr[data-model="${m.name}"]`).count()).resolves.toBe(1);
    // Every model has a share on a GPU bar, as the scheduler has it placed.
    for (const m of SCENARIO.models)
      await expect(page.locator(`#gpus .seg[data-model="${m.name}"]`).count()).resolves.toBeGreaterThan(0);
    await expect(page.locator('#agents tr[data-agent="local"]').textContent()).resolves.toContain('connected');
    const shownWorkers = await page.locator('#workers tr[data-worker]').count();
    expect(shownWorkers).toBeGreaterThan(0);
    // uPlot drew its charts (one canvas each).
    expect(await page.locator('#charts .chart canvas').count()).toBe(4);
    expect(consoleErrors).toEqual([]);
  }, 40_000);

  it('serves its assets from the package and refuses a bad query with a message naming it', async () => {
    const uplot = await fetch(`${base}/dashboard/vendor/uPlot.iife.min.js`);
    expect(uplot.headers.get('content-type')).toMatch(/javascript/);
    expect(
      Buffer.from(await uplot.arrayBuffer()).equals(
        readFileSync(createRequire(import.meta.url).resolve('uplot/dist/uPlot.iife.min.js')),
      ),
    ).toBe(true);
    expect((await fetch(`${base}/dashboard/nope.js`)).status).toBe(404);
    const unknown = await fetch(`${base}/v2/inss/dashboard?sinc=1`);
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: string }).error).toBe('unknown query parameter sinc (known: since)');
    const notNumber = await fetch(`${base}/v2/inss/dashboard?since=yesterday`);
    expect(notNumber.status).toBe(400);
    expect(((await notNumber.json()) as { error: string }).error).toMatch(/^since: expected a number/);
    // `since` answers only the samples after it.
    type View = { series: { t: number[] } };
    const full = (await (await fetch(`${base}/v2/inss/dashboard`)).json()) as View;
    expect(full.series.t.length).toBeGreaterThan(1);
    const cut = full.series.t[full.series.t.length - 2]!;
    const since = (await (await fetch(`${base}/v2/inss/dashboard?since=${cut}`)).json()) as View;
    expect(since.series.t.length).toBeGreaterThanOrEqual(1);
    expect(since.series.t.every((t) => t > cut)).toBe(true);
  });

  it('shows a shadow swap and the new share as they happen under a load step', async () => {
    // The step: resnet50 from nothing to 60 requests/s; igniter sizes its share from the measured rate,
    // so it re-plans, and the new worker takes over from the old one when it is ready.
    const load = startInss([
      'loadgen',
      '--url',
      base,
      '--model',
      'resnet50=60',
      '--duration',
      '120',
      '--json',
      '--timeout',
      '5000',
    ]);
    const swap = page.locator('#events tr[data-kind="swap"][data-model="resnet50"]').first();
    await swap.waitFor({ timeout: 60_000 });
    const text = (await swap.textContent()) ?? '';
    const m = /(w\d+) -> (w\d+), GPU \d+(?: -> GPU \d+)?, share (\d+(?:\.\d+)?)% -> (\d+(?:\.\d+)?)%/.exec(text);
    expect(m, `the swap row names the workers and the old and new share: ${text}`).not.toBeNull();
    const [, oldWorker, newWorker, oldPct, newPct] = m!;
    expect(newPct).not.toBe(oldPct);
    // In the same update, the GPU bar shows the new worker serving with its share, the old one gone.
    await expect(page.locator(`#gpus .seg[data-worker="${newWorker}"]`).getAttribute('data-pct')).resolves.toBe(newPct);
    expect(await page.locator(`#gpus .seg[data-worker="${oldWorker}"][data-role="active"]`).count()).toBe(0);
    // The decision that caused it is on the timeline too.
    expect(await page.locator('#events tr[data-kind="plan"][data-models~="resnet50"]').count()).toBeGreaterThan(0);
    if (SHOTS) {
      mkdirSync(SHOTS, { recursive: true });
      await page.waitForTimeout(3000); // a few more points on the charts
      await page.screenshot({ path: join(SHOTS, 'dashboard-loaded.png'), fullPage: true });
      await page.locator('#gpus-section').screenshot({ path: join(SHOTS, 'dashboard-gpus.png') });
    }
    // The load was real: the page shows resnet50's measured arrival rate (column 4 of the models table).
    const rate = Number(await page.locator('#models tr[data-model="resnet50"] td:nth-child(4)').textContent());
    expect(rate).toBeGreaterThan(10);
    load.child.kill('SIGKILL');
    expect(consoleErrors).toEqual([]);
  }, 120_000);
});

// `inss up` as a user runs it from the README: it prints the endpoint, the README's curl request gets
// an answer, `inss loadgen` gets every request answered, and Ctrl-C (SIGINT) shuts everything down.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { modelOffset } from '../../src/serving/standIn.js';
import { runCli } from '../support/cli.js';
import { startInss, stopAll, waitFor, waitHttp200 } from '../support/system.js';

const state = mkdtempSync(join(tmpdir(), 'inss-up-'));
afterAll(async () => {
  await stopAll();
  rmSync(state, { recursive: true, force: true });
});

it('inss up serves the README request, loadgen gets every answer, and SIGINT stops it cleanly', async () => {
  const up = startInss(['up', '--port', '0', '--state-dir', state, '--log-level', 'warn']);
  const base = await waitFor(up, /endpoint (http:\/\/[^ ]+)\/v2/);
  await waitHttp200(`${base}/v2/health/ready`);
  // The README's request: one all-zero image as JSON.
  const body = JSON.stringify({ inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', data: new Array(150528).fill(0) }] });
  // Its 2.3 MB of JSON takes tens of ms to parse, counted in resnet50's 80 ms SLO (from the request's
  // arrival): on a busy machine the scheduler may answer it 503, dropped at its SLO. Only such an
  // answer is retried, a few times.
  const readme = () => execFileSync('curl', ['-s', '-X', 'POST', `${base}/v2/models/resnet50/infer`, '-H', 'Content-Type: application/json', '-d', '@-'], { input: body }).toString();
  let out = readme();
  for (let i = 0; i < 5 && (JSON.parse(out) as { reason?: string }).reason === 'slo'; i++) out = readme();
  const answer = JSON.parse(out) as { model_name: string; outputs: { name: string; shape: number[]; data: number[] }[] };
  expect(answer.model_name).toBe('resnet50');
  expect(answer.outputs[0]!.shape).toEqual([1, 1000]);
  // The simulated worker's stand-in for resnet50 (src/serving/standIn.ts): 0 + 0 + the model's offset.
  expect(answer.outputs[0]!.data.every((v) => v === modelOffset('resnet50'))).toBe(true);

  const lg = await runCli(['loadgen', '--url', base, '--model', 'resnet50=20', '--model', 'vgg16=10', '--duration', '3', '--json']);
  expect(lg.code).toBe(0);
  const report = JSON.parse(lg.stdout) as { total: { sent: number; ok: number; errors: Record<string, number> } };
  expect(report.total.sent).toBeGreaterThan(50);
  // Every request was answered: a result or an HTTP error the server chose (no network failures).
  expect(report.total.errors.network).toBe(0);
  expect(report.total.ok).toBeGreaterThan(0.8 * report.total.sent);

  up.child.kill('SIGINT');
  const exit = await up.exited;
  expect(exit.code, up.stderr.slice(-3000)).toBe(0);
  expect(up.stderr).toContain('SIGINT: shutting down');
});

it('inss up --data-path tcp sends batches to its workers over loopback TCP', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'inss-up-tcp-'));
  const scenario = join(import.meta.dirname, '..', '..', 'benchmarks', 'scenarios', 'system-one.json');
  const up = startInss(['up', '--port', '0', '--state-dir', dir, '--scenario', scenario, '--policy', 'static-even', '--zero-time', '--data-path', 'tcp', '--log-level', 'warn']);
  const base = await waitFor(up, /endpoint (http:\/\/[^ ]+)\/v2/);
  await waitHttp200(`${base}/v2/health/ready`);
  // The worker's data socket is on loopback, and the scheduler connected to it.
  let data: string | null = null;
  for (let i = 0; i < 600 && data === null; i++) {
    const ws = ((await (await fetch(`${base}/v2/inss/cluster`)).json()) as { workers: { data: string | null }[] }).workers;
    data = ws.find((w) => w.data !== null)?.data ?? null;
    if (data === null) await new Promise((r) => setTimeout(r, 100));
  }
  expect(data).toMatch(/^tcp:127\.0\.0\.1:\d+$/);
  const lg = await runCli(['loadgen', '--url', base, '--model', 'resnet50=20', '--duration', '2', '--json']);
  const report = JSON.parse(lg.stdout) as { total: { sent: number; ok: number; errors: Record<string, number> } };
  expect(report.total.errors.network).toBe(0);
  expect(report.total.ok).toBeGreaterThan(0.8 * report.total.sent);
  up.child.kill('SIGINT');
  expect((await up.exited).code, up.stderr.slice(-3000)).toBe(0);
  rmSync(dir, { recursive: true, force: true });
});

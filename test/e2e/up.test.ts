// `inss up` as a user runs it from the README: it prints the endpoint, the README's curl request gets
// an answer, `inss loadgen` gets every request answered, and Ctrl-C (SIGINT) shuts everything down;
// batches over TCP; with and without the shared-memory region.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { modelOffset } from '../../src/serving/standIn.js';
import { loadShmAddon } from '../../src/protocol/shmMap.js';
import { runCli } from '../support/cli.js';
import { writeScenario } from '../support/scenario.js';
import {
  binaryInferRequest,
  simForward,
  startInss,
  stopAll,
  waitFor,
  waitHttp200,
  startUp,
} from '../support/system.js';

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
  const body = JSON.stringify({
    inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', data: new Array(150528).fill(0) }],
  });
  // Its 2.3 MB of JSON takes tens of ms to parse, counted in resnet50's 80 ms SLO (from the request's
  // arrival): on a busy machine the scheduler may answer it 503, dropped at its SLO. Only such an
  // answer is retried, a few times.
  const readme = () =>
    execFileSync(
      'curl',
      ['-s', '-X', 'POST', `${base}/v2/models/resnet50/infer`, '-H', 'Content-Type: application/json', '-d', '@-'],
      { input: body },
    ).toString();
  let out = readme();
  for (let i = 0; i < 5 && (JSON.parse(out) as { reason?: string }).reason === 'slo'; i++) out = readme();
  const answer = JSON.parse(out) as {
    model_name: string;
    outputs: { name: string; shape: number[]; data: number[] }[];
  };
  expect(answer.model_name).toBe('resnet50');
  expect(answer.outputs[0]!.shape).toEqual([1, 1000]);
  // The simulated worker's stand-in for resnet50 (src/serving/standIn.ts): 0 + 0 + the model's offset.
  expect(answer.outputs[0]!.data.every((v) => v === modelOffset('resnet50'))).toBe(true);

  const lg = await runCli([
    'loadgen',
    '--url',
    base,
    '--model',
    'resnet50=20',
    '--model',
    'vgg16=10',
    '--duration',
    '3',
    '--json',
  ]);
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

it(
  'inss up --data-path tcp sends batches to its workers over loopback TCP; --pooled-gpu reaches the scheduler as ' +
    "each GPU's mode",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-up-tcp-'));
    const scenario = join(import.meta.dirname, '..', '..', 'benchmarks', 'scenarios', 'system-one.json');
    const { up, base } = await startUp(dir, [
      '--scenario',
      scenario,
      '--policy',
      'static-even',
      '--zero-time',
      '--data-path',
      'tcp',
      '--pooled-gpu',
      'serial',
    ]);
    // The local agent reported its simulated GPUs as serial, and the policy's cluster carries it.
    const view = (await (await fetch(`${base}/v2/inss/cluster`)).json()) as {
      agents: { gpus: { pooled: string }[] }[];
      gpus: { pooled: string }[];
    };
    expect(view.agents.flatMap((a) => a.gpus.map((g) => g.pooled))).toEqual(view.gpus.map(() => 'serial'));
    expect(view.gpus.length).toBeGreaterThan(0);
    // The worker's data socket is on loopback, and the scheduler connected to it.
    let data: string | null = null;
    for (let i = 0; i < 600 && data === null; i++) {
      const ws = ((await (await fetch(`${base}/v2/inss/cluster`)).json()) as { workers: { data: string | null }[] })
        .workers;
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
  },
);

/** A metric's value from /metrics (0 when absent). */
async function metric(base: string, series: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

// Shared memory (docs/serving.md "Shared memory between the scheduler and its workers"): with a region,
// binary request bodies are read into its slots and reach the worker as descriptors; with --shm-mb 0
// they go as bytes. Either way every request gets one answer, its own model's for its own input.
it('inss up refuses an --shm-mb that is not a whole number of MB from 0 to 16384', async () => {
  for (const bad of ['-1', '1.5', '16385', 'lots']) {
    const r = await runCli(['up', '--shm-mb', bad, '--port', '0', '--state-dir', state]);
    expect(r.code, bad).not.toBe(0);
    expect(r.stderr).toMatch(/--shm-mb <n>.* is invalid\. must be an integer from 0 \(off\) to 16384/);
  }
});

// Without the addon (not built here), the region cannot be made and --shm-mb 16 sends bytes too.
const addon = loadShmAddon();
it.each([
  { flag: '16', shmMb: 16, byDescriptor: addon.ok },
  { flag: '0', shmMb: 0, byDescriptor: false },
])(
  'inss up --shm-mb $flag: every binary request answered once, by its own model, batches by descriptor: $byDescriptor',
  async ({ shmMb, byDescriptor }) => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-up-shm-'));
    const scenario = writeScenario(join(dir, 'duo.json'), {
      name: 'duo',
      gpus: { rtx2060s: 1 },
      models: [
        { name: 'resnet50', sloMs: 2000, ratePerS: 20 },
        { name: 'mobilenet', sloMs: 2000, ratePerS: 20 },
      ],
    });
    const { up, base } = await startUp(dir, [
      '--scenario',
      scenario,
      '--policy',
      'static-even',
      '--zero-time',
      '--shm-mb',
      String(shmMb),
    ]);
    const regions = () => readdirSync('/dev/shm').filter((n) => n.startsWith(`inss-${up.child.pid}-`));
    expect(regions()).toHaveLength(byDescriptor ? 1 : 0);
    // Both workers connected on their Unix sockets (descriptors only go there).
    for (let i = 0; i < 600; i++) {
      const ws = (
        (await (await fetch(`${base}/v2/inss/cluster`)).json()) as { workers: { state: string; data: string | null }[] }
      ).workers;
      if (ws.length === 2 && ws.every((w) => w.state === 'ready' && w.data?.startsWith('unix:'))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const one = (k: number) => {
      const model = k % 2 === 0 ? 'resnet50' : 'mobilenet';
      const x = new Float32Array(3 * 224 * 224).map((_, i) => ((i * 13 + k * 7) % 101) / 101);
      const req = binaryInferRequest(x);
      return new Promise<{ model: string; x: Float32Array; status: number; out: Float32Array | null }>(
        (resolve, reject) => {
          const r = http.request(
            `${base}/v2/models/${model}/infer`,
            { method: 'POST', agent, headers: { ...req.headers, 'content-length': String(req.body.length) } },
            (res) => {
              const parts: Buffer[] = [];
              res.on('data', (d: Buffer) => parts.push(d));
              res.on('end', () => {
                const body = Buffer.concat(parts);
                const bin =
                  res.statusCode === 200 ? body.subarray(Number(res.headers['inference-header-content-length'])) : null;
                resolve({
                  model,
                  x,
                  status: res.statusCode ?? 0,
                  out: bin ? new Float32Array(bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.length)) : null,
                });
              });
            },
          );
          r.on('error', reject);
          r.end(req.body);
        },
      );
    };
    // 160 requests, 16 at a time: batches of several bodies, slots taken and freed many times over.
    const answers = [];
    for (let wave = 0; wave < 10; wave++)
      answers.push(...(await Promise.all(Array.from({ length: 16 }, (_, i) => one(wave * 16 + i)))));
    agent.destroy();
    expect(answers.map((a) => a.status).filter((s) => s !== 200)).toEqual([]);
    for (const a of answers) expect(Array.from(a.out!), a.model).toEqual(Array.from(simForward(a.x, a.model)));
    const shm = await metric(base, 'inss_direct_samples_total{path="shm"}');
    const socket = await metric(base, 'inss_direct_samples_total{path="socket"}');
    if (byDescriptor) {
      // (The first batches may go as bytes, before a worker has answered its attach.)
      expect(shm).toBeGreaterThan(100);
      // Every slot freed once its task was answered and its exchange ended.
      let held = -1;
      for (let i = 0; i < 100 && held !== 0; i++) {
        held = await metric(base, 'inss_shm_slots_in_use');
        if (held !== 0) await new Promise((r) => setTimeout(r, 50));
      }
      expect(held).toBe(0);
    } else {
      expect([shm, socket >= 160]).toEqual([0, true]);
    }
    const made = regions().map((n) => join('/dev/shm', n));
    up.child.kill('SIGINT');
    expect((await up.exited).code, up.stderr.slice(-3000)).toBe(0);
    // The region is unlinked when the scheduler stops.
    for (const f of made) expect(existsSync(f)).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  },
);

// Worker identity across a scheduler restart (issue 13, item 3; issue 15's chaos list): `inss scheduler`
// is SIGKILLed under load while `inss agent` keeps its workers running, and restarted with the same
// state directory and port and ANOTHER policy. The restarted scheduler adopts the running workers by
// what they are (model, GPU, share, generation), never by id alone, and every answer afterwards names
// and comes from its own model: the simulated worker's output depends on its model
// (src/serving/standIn.ts), and each worker process the scheduler lists runs the model, GPU and share it lists.
// Real processes throughout: the scheduler, the agent, the simulated workers, a real SQLite file.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Rng } from '../../src/workload/random.js';
import { binaryInferRequest, type Running, simForward, startInss, stopAll, waitFor, waitHttp200 } from '../support/system.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-restart-'));
const scenarioFile = join(dir, 'duo2.json');
const MODELS = ['resnet50', 'mobilenet', 'resnet18'] as const;
writeFileSync(
  scenarioFile,
  JSON.stringify({
    name: 'duo2',
    description: 'three models on two simulated RTX 2060 Super',
    gpus: [{ profile: 'rtx2060s', count: 2 }],
    models: MODELS.map((name) => ({ name, sloMs: 150, arrival: { process: 'poisson' }, rate: { kind: 'constant', ratePerS: 20 } })),
    durationS: 10,
    epochS: 1,
    swapS: 1,
    monitorWindowS: 3,
    seed: 1,
  }),
);

afterEach(stopAll);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Answer {
  readonly model: string;
  readonly sentMs: number;
  /** 0: no HTTP answer (connection refused while the scheduler was down). */
  readonly status: number;
  readonly named?: string;
  readonly output?: Float32Array;
  readonly input: Float32Array;
  readonly reason?: string;
}

const INPUTS = Array.from({ length: 6 }, (_, i) => new Float32Array(3 * 224 * 224).map((_, k) => ((k * 13 + i * 7) % 101) / 101));
const REQUESTS = INPUTS.map((x) => binaryInferRequest(x));

function infer(base: string, model: string, i: number, agent: http.Agent, t0: number): Promise<Answer> {
  const req = REQUESTS[i % REQUESTS.length]!;
  const input = INPUTS[i % INPUTS.length]!;
  const sentMs = performance.now() - t0;
  return new Promise((resolve) => {
    const r = http.request(`${base}/v2/models/${model}/infer`, { method: 'POST', agent, headers: { ...req.headers, 'content-length': String(req.body.length) } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        const body = Buffer.concat(parts);
        if (res.statusCode !== 200) {
          resolve({ model, sentMs, status: res.statusCode ?? 0, input, reason: (JSON.parse(body.toString()) as { reason?: string }).reason ?? 'none' });
          return;
        }
        const h = Number(res.headers['inference-header-content-length']);
        const header = JSON.parse(body.subarray(0, h).toString()) as { model_name: string };
        const bin = body.subarray(h);
        resolve({ model, sentMs, status: 200, input, named: header.model_name, output: new Float32Array(bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.length)) });
      });
    });
    r.on('error', () => resolve({ model, sentMs, status: 0, input }));
    r.end(req.body);
  });
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

type ClusterWorker = { workerId: string; generation: number; model: string; gpu: number; pct: number; state: string; role: string; pid: number | null };

async function readyWorkers(base: string): Promise<ClusterWorker[]> {
  const c = (await (await fetch(`${base}/v2/inss/cluster`)).json()) as { workers: ClusterWorker[] };
  return c.workers.filter((w) => w.state === 'ready' && w.pid !== null);
}

/** What a worker process runs: its --model and --pct arguments and its GPU (CUDA_VISIBLE_DEVICES), read from /proc. */
function processIdentity(pid: number): string {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  const gpu = env.find((e) => e.startsWith('CUDA_VISIBLE_DEVICES='))?.split('=')[1];
  return `${argv[argv.indexOf('--model') + 1]} on GPU ${gpu} at ${argv[argv.indexOf('--pct') + 1]}%`;
}

describe('SIGKILL of the scheduler under load, restarted with another policy', () => {
  it('adopts the running workers by what they are; every answer afterwards names and comes from its own model', async () => {
    const port = await freePort();
    const stateDir = mkdtempSync(join(dir, 'state-'));
    const schedulerArgs = (policy: string) => ['scheduler', '--port', String(port), '--scenario', scenarioFile, '--policy', policy, '--state-dir', stateDir, '--token', 'tok', '--log-level', 'warn'];
    let sched: Running = startInss(schedulerArgs('timeshare'));
    const base = await waitFor(sched, /endpoint (http:\/\/[^ ]+)\/v2/);
    startInss(['agent', '--scheduler', `ws://127.0.0.1:${port}`, '--token', 'tok', '--simulate', 'rtx2060s:2', '--agent-id', 'a1', '--log-level', 'warn']);
    await waitHttp200(`${base}/v2/health/ready`, 60_000);
    const before = await readyWorkers(base);
    expect(before.length).toBeGreaterThanOrEqual(MODELS.length);

    // Open-loop Poisson load, 4 tasks/s per model, from before the kill until 2 s after the restarted
    // scheduler has settled (every worker it lists ready and active: adopted ones kept or replaced);
    // the scheduler is SIGKILLed at 2 s and started again 0.5 s after it died.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const rng = new Rng(5);
    const t0 = performance.now();
    const pending: Promise<Answer>[] = [];
    let restartedAtMs = Infinity;
    let settledAtMs = Infinity;
    const restart = (async () => {
      await new Promise((r) => setTimeout(r, 2000));
      sched.child.kill('SIGKILL');
      await sched.exited;
      await new Promise((r) => setTimeout(r, 500));
      sched = startInss(schedulerArgs('static-even'));
      await waitFor(sched, /endpoint (http:\/\/[^ ]+)\/v2/, 60_000);
      restartedAtMs = performance.now() - t0;
      for (;;) {
        const c = (await (await fetch(`${base}/v2/inss/cluster`)).json()) as { workers: ClusterWorker[] };
        if (c.workers.length >= MODELS.length && c.workers.every((w) => w.state === 'ready' && w.role === 'active')) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      settledAtMs = performance.now() - t0;
    })();
    let t = 0;
    for (let i = 0; t < settledAtMs + 2000; i++) {
      t += (rng.exponential() / (4 * MODELS.length)) * 1000;
      const wait = t - (performance.now() - t0);
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      pending.push(infer(base, MODELS[i % MODELS.length]!, i, agent, t0));
    }
    await restart;
    const answers = await Promise.all(pending);
    agent.destroy();
    expect(restartedAtMs).toBeLessThan(Infinity);

    const after = answers.filter((a) => a.sentMs >= restartedAtMs);
    const byReason: Record<string, number> = {};
    for (const a of answers.filter((x) => x.status !== 200)) byReason[a.reason ?? `status ${a.status}`] = (byReason[a.reason ?? `status ${a.status}`] ?? 0) + 1;
    console.log(`chaos scheduler-SIGKILL+restart: sent ${answers.length}, answered 200 ${answers.filter((a) => a.status === 200).length}, errors ${JSON.stringify(byReason)} (status 0: refused or reset while it was down), settled ${(settledAtMs - restartedAtMs).toFixed(0)} ms after it printed its endpoint`);
    const ok = answers.filter((a) => a.sentMs >= settledAtMs && a.status === 200);
    // The new scheduler serves: every model got answers once it settled.
    for (const m of MODELS) expect(ok.filter((a) => a.model === m).length, `${m} answered after the restart settled`).toBeGreaterThan(0);
    // Every answer (before and after) names its own model and is that model's output for its input.
    for (const a of answers.filter((x) => x.status === 200)) {
      expect(a.named).toBe(a.model);
      expect(Array.from(a.output!), `${a.model} answered by another model's worker`).toEqual(Array.from(simForward(a.input, a.model)));
    }
    // After the restart the only errors are explicit ones of the serving path (a model not yet
    // deployed while the agent reconnects, an SLO drop); no request hangs (Promise.all resolved).
    for (const a of after.filter((x) => x.status !== 200)) expect(['slo', 'not-deployed', 'worker-failed']).toContain(a.reason);

    // The restarted scheduler's view is true: each worker process it lists runs the model, GPU and share it lists.
    await waitHttp200(`${base}/v2/health/ready`, 60_000);
    const listed = await readyWorkers(base);
    expect(listed.length).toBeGreaterThanOrEqual(MODELS.length);
    for (const w of listed) expect(processIdentity(w.pid!), `worker ${w.workerId} (pid ${w.pid})`).toBe(`${w.model} on GPU ${w.gpu} at ${w.pct}%`);
  });
});

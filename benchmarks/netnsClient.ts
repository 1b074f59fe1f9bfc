// The client host of the network-namespace cluster (benchmarks/netns.ts): a script run from dist/ on its
// own host (`node dist/benchmarks/netnsClient.js CONFIG`) that sends binary 3x224x224 tasks over HTTPS with a
// token, open loop (one every intervalMs), and prints one JSON line: for each task its model, HTTP status,
// the model the answer names, whether the output is that model's (the simulated worker's forward pass,
// src/serving/standIn.ts), or the error (a status 0 is no HTTP answer: refused, reset, timed out).
// CONFIG: { url, ca, token, models, tasks, intervalMs, timeoutMs } (ca: a PEM file; models: taken in turn).
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { fp32ImageRequest } from '../tools/loadgen/binary.js';
import { standInForward } from '../src/serving/standIn.js';

export interface NetnsClientConfig {
  readonly url: string;
  readonly ca: string;
  readonly token: string;
  readonly models: readonly string[];
  readonly tasks: number;
  readonly intervalMs: number;
  readonly timeoutMs: number;
}

/** One task's outcome; times are the client host's `Date.now()`. */
export interface Outcome {
  readonly i: number;
  readonly model: string;
  readonly status: number;
  readonly answeredModel?: string;
  readonly outputOk?: boolean;
  readonly error?: string;
  readonly sentAt: number;
  readonly doneAt: number;
}

const N = 3 * 224 * 224;

interface Answer {
  readonly status: number;
  readonly headerLength?: string | string[] | undefined;
  readonly body?: Buffer;
  readonly error?: string;
}

function post(cfg: NetnsClientConfig, agent: https.Agent, model: string, x: Float32Array): Promise<Answer> {
  const req = fp32ImageRequest(x);
  return new Promise((resolve) => {
    const r = https.request(
      `${cfg.url}/v2/models/${model}/infer`,
      {
        method: 'POST',
        agent,
        headers: { ...req.headers, 'content-length': String(req.body.length), authorization: `Bearer ${cfg.token}` },
        timeout: cfg.timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headerLength: res.headers['inference-header-content-length'],
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    r.on('timeout', () => r.destroy(new Error(`no answer in ${cfg.timeoutMs} ms`)));
    r.on('error', (e) => resolve({ status: 0, error: e.message }));
    r.end(req.body);
  });
}

/** The outcome of task i: its answer checked against the model it was sent to. */
async function task(cfg: NetnsClientConfig, agent: https.Agent, i: number): Promise<Outcome> {
  const model = cfg.models[i % cfg.models.length]!;
  const x = new Float32Array(N);
  for (let k = 0; k < N; k++) x[k] = ((i * 7 + k) % 13) / 13;
  const sentAt = Date.now();
  const a = await post(cfg, agent, model, x);
  const out = { i, model, status: a.status, sentAt, doneAt: Date.now() };
  if (a.status !== 200 || !a.body) return { ...out, error: a.error ?? a.body?.toString().slice(0, 300) ?? '' };
  const n = Number(a.headerLength);
  const head = JSON.parse(a.body.subarray(0, n).toString()) as { model_name?: string };
  const bin = a.body.subarray(n);
  const y = new Float32Array(bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.length));
  const want = standInForward(model, x, 1, N, y.length);
  const outputOk = y.length > 0 && y.every((v, k) => Math.abs(v - want[k]!) <= 1e-3 * Math.max(1, Math.abs(want[k]!)));
  return { ...out, ...(head.model_name !== undefined ? { answeredModel: head.model_name } : {}), outputOk };
}

async function main(cfg: NetnsClientConfig): Promise<void> {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 64, ca: readFileSync(cfg.ca) });
  const pending: Promise<Outcome>[] = [];
  for (let i = 0; i < cfg.tasks; i++) {
    pending.push(task(cfg, agent, i));
    await new Promise((r) => setTimeout(r, cfg.intervalMs));
  }
  console.log(JSON.stringify(await Promise.all(pending)));
  agent.destroy();
}

// A script only: importers take its types (`import type`), which leaves this out.
await main(JSON.parse(process.argv[2]!) as NetnsClientConfig);

// The client host of the network-namespace cluster (test/support/netns.ts): a plain Node script (it
// runs in its own namespace, from dist/ as `inss` does) that sends tasks over HTTPS with a token and
// prints one JSON line: for each task its model, HTTP status, the model the answer names, whether the
// output is that model's (the simulated worker's forward pass, src/serving/standIn.ts), or the error.
// argv[2]: { url, ca, token, models, tasks, intervalMs, timeoutMs } (ca: a PEM file; models: names
// taken in turn).
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { fp32ImageRequest } from '../../dist/tools/loadgen/binary.js';
import { standInForward } from '../../dist/src/serving/standIn.js';

const cfg = JSON.parse(process.argv[2]);
const ca = readFileSync(cfg.ca);
const agent = new https.Agent({ keepAlive: true, maxSockets: 64, ca });
const N = 3 * 224 * 224;

function post(model, req) {
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
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode,
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
async function task(i) {
  const model = cfg.models[i % cfg.models.length];
  const x = new Float32Array(N);
  for (let k = 0; k < N; k++) x[k] = ((i * 7 + k) % 13) / 13;
  const sentAt = Date.now();
  const a = await post(model, fp32ImageRequest(x));
  const out = { i, model, status: a.status, sentAt, doneAt: Date.now() };
  if (a.status !== 200) return { ...out, error: a.error ?? a.body.toString().slice(0, 300) };
  const n = Number(a.headerLength);
  const head = JSON.parse(a.body.subarray(0, n).toString());
  const bin = a.body.subarray(n);
  const y = new Float32Array(bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.length));
  const want = standInForward(model, x, 1, N, y.length);
  const outputOk = y.length > 0 && y.every((v, k) => Math.abs(v - want[k]) <= 1e-3 * Math.max(1, Math.abs(want[k])));
  return { ...out, answeredModel: head.model_name, outputOk };
}

const pending = [];
for (let i = 0; i < cfg.tasks; i++) {
  pending.push(task(i));
  await new Promise((r) => setTimeout(r, cfg.intervalMs));
}
console.log(JSON.stringify(await Promise.all(pending)));
agent.destroy();

// What a new user meets on an idle `inss up` (the quick start's cluster, no flags): the first
// requests, a burst, and a lone client.
//
//   npm run bench:first-contact [-- --rounds 3 --lone-seconds 30 --burst 200 --burst-model vgg16 --up-args '...']
//
// Each round starts `inss up` afresh (a state folder of its own) as the quick start does, waits for
// /v2/health/ready, then:
// 1. First contact: at once, one JSON request with random FP32 values (Python's float text, 3.3 MB
//    for an image) to every served model; each answer's status and latency.
// 2. A burst: `--burst` binary requests (602 KB FP32 images) at once to `--burst-model`; how many are
//    answered 200, and how many of those within the model's SLO.
// 3. A lone client: one binary request a second to resnet50 for `--lone-seconds`; the client's
//    latency and the scheduler's span of each task (Server-Timing), against the batch-1 time the
//    worker measured (Triton statistics, batch_stats of size 1) plus the path the scheduler measured
//    (/v2/inss/cluster: the request's way in, the batch's transport there and back, the answer's way
//    out). The lone request must not wait for a batch that will not fill.
// Prints one JSON line per round and a summary table (medians over rounds).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { waitFor } from './processes.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'inss.js');
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    'lone-seconds': { type: 'string', default: '30' },
    burst: { type: 'string', default: '200' },
    'burst-model': { type: 'string', default: 'vgg16' },
    'lone-model': { type: 'string', default: 'resnet50' },
    /** More arguments for `inss up`, space-separated (e.g. `--scenario paper-8`). */
    'up-args': { type: 'string', default: '' },
  },
});
const ROUNDS = Number(values.rounds);
const LONE_S = Number(values['lone-seconds']);
const BURST = Number(values.burst);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error(`--rounds: expected a positive integer, got ${values.rounds}`);
if (!(LONE_S > 0)) throw new Error(`--lone-seconds: expected a number > 0, got ${values['lone-seconds']}`);
if (!Number.isInteger(BURST) || BURST < 1) throw new Error(`--burst: expected a positive integer, got ${values.burst}`);

interface Answer {
  readonly status: number;
  readonly ms: number;
  /** The scheduler's span of the task (Server-Timing inss;dur), NaN when absent. */
  readonly serverMs: number;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });

function post(url: string, body: Buffer, headers: Record<string, string>): Promise<Answer> {
  return new Promise((res) => {
    const t0 = performance.now();
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { ...headers, 'content-length': String(body.length) } },
      (r) => {
        r.resume();
        r.on('end', () => {
          const timing = /inss;dur=([0-9.]+)/.exec(String(r.headers['server-timing'] ?? ''));
          res({ status: r.statusCode ?? 0, ms: performance.now() - t0, serverMs: timing ? Number(timing[1]) : NaN });
        });
      },
    );
    req.on('error', () => res({ status: 0, ms: performance.now() - t0, serverMs: NaN }));
    req.end(body);
  });
}

async function getJson(url: string): Promise<unknown> {
  const r = await fetch(url);
  return r.json();
}

/** A JSON request as Python's json.dumps writes random float32 values (17 significant digits). */
function jsonRequest(shape: readonly number[]): Buffer {
  const n = shape.reduce((a, b) => a * b, 1);
  const parts = new Array<string>(n);
  for (let i = 0; i < n; i++) parts[i] = String(Math.fround(Math.random() * 2 - 1));
  return Buffer.from(
    `{"inputs":[{"name":"input","shape":${JSON.stringify(shape)},"datatype":"FP32","data":[${parts.join(', ')}]}]}`,
  );
}

function binaryRequest(shape: readonly number[]): { body: Buffer; headers: Record<string, string> } {
  const n = shape.reduce((a, b) => a * b, 1);
  const x = Float32Array.from({ length: n }, () => Math.random());
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'input', shape, datatype: 'FP32', parameters: { binary_data_size: x.byteLength } }],
      outputs: [{ name: 'output', parameters: { binary_data: true } }],
    }),
  );
  return {
    body: Buffer.concat([header, Buffer.from(x.buffer)]),
    headers: { 'inference-header-content-length': String(header.length) },
  };
}

const median = (xs: readonly number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const fixed = (x: number, d = 2) => (Number.isFinite(x) ? Number(x.toFixed(d)) : null);

async function startUp(state: string): Promise<{ child: ChildProcess; base: string }> {
  let out = '';
  const child = spawn(
    process.execPath,
    [BIN, 'up', '--port', '0', '--state-dir', state, ...values['up-args'].split(' ').filter((a) => a !== '')],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const base = await waitFor(() => out, /endpoint (http:\/\/[^ ]+)\/v2/, 60_000);
  const t0 = Date.now();
  for (;;) {
    const r = await fetch(`${base}/v2/health/ready`).catch(() => null);
    if (r?.status === 200) break;
    if (Date.now() - t0 > 120_000) throw new Error(`inss up did not become ready:\n${out.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, base };
}

interface ModelMeta {
  readonly name: string;
  readonly inputs: { shape: number[] }[];
  readonly parameters: { slo_ms: number };
}

async function round(): Promise<Record<string, unknown>> {
  const state = mkdtempSync(join(tmpdir(), 'inss-first-contact-'));
  const { child, base } = await startUp(state);
  try {
    const index = (await (await fetch(`${base}/v2/repository/index`, { method: 'POST' })).json()) as { name: string }[];
    const metas = await Promise.all(
      index.map(async (m) => (await getJson(`${base}/v2/models/${m.name}`)) as ModelMeta),
    );
    const shapeOf = (m: ModelMeta) => [1, ...m.inputs[0]!.shape.slice(1)];

    // 1. First contact: every model at once, JSON with random values.
    const bodies = metas.map((m) => jsonRequest(shapeOf(m)));
    const first = await Promise.all(
      metas.map((m, k) =>
        post(`${base}/v2/models/${m.name}/infer`, bodies[k]!, { 'content-type': 'application/json' }),
      ),
    );
    const firstByModel = Object.fromEntries(
      metas.map((m, k) => [
        m.name,
        { status: first[k]!.status, ms: fixed(first[k]!.ms, 1), sloMs: m.parameters.slo_ms, bytes: bodies[k]!.length },
      ]),
    );

    // 2. A burst at once.
    const burstMeta = metas.find((m) => m.name === values['burst-model']);
    if (!burstMeta)
      throw new Error(
        `--burst-model: '${values['burst-model']}' is not served (served: ${metas.map((m) => m.name).join(', ')})`,
      );
    const b = binaryRequest(shapeOf(burstMeta));
    const burst = await Promise.all(
      Array.from({ length: BURST }, () => post(`${base}/v2/models/${burstMeta.name}/infer`, b.body, b.headers)),
    );
    const ok = burst.filter((a) => a.status === 200);
    const statuses: Record<string, number> = {};
    for (const a of burst) statuses[a.status] = (statuses[a.status] ?? 0) + 1;

    return {
      first: firstByModel,
      firstOk: first.filter((a) => a.status === 200).length,
      firstOf: first.length,
      burst: {
        model: burstMeta.name,
        sent: BURST,
        ok: ok.length,
        withinSlo: ok.filter((a) => a.serverMs <= burstMeta.parameters.slo_ms).length,
        statuses,
        p50Ms: fixed(median(burst.map((a) => a.ms)), 1),
        maxMs: fixed(Math.max(...burst.map((a) => a.ms)), 1),
      },
    };
  } finally {
    child.kill('SIGINT');
    await new Promise((r) => child.once('exit', r));
    rmSync(state, { recursive: true, force: true });
  }
}

/**
 * 3. A lone client, on an `inss up` of its own: the path the scheduler learns (the way in, the
 * transport, the way out) is then that of these requests alone, not of the JSON and the burst.
 */
async function loneClient(): Promise<Record<string, unknown>> {
  const state = mkdtempSync(join(tmpdir(), 'inss-first-contact-'));
  const { child, base } = await startUp(state);
  try {
    const loneMeta = (await getJson(`${base}/v2/models/${values['lone-model']}`)) as ModelMeta;
    const shapeOf = (m: ModelMeta) => [1, ...m.inputs[0]!.shape.slice(1)];
    const l = binaryRequest(shapeOf(loneMeta));
    const lone: Answer[] = [];
    for (let i = 0; i < LONE_S; i++) {
      const t0 = performance.now();
      lone.push(await post(`${base}/v2/models/${loneMeta.name}/infer`, l.body, l.headers));
      await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (performance.now() - t0))));
    }
    const stats = (await getJson(`${base}/v2/models/${loneMeta.name}/stats`)) as {
      model_stats: { batch_stats: { batch_size: number; compute_infer: { count: number; ns: number } }[] }[];
    };
    const one = stats.model_stats[0]!.batch_stats.find((s) => s.batch_size === 1);
    const batch1Ms = one && one.compute_infer.count > 0 ? one.compute_infer.ns / one.compute_infer.count / 1e6 : NaN;
    const cluster = (await getJson(`${base}/v2/inss/cluster`)) as {
      workers: { model: string; agentId: string }[];
      transport: Record<
        string,
        { fixedMs: number; perMbMs: number; wayIn?: { fixedMs: number; perMbMs: number }; wayOutMs?: number }
      >;
    };
    const w = cluster.workers.find((x) => x.model === loneMeta.name);
    const t = w ? cluster.transport[w.agentId] : undefined;
    const mb = l.body.length / 1e6;
    const transportMs = t ? t.fixedMs + t.perMbMs * mb : NaN;
    const wayInMs = t?.wayIn ? t.wayIn.fixedMs + t.wayIn.perMbMs * mb : 0;
    const pathMs = transportMs + wayInMs + (t?.wayOutMs ?? 0);
    const serverMedian = median(lone.map((a) => a.serverMs));
    return {
      lone: {
        model: loneMeta.name,
        requests: lone.length,
        ok: lone.filter((a) => a.status === 200).length,
        clientP50Ms: fixed(median(lone.map((a) => a.ms))),
        serverP50Ms: fixed(serverMedian),
        batch1Ms: fixed(batch1Ms),
        pathMs: fixed(pathMs),
        expectedMs: fixed(batch1Ms + pathMs),
        serverOverExpectedMs: fixed(serverMedian - (batch1Ms + pathMs)),
      },
    };
  } finally {
    child.kill('SIGINT');
    await new Promise((r) => child.once('exit', r));
    rmSync(state, { recursive: true, force: true });
  }
}

const results: Record<string, unknown>[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const r = { ...(await round()), ...(await loneClient()) };
  results.push(r);
  console.log(JSON.stringify({ round: i + 1, ...r }));
}
agent.destroy();
type R = {
  firstOk: number;
  firstOf: number;
  burst: { ok: number; withinSlo: number; sent: number };
  lone: {
    clientP50Ms: number;
    serverP50Ms: number;
    expectedMs: number;
    serverOverExpectedMs: number;
    batch1Ms: number;
    pathMs: number;
  };
};
const rs = results as unknown as R[];
console.log('\n| figure | median over rounds (min-max) |\n| --- | --- |');
const row = (what: string, xs: number[]) =>
  console.log(`| ${what} | ${fixed(median(xs))} (${fixed(Math.min(...xs))}-${fixed(Math.max(...xs))}) |`);
row(
  'first requests answered 200 (of every model)',
  rs.map((r) => r.firstOk),
);
row(
  `burst answered 200 (of ${BURST})`,
  rs.map((r) => r.burst.ok),
);
row(
  'burst answered within SLO',
  rs.map((r) => r.burst.withinSlo),
);
row(
  'lone client p50, client (ms)',
  rs.map((r) => r.lone.clientP50Ms),
);
row(
  'lone client p50, scheduler span (ms)',
  rs.map((r) => r.lone.serverP50Ms),
);
row(
  'batch-1 time (ms)',
  rs.map((r) => r.lone.batch1Ms),
);
row(
  'measured path (ms)',
  rs.map((r) => r.lone.pathMs),
);
row(
  'scheduler span - (batch-1 + path) (ms)',
  rs.map((r) => r.lone.serverOverExpectedMs),
);

// The full path's capacity and added latency, beside a bare node:http server as the ceiling.
//
//   npm run bench:system [-- --seconds 10 --concurrency 64 --paths direct,relay --rounds 3 --no-encodings]
//   npm run bench:system -- --paths direct --no-encodings --shm-mb 0   (the shared-memory path off)
//   INSS_BENCH_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' npm run bench:system -- --paths direct
//     (node flags for `inss up`, which passes them on to the simulated workers it starts: Node 20
//     refuses --cpu-prof in NODE_OPTIONS)
//
// 1. Ceiling: a bare node:http server in its own process that reads the body and answers 4 KB (the
//    size of a 1000-class FP32 answer), driven closed-loop with the same client and the same body (one
//    224x224x3 FP32 image in Triton's binary format, 602 KB), and with an empty body.
// 2. Full path: `inss up --zero-time --policy static-even --scenario benchmarks/scenarios/system-one.json`
//    (client -> scheduler -> one simulated worker answering at once -> back; resnet50 with a 500 ms SLO
//    so the figure is what the path carries, not what a tight SLO lets through), at its default log
//    level (info), driven closed-loop: tasks per second answered. Twice: the direct path (`--data-path
//    unix`, the default: batches go from the scheduler straight to the worker's Unix socket) and the
//    agent relay (`--data-path off`: scheduler -> agent's WebSocket -> worker's stdin pipe).
//    Then, on the direct path, what clients really send: the image as UINT8 pixels (150 KB),
//    as a JPEG (quality 90, ~15 KB) and as a PNG (~80 KB), decoded in the simulated worker with jpeg-js
//    and pngjs; and through Triton's system shared memory (input and output in a /dev/shm region
//    registered once: the HTTP body carries ~300 bytes of JSON each way; every request's answer is
//    written at the same place in the region, the benchmark does not read it). Bytes per request are
//    the request body plus the answer body.
// 3. Latency at half that rate: `inss loadgen` open-loop (Poisson) at 50% of the measured capacity;
//    p50/p99 as the client sees it, and how much of it is the task buffer waiting for a batch to fill
//    (inss_task_queue_seconds, by design of the dispatch rule) rather than transport; on the direct
//    path, the per-hop times the scheduler logs at debug level for each batch (`batch back`).
// Both servers run on this machine with the client, so every figure includes the client's own CPU.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { imageRequest as encodedImageRequest, syntheticPicture } from '../tools/loadgen/images.js';
import { LoadgenReportSchema } from '../tools/loadgen/report.js';
import { waitFor } from './processes.js';
import { closedLoop, imageRequest, quantile, start, waitReady } from './systemClient.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'inss.js');
const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '64' },
    paths: { type: 'string', default: 'direct,relay' },
    rounds: { type: 'string', default: '3' },
    'no-encodings': { type: 'boolean', default: false },
    'shm-mb': { type: 'string' },
  },
});
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = Number(values.rounds);
if (!(SECONDS > 0) || !Number.isInteger(CONCURRENCY) || CONCURRENCY < 1)
  throw new Error(
    `--seconds must be > 0 and --concurrency a positive integer, got ${values.seconds} and ${values.concurrency}`,
  );
if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error(`--rounds must be a positive integer, got ${values.rounds}`);
const PATHS = values.paths.split(',');
for (const p of PATHS)
  if (p !== 'direct' && p !== 'relay') throw new Error(`--paths: expected a list of direct and relay, got '${p}'`);
/** `inss up --shm-mb` (absent: its default, the shared-memory path on where the addon is built). */
const SHM_ARGS = values['shm-mb'] !== undefined ? ['--shm-mb', values['shm-mb']] : [];
const NODE_ARGS = (process.env.INSS_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');

const BARE = `
const http = require('node:http');
const answer = Buffer.alloc(4000 + 200, 1);
http.createServer((req, res) => {
  const parts = [];
  req.on('data', (d) => parts.push(d));
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': answer.length });
    res.end(answer);
  });
})
  .listen(0, '127.0.0.1', function () { console.log('port ' + this.address().port); });`;

const img = imageRequest();
console.log(
  `machine: ${cpus().length} x ${cpus()[0]?.model ?? '?'}, node ${process.version}; ${SECONDS} s per run, ` +
    `${CONCURRENCY} requests outstanding`,
);

const bare = start(['-e', BARE]);
process.on('exit', () => bare.child.kill()); // kept up for the rounds below; never left behind
const barePort = await waitFor(bare.out, /port (\d+)/);
const bareUrl = `http://127.0.0.1:${barePort}/`;
await closedLoop([bareUrl], img.body, img.headers, 1, CONCURRENCY); // warm-up
const bareImage = await closedLoop([bareUrl], img.body, img.headers, SECONDS, CONCURRENCY);
const bareEmpty = await closedLoop([bareUrl], Buffer.alloc(0), {}, SECONDS, CONCURRENCY);
console.log(
  `bare node:http, 602 KB request: ${bareImage.perS.toFixed(0)} req/s (p50 ${bareImage.p50Ms.toFixed(2)} ms)`,
);
console.log(
  `bare node:http, empty request:  ${bareEmpty.perS.toFixed(0)} req/s (p50 ${bareEmpty.p50Ms.toFixed(2)} ms)`,
);

type Sums = Record<string, number>;
type Loop = Awaited<ReturnType<typeof closedLoop>>;

/** UINT8, JPEG, PNG and shared-memory requests against a running `inss up`, beside its FP32 figure. */
async function encodings(base: string, urls: readonly string[], full: Loop): Promise<void> {
  const line = (what: string, r: Loop, requestBytes: number) =>
    console.log(
      `  ${what}: ${r.perS.toFixed(0)} tasks/s (${((r.perS / full.perS) * 100).toFixed(0)}% of FP32, ` +
        `${((r.perS / bareImage.perS) * 100).toFixed(0)}% of bare; p50 ${r.p50Ms.toFixed(2)} ms, ${r.errors} ` +
        `errors), ${(requestBytes + r.answerBytes).toFixed(0)} bytes a request (${requestBytes} up, ` +
        `${r.answerBytes.toFixed(0)} down)`,
    );
  line('FP32 binary', full, img.body.length);
  const picture = syntheticPicture(224, 224, 1);
  for (const form of ['uint8', 'jpeg', 'png'] as const) {
    const req = encodedImageRequest('input', form, picture);
    await closedLoop(urls, req.body, req.headers, 1, CONCURRENCY); // warm-up
    line(
      `${form.toUpperCase()} image`,
      await closedLoop(urls, req.body, req.headers, SECONDS, CONCURRENCY),
      req.body.length,
    );
  }
  // Shared memory: the FP32 image at offset 0, the answer written at offset 602112 + 64.
  const shmKey = `inss_bench_${process.pid}`;
  const inBytes = 4 * 3 * 224 * 224;
  writeFileSync(
    `/dev/shm/${shmKey}`,
    Buffer.concat([img.body.subarray(img.body.length - inBytes), Buffer.alloc(4096)]),
  );
  try {
    const reg = await fetch(`${base}/v2/systemsharedmemory/region/bench/register`, {
      method: 'POST',
      body: JSON.stringify({ key: `/${shmKey}`, offset: 0, byte_size: inBytes + 4096 }),
    });
    if (reg.status !== 200) throw new Error(`register: HTTP ${reg.status} ${await reg.text()}`);
    const shmBody = Buffer.from(
      JSON.stringify({
        inputs: [
          {
            name: 'input',
            shape: [1, 3, 224, 224],
            datatype: 'FP32',
            parameters: { shared_memory_region: 'bench', shared_memory_byte_size: inBytes },
          },
        ],
        outputs: [
          {
            name: 'output',
            parameters: {
              shared_memory_region: 'bench',
              shared_memory_byte_size: 4000,
              shared_memory_offset: inBytes + 64,
            },
          },
        ],
      }),
    );
    const shmHeaders = { 'content-type': 'application/json' };
    await closedLoop(urls, shmBody, shmHeaders, 1, CONCURRENCY); // warm-up
    line(
      'FP32 in shared memory (input and output)',
      await closedLoop(urls, shmBody, shmHeaders, SECONDS, CONCURRENCY),
      shmBody.length,
    );
    await fetch(`${base}/v2/systemsharedmemory/unregister`, { method: 'POST' });
  } finally {
    rmSync(`/dev/shm/${shmKey}`, { force: true });
  }
}

/** prom-client's sampling interval of the event loop (its default `eventLoopMonitoringPrecision`). */
const LOOP_SAMPLE_MS = 10;

/**
 * The scheduler's event-loop delay (ms) since the last scrape: prom-client's default metrics read a
 * perf_hooks.monitorEventLoopDelay histogram and reset it at each scrape. The histogram holds the
 * whole interval between samples (10.1 ms at p50 on an idle process), so the sampling interval is
 * taken off: what is left is how late the loop was.
 */
async function loopDelay(base: string): Promise<{ p50: number; p99: number; max: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const read = (name: string) =>
    Number(new RegExp(`^inss_process_nodejs_eventloop_lag_${name}_seconds ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN) *
      1000 -
    LOOP_SAMPLE_MS;
  return { p50: read('p50'), p99: read('p99'), max: read('max') };
}

/** inss_direct_samples_total by path: whether batches went by shared-memory descriptor. */
async function directSamples(base: string): Promise<{ shm: number; socket: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const read = (path: string) =>
    Number(new RegExp(`^inss_direct_samples_total\\{path="${path}"\\} ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? 0);
  return { shm: read('shm'), socket: read('socket') };
}

/**
 * `inss up` with the given data path, started for one phase of the measurement: the capacity at the
 * default log level (a deployment's), the open loop at half of it at debug level, for the per-hop lines
 * of each batch (one `task` line per task too: ~0.1 ms of CPU a task between the scheduler and this
 * process reading its log, measured at 1 500 tasks/s, so not during the capacity).
 */
async function startUp(
  dataPath: 'unix' | 'off',
  logLevel: 'info' | 'debug',
  onLine?: (line: string) => void,
): Promise<{ base: string; stop: () => Promise<void> }> {
  const state = mkdtempSync(join(tmpdir(), 'inss-bench-'));
  const scenario = join(ROOT, 'benchmarks', 'scenarios', 'system-one.json');
  const up = start(
    [
      ...NODE_ARGS,
      BIN,
      'up',
      '--port',
      '0',
      '--zero-time',
      '--policy',
      'static-even',
      '--scenario',
      scenario,
      '--state-dir',
      state,
      '--data-path',
      dataPath,
      '--log-level',
      logLevel,
      ...SHM_ARGS,
    ],
    onLine,
  );
  const base = await waitFor(up.out, /endpoint (http:\/\/[^ ]+)\/v2/);
  await waitReady(`${base}/v2/health/ready`);
  return {
    base,
    stop: async () => {
      up.child.kill('SIGINT');
      await new Promise((r) => up.child.on('exit', r));
      rmSync(state, { recursive: true, force: true });
    },
  };
}

/** The given data path: closed-loop capacity, then open loop at half of it. */
async function measurePath(dataPath: 'unix' | 'off'): Promise<{ perS: number }> {
  const label =
    dataPath === 'unix'
      ? 'direct path (scheduler -> worker over a Unix socket)'
      : 'agent relay (scheduler -> agent WebSocket -> worker pipe)';
  const models = ['resnet50'];
  const path = (base: string) => models.map((m) => `${base}/v2/models/${m}/infer`);
  const capacity = await startUp(dataPath, 'info');
  const urls = path(capacity.base);
  // warm-up: rates reach the monitor, the policy re-plans
  await closedLoop(urls, img.body, img.headers, 2, CONCURRENCY);
  await loopDelay(capacity.base); // resets the scheduler's event-loop delay histogram
  const full = await closedLoop(urls, img.body, img.headers, SECONDS, CONCURRENCY);
  const lag = await loopDelay(capacity.base);
  console.log(
    `inss ${label}, zero compute, 602 KB tasks: ${full.perS.toFixed(0)} tasks/s (p50 ` +
      `${full.p50Ms.toFixed(2)} ms, ${full.errors} errors) = ` +
      `${((100 * full.perS) / bareImage.perS).toFixed(0)}% of bare`,
  );
  const samples = await directSamples(capacity.base);
  console.log(
    `  samples sent straight to the worker so far: ${samples.shm} by shared-memory descriptor, ` +
      `${samples.socket} as bytes (inss up ${SHM_ARGS.join(' ') || 'default --shm-mb'})`,
  );
  console.log(
    `  scheduler event-loop delay over the closed loop (perf_hooks.monitorEventLoopDelay, beyond its 10 ms ` +
      `sampling interval): p50 ${lag.p50.toFixed(1)} ms, p99 ${lag.p99.toFixed(1)} ms, max ` +
      `${lag.max.toFixed(1)} ms`,
  );
  // The bare server's figure moved by half between runs minutes apart: more rounds, bare and inss
  // alternating (each server idle while the other runs), and the median of the ratios.
  const ratios = [full.perS / bareImage.perS];
  for (let r = 1; r < ROUNDS; r++) {
    const b = await closedLoop([bareUrl], img.body, img.headers, SECONDS, CONCURRENCY);
    const f = await closedLoop(urls, img.body, img.headers, SECONDS, CONCURRENCY);
    ratios.push(f.perS / b.perS);
    console.log(
      `  round ${r + 1}: bare ${b.perS.toFixed(0)} req/s, inss ${f.perS.toFixed(0)} tasks/s (p50 ` +
        `${f.p50Ms.toFixed(2)} ms, ${f.errors} errors) = ${(100 * ratios[r]!).toFixed(0)}% of bare`,
    );
  }
  if (ROUNDS > 1)
    console.log(
      `  median over ${ROUNDS} rounds: ${(100 * quantile(ratios, 0.5)).toFixed(0)}% of bare ` +
        `(${ratios.map((x) => (100 * x).toFixed(0)).join(', ')})`,
    );
  if (dataPath === 'unix' && !values['no-encodings']) await encodings(capacity.base, urls, full);
  await capacity.stop();

  const hops: { toWorkerMs: number; inWorkerMs: number; fromWorkerMs: number; bytes: number; size: number }[] = [];
  let recording = false;
  const traced = await startUp(dataPath, 'debug', (line) => {
    if (!recording || !line.includes('"batch back"') || !line.includes('toWorkerMs')) return;
    hops.push(JSON.parse(line) as (typeof hops)[number]);
  });
  const base = traced.base;
  await closedLoop(path(base), img.body, img.headers, 2, CONCURRENCY); // the same warm-up
  const half = full.perS / 2;
  const per = half / models.length;
  async function sums(): Promise<Sums> {
    const text = await (await fetch(`${base}/metrics`)).text();
    const out: Sums = {};
    for (const name of ['inss_task_latency_seconds', 'inss_task_queue_seconds', 'inss_batch_compute_seconds']) {
      for (const part of ['sum', 'count']) {
        const re = new RegExp(`^${name}_${part}\\{[^}]*\\} ([0-9.e+-]+)$`, 'gm');
        out[`${name}_${part}`] = [...text.matchAll(re)].reduce((a, m) => a + Number(m[1]), 0);
      }
    }
    return out;
  }
  const before = await sums();
  recording = true;
  const lg = start([
    BIN,
    'loadgen',
    '--url',
    base,
    ...models.flatMap((m) => ['--model', `${m}=${per.toFixed(1)}`]),
    '--duration',
    String(SECONDS),
    '--json',
  ]);
  const code = await new Promise<number | null>((r) => lg.child.on('exit', r));
  recording = false;
  const after = await sums();
  const meanMs = (name: string) =>
    ((after[`${name}_sum`]! - before[`${name}_sum`]!) /
      Math.max(1, after[`${name}_count`]! - before[`${name}_count`]!)) *
    1000;
  const report = LoadgenReportSchema.parse(JSON.parse(lg.out()));
  const t = report.total;
  const queueMs = meanMs('inss_task_queue_seconds');
  const computeMs = meanMs('inss_batch_compute_seconds');
  const clientMean = t.latency.meanMs ?? NaN;
  console.log(
    `  open loop (Poisson) at ${half.toFixed(0)} tasks/s (50%), loadgen exit ${code}: ${t.ok}/${t.sent} ` +
      `answered ok; client latency p50 ${t.latency.p50Ms?.toFixed(1)} ms, p99 ${t.latency.p99Ms?.toFixed(1)} ` +
      `ms, mean ${clientMean.toFixed(1)} ms`,
  );
  console.log(
    `  of the mean: ${queueMs.toFixed(1)} ms waiting in the task buffer for the batch to fill (the dispatch ` +
      `rule, by design), ${computeMs.toFixed(1)} ms in the worker per batch, leaving ` +
      `${(clientMean - queueMs - computeMs).toFixed(1)} ms added by the path`,
  );
  if (hops.length > 0) {
    const q = (k: 'toWorkerMs' | 'inWorkerMs' | 'fromWorkerMs' | 'bytes' | 'size', p: number) =>
      quantile(
        hops.map((h) => h[k]),
        p,
      );
    console.log(
      `  per hop, ${hops.length} batches (p50 / p90): scheduler -> worker ${q('toWorkerMs', 0.5).toFixed(2)} ` +
        `/ ${q('toWorkerMs', 0.9).toFixed(2)} ms, in the worker ${q('inWorkerMs', 0.5).toFixed(2)} / ` +
        `${q('inWorkerMs', 0.9).toFixed(2)} ms, worker -> scheduler ${q('fromWorkerMs', 0.5).toFixed(2)} / ` +
        `${q('fromWorkerMs', 0.9).toFixed(2)} ms; batch ${q('size', 0.5)} images, ` +
        `${(q('bytes', 0.5) / 1e6).toFixed(1)} MB at p50`,
    );
  }
  await traced.stop();
  return full;
}

if (PATHS.includes('direct')) await measurePath('unix');
if (PATHS.includes('relay')) await measurePath('off');
bare.child.kill();

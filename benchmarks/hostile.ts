// The hostile-input corpus against a running system.
//
//   npm run bench:hostile [-- --only nested-60MiB,deep-5M] [--rate 20] [--scenario FILE]
//
// Starts `inss up --policy static-even --scenario benchmarks/scenarios/hostile-fast.json
// --max-connections-per-client 64` (one simulated RTX 2060 Super serving resnet50 with a 100 ms SLO:
// a task waits little for its batch, so the client's latency without an attack is small), then runs
// each case of benchmarks/hostileCases.ts in turn from 127.0.0.2 while, from 127.0.0.1, a
// well-behaved client sends one binary 3x224x224 request every 1/rate s (open loop, keep-alive) and
// a probe GETs /v2/health/ready every 100 ms. Prints one markdown row per case: the attack's
// answers, how long until the last was answered or closed, the well-behaved client's p50 and p99
// and how much its p99 rose over the no-attack row (and its answers that were not 200), and the
// probe's slowest answer. The first row, `none`, is the same client and probe with no attack.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { attackCases, probe, runAttackInThread } from './hostileCases.js';
import { fp32ImageRequest } from '../tools/loadgen/binary.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    rate: { type: 'string', default: '20' },
    scenario: { type: 'string', default: join(ROOT, 'benchmarks', 'scenarios', 'hostile-fast.json') },
  },
});
const RATE = Number(values.rate);

function imageRequest(): { body: Buffer; headers: Record<string, string> } {
  const x = new Float32Array(3 * 224 * 224).map((_, i) => (i % 997) / 997);
  return fp32ImageRequest(x);
}

/** Open loop at RATE/s until stopped: latencies of 200 answers, and the other outcomes. */
function wellBehaved(base: string): {
  stop(): Promise<{ p50Ms: number; p99Ms: number; n: number; other: Record<string, number> }>;
} {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32, localAddress: '127.0.0.1' });
  const { body, headers } = imageRequest();
  const lat: number[] = [];
  const other: Record<string, number> = {};
  const pending = new Set<Promise<void>>();
  const send = () => {
    const t0 = performance.now();
    const p = new Promise<void>((res) => {
      const req = http.request(
        `${base}/v2/models/resnet50/infer`,
        { method: 'POST', agent, headers: { ...headers, 'content-length': String(body.length) } },
        (r) => {
          let text = '';
          r.on('data', (d: Buffer) => (text += r.statusCode === 200 ? '' : d.toString()));
          r.on('end', () => {
            if (r.statusCode === 200) lat.push(performance.now() - t0);
            else {
              const why = `${r.statusCode} ${/"reason":"([^"]+)"/.exec(text)?.[1] ?? text.slice(0, 40)}`;
              other[why] = (other[why] ?? 0) + 1;
            }
            res();
          });
        },
      );
      req.on('error', (e: NodeJS.ErrnoException) => {
        other[e.code ?? 'error'] = (other[e.code ?? 'error'] ?? 0) + 1;
        res();
      });
      req.end(body);
    });
    pending.add(p);
    void p.then(() => pending.delete(p));
  };
  const timer = setInterval(send, 1000 / RATE);
  return {
    stop: async () => {
      clearInterval(timer);
      await Promise.all(pending);
      agent.destroy();
      lat.sort((a, b) => a - b);
      const at = (q: number) => lat[Math.min(lat.length - 1, Math.ceil(lat.length * q) - 1)] ?? NaN; // nearest rank
      return { p50Ms: at(0.5), p99Ms: at(0.99), n: lat.length, other };
    },
  };
}

const dir = mkdtempSync(join(tmpdir(), 'inss-hostile-'));
const up = spawn(
  process.execPath,
  [
    join(ROOT, 'bin', 'inss.js'),
    'up',
    '--port',
    '0',
    '--policy',
    'static-even',
    '--scenario',
    values.scenario,
    '--state-dir',
    dir,
    '--log-level',
    'error',
    '--max-connections-per-client',
    '64',
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
let out = '';
up.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
const base = await new Promise<string>((res, rej) => {
  const t = setInterval(() => {
    const m = /endpoint (http:\/\/[^ ]+)\/v2/.exec(out);
    if (m) {
      clearInterval(t);
      res(m[1]!);
    }
    if (up.exitCode !== null) rej(new Error(`inss up exited: ${out}`));
  }, 100);
});
const port = Number(new URL(base).port);
for (;;) {
  const ready = await fetch(`${base}/v2/health/ready`).then(
    (r) => r.status === 200,
    () => false,
  );
  if (ready) break;
  await new Promise((r) => setTimeout(r, 200));
}

console.log(
  `hostile-input corpus: ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), Node ${process.version}, load ` +
    `average ${loadavg()[0]!.toFixed(2)}; scenario ${values.scenario}; well-behaved client ${RATE}/s binary ` +
    `resnet50 requests, health probe every 100 ms\n`,
);
console.log(
  '| case | attack | answers | until answered | client p50 | client p99 | p99 rise | client non-200 | health max |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
let baselineP99 = NaN;
const only = values.only?.split(',');
// `none` first (the baseline the rises are against) and again last (how far the baseline itself moved
// on a shared machine over the run).
const baseline = { name: 'none', what: 'no attack (baseline, 5 s)' };
const cases = [
  baseline,
  ...attackCases().filter((c) => !only || only.includes(c.name)),
  { ...baseline, what: 'no attack again, after the attacks (5 s)' },
];
// Warm-up, not recorded: the first tasks after start meet cold workers and an empty transport estimate.
{
  const warm = wellBehaved(base);
  await new Promise((r) => setTimeout(r, 5000));
  await warm.stop();
}
for (const c of cases) {
  const client = wellBehaved(base);
  const health = probe(`${base}/v2/health/ready`);
  await new Promise((r) => setTimeout(r, 1000));
  const attack =
    c.name === 'none'
      ? await new Promise<{ outcomes: Record<string, number>; ms: number }>((r) =>
          setTimeout(() => r({ outcomes: {}, ms: 5000 }), 5000),
        )
      : await runAttackInThread(c.name, port);
  await new Promise((r) => setTimeout(r, 1000));
  const h = await health.stop();
  const w = await client.stop();
  const answers =
    Object.entries(attack.outcomes)
      .map(([k, v]) => `${v} x ${k}`)
      .join(', ') || '-';
  const non200 =
    Object.entries(w.other)
      .map(([k, v]) => `${v} x ${k}`)
      .join(', ') || '0';
  if (c === cases[0]) baselineP99 = w.p99Ms;
  const rise =
    c === cases[0] ? '-' : `${w.p99Ms - baselineP99 >= 0 ? '+' : ''}${(w.p99Ms - baselineP99).toFixed(0)} ms`;
  console.log(
    `| ${c.name} | ${c.what} | ${answers} | ${(attack.ms / 1000).toFixed(2)} s | ${w.p50Ms.toFixed(0)} ms | ` +
      `${w.p99Ms.toFixed(0)} ms (n=${w.n}) | ${rise} | ${non200} | ${h.maxMs.toFixed(0)} ` +
      `ms${h.failed ? ` (${h.failed} failed)` : ''} |`,
  );
}
console.log(`\nload average ${loadavg()[0]!.toFixed(2)} at the end`);
up.kill('SIGTERM');
await new Promise((r) => up.once('exit', r));
rmSync(dir, { recursive: true, force: true });

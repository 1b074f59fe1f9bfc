// Throughput and latency across hosts: the cluster of network namespaces (benchmarks/netnsTls.ts).
//
//   npm run build && sudo npm run bench:cluster [-- --rate 40 --seconds 20 --delay-ms 5]
//
// Makes the hosts `sched`, `gpu1`, `gpu2` and `client` as Linux network namespaces on a bridge (root only),
// with docs/tls.md's recipe: `inss scheduler --policy timeshare --scenario benchmarks/scenarios/cluster-duo.json`
// over TLS with per-agent tokens, and on each GPU host `inss agent --simulate rtx2060s:1 --data-path tcp`
// (resnet50 and mobilenet on both GPUs, 500 ms SLOs). The client host sends binary 3x224x224 tasks over
// HTTPS, open loop at --rate tasks/s (the models in turn): 5 s of warm-up, not recorded, then --seconds of
// load. One markdown row per link: the tasks, those answered 200 by the right model (each answer's output is
// checked), the others by status and reason, the rate the client managed to send at (a loaded machine's
// timers lag), the throughput (200s per second, from the first task sent to the last answer), the client's
// p50 and p99 latency of the 200s (nearest rank), and from the scheduler's /metrics over the load the mean
// batch size and the mean time a batch spent outside its worker (the network legs between the hosts,
// inss_batch_transport_seconds).
// The second row puts --delay-ms of netem delay on every host's outgoing traffic; on a kernel without the
// sch_netem module it says that delay injection is unavailable there (with tc's reason) and measures nothing.
// Exit status 2 when the cluster cannot be made (not root, no `ip netns`, no openssl, no build).
import { existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { percentile } from '../tools/loadgen/report.js';
import { netnsUnusable, REPO_ROOT } from './netns.js';
import { type Outcome, TlsCluster, wrongAnswers } from './netnsTls.js';
import { opensslWorks } from './tls.js';

const PREFIX = 'inssnb';
const SUBNET = '10.213.100';
const MODELS = ['resnet50', 'mobilenet'];
const SCENARIO = join(REPO_ROOT, 'benchmarks', 'scenarios', 'cluster-duo.json');
const WARMUP_S = 5;

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '40' },
    seconds: { type: 'string', default: '20' },
    'delay-ms': { type: 'string', default: '5' },
  },
});

/** A flag's value as a number in [min, max], or exit 2 naming the flag. */
function flag(name: 'rate' | 'seconds' | 'delay-ms', min: number, max: number): number {
  const v = Number(values[name]);
  if (!Number.isFinite(v) || v < min || v > max) {
    console.error(`bench:cluster: --${name} ${values[name]}: must be a number from ${min} to ${max}`);
    process.exit(2);
  }
  return v;
}
const RATE = flag('rate', 1, 500);
const SECONDS = flag('seconds', 1, 600);
const DELAY_MS = flag('delay-ms', 0, 1000);

function unusable(): string | null {
  if (!existsSync(join(REPO_ROOT, 'dist', 'benchmarks', 'netnsClient.js'))) return 'no build: run npm run build';
  if (!opensslWorks()) return 'no openssl';
  return netnsUnusable(PREFIX);
}

/** The sum and count of a histogram of the scheduler's /metrics, over its models. */
function histogram(metrics: string, name: string): { sum: number; count: number } {
  const total = (suffix: string) =>
    [...metrics.matchAll(new RegExp(`^${name}_${suffix}\\{[^}]*\\} ([0-9.e+-]+)$`, 'gm'))].reduce(
      (a, m) => a + Number(m[1]),
      0,
    );
  return { sum: total('sum'), count: total('count') };
}

/** The outcomes that are not 200, counted by status and reason. */
function others(out: readonly Outcome[]): string {
  const t = new Map<string, number>();
  for (const o of out.filter((x) => x.status !== 200)) {
    const why = /"reason":"([^"]+)"/.exec(o.error ?? '')?.[1] ?? (o.error ?? '').slice(0, 40);
    const k = `${o.status} ${why}`;
    t.set(k, (t.get(k) ?? 0) + 1);
  }
  return t.size === 0 ? 'none' : [...t].map(([k, n]) => `${n} x ${k}`).join('; ');
}

/** One row: a cluster with `delayMs` of netem (0: none), warmed up, then the measured load. */
async function row(delayMs: number): Promise<string> {
  const link = delayMs > 0 ? `netem delay ${delayMs} ms each way` : 'bridge, no delay';
  let c: TlsCluster;
  try {
    c = new TlsCluster({
      prefix: PREFIX,
      subnet: SUBNET,
      scenario: SCENARIO,
      models: MODELS,
      policy: 'timeshare',
      ...(delayMs > 0 ? { delayMs } : {}),
    });
  } catch (e) {
    const why = (e as Error).message.replace(/\s+/g, ' ');
    if (delayMs > 0 && /netem/.test(why)) return `| ${link} | delay injection unavailable on this kernel: ${why} |`;
    throw e;
  }
  try {
    c.startScheduler();
    await c.until('the scheduler listening', () => /endpoint https:/.test(c.sched.stdout), 60_000);
    for (const a of ['gpu1', 'gpu2']) c.startAgent(a);
    await c.until('both GPU hosts serving both models', () => c.serving(['gpu1', 'gpu2']), 120_000);
    const intervalMs = 1000 / RATE;
    await c.load(Math.round(WARMUP_S * RATE), intervalMs);
    const m0 = await c.get('/metrics');
    const out = await c.load(Math.round(SECONDS * RATE), intervalMs);
    const m1 = await c.get('/metrics');
    const ok = out.filter((o) => o.status === 200);
    const wrong = wrongAnswers(out).length;
    const lat = Float64Array.from(ok.map((o) => o.doneAt - o.sentAt)).sort();
    const first = Math.min(...out.map((o) => o.sentAt));
    const spanS = (Math.max(...out.map((o) => o.doneAt)) - first) / 1000;
    const sentPerS = (out.length - 1) / ((Math.max(...out.map((o) => o.sentAt)) - first) / 1000);
    const d = (name: string) => {
      const [a, b] = [histogram(m0, name), histogram(m1, name)];
      return { sum: b.sum - a.sum, count: b.count - a.count };
    };
    const size = d('inss_batch_size');
    const transport = d('inss_batch_transport_seconds');
    const ms = (x: number | null) => (x === null ? '-' : x.toFixed(0));
    return (
      `| ${link} | ${out.length} | ${ok.length - wrong}${wrong > 0 ? ` (${wrong} WRONG)` : ''} | ${others(out)} | ` +
      `${sentPerS.toFixed(1)} | ${(ok.length / spanS).toFixed(1)} | ` +
      `${ms(percentile(lat, 50))} | ${ms(percentile(lat, 99))} | ` +
      `${size.count > 0 ? (size.sum / size.count).toFixed(2) : '-'} | ` +
      `${transport.count > 0 ? ((transport.sum / transport.count) * 1000).toFixed(1) : '-'} |`
    );
  } finally {
    c.destroy();
  }
}

const why = unusable();
if (why) {
  console.error(`bench:cluster: cannot make the cluster: ${why}`);
  process.exit(2);
}
// An interrupted run still removes its namespaces (NetnsCluster's exit handler).
process.once('SIGINT', () => process.exit(130));
console.log(
  `bench:cluster: ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(2)} at the start; scenario ` +
    `${SCENARIO}; ${RATE} tasks/s for ${SECONDS} s after ${WARMUP_S} s of warm-up; policy timeshare; TLS on\n`,
);
console.log(
  '| link | tasks | answered 200 (right model) | others | sent/s | throughput (200/s) | p50 ms | p99 ms | ' +
    'mean batch | batch transport mean ms |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
console.log(await row(0));
if (DELAY_MS > 0) console.log(await row(DELAY_MS));
console.log(`\nload average ${loadavg()[0]!.toFixed(2)} at the end`);

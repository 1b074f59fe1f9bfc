// The soak: a long run under load with swaps and worker kills, watching the
// scheduler's and the agent's memory and file descriptors for growth, and every task for an answer.
//
//   npm run build && npm run bench:soak [-- --minutes 30 --rate R --kill-every-s 180 --step-every-s 60]
//
// Starts `inss scheduler --policy gslice --scenario benchmarks/scenarios/soak-two.json` and
// `inss agent --simulate rtx2060s:1` as processes (each with benchmarks/soakProbe.ts loaded, which
// records its heap after a full GC), then for --minutes:
// - load: open-loop Poisson requests (one binary 3x224x224 FP32 image each) at R tasks/s in total;
//   without --rate, R is half the capacity measured first (15 s closed loop, 64 outstanding, 200s per
//   second). Every --step-every-s the load moves between the models (resnet50 75% / mobilenet 25%,
//   then the reverse), so that the policy changes their shares (swaps);
// - faults: every --kill-every-s a serving worker is SIGKILLed (the agent restarts it); the time until
//   it is ready again is its recovery;
// - samples every --sample-every-s: RSS (/proc/PID/status), open file descriptors (/proc/PID/fd),
//   heap and ArrayBuffers after GC (the probe) of the scheduler and the agent, and the shares the
//   scheduler lists.
// At the end: every request got an HTTP answer (none hung: a 60 s client timeout counts as never
// answered), the scheduler answered exactly as many tasks as the client got answers
// (inss_requests_total), every 200 names its model and is that model's output, and RSS, fds and heap
// at the end (median of the last 5 minutes) grew less than 10% over after the warm-up (median of the
// 5 minutes after --warmup-s). Prints the tables of docs/reliability.md, writes the samples as CSV
// (--csv), and exits 1 when any check fails.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Rng } from '../src/workload/random.js';
import {
  capacity,
  clientAgent,
  MODELS,
  pending,
  send,
  swapsDone,
  tally,
  tasksAnswered,
  workers,
} from './soakClient.js';
import { fdCount, median, probed, rssMb, type Sample, samplesCsv } from './soakSamples.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'inss.js');
const PROBE = pathToFileURL(join(import.meta.dirname, 'soakProbe.js')).href;
const SCENARIO = join(ROOT, 'benchmarks', 'scenarios', 'soak-two.json');

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    rate: { type: 'string' },
    'kill-every-s': { type: 'string', default: '180' },
    'step-every-s': { type: 'string', default: '60' },
    'sample-every-s': { type: 'string', default: '10' },
    'warmup-s': { type: 'string' },
    csv: { type: 'string' },
  },
});

/** A flag's positive number, or exit 2 with a one-line error. */
function positive(flag: string, v: string | undefined): number {
  const n = Number(v);
  if (v === undefined || !Number.isFinite(n) || n <= 0) {
    console.error(`bench:soak: --${flag} must be a positive number, got '${v}'`);
    process.exit(2);
  }
  return n;
}
const DURATION_S = positive('minutes', values.minutes) * 60;
const KILL_EVERY_S = positive('kill-every-s', values['kill-every-s']);
const STEP_EVERY_S = positive('step-every-s', values['step-every-s']);
const SAMPLE_EVERY_S = positive('sample-every-s', values['sample-every-s']);
// The default warm-up: 3 minutes, or a fifth of a short run.
const WARMUP_S =
  values['warmup-s'] !== undefined ? positive('warmup-s', values['warmup-s']) : Math.min(180, DURATION_S / 5);
/**
 * The window of samples a figure is the median of: 5 minutes, or a fifth of a short run. Shorter
 * windows (a minute: 6 samples) were dominated by the moment: the scheduler's fds count the client's
 * open connections, the agent's the pipes of the workers running then (shadows and restarts included).
 */
const WINDOW_S = Math.min(300, DURATION_S / 5);
if (WARMUP_S + WINDOW_S > DURATION_S - WINDOW_S) {
  console.error(
    `bench:soak: --warmup-s ${WARMUP_S} leaves no room for the after-warm-up and end windows (${WINDOW_S} s ` +
      `each) in ${DURATION_S} s`,
  );
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// Processes

interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  readonly probeFile: string;
  out: string;
}

const dir = mkdtempSync(join(tmpdir(), 'inss-soak-'));

function start(name: string, args: readonly string[], env: Record<string, string>): Proc {
  const probeFile = join(dir, `${name}.probe.jsonl`);
  writeFileSync(probeFile, '');
  const child = spawn(process.execPath, ['--expose-gc', '--import', PROBE, BIN, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env, SOAK_PROBE_FILE: probeFile, SOAK_PROBE_MS: String(SAMPLE_EVERY_S * 1000) },
  });
  const p: Proc = { name, child, probeFile, out: '' };
  started.push(p);
  child.stdout.setEncoding('utf8').on('data', (d: string) => (p.out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (p.out = (p.out + d).slice(-20_000)));
  child.on('exit', (code, signal) => {
    if (!stopping) {
      console.error(`bench:soak: ${name} exited (${code ?? signal}) during the soak:\n${p.out.slice(-3000)}`);
      process.exit(1);
    }
  });
  return p;
}
let stopping = false;
const started: Proc[] = [];
// Whatever ends this process (a failed wait included) ends the processes it started.
process.on('exit', () => {
  for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGKILL');
});

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await f().catch(() => null);
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// ---------------------------------------------------------------------------------------------
// The run

const token = `soak-${process.pid}-0123456789abcdef`;
const sched = start(
  'scheduler',
  [
    'scheduler',
    '--port',
    '0',
    '--scenario',
    SCENARIO,
    '--policy',
    'gslice',
    '--state-dir',
    join(dir, 'state'),
    '--log-level',
    'warn',
  ],
  { INSS_TOKEN: token },
);
const base = await until(
  'the scheduler',
  () => Promise.resolve(/endpoint (http:\/\/[^ ]+)\/v2/.exec(sched.out)?.[1]),
  60_000,
);
const agent = start(
  'agent',
  [
    'agent',
    '--scheduler',
    base.replace(/^http/, 'ws'),
    '--simulate',
    'rtx2060s:1',
    '--agent-id',
    'soak',
    '--log-level',
    'warn',
  ],
  { INSS_TOKEN: token },
);
const procs = [sched, agent];
const answeredBefore = await tasksAnswered(base);
// The policy deploys a model once it has load: a request per model every 200 ms until both serve.
await until(
  'the agent serving',
  async () => {
    for (const [k, m] of MODELS.entries()) void send(base, m, k);
    return (await fetch(`${base}/v2/health/ready`)).status === 200;
  },
  120_000,
);

const load0 = loadavg()[0]!;
const rate = values.rate !== undefined ? positive('rate', values.rate) : (await capacity(base, 15)) / 2;
await Promise.all(pending);
const how = values.rate !== undefined ? 'as given' : 'half the capacity measured first';
console.log(
  `soak: ${DURATION_S / 60} min at ${rate.toFixed(1)} tasks/s (${how}); steps every ${STEP_EVERY_S} s, a ` +
    `worker SIGKILL every ${KILL_EVERY_S} s, samples every ${SAMPLE_EVERY_S} s; ${cpus().length} CPUs, Node ` +
    `${process.version}, load average ${load0.toFixed(2)} at the start`,
);

const swapsBefore = await swapsDone(base);
const t0 = performance.now();
const nowS = () => (performance.now() - t0) / 1000;
const samples: Sample[] = [];
const recoveries: number[] = [];
const recovering: Promise<void>[] = [];
let kills = 0;
let retired = 0;

// Samples, on their own timer.
const sampler = setInterval(() => {
  void workers(base).then(
    (ws) => {
      const shares = ws
        .filter((w) => w.role === 'active')
        .map((w) => `${w.model}:${w.pct}`)
        .sort()
        .join(' ');
      samples.push({
        atS: nowS(),
        rssMb: Object.fromEntries(procs.map((p) => [p.name, rssMb(p.child.pid!)])),
        fds: Object.fromEntries(procs.map((p) => [p.name, fdCount(p.child.pid!)])),
        heapMb: Object.fromEntries(procs.map((p) => [p.name, probed(p.probeFile).heapMb])),
        buffersMb: Object.fromEntries(procs.map((p) => [p.name, probed(p.probeFile).buffersMb])),
        shares,
        answered: tally.ok,
      });
    },
    () => undefined,
  );
}, SAMPLE_EVERY_S * 1000);

// Worker kills, on their own timer: the kill, then (in the background) until it is ready again.
const killer = setInterval(() => {
  void workers(base).then((ws) => {
    const serving = ws.filter((w) => w.state === 'ready' && w.pid !== null);
    const victim = serving[kills % Math.max(1, serving.length)];
    if (!victim) return;
    kills++;
    const at = performance.now();
    try {
      process.kill(victim.pid!, 'SIGKILL');
    } catch {
      return; // it ended meanwhile (a swap)
    }
    // Recovered: a worker of its model serves again; or the policy wants none of that model any more
    // (its load moved away: gslice retires an idle model's workers), which is no recovery to time.
    recovering.push(
      until(
        'the killed worker replaced',
        async () => {
          const mine = (await workers(base)).filter((w) => w.model === victim.model);
          if (mine.length === 0) return 'retired';
          return mine.some((w) => w.state === 'ready' && w.pid !== null && w.pid !== victim.pid) && 'replaced';
        },
        120_000,
      ).then(
        (how) => void (how === 'retired' ? retired++ : recoveries.push((performance.now() - at) / 1000)),
        () => void recoveries.push(Infinity),
      ),
    );
  });
}, KILL_EVERY_S * 1000);

// The load: open-loop Poisson, the mix changing every step.
const rng = new Rng(7);
let nextAtS = 0;
for (let i = 0; nextAtS < DURATION_S; i++) {
  nextAtS += rng.exponential() / rate;
  const wait = nextAtS - nowS();
  if (wait > 0.001) await new Promise((r) => setTimeout(r, wait * 1000));
  const heavy = Math.floor(nextAtS / STEP_EVERY_S) % 2; // which model gets 75% in this step
  const model = rng.next() < 0.75 ? MODELS[heavy]! : MODELS[1 - heavy]!;
  void send(base, model, i);
}
clearInterval(killer);
clearInterval(sampler);
await Promise.all(pending);
await Promise.all(recovering);
const answered = (await tasksAnswered(base)) - answeredBefore;
const swaps = (await swapsDone(base)) - swapsBefore;
const load1 = loadavg()[0]!;

stopping = true;
for (const p of procs) p.child.kill('SIGTERM');
await Promise.all(
  procs.map((p) => new Promise((r) => (p.child.exitCode !== null ? r(null) : p.child.once('exit', r)))),
);
clientAgent.destroy();

// ---------------------------------------------------------------------------------------------
// Report

const clientAnswers = tally.sent - tally.neverAnswered;
const failures: string[] = [];
if (tally.neverAnswered > 0) failures.push(`${tally.neverAnswered} requests never answered`);
if (tally.wrong > 0) failures.push(`${tally.wrong} answers from the wrong model or with the wrong output`);
if (answered !== clientAnswers)
  failures.push(`the scheduler answered ${answered} tasks, the client got ${clientAnswers} answers`);
if (recoveries.some((r) => !Number.isFinite(r))) failures.push('a killed worker was not replaced within 120 s');

const inWindow = (from: number, to: number) => samples.filter((s) => s.atS >= from && s.atS < to);
const first = samples[0];
const afterWarmup = inWindow(WARMUP_S, WARMUP_S + WINDOW_S);
const end = inWindow(DURATION_S - WINDOW_S, Infinity);
console.log('\n| process | figure | start | after warm-up | end | growth |');
console.log('|---|---|---|---|---|---|');
for (const p of procs) {
  // Buffers are shown, not held to 10%: after GC they are the bodies in flight at that moment (a few
  // MiB that come and go), so a leak shows in RSS (they are outside the heap) rather than as a ratio.
  for (const [figure, get, digits, gated] of [
    ['RSS (MiB)', (s: Sample) => s.rssMb[p.name]!, 1, true],
    ['heap after GC (MiB)', (s: Sample) => s.heapMb[p.name]!, 1, true],
    ['buffers after GC (MiB)', (s: Sample) => s.buffersMb[p.name]!, 1, false],
    ['open fds', (s: Sample) => s.fds[p.name]!, 0, true],
  ] as const) {
    const w = median(afterWarmup.map(get));
    const e = median(end.map(get));
    const growth = e / w - 1;
    if (gated && !(growth < 0.1)) failures.push(`${p.name} ${figure} grew ${(growth * 100).toFixed(1)}%`);
    console.log(
      `| ${p.name} | ${figure} | ${first ? get(first).toFixed(digits) : '-'} | ${w.toFixed(digits)} | ` +
        `${e.toFixed(digits)} | ${(growth * 100).toFixed(1)}% |`,
    );
  }
}
const errors =
  Object.entries(tally.byReason)
    .map(([k, v]) => `${v} x ${k}`)
    .join(', ') || 'none';
const rec = recoveries.filter(Number.isFinite);
const sharesSeen = [...new Set(samples.map((s) => s.shares))];
console.log(
  `\nsent ${tally.sent}, answered 200 ${tally.ok} (right model and output), errors: ${errors}; never ` +
    `answered ${tally.neverAnswered}; wrong ${tally.wrong}`,
);
console.log(`exactly once: the scheduler answered ${answered} tasks, the client got ${clientAnswers} answers`);
console.log(
  `worker kills ${kills} (${retired} of them retired by the policy before a replacement served), recovery ` +
    `median ${median(rec).toFixed(1)} s, max ${rec.length ? Math.max(...rec).toFixed(1) : '-'} s; shadow swaps ` +
    `${swaps}; ${sharesSeen.length} share sets seen ` +
    `(${sharesSeen.slice(0, 6).join(' | ')}${sharesSeen.length > 6 ? ' | ...' : ''})`,
);
console.log(
  `windows: after warm-up ${WARMUP_S}-${WARMUP_S + WINDOW_S} s (${afterWarmup.length} samples), end ` +
    `${DURATION_S - WINDOW_S}-${DURATION_S} s (${end.length} samples); load average ${load0.toFixed(2)} at the ` +
    `start, ${load1.toFixed(2)} at the end`,
);
if (values.csv !== undefined) {
  writeFileSync(
    values.csv,
    samplesCsv(
      procs.map((p) => p.name),
      samples,
    ),
  );
  console.log(`samples: ${values.csv}`);
}
rmSync(dir, { recursive: true, force: true });
console.log(failures.length === 0 ? '\nsoak: PASS' : `\nsoak: FAIL\n- ${failures.join('\n- ')}`);
process.exit(failures.length === 0 ? 0 : 1);

// What a front door carries per core, with one door and with two (docs/front-doors.md):
//
//   npm run bench:front-doors [-- --seconds 8 --concurrency 32 --rounds 3]
//
// `inss scheduler` (door 0) and `inss agent --simulate rtx2060s:2 --zero-time` (two simulated GPUs answering at
// once, resnet50 on each: benchmarks/scenarios/system-two.json, static-even), and for two doors an
// `inss frontdoor` too, which the scheduler gives one of the GPUs. A closed-loop client keeps `concurrency`
// requests (one 224x224x3 FP32 image, 602 KB, Triton's binary format) outstanding, alternating over the doors;
// no shared memory (--shm-mb 0), so every byte crosses each door's sockets. Reported per round: tasks answered
// per second, the CPU the door processes used (utime + stime from /proc, in cores), and tasks per door-core
// second (tasks / CPU seconds of the doors): what one core of a front door carries. Everything runs on this
// machine with the client and the workers' stand-ins, so the totals are bound by the machine, not the doors.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { ChildProcess } from 'node:child_process';
import { waitFor } from './processes.js';
import { closedLoop, imageRequest, quantile, start, waitReady } from './systemClient.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'inss.js');
const SCENARIO = join(ROOT, 'benchmarks', 'scenarios', 'system-two.json');
const TOKEN = 'bench-front-doors-token-0123';
const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '3' },
  },
});
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = Number(values.rounds);
if (!(SECONDS > 0) || !Number.isInteger(CONCURRENCY) || CONCURRENCY < 1 || !Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error('--seconds must be > 0, --concurrency and --rounds positive integers');

/** CPU seconds (user + system) a process has used, from /proc. */
function cpuSeconds(c: ChildProcess): number {
  const f = readFileSync(`/proc/${c.pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / 100; // utime, stime (fields 14, 15) in clock ticks
}

async function run(doors: 1 | 2): Promise<{ perS: number; cores: number; perCore: number; errors: number }[]> {
  const dir = mkdtempSync(join(tmpdir(), 'inss-bench-doors-'));
  const common = ['--port', '0', '--no-grpc', '--shm-mb', '0', '--scenario', SCENARIO, '--log-level', 'warn'];
  const procs: ChildProcess[] = [];
  try {
    const sched = start([BIN, 'scheduler', ...common, '--policy', 'static-even', '--state-dir', dir, '--token', TOKEN]);
    procs.push(sched.child);
    const base = await waitFor(sched.out, /endpoint (http:\/\/[^ ]+)\/v2/);
    const ws = base.replace(/^http/, 'ws');
    procs.push(
      start([BIN, 'agent', '--scheduler', ws, '--token', TOKEN, '--simulate', 'rtx2060s:2', '--zero-time']).child,
    );
    const bases = [base];
    const doorProcs = [sched.child];
    if (doors === 2) {
      const door = start([BIN, 'frontdoor', ...common, '--scheduler', ws, '--token', TOKEN, '--door-id', 'd1']);
      procs.push(door.child);
      doorProcs.push(door.child);
      bases.push(await waitFor(door.out, /endpoint (http:\/\/[^ ]+)\/v2/));
    }
    for (const b of bases) await waitReady(`${b}/v2/health/ready`);
    // Each door holds a worker (the scheduler places one GPU on each).
    for (let i = 0; i < 300; i++) {
      const held = await Promise.all(
        bases.map(
          async (b) => ((await (await fetch(`${b}/v2/inss/cluster`)).json()) as { workers: unknown[] }).workers,
        ),
      );
      if (held.every((w) => w.length === (doors === 2 ? 1 : 2))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const { body, headers } = imageRequest();
    const urls = bases.map((b) => `${b}/v2/models/resnet50/infer`);
    await closedLoop(urls, body, headers, 2, CONCURRENCY); // warm-up
    const out = [];
    for (let r = 0; r < ROUNDS; r++) {
      const cpu0 = doorProcs.map(cpuSeconds);
      const t0 = performance.now();
      const res = await closedLoop(urls, body, headers, SECONDS, CONCURRENCY);
      const wallS = (performance.now() - t0) / 1000;
      const cpu = doorProcs.map(cpuSeconds).reduce((a, x, i) => a + x - cpu0[i]!, 0);
      out.push({ perS: res.perS, cores: cpu / wallS, perCore: (res.perS * wallS) / cpu, errors: res.errors });
    }
    return out;
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => quantile(xs, 0.5);
console.log(`front doors: ${SECONDS} s rounds x ${ROUNDS}, ${CONCURRENCY} requests outstanding, 602 KB each`);
console.log('| doors | tasks/s | door cores used | tasks/s per door core | errors |');
console.log('| --- | --- | --- | --- | --- |');
for (const n of [1, 2] as const) {
  const rounds = await run(n);
  const f = (xs: number[], d = 0) => `${median(xs).toFixed(d)} (${rounds.map((_, i) => xs[i]!.toFixed(d)).join(', ')})`;
  console.log(
    `| ${n} | ${f(rounds.map((r) => r.perS))} | ${f(
      rounds.map((r) => r.cores),
      2,
    )} | ` + `${f(rounds.map((r) => r.perCore))} | ${rounds.reduce((a, r) => a + r.errors, 0)} |`,
  );
}

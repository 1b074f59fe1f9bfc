// Would shared memory between the scheduler and a worker on one host save CPU per task?
// (docs/serving.md "Shared memory between the scheduler and a worker: measured"). A feasibility
// measurement of the data path alone, no scheduler: process A stands for the scheduler, process B
// (a child) for the worker, and 64 tasks of 602 KB (one 224x224x3 FP32 image) stay outstanding,
// each answered with 4 KB. Every task's body is copied once in A (as bodyReader.ts copies a request
// body into shared memory) and every byte of it read once in B (a sum over 1 byte in 64: one per
// cache line), in every mode:
//
//   socket  today's direct path: the bodies in a SharedArrayBuffer; batches of up to 30 go as frames
//           (head, then each task's bytes, one writev) from a worker thread of A over a Unix socket
//           (scheduler/workerLink.ts SocketLinks, as the link thread runs it); B reassembles each
//           frame into a recycled buffer (FrameDecoder + BufferPool, as agent/simWorker.ts) and sums it.
//   shm     the bodies in slots of a /dev/shm file that A and B both map (MAP_SHARED, through a
//           tiny N-API addon: native/shm/shm.c, built at install, src/protocol/shmMap.ts); the
//           frame carries only each task's [offset, length]; B sums the bytes in place; A frees a
//           task's slot when its answer is back. Same link thread as `socket`.
//   shm-main  as shm, with the socket on A's main thread (no link thread: the frames are small).
//
// Both processes answer by the same code (frames.ts's format); A checks every task's sum against its
// body's. Modes alternate within each round (the order reversed every other round); figures are
// medians over rounds. CPU per task: A's whole process (process.cpuUsage), A's main thread and its
// link thread (/proc/self/task/TID/stat, 10 ms ticks) and B's process (/proc/PID/stat).
//
//   npm run build && npm run bench:shm-path -- [--rounds 3 --seconds 5 --modes socket,shm,shm-main]
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, ftruncateSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { BufferPool, FrameDecoder, frameHead, framePieces } from '../src/protocol/frames.js';
import { loadShmAddon } from '../src/protocol/shmMap.js';
import { type SocketEvents, SocketLinks } from '../scheduler/workerLink.js';

/** Tasks outstanding (bench:system's concurrency). */
const TASKS = 64;
/** One 224x224x3 FP32 image. */
const BODY_BYTES = 224 * 224 * 3 * 4;
/** Slots in the shared region start at page boundaries. */
const SLOT_BYTES = Math.ceil(BODY_BYTES / 4096) * 4096;
const MAX_BATCH = 30;
/** An answer's bytes per task (1000 FP32 classes and some). */
const ANSWER_BYTES = 4096;
/** Distinct bodies the tasks' bytes come from (standing for what arrives on the HTTP sockets). */
const SOURCES = 8;
const WARM_UP_MS = 1000;

type Mode = 'socket' | 'shm' | 'shm-main';
const MODES: readonly Mode[] = ['socket', 'shm', 'shm-main'];

interface BatchHeader {
  type: 'batch';
  id: number;
  /** shm modes: each task's [offset, length] in the shared region; socket: the payload holds the tasks. */
  slots?: [number, number][];
  tasks: number;
}
interface AnswerHeader {
  type: 'answer';
  id: number;
  sums: number[];
}

/** The sum of 1 byte in 64 of `bytes` (one per cache line), the same work in B for every mode. */
function sum64(bytes: Uint8Array, from: number, length: number): number {
  let s = 0;
  for (let i = from, end = from + length; i < end; i += 64) s = (s + bytes[i]!) | 0;
  return s;
}

/** Maps the region (made by A, mapped by both) through the project's addon (npm run build:shm). */
function mapRegion(path: string, writable: boolean): Uint8Array {
  const addon = loadShmAddon();
  if (!addon.ok) throw new Error(`the shared-memory addon is ${addon.why}: this benchmark needs it`);
  return new Uint8Array(addon.map(path, writable));
}

function writeFrame(s: Socket, pieces: readonly Uint8Array[]): void {
  s.cork();
  for (const p of pieces) s.write(p);
  s.uncork();
}

// ---- B: the worker ---------------------------------------------------------------------------------
function serveB(socketPath: string, shmPath: string): void {
  const region = mapRegion(shmPath, false);
  const pool = new BufferPool();
  const answer = Buffer.alloc(MAX_BATCH * ANSWER_BYTES, 7);
  const server = createServer((sock) => {
    const decoder = new FrameDecoder(pool.take);
    sock.on('data', (chunk: Buffer) => {
      for (const f of decoder.push(chunk)) {
        const h = f.header as { type: string };
        if (h.type !== 'batch') continue; // the link's `attach`
        const b = f.header as BatchHeader;
        const sums: number[] = [];
        if (b.slots) for (const [offset, length] of b.slots) sums.push(sum64(region, offset, length));
        else for (let i = 0; i < b.tasks; i++) sums.push(sum64(f.payload, i * BODY_BYTES, BODY_BYTES));
        pool.give(f.payload);
        const out: AnswerHeader = { type: 'answer', id: b.id, sums };
        writeFrame(sock, framePieces(out, [answer.subarray(0, b.tasks * ANSWER_BYTES)]));
      }
    });
    sock.on('error', () => undefined);
  });
  server.listen(socketPath, () => console.log('listening'));
  process.on('SIGTERM', () => process.exit(0));
}

// ---- A's link thread -------------------------------------------------------------------------------
type ToThread = { op: 'open'; path: string } | { op: 'send'; head: Uint8Array; parts: Uint8Array[] };
type FromThread = { ev: 'connected' } | { ev: 'frame'; header: unknown } | { ev: 'closed'; why: string };

function linkThread(): void {
  const port = parentPort!;
  const post = (m: FromThread) => port.postMessage(m);
  // As workerLinkThread.ts: each answer's payload copied to a buffer of its own, handed over.
  const links = new SocketLinks({
    connected: () => post({ ev: 'connected' }),
    frame: (_cid, header, payload) => {
      const own = new Uint8Array(payload);
      port.postMessage({ ev: 'frame', header }, [own.buffer]);
    },
    closed: (_cid, why) => post({ ev: 'closed', why }),
  });
  port.on('message', (m: ToThread) => {
    if (m.op === 'open') links.open(0, { kind: 'unix', path: m.path }, 'bench');
    else links.send(0, m.head, m.parts);
  });
}

// ---- A: the scheduler's side -----------------------------------------------------------------------
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** CPU ms of a process or thread so far, from /proc (utime + stime, in clock ticks). */
function procCpuMs(statPath: string): number {
  const s = readFileSync(statPath, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}
const threadIds = (): Set<string> => new Set(readdirSync('/proc/self/task'));

interface Sample {
  tasks: number;
  atMs: number;
  aMs: number;
  mainMs: number;
  threadMs: number;
  bMs: number;
}
interface Figures {
  mode: Mode;
  perS: number;
  aMs: number;
  mainMs: number;
  threadMs: number;
  restMs: number;
  bMs: number;
  totalMs: number;
}

async function runA(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '3' },
      seconds: { type: 'string', default: '5' },
      modes: { type: 'string', default: MODES.join(',') },
    },
  });
  const rounds = Number(values.rounds);
  const seconds = Number(values.seconds);
  const modes = values.modes.split(',') as Mode[];
  if (!(Number.isInteger(rounds) && rounds >= 1)) throw new Error('--rounds: a positive integer');
  if (!(seconds > 0)) throw new Error('--seconds: a positive number');
  for (const m of modes) if (!MODES.includes(m)) throw new Error(`--modes: '${m}' is not one of ${MODES.join(', ')}`);

  const dir = mkdtempSync(join(tmpdir(), 'inss-shm-'));
  const shmPath = `/dev/shm/inss-shm-bench-${process.pid}`;
  const socketPath = join(dir, 'b.sock');
  const cleanup: (() => void)[] = [
    () => rmSync(dir, { recursive: true, force: true }),
    () => rmSync(shmPath, { force: true }),
  ];
  try {
    console.log(
      `load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
    const fd = openSync(shmPath, 'wx', 0o600);
    ftruncateSync(fd, TASKS * SLOT_BYTES);
    closeSync(fd);
    const region = mapRegion(shmPath, true);
    const sab = new Uint8Array(new SharedArrayBuffer(TASKS * SLOT_BYTES));
    const sources = Array.from({ length: SOURCES }, (_, k) => {
      const b = Buffer.allocUnsafe(BODY_BYTES);
      for (let i = 0; i < BODY_BYTES; i++) b[i] = (i * 31 + k * 17 + (i >> 9)) & 0xff;
      return b;
    });
    const sourceSums = sources.map((b) => sum64(b, 0, BODY_BYTES));

    const b = spawn(process.execPath, [fileURLToPath(import.meta.url), 'serve-b', socketPath, shmPath], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    cleanup.push(() => b.kill());
    await new Promise<void>((res, rej) => {
      b.stdout.once('data', () => res());
      b.once('exit', (c) => rej(new Error(`B exited (${c}) before listening`)));
    });

    let answered = 0;
    let finished = false;
    let onAnswer: (h: AnswerHeader) => void = () => undefined;
    const before = threadIds();
    const thread = new Worker(fileURLToPath(import.meta.url), { workerData: { role: 'link-thread' } });
    cleanup.push(() => void thread.terminate());
    await new Promise<void>((res) => thread.once('online', () => res()));
    const threadTids = [...threadIds()].filter((t) => !before.has(t));
    const connected = new Promise<void>((res, rej) => {
      thread.on('message', (m: FromThread) => {
        if (m.ev === 'connected') res();
        else if (m.ev === 'frame') onAnswer(m.header as AnswerHeader);
        else rej(new Error(`link thread's socket closed: ${m.why}`));
      });
    });
    thread.postMessage({ op: 'open', path: socketPath } satisfies ToThread);
    await connected;
    const viaThread = (head: Uint8Array, parts: Uint8Array[]) =>
      thread.postMessage({ op: 'send', head, parts } satisfies ToThread);
    const mainEvents: SocketEvents = {
      connected: () => undefined,
      frame: (_cid, header) => onAnswer(header as AnswerHeader),
      closed: (_cid, why) => {
        if (!finished) console.error(`main thread's socket closed: ${why}`);
      },
    };
    const mainLinks = new SocketLinks(mainEvents);
    mainLinks.open(0, { kind: 'unix', path: socketPath }, 'bench');
    cleanup.push(() => void mainLinks.stop());
    await new Promise((r) => setTimeout(r, 200));

    const sample = (): Sample => ({
      tasks: answered,
      atMs: performance.now(),
      aMs: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
      mainMs: procCpuMs(`/proc/self/task/${process.pid}/stat`),
      threadMs: threadTids.reduce((a, t) => a + procCpuMs(`/proc/self/task/${t}/stat`), 0),
      bMs: procCpuMs(`/proc/${b.pid}/stat`),
    });

    /** One mode's closed loop for warm-up + `seconds`; resolves once every task is answered. */
    const runMode = async (mode: Mode): Promise<Figures> => {
      const useShm = mode !== 'socket';
      const store = useShm ? region : sab;
      const send =
        mode === 'shm-main' ? (head: Uint8Array, parts: Uint8Array[]) => mainLinks.send(0, head, parts) : viaThread;
      const sourceOf = new Int32Array(TASKS);
      const ready: number[] = [];
      const batches = new Map<number, number[]>();
      let nextId = 0;
      let nextSource = 0;
      let stopping = false;
      let done: () => void = () => undefined;
      // A task arrives: its body copied into a free slot (bodyReader.ts's copy into shared memory).
      const arrive = (slot: number) => {
        const k = nextSource++ % SOURCES;
        sourceOf[slot] = k;
        store.set(sources[k]!, slot * SLOT_BYTES);
        ready.push(slot);
      };
      const dispatch = () => {
        while (ready.length >= MAX_BATCH || (batches.size === 0 && ready.length > 0)) {
          const slots = ready.splice(0, MAX_BATCH);
          const id = nextId++;
          batches.set(id, slots);
          if (useShm) {
            const header: BatchHeader = {
              type: 'batch',
              id,
              tasks: slots.length,
              slots: slots.map((s) => [s * SLOT_BYTES, BODY_BYTES]),
            };
            send(frameHead(header, 0), []);
          } else {
            const header: BatchHeader = { type: 'batch', id, tasks: slots.length };
            send(
              frameHead(header, slots.length * BODY_BYTES),
              slots.map((s) => store.subarray(s * SLOT_BYTES, s * SLOT_BYTES + BODY_BYTES)),
            );
          }
        }
      };
      onAnswer = (h) => {
        const slots = batches.get(h.id);
        if (!slots) throw new Error(`an answer to batch ${h.id}, never sent`);
        batches.delete(h.id);
        slots.forEach((s, i) => {
          if (h.sums[i] !== sourceSums[sourceOf[s]!])
            throw new Error(`${mode}: task in slot ${s} summed ${h.sums[i]} in B, ${sourceSums[sourceOf[s]!]} in A`);
        });
        answered += slots.length;
        if (!stopping) for (const s of slots) arrive(s);
        dispatch();
        if (stopping && batches.size === 0) done();
      };
      for (let s = 0; s < TASKS; s++) arrive(s);
      dispatch();
      await new Promise((r) => setTimeout(r, WARM_UP_MS));
      const s0 = sample();
      await new Promise((r) => setTimeout(r, seconds * 1000));
      const s1 = sample();
      await new Promise<void>((res) => {
        done = res;
        stopping = true;
        if (batches.size === 0) res();
      });
      const n = s1.tasks - s0.tasks;
      const per = (x: number) => x / n;
      const aMs = per(s1.aMs - s0.aMs);
      const mainMs = per(s1.mainMs - s0.mainMs);
      const threadMs = per(s1.threadMs - s0.threadMs);
      const bMs = per(s1.bMs - s0.bMs);
      return {
        mode,
        perS: (n * 1000) / (s1.atMs - s0.atMs),
        aMs,
        mainMs,
        threadMs,
        restMs: aMs - mainMs - threadMs,
        bMs,
        totalMs: aMs + bMs,
      };
    };

    const f3 = (x: number) => x.toFixed(3);
    const line = (f: Figures) =>
      `${f.mode.padEnd(8)} ${f.perS.toFixed(0).padStart(6)} tasks/s  CPU ms/task: A ${f3(f.aMs)} (main ` +
      `${f3(f.mainMs)}, link thread ${f3(f.threadMs)}, rest ${f3(f.restMs)})  B ${f3(f.bMs)}  total ` +
      `${f3(f.totalMs)}`;
    const all: Figures[] = [];
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? modes : [...modes].reverse();
      for (const m of order) {
        const f = await runMode(m);
        all.push(f);
        console.log(`round ${r + 1} ${line(f)}  load ${loadavg()[0]!.toFixed(2)}`);
      }
    }
    const median = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
    };
    console.log(
      `\nmedians of ${rounds} rounds (${TASKS} outstanding, ${BODY_BYTES} B bodies, batches of <= ` +
        `${MAX_BATCH}, ${ANSWER_BYTES} B answers per task):`,
    );
    for (const m of modes) {
      const fs = all.filter((f) => f.mode === m);
      const med = (k: keyof Omit<Figures, 'mode'>) => median(fs.map((f) => f[k]));
      console.log(
        line({
          mode: m,
          perS: med('perS'),
          aMs: med('aMs'),
          mainMs: med('mainMs'),
          threadMs: med('threadMs'),
          restMs: med('restMs'),
          bMs: med('bMs'),
          totalMs: med('totalMs'),
        }),
      );
    }
    console.log(
      `load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
    finished = true;
  } finally {
    for (const c of cleanup.reverse()) c();
  }
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'link-thread') linkThread();
else if (process.argv[2] === 'serve-b') serveB(process.argv[3]!, process.argv[4]!);
else await runA();

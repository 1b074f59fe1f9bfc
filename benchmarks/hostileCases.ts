// The hostile-input corpus (benchmarks/hostile.ts measures it; the integration test
// test/integration/hostile.test.ts runs it with generous bounds). Each case is a real client on a raw
// TCP socket from its own loopback address (127.0.0.2 by default), so that the connection caps per
// client apply to it and not to the well-behaved client and the health probe beside it (127.0.0.1).
import { existsSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

export interface AttackResult {
  /** HTTP status of each answer, or the socket error / 'closed' when none came. */
  readonly outcomes: Record<string, number>;
  /** Until the last attack request was answered or closed. */
  readonly ms: number;
}

interface RawOptions {
  readonly port: number;
  readonly localAddress: string;
  readonly head: string;
  /** Body chunks, written with back-pressure until the server answers or closes. */
  readonly body?: Iterable<Buffer>;
  /** Pause between chunks (slow clients). */
  readonly delayMs?: number;
}

/** `413`, or for a 503 `503 (the error's first words)`; undefined when no status line was read. */
function outcome(got: string): string | undefined {
  const status = /^HTTP\/1\.1 (\d{3})/.exec(got)?.[1];
  if (status !== '503') return status;
  return `503 (${/"error":"([^":(]{0,24})/.exec(got)?.[1]?.trim() ?? '?'})`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One request on its own socket; resolves with the answer's status (or why there was none). */
export function rawRequest(o: RawOptions): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ port: o.port, host: '127.0.0.1', localAddress: o.localAddress });
    let got = '';
    let done = false;
    const finish = (r: string) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(r);
    };
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      got += d;
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      const end = got.indexOf('\r\n\r\n');
      if (!m || end < 0) return;
      const cl = /content-length: *(\d+)/i.exec(got.slice(0, end));
      if (!cl || got.length - end - 4 >= Number(cl[1])) finish(outcome(got) ?? 'closed');
    });
    // A write error (the server answered and closed while the body was still going) is not the
    // outcome: the answer may be in what was read; the close that follows decides.
    let error = 'closed';
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? 'error'));
    socket.on('close', () => finish(outcome(got) ?? error));
    socket.on('connect', () => {
      void (async () => {
        socket.write(o.head);
        for (const chunk of o.body ?? []) {
          if (done) return;
          if (o.delayMs) await sleep(o.delayMs);
          if (done) return;
          if (!socket.write(chunk))
            await new Promise<void>((r) => socket.once('drain', () => r()).once('close', () => r()));
        }
      })();
    });
  });
}

/** `total` bytes of `fill` in 1 MiB chunks, after `prefix`. */
function* filled(total: number, fill: string, prefix = ''): Generator<Buffer> {
  const unit = Buffer.from(fill.repeat(Math.ceil((1 << 20) / fill.length)).slice(0, 1 << 20));
  let left = total;
  if (prefix) {
    yield Buffer.from(prefix);
    left -= prefix.length;
  }
  while (left > 0) {
    const n = Math.min(left, unit.length);
    yield n === unit.length ? unit : unit.subarray(0, n);
    left -= n;
  }
}

/** Chunked transfer encoding around the chunks (a body whose size the server cannot know up front). */
function* chunked(chunks: Iterable<Buffer>): Generator<Buffer> {
  for (const c of chunks) yield Buffer.concat([Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n')]);
  yield Buffer.from('0\r\n\r\n');
}

const MiB = 1 << 20;
const INFER = '/v2/models/resnet50/infer';

function post(path: string, length: number | 'chunked'): string {
  const framing = length === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`;
  return `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`;
}

/** A legitimate JSON request of one 3x224x224 image (~3 MB): the largest a client normally sends. */
export function legitJsonBody(): Buffer {
  const data = Array.from({ length: 3 * 224 * 224 }, (_, i) => Math.fround(Math.sin(i)));
  return Buffer.from(JSON.stringify({ inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', data }] }));
}

export interface AttackCase {
  readonly name: string;
  readonly what: string;
  run(port: number, localAddress: string): Promise<string[]>;
}

async function many(n: number, one: () => Promise<string>): Promise<string[]> {
  return Promise.all(Array.from({ length: n }, one));
}

/** The corpus. `quick`: the same attacks, with fewer slow connections (for the integration test). */
export function attackCases(quick = false): AttackCase[] {
  const deep = 5_000_000;
  const legit = legitJsonBody();
  return [
    {
      name: 'nested-60MiB',
      what: '60 MiB of `[` with Content-Length',
      run: (port, la) =>
        many(1, () => rawRequest({ port, localAddress: la, head: post(INFER, 60 * MiB), body: filled(60 * MiB, '[') })),
    },
    {
      name: 'nested-60MiB-chunked',
      what: '60 MiB of `[`, chunked (no Content-Length: read up to the limit)',
      run: (port, la) =>
        many(1, () =>
          rawRequest({ port, localAddress: la, head: post(INFER, 'chunked'), body: chunked(filled(60 * MiB, '[')) }),
        ),
    },
    {
      name: 'zeros-60MiB-x3',
      what: 'three 60 MiB bodies of `0,0,0,...` at once',
      run: (port, la) =>
        many(3, () =>
          rawRequest({ port, localAddress: la, head: post(INFER, 60 * MiB), body: filled(60 * MiB, '0,', '[') }),
        ),
    },
    {
      name: 'deep-5M',
      what: '5M-deep nesting (`[` x 5M, `]` x 5M)',
      run: (port, la) =>
        many(1, () =>
          rawRequest({
            port,
            localAddress: la,
            head: post(INFER, 2 * deep),
            body: [...filled(deep, '['), ...filled(deep, ']')],
          }),
        ),
    },
    {
      name: 'deep-in-limit',
      what: '7 MB of `[` inside a request, under the body limit (chunked)',
      run: (port, la) =>
        many(1, () =>
          rawRequest({
            port,
            localAddress: la,
            head: post(INFER, 'chunked'),
            body: chunked(
              filled(7_000_000, '[', '{"inputs":[{"name":"input","shape":[1,3,224,224],"datatype":"FP32","data":'),
            ),
          }),
        ),
    },
    {
      name: 'zeros-in-limit',
      what: '3.5M zeros in a request, under the body limit (chunked)',
      run: (port, la) =>
        many(1, () =>
          rawRequest({
            port,
            localAddress: la,
            head: post(INFER, 'chunked'),
            body: chunked(
              filled(7_000_000, '0,', '{"inputs":[{"name":"input","shape":[1,3,224,224],"datatype":"FP32","data":['),
            ),
          }),
        ),
    },
    {
      name: 'slow-headers',
      what: `${quick ? 80 : 200} connections sending headers a byte per second`,
      run: (port, la) =>
        many(quick ? 80 : 200, () =>
          rawRequest({
            port,
            localAddress: la,
            head: 'GET /v2/health/live HTTP/1.1\r\nX-A: ',
            body: pieces(120, 1),
            delayMs: 1000,
          }),
        ),
    },
    {
      name: 'slow-bodies',
      what: `${quick ? 20 : 60} bodies declared 1 MB, sent 1 KB a second`,
      run: (port, la) =>
        many(quick ? 20 : 60, () =>
          rawRequest({
            port,
            localAddress: la,
            head: post(INFER, 1_000_000),
            body: pieces(1_000_000, 1024),
            delayMs: 1000,
          }),
        ),
    },
    {
      name: 'parallel-200',
      what: '200 legitimate JSON requests (3 MB each) at once',
      run: (port, la) =>
        many(200, () => rawRequest({ port, localAddress: la, head: post(INFER, legit.length), body: [legit] })),
    },
  ];
}

/** `total` bytes of `a` in chunks of `size`. */
function* pieces(total: number, size: number): Generator<Buffer> {
  const k = Buffer.alloc(size, 'a');
  for (let left = total; left > 0; left -= k.length) yield k.subarray(0, Math.min(left, k.length));
}

export async function runAttack(c: AttackCase, port: number, localAddress = '127.0.0.2'): Promise<AttackResult> {
  const t0 = performance.now();
  const statuses = await c.run(port, localAddress);
  const outcomes: Record<string, number> = {};
  for (const s of statuses) outcomes[s] = (outcomes[s] ?? 0) + 1;
  return { outcomes, ms: performance.now() - t0 };
}

/**
 * Runs a case on its own thread (hostileAttacker.ts), compiled: from dist/ when this module runs
 * from sources (the integration tests).
 */
export function runAttackInThread(
  name: string,
  port: number,
  quick = false,
  localAddress = '127.0.0.2',
): Promise<AttackResult> {
  const here = fileURLToPath(new URL('./hostileAttacker.js', import.meta.url));
  const file = existsSync(here)
    ? here
    : fileURLToPath(new URL('../dist/benchmarks/hostileAttacker.js', import.meta.url));
  return new Promise((resolve, reject) => {
    const w = new Worker(file, { workerData: { name, port, quick, localAddress } });
    w.once('message', (r: AttackResult) => {
      resolve(r);
      void w.terminate();
    });
    w.once('error', reject);
  });
}

/** GET url every `everyMs` on a keep-alive connection until stopped; the slowest answer and the count. */
export function probe(url: string, everyMs = 100): { stop(): Promise<{ maxMs: number; n: number; failed: number }> } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let running = true;
  let maxMs = 0;
  let n = 0;
  let failed = 0;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      const status = await new Promise<number>((res) => {
        const req = http.get(url, { agent, timeout: 30_000 }, (r) => {
          r.resume();
          r.on('end', () => res(r.statusCode ?? 0));
        });
        req.on('error', () => res(0));
        req.on('timeout', () => req.destroy());
      });
      const ms = performance.now() - t0;
      maxMs = Math.max(maxMs, ms);
      n++;
      if (status !== 200) failed++;
      await sleep(everyMs);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      agent.destroy();
      return { maxMs, n, failed };
    },
  };
}

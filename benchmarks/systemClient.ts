// bench:system's client and processes (benchmarks/system.ts): the request it sends, the closed loop that
// keeps a number of requests outstanding, and the processes it starts and waits for.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { resolve } from 'node:path';
import { fp32ImageRequest } from '../tools/loadgen/binary.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

export function imageRequest(): { body: Buffer; headers: Record<string, string> } {
  const x = new Float32Array(3 * 224 * 224);
  for (let i = 0; i < x.length; i++) x[i] = ((i * 2654435761) % 1000) / 1000;
  return fp32ImageRequest(x);
}

/** Closed loop: `concurrency` requests always outstanding for `seconds`; returns ok answers per second. */
export async function closedLoop(
  urls: readonly string[],
  body: Buffer,
  headers: Record<string, string>,
  seconds: number,
  concurrency: number,
): Promise<{ perS: number; errors: number; p50Ms: number; answerBytes: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const end = performance.now() + seconds * 1000;
  let ok = 0;
  let errors = 0;
  const lat: number[] = [];
  let next = 0;
  let answerBytes = 0;
  const one = (url: string) =>
    new Promise<void>((res) => {
      const t0 = performance.now();
      const req = http.request(
        url,
        { method: 'POST', agent, headers: { ...headers, 'content-length': String(body.length) } },
        (r) => {
          r.on('data', (d: Buffer) => (answerBytes += d.length));
          r.on('end', () => {
            if (r.statusCode === 200) {
              ok++;
              lat.push(performance.now() - t0);
            } else errors++;
            res();
          });
        },
      );
      req.on('error', () => {
        errors++;
        res();
      });
      req.end(body);
    });
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) await one(urls[next++ % urls.length]!);
    }),
  );
  agent.destroy();
  lat.sort((a, b) => a - b);
  return {
    perS: ok / ((performance.now() - t0) / 1000),
    errors,
    p50Ms: lat[Math.floor(lat.length / 2)] ?? NaN,
    answerBytes: answerBytes / Math.max(1, ok + errors),
  };
}

export function start(args: string[], onLine?: (line: string) => void): { child: ChildProcess; out: () => string } {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let partial = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  // The log (pino, on stderr) goes line by line to onLine (a run at debug level writes one per batch).
  child.stderr.on('data', (d: Buffer) => {
    if (!onLine) return;
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop()!;
    for (const l of lines) if (l.startsWith('{')) onLine(l);
  });
  return { child, out: () => out };
}

export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

export async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} never became ready`);
}

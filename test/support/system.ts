// Starts the running system as a user would: `inss up`, `inss scheduler`, `inss agent` as real
// processes, and waits on their HTTP endpoint. Every started process is killed by `stopAll()`.
import { spawn } from 'node:child_process';
import { type Running, running } from '../../benchmarks/processes.js';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { standInForward } from '../../src/serving/standIn.js';
import { INSS_BIN, REPO_ROOT } from './paths.js';
import { fp32ImageRequest } from '../../tools/loadgen/binary.js';

export { type Running, running };

const started: Running[] = [];

export function startInss(args: readonly string[], env: Record<string, string> = {}): Running {
  const child = spawn(process.execPath, [INSS_BIN, ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const r = running(child);
  started.push(r);
  return r;
}

/** Waits until `pattern` appears on stdout (or `stream`); returns its first group. */
export async function waitFor(
  r: Running,
  pattern: RegExp,
  timeoutMs = 60_000,
  stream: 'stdout' | 'stderr' = 'stdout',
): Promise<string> {
  const t0 = Date.now();
  for (;;) {
    const m = pattern.exec(r[stream]);
    if (m) return m[1] ?? m[0];
    if (r.child.exitCode !== null)
      throw new Error(`process exited (${r.child.exitCode}) before printing ${pattern}:\n${r.stderr.slice(-3000)}`);
    if (Date.now() - t0 > timeoutMs)
      throw new Error(`timed out waiting for ${pattern}; stderr:\n${r.stderr.slice(-3000)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** Polls GET url until it answers 200. */
export async function waitHttp200(url: string, timeoutMs = 60_000): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${url} to answer 200`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

export async function stopAll(): Promise<void> {
  for (const r of started.splice(0)) {
    if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
    await r.exited;
    // A scheduler killed so leaves its shared-memory region (the next one to start would remove it).
    for (const n of existsSync('/dev/shm') ? readdirSync('/dev/shm') : [])
      if (n.startsWith(`inss-${r.child.pid}-`)) rmSync(join('/dev/shm', n), { force: true });
  }
}

/** One FP32 image of 3x224x224 as a binary-extension infer request body (Triton's wire format). */
export const binaryInferRequest = fp32ImageRequest;

/**
 * The simulated worker's forward pass for `model` (agent/simWorker.ts, src/serving/standIn.ts):
 * output[k] = input[k] + input[N - 1 - k] + modelOffset(model), so an answer from another model's worker differs.
 */
export function simForward(x: Float32Array, model: string, outputs = 1000): Float32Array {
  return standInForward(model, x, 1, x.length, outputs);
}

/** A started `inss up`: its process, its HTTP endpoint (`http://host:port`) and its gRPC address ('' unless asked). */
export interface Up {
  readonly up: Running;
  readonly base: string;
  readonly address: string;
}

/**
 * `inss up` as a user starts it, on free ports, with its state in `stateDir`, logging warnings only, plus `args`;
 * resolves once `readyPath` answers 200 (default: the server's readiness). `grpc`: a gRPC port too, its address
 * awaited.
 */
export async function startUp(
  stateDir: string,
  args: readonly string[],
  o: { readyPath?: string; grpc?: boolean; timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<Up> {
  const ports = ['--port', '0', ...(o.grpc ? ['--grpc-port', '0'] : [])];
  const up = startInss(['up', ...ports, '--state-dir', stateDir, '--log-level', 'warn', ...args], o.env);
  const timeoutMs = o.timeoutMs ?? 120_000;
  const base = await waitFor(up, /endpoint (http:\/\/[^ ]+)\/v2/, timeoutMs);
  const address = o.grpc ? await waitFor(up, /grpc (\S+:\d+)/, 10_000) : '';
  await waitHttp200(`${base}${o.readyPath ?? '/v2/health/ready'}`, timeoutMs);
  return { up, base, address };
}

// Helpers of the benchmarks that drive `inss` as processes (system.ts, twin.ts, cluster.ts); the system
// tests' process wrapper (test/support/system.ts) is `running` here.
import type { ChildProcess, ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';

/** Polls `get()` (a process's output so far) until `re` matches; returns its first group. */
export async function waitFor(get: () => string, re: RegExp, ms = 60_000): Promise<string> {
  const t0 = Date.now();
  for (;;) {
    const m = re.exec(get());
    if (m) return m[1]!;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${re}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A child with piped stdout and stderr: its output gathered as it comes, its exit awaited. */
export interface Running {
  readonly child: ChildProcess;
  /** Everything printed so far. */
  stdout: string;
  stderr: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Wraps a child started with piped stdout and stderr (the system tests' processes and the cluster bench's). */
export function running(child: ChildProcessByStdio<null, Readable, Readable>): Running {
  const r: Running = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal }))),
  };
  child.stdout.setEncoding('utf8').on('data', (d: string) => (r.stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (r.stderr += d));
  return r;
}

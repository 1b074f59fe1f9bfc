// The soak's samples (benchmarks/soak.ts): a process's RSS and open file descriptors from /proc (Linux),
// its heap and buffers after GC from the probe's file (benchmarks/soakProbe.ts), and their CSV.
import { readdirSync, readFileSync } from 'node:fs';

export interface Sample {
  readonly atS: number;
  readonly rssMb: Record<string, number>;
  readonly fds: Record<string, number>;
  readonly heapMb: Record<string, number>;
  /** Memory of ArrayBuffers and Buffers (outside the heap: request and batch bodies). */
  readonly buffersMb: Record<string, number>;
  readonly shares: string;
  readonly answered: number;
}

export function rssMb(pid: number): number {
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}
export const fdCount = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
/** The heap and the ArrayBuffers after GC (MiB), the probe's last line. */
export function probed(probeFile: string): { heapMb: number; buffersMb: number } {
  const last = readFileSync(probeFile, 'utf8').trimEnd().split('\n').at(-1);
  if (!last) return { heapMb: NaN, buffersMb: NaN };
  const m = JSON.parse(last) as { heapUsed: number; arrayBuffers: number };
  return { heapMb: m.heapUsed / 2 ** 20, buffersMb: m.arrayBuffers / 2 ** 20 };
}
export const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The samples as CSV: one row per sample, four columns per process. */
export function samplesCsv(names: readonly string[], samples: readonly Sample[]): string {
  const head = [
    'at_s',
    ...names.flatMap((n) => [`${n}_rss_mb`, `${n}_heap_mb`, `${n}_buffers_mb`, `${n}_fds`]),
    'answered_200',
    'shares',
  ];
  const rows = samples.map((s) =>
    [
      s.atS.toFixed(1),
      ...names.flatMap((n) => [
        s.rssMb[n]!.toFixed(1),
        s.heapMb[n]!.toFixed(2),
        s.buffersMb[n]!.toFixed(2),
        String(s.fds[n]),
      ]),
      String(s.answered),
      s.shares,
    ].join(','),
  );
  return `${head.join(',')}\n${rows.join('\n')}\n`;
}

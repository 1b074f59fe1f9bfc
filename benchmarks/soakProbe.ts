// Loaded with `node --expose-gc --import <this file>` into the processes the soak watches
// (benchmarks/soak.ts): every SOAK_PROBE_MS it runs a full garbage collection and appends one JSON
// line of the heap to SOAK_PROBE_FILE, so that the heap figures are what is still referenced (a leak),
// not garbage not yet collected. Not part of inss: only the soak loads it.
import { appendFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const file = process.env.SOAK_PROBE_FILE;
const everyMs = Number(process.env.SOAK_PROBE_MS ?? 10_000);
// Node runs --import in worker threads too (the scheduler's JSON parse thread): only the main thread records.
if (isMainThread && file !== undefined && Number.isFinite(everyMs) && everyMs > 0) {
  setInterval(() => {
    (globalThis as { gc?: () => void }).gc?.();
    const m = process.memoryUsage();
    appendFileSync(
      file,
      `${JSON.stringify({
        t: Date.now(),
        heapUsed: m.heapUsed,
        heapTotal: m.heapTotal,
        external: m.external,
        arrayBuffers: m.arrayBuffers,
      })}\n`,
    );
  }, everyMs).unref();
}

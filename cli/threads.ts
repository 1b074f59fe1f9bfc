// Runs `inss bench` jobs (one policy on one scenario, or one suite cell) on worker threads, each timing its own
// decisions; the worker is cli/suiteWorker.ts.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * Runs `jobs` on `threads` worker threads (suiteWorker.ts), or in this process with `here` when
 * `threads` is 1 or the compiled worker is absent (running from sources); results in job order.
 */
export async function runInThreads<J, R>(
  jobs: readonly J[],
  threads: number,
  here: (job: J) => R,
  onDone: (result: R) => void = () => {},
): Promise<R[]> {
  const workerFile = fileURLToPath(new URL('./suiteWorker.js', import.meta.url));
  if (threads <= 1 || !existsSync(workerFile)) {
    return jobs.map((j) => {
      const r = here(j);
      onDone(r);
      return r;
    });
  }
  const out: R[] = new Array<R>(jobs.length);
  let next = 0;
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const w = new Worker(workerFile);
      let k = -1;
      const feed = () => {
        if (next >= jobs.length) {
          void w.terminate().then(() => resolve());
          return;
        }
        k = next++;
        w.postMessage(jobs[k]);
      };
      w.on('message', (m: { ok: true; result: R } | { ok: false; error: string }) => {
        if (!m.ok) {
          void w.terminate();
          reject(new Error(`bench job ${JSON.stringify(jobs[k])}: ${m.error}`));
          return;
        }
        out[k] = m.result;
        onDone(m.result);
        feed();
      });
      w.on('error', reject);
      feed();
    });
  await Promise.all(Array.from({ length: Math.min(threads, jobs.length) }, one));
  return out;
}

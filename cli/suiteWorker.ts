// A worker thread of `inss bench --suite --jobs N`: runs the cells it is sent (benchCell.ts) and
// posts each result back; exits when its port closes.
import { parentPort } from 'node:worker_threads';
import { type CellJob, runCell } from './benchCell.js';

if (!parentPort) throw new Error('suiteWorker.ts runs as a worker thread of `inss bench --suite`');
const port = parentPort;
port.on('message', (job: CellJob) => {
  try {
    port.postMessage({ ok: true, cell: runCell(job) });
  } catch (err) {
    port.postMessage({ ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
});

// A worker thread of `inss bench --jobs N`: runs the suite cells or the single-scenario policy runs it
// is sent (benchCell.ts) and posts each result back; exits when its port closes.
import { parentPort } from 'node:worker_threads';
import { type CellJob, type PolicyJob, runCell, runPolicyJob } from './benchCell.js';

if (!parentPort) throw new Error('suiteWorker.ts runs as a worker thread of `inss bench`');
const port = parentPort;
port.on('message', (job: CellJob | PolicyJob) => {
  try {
    port.postMessage({ ok: true, result: 'kind' in job ? runPolicyJob(job) : runCell(job) });
  } catch (err) {
    port.postMessage({ ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
});

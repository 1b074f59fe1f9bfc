// A worker thread of the scheduler service: parses large infer request bodies off the event loop
// (scheduler/parsePool.ts sends them; the codec is scheduler/kserve.ts's). One job at a time.
import { parentPort } from 'node:worker_threads';
import { parseInferRequest } from './kserve.js';
import type { ParseJob } from './parsePool.js';

if (!parentPort) throw new Error('parseWorker.ts runs as a worker thread of the scheduler service');
const port = parentPort;
port.on('message', (job: ParseJob) => {
  const body = Buffer.from(job.body.buffer, job.body.byteOffset, job.body.byteLength);
  port.postMessage({ id: job.id, result: parseInferRequest(body, job.headers, job.model) });
});

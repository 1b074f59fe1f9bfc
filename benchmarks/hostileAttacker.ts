// A worker thread that runs one case of the hostile-input corpus (hostileCases.ts), so that the
// attacker's own work (writing 60 MiB bodies) does not delay the event loop of the well-behaved client
// and the health probe that measure the server meanwhile.
import { parentPort, workerData } from 'node:worker_threads';
import { attackCases, runAttack } from './hostileCases.js';

const job = workerData as { name: string; port: number; quick: boolean; localAddress: string };
const c = attackCases(job.quick).find((x) => x.name === job.name);
if (!c || !parentPort) throw new Error(`hostileAttacker: no case '${job.name}', or not a worker thread`);
parentPort.postMessage(await runAttack(c, job.port, job.localAddress));

// Where the client's own leg goes (docs/serving.md, "The client's leg"): a client sending 602 KB
// bodies as `inss loadgen` does (node:http, one keep-alive agent, the body built once, open-loop
// Poisson sends) to a bare node:http server in its own process that stamps, in wall-clock ms
// (performance.timeOrigin + now(), comparable across processes on one host), when its 'request' event
// fired (headers read) and when the body was read, and answers 4.2 KB at once. Per request: the
// client's synchronous request()/end(), its 'finish' (the body handed to the kernel), send -> the
// server's 'request' event, the body read, and the server's answer -> the client's end of it.
//
//   node dist/benchmarks/clientLeg.js [--rate 137 --seconds 15]
import { spawn } from 'node:child_process';
import http from 'node:http';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { waitFor } from './processes.js';

const { values } = parseArgs({
  options: { rate: { type: 'string', default: '137' }, seconds: { type: 'string', default: '15' } },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
if (!(RATE > 0) || !(SECONDS > 0)) throw new Error('--rate and --seconds: positive numbers');
/** Requests left out at the start (the connections opening). */
const WARM_UP = 50;

const SERVER = `
const http = require('node:http');
const { performance } = require('node:perf_hooks');
const wall = () => performance.timeOrigin + performance.now();
const answer = Buffer.alloc(4200, 1);
http.createServer((req, res) => {
  const arrived = wall();
  req.on('data', () => undefined);
  req.on('end', () => {
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': answer.length,
      'x-arrived': String(arrived),
      'x-body-read': String(wall()),
    });
    res.end(answer);
  });
}).listen(0, '127.0.0.1', function () { console.log('port ' + this.address().port); });`;

const wall = (): number => performance.timeOrigin + performance.now();
const server = spawn(process.execPath, ['-e', SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
let out = '';
server.stdout.on('data', (d: Buffer) => (out += d.toString()));
const port = Number(await waitFor(() => out, /port (\d+)/));
const body = Buffer.alloc(602_263, 7);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
interface Row {
  latencyMs: number;
  syncMs: number;
  finishMs: number;
  toServerMs: number;
  bodyMs: number;
  backMs: number;
}
const rows: Row[] = [];
let inFlight = 0;
let sending = true;
let drained: () => void = () => undefined;
const allDone = new Promise<void>((r) => (drained = r));

function send(): void {
  inFlight++;
  const t0 = performance.now();
  const sentWall = wall();
  let finishMs = NaN;
  const req = http.request(
    {
      host: '127.0.0.1',
      port,
      path: '/',
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(body.length) },
    },
    (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const endWall = wall();
        const latencyMs = performance.now() - t0;
        Buffer.concat(chunks);
        const arrived = Number(res.headers['x-arrived']);
        const bodyRead = Number(res.headers['x-body-read']);
        rows.push({
          latencyMs,
          syncMs,
          finishMs,
          toServerMs: arrived - sentWall,
          bodyMs: bodyRead - arrived,
          backMs: endWall - bodyRead,
        });
        if (--inFlight === 0 && !sending) drained();
      });
    },
  );
  req.on('finish', () => (finishMs = wall() - sentWall));
  req.end(body);
  const syncMs = wall() - sentWall;
}

console.log(
  `machine: ${cpus().length} x ${cpus()[0]?.model ?? '?'}, node ${process.version}, load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}; ${RATE}/s Poisson for ${SECONDS} s, 602263-byte bodies`,
);
const tEnd = performance.now() + SECONDS * 1000;
let next = performance.now();
while (performance.now() < tEnd) {
  next += (-Math.log(1 - Math.random()) * 1000) / RATE;
  const waitMs = next - performance.now();
  if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
  send();
}
sending = false;
if (inFlight > 0) await allDone;
server.kill();
agent.destroy();
const kept = rows.slice(WARM_UP);
const stat = (k: keyof Row): string => {
  const v = kept.map((r) => r[k]).sort((a, b) => a - b);
  return `${(v.reduce((a, b) => a + b, 0) / v.length).toFixed(3)} (p50 ${v[v.length >> 1]!.toFixed(3)})`;
};
console.log(
  `${kept.length} requests; mean (p50) ms: latency ${stat('latencyMs')}; the client's request() and end() ` +
    `return ${stat('syncMs')}, its body handed to the kernel ${stat('finishMs')}; send -> the server's request ` +
    `event ${stat('toServerMs')}; the body read ${stat('bodyMs')}; the server's answer -> the client's end ` +
    `${stat('backMs')}`,
);
console.log(
  `load average after: ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);

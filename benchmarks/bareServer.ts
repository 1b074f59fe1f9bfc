// A bare node:http server that speaks just enough of KServe v2 for `inss loadgen` (bench:twin's
// calibration of the client's own leg, docs/serving.md "The client's leg"). Run in its own process,
// as the scheduler is:
//
//   node dist/benchmarks/bareServer.js METADATA.json
//
// METADATA.json: an array of the models' metadata as the scheduler answers GET /v2/models/{name}.
// The server answers that metadata, and each infer request, once its body is read, at once with a
// response of the model's outputs (zeros, binary as the request asks) encoded by the scheduler's own
// codec, so the client reads the same bytes it reads from inss. Per model it times each request as
// the scheduler times its own view of a task: from the request's headers read (node's 'request'
// event; the scheduler's onRequest) to the response handed to the kernel ('finish'; the scheduler's
// way out ends there). GET /stats answers those sums and counts. What the client measures beyond
// them is its own leg: its HTTP stack, the kernel's loopback both ways, and the server's header parse.
// Prints `port N` once listening on 127.0.0.1.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { encodeInferResponse } from '../scheduler/kserve.js';
import { DATATYPE_BYTES, DatatypeSchema, elementCount } from '../src/protocol/tensor.js';

const TensorSchema = z.object({ name: z.string(), datatype: DatatypeSchema, shape: z.array(z.number().int()) });
const MetadataSchema = z.array(z.object({ name: z.string().min(1), inputs: z.array(TensorSchema), outputs: z.array(TensorSchema).min(1) }).passthrough()).min(1);

const file = process.argv[2];
if (file === undefined) throw new Error('usage: bareServer.js METADATA.json');
const models = MetadataSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
const byName = new Map(models.map((m) => [m.name, m]));
/** Per model: requests timed, and the sum of their times in the server (ms). */
const stats = new Map(models.map((m) => [m.name, { count: 0, serverMs: 0 }]));

/** The outputs of one answer: zeros of the metadata's shapes with batch 1, binary when the request asked for binary outputs. */
function answer(name: string, binary: boolean): { body: Buffer; headers: Record<string, string> } {
  const m = byName.get(name)!;
  const outputs = m.outputs.map((o) => {
    const shape = [1, ...o.shape.slice(1)];
    return { name: o.name, datatype: o.datatype, shape, data: Buffer.alloc(elementCount(shape) * DATATYPE_BYTES[o.datatype]), binary };
  });
  return encodeInferResponse({ modelName: name, modelVersion: '1', outputs });
}
const answers = new Map(models.flatMap((m) => [[`${m.name} binary`, answer(m.name, true)] as const, [`${m.name} json`, answer(m.name, false)] as const]));

function reply(res: http.ServerResponse, status: number, body: Buffer, headers: Record<string, string>): void {
  res.writeHead(status, { ...headers, 'content-length': String(body.length) });
  res.end(body);
}

const server = http.createServer((req, res) => {
  const arrivedMs = performance.now();
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const url = req.url ?? '';
    if (url === '/stats') return reply(res, 200, Buffer.from(JSON.stringify(Object.fromEntries(stats))), { 'content-type': 'application/json' });
    const match = /^\/v2\/models\/([^/]+)(\/infer)?$/.exec(url);
    const name = match ? decodeURIComponent(match[1]!) : '';
    if (!match || !byName.has(name)) return reply(res, 404, Buffer.from(JSON.stringify({ error: `unknown model '${name}'` })), { 'content-type': 'application/json' });
    if (!match[2]) return reply(res, 200, Buffer.from(JSON.stringify(byName.get(name))), { 'content-type': 'application/json' });
    // The binary extension's requests ask for binary outputs (loadgen's binary_data_output); JSON ones get JSON.
    const a = answers.get(`${name} ${req.headers['inference-header-content-length'] !== undefined ? 'binary' : 'json'}`)!;
    res.on('finish', () => {
      const s = stats.get(name)!;
      s.count += 1;
      s.serverMs += performance.now() - arrivedMs;
    });
    reply(res, 200, a.body, a.headers);
  });
});
server.listen(0, '127.0.0.1', () => console.log(`port ${(server.address() as AddressInfo).port}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));

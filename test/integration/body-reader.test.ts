// scheduler/bodyReader.ts in a real Fastify server over real sockets: large bodies are read into
// recycled buffers and come back whole; the limits and the Content-Length check answer as Fastify's own reader.
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyReader, POOLED_BODY_BYTES } from '../../scheduler/bodyReader.js';
import { ShmRegion } from '../../scheduler/shmRegion.js';
import { loadShmAddon } from '../../src/protocol/shmMap.js';

let app: FastifyInstance;
let base: string;
const seen: Buffer[] = [];

beforeAll(async () => {
  app = Fastify({ bodyLimit: 4 << 20 });
  app.removeAllContentTypeParsers();
  const bodies = new BodyReader(2);
  app.addContentTypeParser('*', bodies.parse);
  app.post('/echo', { bodyLimit: 1 << 20 }, (req, reply) => {
    const body = req.body as Buffer;
    seen.push(body);
    // The digest of what arrived, then the body goes back to the pool (as the infer route does once answered).
    let sum = 0;
    for (let i = 0; i < body.length; i += 997) sum = (sum * 31 + body[i]!) >>> 0;
    bodies.giveBack(body);
    return reply.send({ length: body.length, sum });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const a = app.server.address();
  base = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
afterAll(async () => {
  await app.close();
});

function digest(b: Buffer): number {
  let sum = 0;
  for (let i = 0; i < b.length; i += 997) sum = (sum * 31 + b[i]!) >>> 0;
  return sum;
}

function body(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * seed + 11) % 251;
  return b;
}

/** POSTs `chunks` (chunked transfer encoding unless `length` is given); the status and JSON answer. */
function post(
  chunks: Buffer[],
  length?: number,
): Promise<{ status: number; json: { length?: number; sum?: number; error?: string; message?: string } }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/echo`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/octet-stream',
          ...(length !== undefined ? { 'content-length': String(length) } : {}),
        },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(parts).toString()) as never }),
        );
      },
    );
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

describe('BodyReader', () => {
  it('reads a large body whole into a recycled buffer, and a small or chunked one as Fastify does', async () => {
    const a = body(602_112, 7);
    const r1 = await post([a.subarray(0, 1000), a.subarray(1000)], a.length);
    expect(r1).toEqual({ status: 200, json: { length: a.length, sum: digest(a) } });
    const b = body(602_000, 13); // another body of the same size class: the buffer given back is reused
    const r2 = await post([b], b.length);
    expect(r2).toEqual({ status: 200, json: { length: b.length, sum: digest(b) } });
    expect(seen.at(-1)!.buffer).toBe(seen.at(-2)!.buffer);
    const small = body(POOLED_BODY_BYTES - 1, 3);
    expect(await post([small], small.length)).toEqual({
      status: 200,
      json: { length: small.length, sum: digest(small) },
    });
    const chunked = body(300_000, 5);
    expect(await post([chunked.subarray(0, 100_000), chunked.subarray(100_000)])).toEqual({
      status: 200,
      json: { length: chunked.length, sum: digest(chunked) },
    });
  });

  it(
    'answers 413 for a body over the route limit, by its ' + 'Content-Length or by the bytes of a chunked one',
    async () => {
      const big = body((1 << 20) + 1, 3);
      expect((await post([big], big.length)).status).toBe(413);
      expect((await post([big.subarray(0, 600_000), big.subarray(600_000)])).status).toBe(413);
      // The server still reads bodies whole afterwards.
      const a = body(700_000, 9);
      expect(await post([a], a.length)).toEqual({ status: 200, json: { length: a.length, sum: digest(a) } });
    },
  );
});

// With a shared-memory region (scheduler/shmRegion.ts): binary bodies go into its slots, freed once
// both the exchange ended and the task (if any) was answered, in either order, or when the client left.
const addon = loadShmAddon();
describe.runIf(addon.ok)(
  addon.ok ? 'BodyReader with a shared-memory region' : 'BodyReader with a shared-memory region: skipped, no addon',
  () => {
    let sapp: FastifyInstance;
    let sbase = '';
    let region: ShmRegion;
    const dir = mkdtempSync(join(tmpdir(), 'inss-body-shm-'));
    /** Tasks held by the route: ending one is `taskEnded`. */
    const tasks: { body: Buffer; end: () => void }[] = [];
    beforeAll(async () => {
      const r = ShmRegion.open(4, dir);
      if (!(r instanceof ShmRegion)) throw new Error(r.why);
      region = r;
      sapp = Fastify({ bodyLimit: 4 << 20 });
      sapp.removeAllContentTypeParsers();
      const bodies = new BodyReader(2, 8 << 20, region);
      sapp.addHook('onRequest', (req, reply, done) => {
        bodies.watch(req.raw, reply.raw);
        done();
      });
      sapp.addContentTypeParser('*', bodies.parse);
      // ?task=1: a task is submitted (ended by the test); ?bad=1: refused before any task.
      sapp.post<{ Querystring: { task?: string; bad?: string } }>('/t', (req, reply) => {
        const body = req.body as Buffer;
        if (req.query.bad) return reply.code(400).send({ error: 'no' });
        if (req.query.task) {
          bodies.taskStarted(body);
          tasks.push({ body, end: () => bodies.taskEnded(body) });
        }
        return reply.send({ inSlot: region.holds(body) });
      });
      await sapp.listen({ host: '127.0.0.1', port: 0 });
      const a = sapp.server.address();
      sbase = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
    });
    afterAll(async () => {
      await sapp.close();
      region.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const send = (query: string, b: Buffer, binaryHeader: number | null) =>
      new Promise<{ status: number; inSlot?: boolean }>((resolve, reject) => {
        const headers = {
          'content-type': 'application/octet-stream',
          'content-length': String(b.length),
          ...(binaryHeader !== null ? { 'inference-header-content-length': String(binaryHeader) } : {}),
        };
        const req = request(`${sbase}/t${query}`, { method: 'POST', headers }, (res) => {
          const parts: Buffer[] = [];
          res.on('data', (d: Buffer) => parts.push(d));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, ...(JSON.parse(Buffer.concat(parts).toString()) as object) }),
          );
        });
        req.on('error', reject);
        req.end(b);
      });
    const slotsFreed = async (n: number) => {
      for (let i = 0; i < 200 && region.inUse.slots !== n; i++) await new Promise((r) => setTimeout(r, 10));
      return region.inUse.slots;
    };

    it(
      'a binary body takes a slot, freed once its exchange ended ' + 'and its task was answered, in either order',
      async () => {
        expect(await send('?task=1', body(200_000, 3), 100)).toEqual({ status: 200, inSlot: true });
        expect(await slotsFreed(1)).toBe(1); // answered, but its task runs on
        tasks.shift()!.end();
        expect(await slotsFreed(0)).toBe(0);
        // The task ends before the exchange does (the answer is sent after): freed when the response closed.
        const answered = send('?task=1', body(200_000, 4), 100);
        await answered;
        tasks.shift()!.end();
        expect(await slotsFreed(0)).toBe(0);
      },
    );

    it('a JSON body takes no slot; a binary one refused before any task is freed with its exchange', async () => {
      expect(await send('', body(200_000, 5), null)).toEqual({ status: 200, inSlot: false });
      expect(await send('?bad=1', body(200_000, 6), 100)).toMatchObject({ status: 400 });
      expect(await slotsFreed(0)).toBe(0);
    });

    it('a client that leaves mid-body leaves no slot held', async () => {
      await new Promise<void>((resolve) => {
        const req = request(`${sbase}/t`, {
          method: 'POST',
          headers: {
            'content-type': 'application/octet-stream',
            'content-length': '300000',
            'inference-header-content-length': '100',
          },
        });
        req.on('error', () => resolve());
        req.write(body(100_000, 7), () => setTimeout(() => req.destroy(), 50));
      });
      expect(await slotsFreed(0)).toBe(0);
    });
  },
);

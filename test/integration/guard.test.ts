// The HTTP guard's deadlines and caps (scheduler/guard.ts) on a real socket, with the scheduler service
// in this process and its limits made small so that each fires in well under a second or two: a body
// that stops arriving, headers that never end, one connection over the per-client cap. No agent is
// needed: these are refused before a task exists.
import net from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadScenario } from '../../cli/scenarios.js';
import type { InputLimits } from '../../scheduler/limits.js';
import { PolicyRegistry } from '../../cli/registry.js';
import { SchedulerService } from '../../scheduler/service.js';
import { modelSignature } from '../../src/protocol/tensor.js';
import { REPO_ROOT } from '../support/paths.js';

let service: SchedulerService;
let port: number;

/** The scheduler service for resnet50 on any free port, with `limits` over the defaults. */
function startService(limits: Partial<InputLimits>): Promise<SchedulerService> {
  const loaded = loadScenario(join(REPO_ROOT, 'benchmarks', 'scenarios', 'hostile-one.json'));
  return SchedulerService.start({
    host: '127.0.0.1',
    port: 0,
    token: 'guard-token-0123456789',
    models: [{ name: 'resnet50', sloMs: 1000, signature: modelSignature(602112, 4000) }],
    profiles: loaded.profiles,
    policyName: 'static-even',
    createPolicy: (c) => new PolicyRegistry().get('static-even').create(c, {}),
    logger: pino({ level: 'silent' }),
    version: 'test',
    limits,
  });
}

beforeAll(async () => {
  service = await startService({
    bodyTimeoutBaseMs: 300,
    minBodyBytesPerS: 1_000_000,
    headersTimeoutMs: 500,
    maxConnectionsPerClient: 3,
  });
  port = Number(new URL(service.url).port);
});

afterAll(async () => {
  await service.close();
});

/** Opens a socket, writes `data`, and resolves with everything read until the server closes it. */
function exchange(data: string, to = port): { socket: net.Socket; answer: Promise<string> } {
  const socket = net.connect({ port: to, host: '127.0.0.1' });
  const answer = new Promise<string>((resolve) => {
    let got = '';
    socket.setEncoding('utf8').on('data', (d: string) => (got += d));
    socket.on('close', () => resolve(got));
    socket.on('error', () => undefined);
  });
  socket.on('connect', () => socket.write(data));
  return { socket, answer };
}

const jsonBody = (raw: string) => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { error: string };

describe('the HTTP guard on a real socket', () => {
  it('a body that stops arriving gets 408 JSON after its size-scaled deadline, and the connection closes', async () => {
    const { answer } = exchange(
      'POST /v2/models/resnet50/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ' +
        '100000\r\n\r\n{"inputs":',
    );
    const raw = await answer;
    expect(raw).toMatch(/^HTTP\/1\.1 408 /);
    expect(jsonBody(raw).error).toMatch(/request body did not arrive within \d+ ms/);
  });

  it(
    'a body that would take the bytes being received past the cap gets 503 JSON before it is read; the bytes are ' +
      'released when a request ends',
    async () => {
      // Its own service, with the default (10 s) deadlines: nothing here depends on how fast the machine is.
      const capped = await startService({ maxBodyBytesInFlight: 150_000 });
      const p = Number(new URL(capped.url).port);
      const head =
        'POST /v2/models/resnet50/infer HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: ' +
        'application/json\r\nContent-Length: 100000\r\n\r\n';
      const live = async () => (await fetch(`${capped.url}/v2/health/live`)).status;
      try {
        const first = exchange(`${head}{`, p);
        await new Promise((r) => first.socket.once('connect', r));
        await new Promise((r) => setTimeout(r, 50));
        expect(await live()).toBe(200); // the server has read what arrived before this
        const raw = await exchange(`${head}{`, p).answer;
        expect(raw).toMatch(/^HTTP\/1\.1 503 /);
        expect(jsonBody(raw).error).toMatch(/bytes of request bodies are being received \(limit 150000\)/);
        first.socket.destroy();
        await first.answer;
        expect(await live()).toBe(200);
        // Released: a whole body of the same size is read and parsed (a 400: it is not JSON).
        const third = await exchange(`${head}${'x'.repeat(100_000)}`, p).answer;
        expect(third).toMatch(/^HTTP\/1\.1 400 /);
      } finally {
        await capped.close();
      }
    },
  );

  it(
    'a chunked body counts its bytes as they arrive: the chunk that takes them past the cap gets 503 JSON; ' +
      'released when it ends',
    async () => {
      const capped = await startService({ maxBodyBytesInFlight: 150_000 });
      const p = Number(new URL(capped.url).port);
      const head =
        'POST /v2/models/resnet50/infer HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: ' +
        'application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
      const chunk = (data: string) => `${data.length.toString(16)}\r\n${data}\r\n`;
      const live = async () => (await fetch(`${capped.url}/v2/health/live`)).status;
      try {
        // 100 kB arrive on one connection and stay (its body is not finished).
        const first = exchange(`${head}${chunk('x'.repeat(100_000))}`, p);
        await new Promise((r) => first.socket.once('connect', r));
        await new Promise((r) => setTimeout(r, 50));
        expect(await live()).toBe(200); // the server has read what arrived before this
        // A second chunked body is admitted (no length to refuse it by) until its bytes pass the cap.
        const second = await exchange(`${head}${chunk('y'.repeat(60_000))}`, p).answer;
        expect(second).toMatch(/^HTTP\/1\.1 503 /);
        expect(jsonBody(second).error).toMatch(
          /server busy: 100000 bytes of request bodies are being received \(limit 150000\)/,
        );
        // Under the cap, a chunked body is read whole (a 400: it is not JSON).
        const small = await exchange(`${head}${chunk('z'.repeat(40_000))}0\r\n\r\n`, p).answer;
        expect(small).toMatch(/^HTTP\/1\.1 400 /);
        first.socket.destroy();
        await first.answer;
        expect(await live()).toBe(200);
        // Released: the same 60 kB chunked body is now read whole.
        const again = await exchange(`${head}${chunk('y'.repeat(60_000))}0\r\n\r\n`, p).answer;
        expect(again).toMatch(/^HTTP\/1\.1 400 /);
      } finally {
        await capped.close();
      }
    },
  );

  it('headers that never end get 408 JSON', async () => {
    const { answer } = exchange('GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const raw = await answer;
    expect(raw).toMatch(/^HTTP\/1\.1 408 /);
    expect(jsonBody(raw).error).toMatch(/did not arrive in time/);
  });

  it('a connection over the per-client cap gets 503 JSON at once; the others are served', async () => {
    const held = [0, 1, 2].map(() => net.connect({ port, host: '127.0.0.1' }).setEncoding('utf8'));
    /** A keep-alive request on a held socket, answered: the server has counted that connection. */
    const served = (sock: net.Socket) =>
      new Promise<string>((resolve) => {
        let got = '';
        const onData = (d: string) => {
          got += d;
          if (!got.includes('"live":true')) return;
          sock.off('data', onData);
          resolve(got);
        };
        sock.on('data', onData);
        sock.write('GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n');
      });
    for (const r of await Promise.all(held.map(served))) expect(r).toMatch(/^HTTP\/1\.1 200 /);
    const raw = await exchange('GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n').answer;
    expect(raw).toMatch(/^HTTP\/1\.1 503 /);
    expect(jsonBody(raw).error).toMatch(/too many connections from .*\(3 open\)/);
    expect(await served(held[0]!)).toMatch(/^HTTP\/1\.1 200 /); // the held ones are still served
    for (const s of held) s.destroy();
  });
});

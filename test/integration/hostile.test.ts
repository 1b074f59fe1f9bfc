// Hostile input against `inss up` as a real process: while huge, deep, slow or many
// requests arrive from one client address (127.0.0.2), the health route keeps answering another
// (127.0.0.1), and every refusal is the protocol's `{"error": ...}` JSON. The bound on the health
// route's slowest answer is generous (the VM is shared and loaded); docs/reliability.md has the figures.
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probe, runAttackInThread } from '../../benchmarks/hostileCases.js';
import { REPO_ROOT } from '../support/paths.js';
import { type Running, startInss, stopAll, waitFor, waitHttp200 } from '../support/system.js';

const HEALTH_BOUND_MS = 4000;
const dir = mkdtempSync(join(tmpdir(), 'inss-hostile-'));
let up: Running;
let base: string;
let port: number;

beforeAll(async () => {
  up = startInss([
    'up',
    '--port',
    '0',
    '--policy',
    'static-even',
    '--scenario',
    join(REPO_ROOT, 'benchmarks', 'scenarios', 'hostile-one.json'),
    '--state-dir',
    dir,
    '--log-level',
    'error',
    '--max-connections-per-client',
    '64',
  ]);
  base = await waitFor(up, /endpoint (http:\/\/[^ ]+)\/v2/);
  port = Number(new URL(base).port);
  await waitHttp200(`${base}/v2/health/ready`);
});

afterAll(async () => {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs an attack while probing the health route; the attack's outcomes and the probe's slowest answer. */
async function underAttack(name: string): Promise<{ outcomes: Record<string, number>; healthMaxMs: number }> {
  const p = probe(`${base}/v2/health/live`);
  const r = await runAttackInThread(name, port, true);
  const h = await p.stop();
  expect(h.failed).toBe(0);
  expect(h.n).toBeGreaterThan(0);
  return { outcomes: r.outcomes, healthMaxMs: h.maxMs };
}

/** 413 read by the client, or the connection the server closed on a body it will not read. */
const refusedBeforeRead = (outcomes: Record<string, number>) =>
  Object.keys(outcomes).every((k) => ['413', 'EPIPE', 'ECONNRESET'].includes(k));

describe('hostile input against inss up', () => {
  it(
    'huge bodies (60 MiB of brackets, with and without Content-Length) are refused before they are read and the ' +
      'health route answers meanwhile',
    async () => {
      for (const name of ['nested-60MiB', 'nested-60MiB-chunked']) {
        const r = await underAttack(name);
        expect(refusedBeforeRead(r.outcomes), `${name}: ${JSON.stringify(r.outcomes)}`).toBe(true);
        expect(r.healthMaxMs, name).toBeLessThan(HEALTH_BOUND_MS);
      }
    },
  );

  it(
    'deep nesting (5M deep; 7 MB of brackets) and millions of values under the body limit get a 400 from the ' +
      'byte scan',
    async () => {
      for (const name of ['deep-5M', 'deep-in-limit', 'zeros-in-limit']) {
        const r = await underAttack(name);
        expect(r.outcomes, name).toEqual({ 400: 1 });
        expect(r.healthMaxMs, name).toBeLessThan(HEALTH_BOUND_MS);
      }
    },
  );

  it(
    'slow headers from many connections: those over the per-client cap get 503 at once, the rest 408; health ' +
      'answers meanwhile',
    async () => {
      const r = await underAttack('slow-headers');
      const codes = Object.keys(r.outcomes);
      expect(
        codes.every((k) => k === '408' || k.startsWith('503')),
        JSON.stringify(r.outcomes),
      ).toBe(true);
      expect(r.outcomes['408']).toBe(64);
      expect(r.healthMaxMs).toBeLessThan(HEALTH_BOUND_MS);
    },
  );

  it(
    '200 parallel 3 MB JSON requests: each answered (200, or 503 when the parse queue or the connection cap is ' +
      'full); health answers meanwhile',
    async () => {
      const r = await underAttack('parallel-200');
      const total = Object.values(r.outcomes).reduce((a, b) => a + b, 0);
      expect(total).toBe(200);
      expect(
        Object.keys(r.outcomes).every((k) => k === '200' || k.startsWith('503')),
        JSON.stringify(r.outcomes),
      ).toBe(true);
      expect(r.healthMaxMs).toBeLessThan(HEALTH_BOUND_MS);
    },
  );

  it('protocol errors are JSON: 405 with Allow, 414 and 431 without the URL, 404 with the path clipped', async () => {
    const del = await fetch(`${base}/v2/models/resnet50/infer`, { method: 'DELETE' });
    expect(del.status).toBe(405);
    expect(del.headers.get('allow')).toBe('POST');
    expect(((await del.json()) as { error: string }).error).toMatch(/method DELETE is not allowed/);

    const longSegment = 'x'.repeat(5000);
    const r414 = await fetch(`${base}/v2/models/${longSegment}/ready`);
    expect(r414.status).toBe(414);
    const t414 = await r414.text();
    expect(JSON.parse(t414)).toEqual({ error: expect.any(String) as unknown });
    expect(t414).not.toContain(longSegment.slice(0, 100));

    const r404 = await fetch(`${base}/${'y'.repeat(3000)}?secret=1`);
    expect(r404.status).toBe(404);
    const e404 = ((await r404.json()) as { error: string }).error;
    expect(e404.length).toBeLessThan(120);
    expect(e404).not.toContain('secret');

    // A header over Node's 16 KiB limit: Node answers before any route; the answer is still JSON.
    const raw = await new Promise<string>((resolve) => {
      const s = net.connect({ port, host: '127.0.0.1' }, () =>
        s.write(`GET /v2 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
      );
      let got = '';
      s.setEncoding('utf8').on('data', (d: string) => (got += d));
      s.on('close', () => resolve(got));
      s.on('error', () => undefined);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual({
      error: expect.stringMatching(/headers are larger/) as unknown,
    });
  });

  it('a busy port is a one-line error and a non-zero exit', async () => {
    const second = startInss([
      'up',
      '--port',
      String(port),
      '--grpc-port',
      '0',
      '--policy',
      'static-even',
      '--scenario',
      join(REPO_ROOT, 'benchmarks', 'scenarios', 'hostile-one.json'),
      '--state-dir',
      dir,
    ]);
    const { code } = await second.exited;
    expect(code).toBe(2);
    expect(second.stderr.trim()).toMatch(
      new RegExp(`^inss: --port ${port}: 127\\.0\\.0\\.1:${port} is already in use`),
    );
    expect(second.stderr.trim().split('\n')).toHaveLength(1);
  });
});

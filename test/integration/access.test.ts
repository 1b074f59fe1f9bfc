// Access control and TLS with real processes: the cluster recipe of docs/tls.md, bound to
// 0.0.0.0, over HTTPS and wss:// with a self-signed certificate made here by the openssl binary, tokens
// from files (the scheduler, an agent, `inss loadgen` as the client); and `inss up` on 0.0.0.0 with no
// token file (introspection closed, unless opted out).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LoadgenReportSchema } from '../../tools/loadgen/report.js';
import { INSS_BIN, REPO_ROOT } from '../support/paths.js';
import { opensslWorks, selfSignedCert } from '../../benchmarks/tls.js';
import { binaryInferRequest, startInss, stopAll, waitFor } from '../support/system.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-access-'));
const SCENARIO = join(REPO_ROOT, 'benchmarks', 'scenarios', 'hostile-one.json');

const HAS_OPENSSL = opensslWorks();
const CERT = join(dir, 'cert.pem');
const KEY = join(dir, 'key.pem');
if (HAS_OPENSSL) {
  selfSignedCert(KEY, CERT);
}
const CLIENT_TOKEN = 'client-token-0123456789abcdef';
const A1_TOKEN = 'agent-one-token-0123456789';
// As the README makes them: one client token a line (here one), one '<agent-id> <token>' a line.
writeFileSync(join(dir, 'clients.txt'), `${CLIENT_TOKEN}\n`);
writeFileSync(join(dir, 'agents.txt'), `a1 ${A1_TOKEN}\na2 agent-two-token-0123456789\n`);
writeFileSync(join(dir, 'a1.token'), `${A1_TOKEN}\n`);

interface Answer {
  status: number;
  body: Buffer;
}

/** A request with node:https (trusting only `ca` when given) or node:http; rejects when nothing answers. */
function request(
  url: string,
  o: { method?: string; token?: string; ca?: Buffer; body?: Buffer; headers?: Record<string, string> } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      ...o.headers,
      ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
      ...(o.body ? { 'content-length': String(o.body.length) } : {}),
    };
    const req = https.request(url, { method: o.method ?? 'GET', headers, ...(o.ca ? { ca: o.ca } : {}) }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

afterEach(stopAll);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!HAS_OPENSSL)(
  'the cluster recipe over TLS with tokens from files (openssl makes the certificate)',
  () => {
    it(
      'introspection and inference need a token; an agent joins over wss:// with its own token, and cannot take ' +
        'another id',
      async () => {
        const ca = readFileSync(CERT);
        const s = startInss([
          'scheduler',
          '--host',
          '0.0.0.0',
          '--port',
          '0',
          '--scenario',
          SCENARIO,
          '--policy',
          'static-even',
          '--state-dir',
          dir,
          '--log-level',
          'warn',
          '--tls-cert',
          CERT,
          '--tls-key',
          KEY,
          '--agent-tokens-file',
          join(dir, 'agents.txt'),
          '--auth-tokens-file',
          join(dir, 'clients.txt'),
        ]);
        const endpoint = await waitFor(s, /endpoint (https:\/\/[^ ]+)\/v2/);
        const port = new URL(endpoint).port;
        const base = `https://localhost:${port}`;
        expect(s.stdout).toMatch(/listening on 0\.0\.0\.0:\d+/);
        expect(s.stdout).not.toContain(A1_TOKEN);
        await waitFor(s, /warning: bound beyond loopback/, 20_000, 'stderr');

        // Health answers anyone; everything else needs a client token.
        expect([200, 503]).toContain((await request(`${base}/v2/health/ready`, { ca })).status);
        for (const path of [
          '/metrics',
          '/v2/inss/cluster',
          '/v2/inss/decisions',
          '/v2/models/resnet50',
          '/v2',
          '/v2/systemsharedmemory/status',
        ]) {
          const r = await request(`${base}${path}`, { ca });
          expect(r.status, path).toBe(401);
          expect((JSON.parse(r.body.toString()) as { error: string }).error, path).toMatch(/needs a token/);
          expect((await request(`${base}${path}`, { ca, token: 'wrong-token-0123456789abc' })).status, path).toBe(401);
          expect((await request(`${base}${path}`, { ca, token: CLIENT_TOKEN })).status, path).toBe(200);
        }
        // Plain HTTP on the TLS port gets no HTTP answer; an unknown CA is refused by the client.
        await expect(fetch(`http://127.0.0.1:${port}/v2/health/live`)).rejects.toThrow();
        await expect(request(`${base}/v2/health/live`)).rejects.toThrow(/self-signed|certificate/);

        // Agent a1 with its token from a file and the CA; then a2 presenting a1's token is refused.
        const a1 = startInss([
          'agent',
          '--scheduler',
          `wss://localhost:${port}`,
          '--ca',
          CERT,
          '--token-file',
          join(dir, 'a1.token'),
          '--agent-id',
          'a1',
          '--simulate',
          'rtx2060s:1',
          '--log-level',
          'info',
        ]);
        const a2 = startInss(
          [
            'agent',
            '--scheduler',
            `wss://localhost:${port}`,
            '--ca',
            CERT,
            '--agent-id',
            'a2',
            '--simulate',
            'rtx2060s:1',
            '--log-level',
            'info',
          ],
          { INSS_TOKEN: A1_TOKEN },
        );
        await waitFor(a2, /this token is agent 'a1's; it cannot register as 'a2'/, 20_000, 'stderr');
        await waitFor(a1, /connected to the scheduler/, 20_000, 'stderr');
        // The whole path over TLS: a task answered by a1's worker.
        const good = binaryInferRequest(new Float32Array(3 * 224 * 224).fill(0.5));
        let answer: Answer | undefined;
        for (let k = 0; k < 60 && answer?.status !== 200; k++) {
          answer = await request(`${base}/v2/models/resnet50/infer`, {
            method: 'POST',
            ca,
            token: CLIENT_TOKEN,
            body: good.body,
            headers: good.headers,
          });
          if (answer.status !== 200) await new Promise((r) => setTimeout(r, 250));
        }
        expect(answer?.status).toBe(200);
        const cluster = JSON.parse(
          (await request(`${base}/v2/inss/cluster`, { ca, token: CLIENT_TOKEN })).body.toString(),
        ) as { agents: { agentId: string; connected: boolean }[] };
        expect(cluster.agents.map((a) => a.agentId)).toEqual(['a1']);
        expect(
          (
            await request(`${base}/v2/models/resnet50/infer`, {
              method: 'POST',
              ca,
              body: good.body,
              headers: good.headers,
            })
          ).status,
        ).toBe(401);

        // The README's client: `inss loadgen` over https with the CA and the client token from the file.
        const loadgen = (...extra: string[]) =>
          spawnSync(
            process.execPath,
            [
              INSS_BIN,
              'loadgen',
              '--url',
              base,
              '--model',
              'resnet50=5',
              '--duration',
              '2',
              '--slo',
              'resnet50=60000',
              '--json',
              ...extra,
            ],
            { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 },
          );
        const run = loadgen('--ca', CERT, '--token-file', join(dir, 'clients.txt'));
        expect(run.status, run.stderr).toBe(0);
        const report = LoadgenReportSchema.parse(JSON.parse(run.stdout));
        expect(report.total.sent).toBeGreaterThan(0);
        // Every request answered, none refused (a 503 SLO drop of the scheduler's own 1 s SLO is the
        // machine's speed, not access).
        expect(report.total.ok, JSON.stringify(report.total)).toBeGreaterThan(0);
        expect(report.total.errors, JSON.stringify(report.total)).toMatchObject({
          'http-4xx': 0,
          timeout: 0,
          network: 0,
          'bad-response': 0,
        });
        // Without the token: the server's 401, said in one line; without the CA: the certificate refused.
        const noToken = loadgen('--ca', CERT);
        expect(noToken.status).toBe(1);
        expect(noToken.stderr).toMatch(/answered HTTP 401: .*needs a token/);
        const noCa = loadgen('--token-file', join(dir, 'clients.txt'));
        expect(noCa.status).toBe(1);
        expect(noCa.stderr).toMatch(/cannot reach the server .*(self-signed|certificate)/);
      },
    );
  },
);

describe('inss up bound beyond loopback with no token file', () => {
  /** Plain http: the scheduler is not on TLS here. */
  const get = async (url: string, token?: string) =>
    (await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {})).status;

  it('introspection needs the printed token; inference is open (with a warning)', async () => {
    const up = startInss([
      'up',
      '--host',
      '0.0.0.0',
      '--port',
      '0',
      '--scenario',
      SCENARIO,
      '--policy',
      'static-even',
      '--state-dir',
      join(dir, 'up1'),
      '--log-level',
      'warn',
    ]);
    const base = await waitFor(up, /endpoint (http:\/\/[^ ]+)\/v2/);
    const token = await waitFor(up, /introspection token ([0-9a-f]{32})/);
    expect(up.stderr).toMatch(/warning: bound beyond loopback \(0\.0\.0\.0\); open: inference/);
    expect(await get(`${base}/metrics`)).toBe(401);
    expect(await get(`${base}/v2/inss/cluster`)).toBe(401);
    expect(await get(`${base}/metrics`, token)).toBe(200);
    expect(await get(`${base}/v2/models/resnet50`)).toBe(200);
    expect(await get(`${base}/v2/health/live`)).toBe(200);
  });

  it('--insecure-introspection leaves introspection open and says so', async () => {
    const up = startInss([
      'up',
      '--host',
      '0.0.0.0',
      '--port',
      '0',
      '--scenario',
      SCENARIO,
      '--policy',
      'static-even',
      '--state-dir',
      join(dir, 'up2'),
      '--log-level',
      'warn',
      '--insecure-introspection',
    ]);
    const base = await waitFor(up, /endpoint (http:\/\/[^ ]+)\/v2/);
    expect(up.stdout).not.toMatch(/introspection token/);
    expect(up.stderr).toMatch(/introspection \(\/metrics, \/v2\/inss\/\*: --insecure-introspection was given\)/);
    expect(await get(`${base}/metrics`)).toBe(200);
    expect(await get(`${base}/v2/inss/cluster`)).toBe(200);
  });
});

// An agent whose first connections are refused (a 404 from something else on the port, a 401 from a
// scheduler restarted without the agent's token, a 503 from a proxy) keeps retrying with backoff, says
// why each time, and joins once the real scheduler comes up on that address.
// Real processes: `inss agent` and `inss scheduler`; the stand-in before the scheduler is a real HTTP server.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { writeScenario } from '../support/scenario.js';
import { startInss, stopAll, waitFor, waitHttp200 } from '../support/system.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-agent-reconnect-'));
const scenarioFile = writeScenario(join(dir, 'solo.json'), {
  name: 'solo',
  gpus: { rtx2060s: 1 },
  models: [{ name: 'resnet50', sloMs: 80, ratePerS: 20 }],
});

afterEach(stopAll);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function until(what: string, f: () => boolean, timeoutMs = 30_000): Promise<void> {
  const t0 = Date.now();
  while (!f()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('an agent refused at its first connections', () => {
  it('retries every refusal with a reason and joins when the scheduler comes up', async () => {
    // Answers each upgrade with the next refusal in turn, never 101.
    const refusals = [404, 401, 503];
    let upgrades = 0;
    const standIn = http.createServer((_req, res) => res.writeHead(404).end());
    standIn.on('upgrade', (_req, socket) => {
      const status = refusals[upgrades++ % refusals.length]!;
      socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    });
    await new Promise<void>((r) => standIn.listen(0, '127.0.0.1', r));
    const port = (standIn.address() as AddressInfo).port;

    const agent = startInss([
      'agent',
      '--scheduler',
      `ws://127.0.0.1:${port}`,
      '--token',
      'secret-1',
      '--simulate',
      'rtx2060s:1',
      '--agent-id',
      'a1',
    ]);
    // Every kind of refusal was met and retried: the stand-in saw more upgrades than refusal kinds.
    await until('the agent to retry after each kind of refusal', () => upgrades > refusals.length);
    expect(agent.stderr).toMatch(/no agent hub at this URL \(HTTP 404\)/);
    expect(agent.stderr).toMatch(/refused the token \(HTTP 401\)/);
    expect(agent.stderr).toMatch(/failed the upgrade \(HTTP 503\)/);
    expect(agent.child.exitCode).toBeNull();

    standIn.closeAllConnections();
    await new Promise<void>((r) => standIn.close(() => r()));
    const sched = startInss([
      'scheduler',
      '--port',
      String(port),
      '--grpc-port',
      '0',
      '--scenario',
      scenarioFile,
      '--policy',
      'static-even',
      '--state-dir',
      mkdtempSync(join(dir, 'state-')),
      '--token',
      'secret-1',
      '--log-level',
      'warn',
    ]);
    const base = await waitFor(sched, /endpoint (http:\/\/[^ ]+)\/v2/);
    await waitHttp200(`${base}/v2/health/ready`);
    const c = (await (await fetch(`${base}/v2/inss/cluster`)).json()) as { agents: { agentId: string }[] };
    expect(c.agents.map((a) => a.agentId)).toContain('a1');
  });
});

// A real multi-host cluster (test/support/netns.ts): the scheduler, two GPU hosts and a client, each a
// network namespace on a private bridge, over TLS with per-agent tokens (docs/tls.md), batches over
// TCP. Healthy, every task is answered once by the right model. A GPU host's link cut for 10 s (nothing
// closes: a silent partition) is detected by the heartbeats within seconds, its tasks go to the other
// host's workers of the same models, and once the link is back the host serves again.
// Skipped, saying why, unless run as root with `ip netns` usable, openssl and a build (dist/).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NetnsCluster, netnsUnusable } from '../support/netns.js';
import { REPO_ROOT } from '../support/paths.js';
import { opensslWorks, selfSignedCert } from '../support/tls.js';
import { writeScenario } from '../support/scenario.js';
import { type Running, waitFor } from '../support/system.js';

const PREFIX = 'inssnt';
const SUBNET = '10.213.97';
const SCHED_IP = `${SUBNET}.2`; // the first host's address (netns.ts)
const MODELS = ['resnet50', 'mobilenet'];

function skipReason(): string | null {
  if (!existsSync(join(REPO_ROOT, 'dist', 'tools', 'loadgen', 'binary.js'))) return 'no build: run npm run build';
  if (!opensslWorks()) return 'no openssl';
  return netnsUnusable(PREFIX);
}
const SKIP = skipReason();
if (SKIP) console.log(`netns-cluster: skipped: ${SKIP}`);

interface Outcome {
  i: number;
  model: string;
  status: number;
  answeredModel?: string;
  outputOk?: boolean;
  error?: string;
  sentAt: number;
  doneAt: number;
}

interface ClusterView {
  agents: { agentId: string; connected: boolean }[];
  workers: { agentId: string; model: string; state: string; data: string | null }[];
}

describe.skipIf(SKIP !== null)('a cluster of network namespaces over TLS with per-agent tokens', () => {
  const dir = mkdtempSync(join(tmpdir(), 'inss-netns-'));
  const file = (n: string) => join(dir, n);
  const clientToken = 'client-token-0123456789abcdef';
  let cluster: NetnsCluster;
  let sched: Running;
  const agents = new Map<string, Running>();
  const base = `https://${SCHED_IP}:8000`;
  let ca: Buffer;

  /** GET `path` on the scheduler from this (the root) namespace, over the bridge. */
  function get(path: string): Promise<string> {
    return new Promise((resolve, reject) => {
      https
        .get(`${base}${path}`, { ca, headers: { authorization: `Bearer ${clientToken}` }, timeout: 5000 }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () =>
            res.statusCode === 200 ? resolve(body) : reject(new Error(`${path}: ${res.statusCode}`)),
          );
        })
        .on('timeout', function (this: { destroy(e: Error): void }) {
          this.destroy(new Error(`${path}: no answer`));
        })
        .on('error', reject);
    });
  }
  const view = async () => JSON.parse(await get('/v2/inss/cluster')) as ClusterView;
  const answered = async () =>
    [...(await get('/metrics')).matchAll(/^inss_requests_total\{[^}]*\} (\d+)$/gm)].reduce(
      (a, m) => a + Number(m[1]),
      0,
    );

  async function until(what: string, f: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
    const t0 = Date.now();
    for (;;) {
      try {
        if (await f()) return;
      } catch {
        // not answering yet
      }
      if (Date.now() - t0 > timeoutMs)
        throw new Error(`timed out waiting for ${what}; scheduler:\n${sched.stderr.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Every model has a ready worker with a data socket on each of `agents`, which are connected. */
  const serving = (agents: readonly string[]) => async () => {
    const v = await view();
    return agents.every(
      (a) =>
        v.agents.some((x) => x.agentId === a && x.connected) &&
        MODELS.every((m) => v.workers.some((w) => w.agentId === a && w.model === m && w.state === 'ready' && w.data)),
    );
  };

  /** Runs the client host: `tasks` tasks, one every `intervalMs`, models in turn. */
  async function load(tasks: number, intervalMs: number): Promise<Outcome[]> {
    const cfg = {
      url: base,
      ca: file('cert.pem'),
      token: clientToken,
      models: MODELS,
      tasks,
      intervalMs,
      timeoutMs: 60_000,
    };
    const c = cluster.run('client', [JSON.stringify(cfg)], join(REPO_ROOT, 'test', 'support', 'netnsClient.js'));
    const { code } = await c.exited;
    if (code !== 0) throw new Error(`the client failed (${code}): ${c.stderr.slice(-2000)}`);
    return JSON.parse(c.stdout) as Outcome[];
  }

  /** Every 200 names the model it was sent to and carries that model's output. */
  function rightModel(out: readonly Outcome[]): void {
    const ok = out.filter((o) => o.status === 200);
    expect(ok.filter((o) => o.answeredModel !== o.model || o.outputOk !== true)).toEqual([]);
  }

  beforeAll(async () => {
    selfSignedCert(file('key.pem'), file('cert.pem'), 'sched', `IP:${SCHED_IP}`);
    ca = readFileSync(file('cert.pem'));
    writeFileSync(file('agents.txt'), 'gpu1 gpu1-token-0123456789abcdef\ngpu2 gpu2-token-0123456789abcdef\n', {
      mode: 0o600,
    });
    for (const a of ['gpu1', 'gpu2'])
      writeFileSync(file(`${a}.token`), `${a}-token-0123456789abcdef\n`, { mode: 0o600 });
    writeFileSync(file('clients.txt'), `${clientToken}\n`, { mode: 0o600 });
    // A long SLO: a task caught on the cut host waits for the heartbeats (seconds), then is served late, not dropped.
    const scenario = writeScenario(file('duo.json'), {
      name: 'duo',
      gpus: { rtx2060s: 2 },
      models: MODELS.map((name) => ({ name, sloMs: 10_000, ratePerS: 20 })),
    });
    cluster = NetnsCluster.create({ prefix: PREFIX, subnet: SUBNET, hosts: ['sched', 'gpu1', 'gpu2', 'client'] });
    sched = cluster.run('sched', [
      'scheduler',
      '--host',
      '0.0.0.0',
      '--port',
      '8000',
      '--no-grpc',
      '--tls-cert',
      file('cert.pem'),
      '--tls-key',
      file('key.pem'),
      '--agent-tokens-file',
      file('agents.txt'),
      '--auth-tokens-file',
      file('clients.txt'),
      '--scenario',
      scenario,
      '--policy',
      'timeshare',
      '--state-dir',
      file('state'),
      '--log-level',
      'info',
    ]);
    await waitFor(sched, /endpoint (https:\/\/[^ ]+)\/v2/);
    for (const a of ['gpu1', 'gpu2']) {
      const h = cluster.host(a);
      const agent = cluster.run(a, [
        'agent',
        '--scheduler',
        `wss://${SCHED_IP}:8000`,
        '--ca',
        file('cert.pem'),
        '--token-file',
        file(`${a}.token`),
        '--agent-id',
        a,
        '--simulate',
        'rtx2060s:1',
        '--data-path',
        'tcp',
        '--data-advertise',
        h.ip,
        '--log-level',
        'info',
      ]);
      agents.set(a, agent);
    }
    await until('both GPU hosts serving both models', serving(['gpu1', 'gpu2']), 90_000);
  });

  afterAll(() => {
    cluster?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('healthy: every task is answered 200, once, by the model it was sent to', async () => {
    const before = await answered();
    const out = await load(200, 20);
    expect(out).toHaveLength(200);
    expect(out.filter((o) => o.status !== 200)).toEqual([]);
    rightModel(out);
    await until('the answers counted', async () => (await answered()) - before === 200, 10_000);
  });

  it(
    'a GPU host cut off for 10 s: detected in seconds, its tasks served by the other host, serving again ' + 'after',
    async () => {
      const before = await answered();
      const sent = load(400, 40);
      await new Promise((r) => setTimeout(r, 3000));
      const cutAt = Date.now();
      cluster.setLink('gpu1', false);
      let detectedMs = Infinity;
      await until(
        'the partition detected',
        () => {
          if (/agent unreachable.*"agentId":"gpu1"|"agentId":"gpu1".*agent unreachable/.test(sched.stderr))
            detectedMs = Date.now() - cutAt;
          return detectedMs < Infinity;
        },
        30_000,
      );
      await new Promise((r) => setTimeout(r, Math.max(0, cutAt + 10_000 - Date.now())));
      cluster.setLink('gpu1', true);
      const out = await sent;
      await until('gpu1 back, serving both models', serving(['gpu1', 'gpu2']));
      // The beats are 1 s and 3 missed ones lose the link: well within 10 s even on a loaded machine.
      expect(detectedMs).toBeLessThan(10_000);
      // The cut-off agent noticed the silent scheduler too, and reconnected once the link was back.
      expect(agents.get('gpu1')!.stderr).toMatch(/the scheduler is silent/);
      expect(out).toHaveLength(400);
      rightModel(out);
      const failed = out.filter((o) => o.status !== 200);
      expect(failed.filter((o) => !o.error)).toEqual([]); // every failure says why
      expect(failed.length).toBeLessThanOrEqual(out.length * 0.05);
      await until('the answers counted', async () => (await answered()) - before === 400, 10_000);
      console.log(
        `netns-cluster partition: detected after ${detectedMs} ms; ${out.length - failed.length}/${out.length} ` +
          `answered 200; errors ${JSON.stringify(failed.map((o) => o.error))}`,
      );

      // gpu1 serves again: with gpu2 crashed, every task is gpu1's.
      cluster.killHost('gpu2');
      await until('gpu2 gone', async () => !(await view()).agents.some((a) => a.agentId === 'gpu2' && a.connected));
      const after = await load(40, 25);
      expect(after).toHaveLength(40);
      expect(after.filter((o) => o.status !== 200)).toEqual([]);
      rightModel(after);
      // Its data sockets were reopened (batches straight to its workers, not relayed by its agent).
      expect(sched.stderr).not.toMatch(/cannot reach a worker data socket/);
    },
  );
});

describe.skipIf(SKIP !== null)('the namespace harness', () => {
  it('puts netem on every host, or fails saying why; either way it leaves nothing behind', () => {
    const prefix = 'inssnu';
    const leftovers = () =>
      [...spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout.matchAll(/^inssnu-\S+/gm)].length +
      [...spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).stdout.matchAll(/^\d+: inssnu-/gm)].length;
    try {
      const c = NetnsCluster.create({ prefix, subnet: '10.213.98', hosts: ['a', 'b'], delayMs: 20, lossPct: 1 });
      const qdisc = spawnSync('ip', ['netns', 'exec', c.host('b').ns, 'tc', 'qdisc', 'show', 'dev', 'eth0'], {
        encoding: 'utf8',
      }).stdout;
      expect(qdisc).toMatch(/netem .*delay 20ms.*loss 1%/);
      c.destroy();
    } catch (e) {
      // A kernel without sch_netem (the 2-core VM of docs/reliability.md's figures).
      expect((e as Error).message).toMatch(/^tc netem on host 'a' failed \(needs tc and the sch_netem kernel module\)/);
    }
    expect(leftovers()).toBe(0);
  });
});

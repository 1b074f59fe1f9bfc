// docs/tls.md's cluster recipe on a cluster of network namespaces (benchmarks/netns.ts), for the system tests
// (test/integration/netns-*.test.ts) and the cluster bench (benchmarks/cluster.ts): the hosts `sched`, `gpu1`,
// `gpu2` and `client`; a self-signed certificate for the scheduler's address; per-agent tokens and a client
// token; `inss scheduler` over TLS with a state directory, and on each GPU host `inss agent --simulate
// rtx2060s:1 --data-path tcp`. The root namespace reaches the scheduler over the bridge (`get`); the client
// host runs dist/benchmarks/netnsClient.js (so a build is needed). Files live in a temporary directory,
// removed with the cluster by `destroy`.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NetnsCluster, REPO_ROOT } from './netns.js';
import type { NetnsClientConfig, Outcome } from './netnsClient.js';
import type { Running } from './processes.js';
import { selfSignedCert } from './tls.js';

export type { Outcome };

export const GPU_HOSTS = ['gpu1', 'gpu2'] as const;

export interface TlsClusterOptions {
  /** The cluster's prefix and /24 (benchmarks/netns.ts); each user its own. */
  readonly prefix: string;
  readonly subnet: string;
  /** The scenario file the scheduler serves (its models; its GPUs are the agents'). */
  readonly scenario: string;
  readonly models: readonly string[];
  readonly policy: string;
  /** More flags of `inss scheduler` (e.g. --agent-lost-ms). */
  readonly schedulerFlags?: readonly string[];
  /** netem on every host (benchmarks/netns.ts; fails where the kernel lacks sch_netem). */
  readonly delayMs?: number;
  /** Hosts of front doors (`inss frontdoor`, `startDoor`), after the client host; none by default. */
  readonly doors?: readonly string[];
}

/** GET /v2/inss/cluster, as far as these users read it. */
export interface ClusterView {
  agents: { agentId: string; connected: boolean; replaced?: boolean }[];
  workers: { agentId: string; model: string; state: string; data: string | null }[];
}

/** The 200s that do not name the model they were sent to, or do not carry that model's output. */
export function wrongAnswers(out: readonly Outcome[]): Outcome[] {
  return out.filter((o) => o.status === 200 && (o.answeredModel !== o.model || o.outputOk !== true));
}

const CLIENT_TOKEN = 'client-token-0123456789abcdef';

export class TlsCluster {
  readonly cluster: NetnsCluster;
  readonly base: string;
  readonly agents = new Map<string, Running>();
  readonly doors = new Map<string, Running>();
  sched!: Running;
  private readonly dir = mkdtempSync(join(tmpdir(), 'inss-netns-'));
  private readonly ca: Buffer;

  /** Makes the hosts and the files; starts nothing (`startScheduler`, `startAgent`, `startDoor`). */
  constructor(readonly opts: TlsClusterOptions) {
    const hosts = ['sched', ...GPU_HOSTS, 'client', ...(opts.doors ?? [])];
    const ipOf = (h: string) => `${opts.subnet}.${hosts.indexOf(h) + 2}`; // netns.ts: hosts from .2 in order
    this.base = `https://${ipOf('sched')}:8000`;
    try {
      // One certificate for the scheduler and the doors: every server's address in it.
      const san = ['sched', ...(opts.doors ?? [])].map((h) => `IP:${ipOf(h)}`).join(',');
      selfSignedCert(this.file('key.pem'), this.file('cert.pem'), 'sched', san);
      this.ca = readFileSync(this.file('cert.pem'));
      const token = (a: string) => `${a}-token-0123456789abcdef`;
      const linked = [...GPU_HOSTS, ...(opts.doors ?? [])]; // agents and doors: the tokens of the scheduler's links
      writeFileSync(this.file('agents.txt'), linked.map((a) => `${a} ${token(a)}\n`).join(''), { mode: 0o600 });
      for (const a of linked) writeFileSync(this.file(`${a}.token`), `${token(a)}\n`, { mode: 0o600 });
      writeFileSync(this.file('clients.txt'), `${CLIENT_TOKEN}\n`, { mode: 0o600 });
      this.cluster = NetnsCluster.create({
        prefix: opts.prefix,
        subnet: opts.subnet,
        hosts,
        ...(opts.delayMs ? { delayMs: opts.delayMs } : {}),
      });
    } catch (e) {
      rmSync(this.dir, { recursive: true, force: true });
      throw e;
    }
  }

  file(name: string): string {
    return join(this.dir, name);
  }

  /** Starts `inss scheduler` on its host (again after a kill: the same state directory and port). */
  startScheduler(): Running {
    const f = (n: string) => this.file(n);
    this.sched = this.cluster.run('sched', [
      ...['scheduler', '--host', '0.0.0.0', '--port', '8000', '--no-grpc'],
      ...['--tls-cert', f('cert.pem'), '--tls-key', f('key.pem')],
      ...['--agent-tokens-file', f('agents.txt'), '--auth-tokens-file', f('clients.txt')],
      ...['--scenario', this.opts.scenario, '--policy', this.opts.policy, '--state-dir', f('state')],
      ...['--log-level', 'info', ...(this.opts.schedulerFlags ?? [])],
    ]);
    return this.sched;
  }

  /** Starts `inss agent` on GPU host `name` (one simulated RTX 2060 Super, batches over TCP). */
  startAgent(name: string): Running {
    const agent = this.cluster.run(name, [
      ...['agent', '--scheduler', this.base.replace('https:', 'wss:'), '--ca', this.file('cert.pem')],
      ...['--token-file', this.file(`${name}.token`), '--agent-id', name, '--simulate', 'rtx2060s:1'],
      ...['--data-path', 'tcp', '--data-advertise', this.cluster.host(name).ip, '--log-level', 'info'],
    ]);
    this.agents.set(name, agent);
    return agent;
  }

  /** Starts `inss frontdoor` on door host `name`, linked to the scheduler, serving HTTPS at `url(name)`. */
  startDoor(name: string): Running {
    const f = (n: string) => this.file(n);
    const door = this.cluster.run(name, [
      ...['frontdoor', '--host', '0.0.0.0', '--port', '8000', '--no-grpc', '--door-id', name],
      ...[
        '--scheduler',
        this.base.replace('https:', 'wss:'),
        '--ca',
        f('cert.pem'),
        '--token-file',
        f(`${name}.token`),
      ],
      ...['--tls-cert', f('cert.pem'), '--tls-key', f('key.pem'), '--auth-tokens-file', f('clients.txt')],
      ...['--advertise', this.url(name), '--scenario', this.opts.scenario, '--state-dir', f(`${name}-state`)],
      ...['--log-level', 'info'],
    ]);
    this.doors.set(name, door);
    return door;
  }

  /** The HTTPS endpoint of host `name`'s server (the scheduler's or a door's). */
  url(name: string): string {
    return `https://${this.cluster.host(name).ip}:8000`;
  }

  /** GET `path` on the scheduler (or at `base`, a door's) from the root namespace, over the bridge. */
  get(path: string, base = this.base): Promise<string> {
    return new Promise((resolve, reject) => {
      const headers = { authorization: `Bearer ${CLIENT_TOKEN}` };
      https
        .get(`${base}${path}`, { ca: this.ca, headers, timeout: 5000 }, (res) => {
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

  async view(): Promise<ClusterView> {
    return JSON.parse(await this.get('/v2/inss/cluster')) as ClusterView;
  }

  /** The scheduler's (or the door's at `base`) `inss_requests_total`, over every outcome: the tasks it answered. */
  async answered(base = this.base): Promise<number> {
    return [...(await this.get('/metrics', base)).matchAll(/^inss_requests_total\{[^}]*\} (\d+)$/gm)].reduce(
      (a, m) => a + Number(m[1]),
      0,
    );
  }

  /** Polls `f` every 200 ms (an error counts as false) until true; fails after `timeoutMs`, with the log. */
  async until(what: string, f: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
    const t0 = Date.now();
    for (;;) {
      try {
        if (await f()) return;
      } catch {
        // not answering yet
      }
      if (Date.now() - t0 > timeoutMs)
        throw new Error(`timed out waiting for ${what}; scheduler:\n${this.sched.stderr.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Each of `agents` is connected and has a ready worker of each of `models` with its data socket open. */
  async serving(agents: readonly string[], models: readonly string[] = this.opts.models): Promise<boolean> {
    const v = await this.view();
    return agents.every(
      (a) =>
        v.agents.some((x) => x.agentId === a && x.connected) &&
        models.every((m) => v.workers.some((w) => w.agentId === a && w.model === m && w.state === 'ready' && w.data)),
    );
  }

  /** Runs the client host: `tasks` tasks to the scheduler (or `base`), one every `intervalMs`, the models in turn. */
  async load(tasks: number, intervalMs: number, timeoutMs = 60_000, base = this.base): Promise<Outcome[]> {
    const cfg: NetnsClientConfig = {
      url: base,
      ca: this.file('cert.pem'),
      token: CLIENT_TOKEN,
      models: this.opts.models,
      tasks,
      intervalMs,
      timeoutMs,
    };
    const client = join(REPO_ROOT, 'dist', 'benchmarks', 'netnsClient.js');
    const c = this.cluster.run('client', [JSON.stringify(cfg)], client);
    const { code } = await c.exited;
    if (code !== 0) throw new Error(`the client failed (${code}): ${c.stderr.slice(-2000)}`);
    return JSON.parse(c.stdout) as Outcome[];
  }

  /** Kills every process of the cluster, removes its namespaces and links, and its files. */
  destroy(): void {
    this.cluster.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

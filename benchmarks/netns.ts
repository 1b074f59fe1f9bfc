// A cluster of hosts made as Linux network namespaces, for system tests and the cluster bench
// (benchmarks/cluster.ts) of what one host cannot show: processes on different network stacks, reached over
// a bridge (not loopback), each GPU host with its own /dev/shm, and links that can be delayed, lossy or
// cut. docs/reliability.md, "A cluster of
// network namespaces", tells how to run it. Needs root and `ip` (iproute2); `netnsUnusable` says why
// not. Every name starts with the cluster's prefix: `create` first removes what a crashed run of the same
// prefix left (its processes, namespaces and links), and `destroy` (also run on process exit) removes
// everything it made. It kills only processes inside its own namespaces, by pid.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Running, running } from './processes.js';

/** The repository root (where bin/inss.js is), from the source (benchmarks/) or the build (dist/benchmarks/). */
export const REPO_ROOT = [resolve(import.meta.dirname, '..'), resolve(import.meta.dirname, '..', '..')].find((d) =>
  existsSync(join(d, 'bin', 'inss.js')),
)!;
const INSS_BIN = join(REPO_ROOT, 'bin', 'inss.js');

/** One host: its namespace, its address on the bridge, and its link (the bridge's end of its veth). */
export interface NetnsHost {
  readonly name: string;
  readonly ns: string;
  readonly ip: string;
  readonly link: string;
}

export interface NetnsOptions {
  /** At most 6 characters ([a-z0-9]): names of links are at most 15. */
  readonly prefix: string;
  /** The first three octets of the cluster's private /24, e.g. '10.213.97'; the bridge is .1, hosts .2 on. */
  readonly subnet: string;
  /** The hosts' names (at most 6 characters each), in the order of their addresses. */
  readonly hosts: readonly string[];
  /** netem on every host's outgoing traffic (each way then crosses one such qdisc). */
  readonly delayMs?: number;
  readonly lossPct?: number;
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function lines(cmd: string, args: readonly string[]): string[] {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.split('\n').filter((l) => l.trim() !== '') : [];
}

/** Why this machine cannot run the cluster (not root, no `ip netns`), or null when it can. */
export function netnsUnusable(prefix: string): string | null {
  if (process.platform !== 'linux') return `network namespaces are Linux's (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  const probe = `${prefix}-probe`;
  try {
    spawnSync('ip', ['netns', 'del', probe], { stdio: 'ignore' });
    ip('netns', 'add', probe);
    ip('netns', 'del', probe);
    return null;
  } catch (e) {
    return `'ip netns add' failed: ${String((e as { stderr?: Buffer }).stderr ?? e).trim()}`;
  }
}

/** Kills the processes in the prefix's namespaces, then deletes the namespaces and the prefix's links. */
export function removeCluster(prefix: string): void {
  const namespaces = lines('ip', ['netns', 'list'])
    .map((l) => l.split(' ')[0]!)
    .filter((n) => n.startsWith(`${prefix}-`));
  for (const ns of namespaces)
    for (const pid of lines('ip', ['netns', 'pids', ns]))
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // exited meanwhile
      }
  for (const ns of namespaces) spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
  for (const l of lines('ip', ['-o', 'link', 'show'])) {
    const name = /^\d+: ([^:@]+)/.exec(l)?.[1];
    if (name?.startsWith(`${prefix}-`)) spawnSync('ip', ['link', 'del', name], { stdio: 'ignore' });
  }
}

export class NetnsCluster {
  readonly hosts = new Map<string, NetnsHost>();
  readonly bridgeIp: string;
  private readonly children: ChildProcess[] = [];
  private readonly onExit = () => this.destroy();

  private constructor(private readonly opts: NetnsOptions) {
    this.bridgeIp = `${opts.subnet}.1`;
  }

  /** Makes the bridge and the hosts (removing first what a crashed run of the same prefix left). */
  static create(opts: NetnsOptions): NetnsCluster {
    if (!/^[a-z0-9]{1,6}$/.test(opts.prefix)) throw new Error(`prefix '${opts.prefix}': 1 to 6 of [a-z0-9]`);
    removeCluster(opts.prefix);
    const c = new NetnsCluster(opts);
    process.once('exit', c.onExit);
    try {
      c.build();
    } catch (e) {
      c.destroy();
      throw e;
    }
    return c;
  }

  private build(): void {
    const { prefix, subnet } = this.opts;
    const bridge = `${prefix}-br`;
    ip('link', 'add', bridge, 'type', 'bridge');
    ip('addr', 'add', `${this.bridgeIp}/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    this.opts.hosts.forEach((name, i) => {
      if (!/^[a-z0-9]{1,6}$/.test(name)) throw new Error(`host '${name}': 1 to 6 of [a-z0-9]`);
      const h: NetnsHost = { name, ns: `${prefix}-${name}`, ip: `${subnet}.${i + 2}`, link: `${prefix}-v-${name}` };
      ip('netns', 'add', h.ns);
      ip('link', 'add', h.link, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', h.ns);
      ip('link', 'set', h.link, 'master', bridge, 'up');
      ip('-n', h.ns, 'addr', 'add', `${h.ip}/24`, 'dev', 'eth0');
      ip('-n', h.ns, 'link', 'set', 'eth0', 'up');
      ip('-n', h.ns, 'link', 'set', 'lo', 'up');
      const netem = [
        ...(this.opts.delayMs ? ['delay', `${this.opts.delayMs}ms`] : []),
        ...(this.opts.lossPct ? ['loss', `${this.opts.lossPct}%`] : []),
      ];
      if (netem.length > 0) {
        const r = spawnSync(
          'ip',
          ['netns', 'exec', h.ns, 'tc', 'qdisc', 'add', 'dev', 'eth0', 'root', 'netem', ...netem],
          {
            encoding: 'utf8',
          },
        );
        if (r.status !== 0)
          throw new Error(
            `tc netem on host '${name}' failed (needs tc and the sch_netem kernel module): ${r.stderr.trim()}`,
          );
      }
      this.hosts.set(name, h);
    });
  }

  host(name: string): NetnsHost {
    const h = this.hosts.get(name);
    if (!h) throw new Error(`no host '${name}'`);
    return h;
  }

  /**
   * Runs `node <script> args` on host `name` in a mount namespace of its own with a private tmpfs on
   * /dev/shm (a host's shared memory is its own). `script`: bin/inss.js unless given.
   */
  run(name: string, args: readonly string[], script = INSS_BIN): Running {
    const h = this.host(name);
    const shell = 'mount -t tmpfs -o size=256m tmpfs /dev/shm && exec "$0" "$@"';
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        h.ns,
        'unshare',
        '-m',
        '--propagation',
        'private',
        'sh',
        '-c',
        shell,
        process.execPath,
        script,
        ...args,
      ],
      { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.children.push(child);
    return running(child);
  }

  /** Takes host `name`'s link down (a cable pulled: nothing is told to either end), or up again. */
  setLink(name: string, up: boolean): void {
    ip('link', 'set', this.host(name).link, up ? 'up' : 'down');
  }

  /** SIGKILLs every process on host `name` (a host that crashed; its kernel still resets connections). */
  killHost(name: string): void {
    for (const pid of lines('ip', ['netns', 'pids', this.host(name).ns])) process.kill(Number(pid), 'SIGKILL');
  }

  /** Kills every process of the cluster and removes its namespaces, bridge and links. */
  destroy(): void {
    process.off('exit', this.onExit);
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    removeCluster(this.opts.prefix);
  }
}

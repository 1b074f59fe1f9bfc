// `inss scheduler`, `inss agent` and `inss up`: the running system's composition root. It loads
// profiles, scenarios and policy files (the one place that reads them), builds the scheduler service
// and the agent, and handles signals.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { hostname, networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { pino, type Logger } from 'pino';
import { Agent } from '../agent/agent.js';
import type { AgentTls } from '../agent/connect.js';
import { DEFAULT_LIMITS } from '../scheduler/limits.js';
import { type AccessOptions, isLoopback, parseAgentTokens, parseTokens, TokenFileError } from '../scheduler/auth.js';
import { MpsDaemon, MpsSupervisor } from '../agent/mps.js';
import { matchProfile, queryGpus } from '../agent/nvidiaSmi.js';
import { resolvePython, torchAvailable, torchWorkerCommand } from '../agent/torchWorker.js';
import type { WorkerLaunch } from '../agent/workerProcess.js';
import { PolicyRegistry } from './registry.js';
import { SchedulerService } from '../scheduler/service.js';
import { DEFAULT_SHM_MB, MAX_SHM_MB } from '../scheduler/shmRegion.js';
import { Store } from '../scheduler/store.js';
import type { ServedModelConfig } from '../scheduler/control.js';
import { InvalidInputError, type Profile } from '../src/profile/schema.js';
import type { AgentGpu, DesiredWorker } from '../src/protocol/agent.js';
import { DEFAULT_POOLED_GPU_MODE, POOLED_GPU_MODES, type PooledGpuMode } from '../src/model/pooledGpu.js';
import type { ClusterInfo } from '../src/policy/types.js';
import { modelSignature } from '../src/protocol/tensor.js';
import { initialRates } from '../src/scenario/build.js';
import { servingSettings, withOverrides } from '../src/serving/settings.js';
import {
  BUILTIN_POLICY_DIR,
  BUILTIN_PROFILE_DIR,
  listProfileIds,
  loadProfile,
  PACKAGE_ROOT,
  readJsonFile,
} from './profiles.js';
import { loadScenario } from './scenarios.js';

const VERSION = '0.1.0';

function portNumber(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number 0..65535');
  return n;
}

function shmMegabytes(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > MAX_SHM_MB)
    throw new InvalidArgumentError(`must be an integer from 0 (off) to ${MAX_SHM_MB}`);
  return n;
}

function factorAtLeastOne(v: string): number {
  const x = Number(v);
  if (!Number.isFinite(x) || x < 1 || x > 100) throw new InvalidArgumentError('must be a number from 1 to 100');
  return x;
}

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be an integer >= 1');
  return n;
}

/** `rtx2060s:2,rtx2060:2` -> [{ profile, count }]. */
export function parseSimulate(v: string): { profile: string; count: number }[] {
  const out = v.split(',').map((part) => {
    const m = /^([^:]+):(\d+)$/.exec(part.trim());
    if (!m || Number(m[2]) < 1) throw new InvalidArgumentError(`'${part}' is not <profile>:<count> (e.g. rtx2060s:2)`);
    return { profile: m[1]!, count: Number(m[2]) };
  });
  return out;
}

function makeLogger(level: string): Logger {
  return pino({ level, base: { pid: process.pid } }, pino.destination({ dest: 2, sync: false }));
}

/** Every built-in profile, plus the ones a scenario names by path. */
function allProfiles(extra: ReadonlyMap<string, Profile> = new Map()): Map<string, Profile> {
  const m = new Map<string, Profile>();
  for (const id of listProfileIds()) m.set(id, loadProfile(id));
  for (const [id, p] of extra) m.set(id, p);
  return m;
}

interface ServeOptions {
  /** --grpc-port (undefined: the HTTP port + 1); false with --no-grpc. */
  grpcPort?: number;
  grpc: boolean;
  bodyLimitFactor: number;
  maxConnections: number;
  maxConnectionsPerClient: number;
  shmMb: number;
  tlsCert?: string;
  tlsKey?: string;
  authTokensFile?: string;
  authTokens?: string;
  insecureIntrospection?: boolean;
  scenario: string;
  /** Which command runs (for its printed lines). */
  command: 'scheduler' | 'up';
  policy: string;
  policyFile?: string;
  /** Overrides of the scenario's epoch and monitor window (undefined: the scenario's). */
  epochMs?: number;
  monitorWindowMs?: number;
  stateDir?: string;
  logLevel: string;
}

/** Models, SLOs, initial rates and the policy from a scenario (and flags). */
function schedulerConfig(opts: ServeOptions) {
  const loaded = loadScenario(opts.scenario);
  const profiles = allProfiles(loaded.profiles);
  const models: ServedModelConfig[] = loaded.scenario.models.map((m, i) => {
    if (m.profileModel !== undefined && m.profileModel !== m.name)
      throw new InvalidInputError(
        `scenario ${opts.scenario}: models[${i}].profileModel is for the simulator only (live workers load a model by its name, '${m.name}')`,
      );
    const p = [...loaded.profiles.values()].find((x) => x.models[m.name]);
    if (!p) throw new InvalidInputError(`scenario ${opts.scenario}: no profile has model '${m.name}'`);
    const mp = p.models[m.name]!;
    return {
      name: m.name,
      sloMs: m.sloMs,
      signature: modelSignature(mp.inputBytes, mp.outputBytes),
      ...(m.queuePolicy ? { queuePolicy: m.queuePolicy } : {}),
    };
  });
  const rates = initialRates(loaded.scenario, loaded.traces);
  const initialRatePerS = Object.fromEntries(models.map((m, i) => [m.name, rates[i]!]));
  const registry = new PolicyRegistry();
  const factory = registry.get(opts.policy);
  const shipped = join(BUILTIN_POLICY_DIR, `${loaded.scenario.name}.json`);
  const policyFile = opts.policyFile ?? (opts.policy.startsWith('inss') && existsSync(shipped) ? shipped : undefined);
  const policyData = policyFile ? readJsonFile(policyFile) : undefined;
  let settings;
  try {
    settings = withOverrides(servingSettings(loaded.scenario), {
      epochMs: opts.epochMs,
      monitorWindowMs: opts.monitorWindowMs,
    });
  } catch (e) {
    throw new InvalidInputError(`--epoch-ms / --monitor-window-ms: ${(e as Error).message}`);
  }
  return {
    scenario: loaded,
    settings,
    profiles,
    models,
    initialRatePerS,
    policyFile,
    // A cluster the policy does not support (e.g. too large for the oracle) is refused with its reason,
    // which the control plane reports; an error from `create` on a supported cluster is a real failure.
    createPolicy: (cluster: ClusterInfo) => {
      const options = { seed: loaded.scenario.seed, ...(policyData !== undefined ? { policyData } : {}) };
      const why = factory.supports(cluster, options);
      if (why !== null) throw new Error(`${opts.policy} cannot run on this cluster: ${why}`);
      return factory.create(cluster, options);
    },
  };
}

/**
 * The gRPC port: --grpc-port, else the HTTP port + 1 (8001 beside the default 8000, as Triton's
 * ports), any free one when the HTTP port is; undefined with --no-grpc.
 */
export function grpcPortOf(opts: { grpc: boolean; grpcPort?: number; port: number }): number | undefined {
  if (!opts.grpc) return undefined;
  if (opts.grpcPort !== undefined) return opts.grpcPort;
  if (opts.port === 0) return 0;
  if (opts.port === 65535)
    throw new InvalidInputError('--port 65535 leaves no next port for gRPC: give --grpc-port (or --no-grpc)');
  return opts.port + 1;
}

/** A failed listen as one line an operator can act on (a busy port is common; its stack trace says nothing). */
function listenError(e: unknown, host: string, port: number): unknown {
  // grpc-js reports a failed bind in its message ("No address added out of total 1 resolved errors: [listen EADDRINUSE ...]").
  const grpcBind = /grpc port ([0-9]+): .*?(EADDRINUSE|EACCES)/s.exec((e as Error).message ?? '');
  if (grpcBind) {
    const p = grpcBind[1]!;
    return new InvalidInputError(
      grpcBind[2] === 'EADDRINUSE'
        ? `--grpc-port ${p}: ${host}:${p} is already in use (another inss, or another program); pick another port or --no-grpc`
        : `--grpc-port ${p}: not allowed to bind ${host}:${p}; pick another port`,
    );
  }
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE')
    return new InvalidInputError(
      `--port ${port}: ${host}:${port} is already in use (another inss, or another program); stop it or pick another port`,
    );
  if (code === 'EACCES')
    return new InvalidInputError(
      `--port ${port}: not allowed to bind ${host}:${port} (ports below 1024 need privileges); pick another port`,
    );
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
    return new InvalidInputError(`--host ${host}: not an address of this machine`);
  return e;
}

function stateDbPath(stateDir: string | undefined): string {
  return join(stateDir ?? join(process.env.HOME ?? '.', '.inss'), 'inss.db');
}

/** A file a flag names, read whole; a one-line error naming the flag when it cannot be. */
function readFlagFile(flag: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new InvalidInputError(`${flag}: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

function tokensFrom<T>(flag: string, file: string, parse: (text: string, what: string) => T): T {
  try {
    return parse(readFlagFile(flag, file).toString('utf8'), `${flag} ${file}`);
  } catch (e) {
    throw e instanceof TokenFileError ? new InvalidInputError(e.message) : e;
  }
}

/** The certificate and key of --tls-cert/--tls-key (both or neither). */
function tlsFiles(opts: ServeOptions): { cert: Buffer; key: Buffer } | undefined {
  if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined))
    throw new InvalidInputError(
      '--tls-cert and --tls-key: give both (a PEM certificate and its private key) or neither',
    );
  if (opts.tlsCert === undefined || opts.tlsKey === undefined) return undefined;
  return { cert: readFlagFile('--tls-cert', opts.tlsCert), key: readFlagFile('--tls-key', opts.tlsKey) };
}

/**
 * Who may use which routes (scheduler/auth.ts): client tokens from --auth-tokens-file or
 * INSS_AUTH_TOKENS (comma-separated); bound beyond loopback, introspection needs one of them (a
 * random one, printed once, when none is given) unless --insecure-introspection.
 */
function accessFrom(opts: ServeOptions & { host: string }): { access: AccessOptions; generated?: string } {
  const clientTokens =
    opts.authTokensFile !== undefined
      ? tokensFrom('--auth-tokens-file', opts.authTokensFile, parseTokens)
      : opts.authTokens !== undefined
        ? parseTokensOrFail(opts.authTokens.split(',').join('\n'), 'INSS_AUTH_TOKENS')
        : [];
  if (isLoopback(opts.host) || opts.insecureIntrospection)
    return { access: { clientTokens, introspectionTokens: null } };
  if (clientTokens.length > 0) return { access: { clientTokens, introspectionTokens: [] } };
  const generated = randomBytes(16).toString('hex');
  return { access: { clientTokens, introspectionTokens: [generated] }, generated };
}

function parseTokensOrFail(text: string, what: string): string[] {
  try {
    return parseTokens(text, what);
  } catch (e) {
    throw e instanceof TokenFileError ? new InvalidInputError(e.message) : e;
  }
}

/** Bound beyond loopback: the addresses it can be reached at, and what is open there (stderr). */
function warnIfExposed(
  prefix: string,
  host: string,
  port: string,
  tls: boolean,
  access: AccessOptions,
  generated: string | undefined,
): void {
  if (isLoopback(host)) return;
  const all = host === '0.0.0.0' || host === '::';
  const addrs = all
    ? Object.values(networkInterfaces())
        .flat()
        .filter((a) => a !== undefined && !a.internal && (host === '::' || a.family === 'IPv4'))
        .map((a) => a!.address)
    : [host];
  console.log(
    `${prefix}: listening on ${host}:${port}${all ? ` (this machine's addresses: ${addrs.join(', ') || 'none found'})` : ''}`,
  );
  const open = [
    access.clientTokens.length === 0
      ? 'inference (anyone who can reach the port may send tasks: --auth-tokens-file)'
      : '',
    access.introspectionTokens === null
      ? 'introspection (/metrics, /v2/inss/*: --insecure-introspection was given)'
      : '',
    tls ? '' : 'no TLS (tokens and tensors cross the network in clear: --tls-cert/--tls-key)',
  ].filter(Boolean);
  process.stderr.write(
    `${prefix}: warning: bound beyond loopback (${host}); ${open.length > 0 ? `open: ${open.join('; ')}` : 'every route but health needs a token'}\n`,
  );
  if (generated !== undefined)
    console.log(`${prefix}: introspection token ${generated} (give --auth-tokens-file to choose the tokens)`);
}

async function startScheduler(
  opts: ServeOptions & { host: string; port: number; token: string | null; agentTokens?: ReadonlyMap<string, string> },
  logger: Logger,
): Promise<{
  service: SchedulerService;
  store: Store;
  config: ReturnType<typeof schedulerConfig>;
  tls: { cert: Buffer; key: Buffer } | undefined;
}> {
  const tls = tlsFiles(opts);
  const { access, generated } = accessFrom(opts);
  const config = schedulerConfig(opts);
  const grpcPort = grpcPortOf(opts);
  const store = new Store(stateDbPath(opts.stateDir));
  const service = await SchedulerService.start({
    host: opts.host,
    port: opts.port,
    ...(grpcPort !== undefined ? { grpcPort } : {}),
    token: opts.token,
    ...(opts.agentTokens ? { agentTokens: opts.agentTokens } : {}),
    access,
    ...(tls ? { tls } : {}),
    models: config.models,
    profiles: config.profiles,
    policyName: opts.policy,
    createPolicy: config.createPolicy,
    logger,
    store,
    version: VERSION,
    settings: config.settings,
    initialRatePerS: config.initialRatePerS,
    limits: {
      bodyLimitFactor: opts.bodyLimitFactor,
      maxConnections: opts.maxConnections,
      maxConnectionsPerClient: opts.maxConnectionsPerClient,
    },
    shmMb: opts.shmMb,
  }).catch((e: unknown) => {
    store.close();
    throw listenError(e, opts.host, opts.port);
  });
  store.recordPolicy({
    name: opts.policy,
    source: config.policyFile ?? null,
    data: undefined,
    nowIso: new Date().toISOString(),
  });
  warnIfExposed(`inss ${opts.command}`, opts.host, new URL(service.url).port, tls !== undefined, access, generated);
  return { service, store, config, tls };
}

interface AgentFlags {
  /** Simulated GPUs; `pooled`, where given, is what those GPUs do when pooled (else `pooledGpu`). */
  simulate?: { profile: string; count: number; pooled?: PooledGpuMode }[];
  /** --pooled-gpu: what simulated GPUs do when pooled (default overlap; `inss up`: the scenario's). */
  pooledGpu?: PooledGpuMode;
  stateDir?: string;
  worker: string;
  agentId?: string;
  zeroTime?: boolean;
  seed: number;
  tls?: AgentTls;
  dataPath?: string;
  dataAdvertise?: string;
}

/** --data-path / --data-advertise as the agent takes them (agent/agent.ts `dataPath`). */
function dataPathOf(flags: AgentFlags): 'unix' | 'off' | { tcpHost: string; advertise: string } {
  const p = flags.dataPath ?? 'unix';
  if (p === 'tcp') {
    if (!flags.dataAdvertise)
      throw new InvalidInputError(
        '--data-path tcp: give --data-advertise <host>, the address the scheduler reaches this machine at',
      );
    // A loopback address is reachable from this host only: the sockets listen there, not on every interface.
    const loopback = ['127.0.0.1', '::1', 'localhost'].includes(flags.dataAdvertise);
    return { tcpHost: loopback ? flags.dataAdvertise : '0.0.0.0', advertise: flags.dataAdvertise };
  }
  if (flags.dataAdvertise !== undefined) throw new InvalidInputError('--data-advertise: only with --data-path tcp');
  return p === 'off' ? 'off' : 'unix';
}

/**
 * What a real GPU does when pooled: the agent runs every GPU's workers under an MPS server (it does not
 * start without one), and pooled workers are its clients at 100% active threads, whose kernels run at
 * once (src/model/pooledGpu.ts, docs/pooled-gpu.md).
 */
const REAL_GPU_POOLED: PooledGpuMode = 'overlap';

/**
 * The machine's GPUs as nvidia-smi lists them, each with the built-in profile that matches its name
 * (null when none does: the scheduler then leaves it unused and says so).
 */
async function discoveredGpus(): Promise<{ gpus: AgentGpu[] } | { none: string }> {
  const d = await queryGpus(process.env.INSS_NVIDIA_SMI ? { command: process.env.INSS_NVIDIA_SMI } : {});
  if (d.kind === 'no-driver') return { none: d.reason };
  if (d.kind === 'malformed') throw new InvalidInputError(`nvidia-smi printed something inss cannot read: ${d.error}`);
  if (d.kind === 'failed') throw new InvalidInputError(`nvidia-smi failed: ${d.reason}`);
  const known = listProfileIds().map((id) => ({ id, gpuName: loadProfile(id).gpu.name }));
  return {
    gpus: d.gpus.map((g) => ({
      index: g.index,
      uuid: g.uuid,
      name: g.name,
      memMb: g.memTotalMb,
      profile: matchProfile(g.name, known),
      simulated: false,
      pooled: REAL_GPU_POOLED,
    })),
  };
}

/** The GPUs an agent serves: simulated ones from profiles (`--simulate`). */
function agentGpus(flags: AgentFlags): {
  gpus: AgentGpu[];
  profilePaths: Map<string, string>;
  profiles: Map<string, Profile>;
} {
  const gpus: AgentGpu[] = [];
  const profilePaths = new Map<string, string>();
  const profiles = new Map<string, Profile>();
  if (!flags.simulate) throw new InvalidInputError('no GPUs: give --simulate <profile>:<count> to run simulated GPUs');
  for (const s of flags.simulate) {
    const p = loadProfile(s.profile);
    const isPath = s.profile.includes('/') || s.profile.endsWith('.json');
    profilePaths.set(p.id, isPath ? s.profile : join(BUILTIN_PROFILE_DIR, `${s.profile}.json`));
    profiles.set(p.id, p);
    const pooled = s.pooled ?? flags.pooledGpu ?? DEFAULT_POOLED_GPU_MODE;
    for (let k = 0; k < s.count; k++)
      gpus.push({
        index: gpus.length,
        uuid: `SIM-${p.id}-${gpus.length}`,
        name: p.gpu.name,
        memMb: p.gpu.memMb,
        profile: p.id,
        simulated: true,
        pooled,
      });
  }
  return { gpus, profilePaths, profiles };
}

/**
 * V8's heap sizing for the simulated worker. A worker reads every batch from its data socket, where
 * Node allocates a new 64 KB buffer per read (about 300 for a 19 MB batch), and with V8's default
 * sizing, taken from the worker's small live heap (about 10 MB), that started a full collection
 * every second batch: 55-80 full collections in 5 s of bench:system's closed loop, 0.69-0.75 ms of
 * the worker's CPU per 602 KB task. Starting the heap at 256 MB: 3-7 full collections and 0.24-0.30
 * ms a task (docs/serving.md, "The worker's heap"). The live heap stays about 10 MB either way: the
 * flag moves the collector's limit, not what is kept.
 */
export const SIM_WORKER_V8_FLAGS: readonly string[] = ['--initial-heap-size=256'];

function simWorkerLaunch(
  profilePaths: Map<string, string>,
  flags: AgentFlags,
): (w: DesiredWorker, gpu: AgentGpu) => WorkerLaunch {
  const script = join(PACKAGE_ROOT, 'dist', 'agent', 'simWorker.js');
  return (w, gpu) => {
    const path = gpu.profile === null ? undefined : profilePaths.get(gpu.profile);
    if (!path) throw new InvalidInputError(`GPU ${gpu.index} has no profile to simulate`);
    // The agent's profiling flags go to its workers too (a profile of the whole path: `inss up` under
    // `node --cpu-prof`, benchmarks/system.ts); no other flag, as one that prints to stdout (--trace-gc)
    // would break the worker protocol on its stdout.
    const args = [
      ...SIM_WORKER_V8_FLAGS,
      ...process.execArgv.filter((a) => a.startsWith('--cpu-prof') || a.startsWith('--heap-prof')),
      script,
      '--model',
      w.model,
      '--profile',
      path,
      '--pct',
      String(w.pct),
      '--pooled',
      gpu.pooled,
      '--seed',
      String(flags.seed),
    ];
    if (flags.zeroTime) args.push('--zero-time');
    return {
      command: process.execPath,
      args,
      env: { CUDA_VISIBLE_DEVICES: String(gpu.index), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(w.pct) },
    };
  };
}

/**
 * The PyTorch worker (native/torch_worker.py). On a simulated GPU it runs the real model on the CPU:
 * the scheduler plans with the simulated GPU's profile while the answers are the model's real outputs.
 */
function torchWorkerLaunch(): (w: DesiredWorker, gpu: AgentGpu) => WorkerLaunch {
  return (w, gpu) => {
    const c = torchWorkerCommand({ model: w.model, device: gpu.simulated ? 'cpu' : 'cuda' });
    return {
      command: c.command,
      args: c.args,
      env: {
        CUDA_VISIBLE_DEVICES: gpu.simulated ? '' : String(gpu.index),
        CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(w.pct),
      },
    };
  };
}

interface RunningAgent {
  readonly agent: Agent;
  stop(): Promise<void>;
}

/**
 * Serves the machine's real GPUs: one MPS control daemon per GPU (own pipe and log directories
 * under the state directory), PyTorch workers as its clients with their shares, and a supervisor per
 * daemon that, when an MPS server fails, kills that GPU's workers (their tasks in flight get errors),
 * restarts the daemon, and lets the agent start the workers again.
 */
async function startGpuAgent(
  url: string,
  token: string,
  flags: AgentFlags,
  gpus: AgentGpu[],
  logger: Logger,
): Promise<RunningAgent> {
  if (flags.worker !== 'torch')
    throw new InvalidInputError(
      `this machine has GPUs (${gpus.map((g) => g.name).join(', ')}): real GPUs are served by the PyTorch worker, add --worker torch (or use --simulate)`,
    );
  if (flags.pooledGpu !== undefined && flags.pooledGpu !== REAL_GPU_POOLED)
    throw new InvalidInputError(
      `--pooled-gpu ${flags.pooledGpu}: only for simulated GPUs; real GPUs run under an MPS server, so they pool as ${REAL_GPU_POOLED}`,
    );
  await requireTorch();
  const base = join(flags.stateDir ?? join(process.env.HOME ?? '.', '.inss'), 'mps');
  const daemons = new Map<number, MpsDaemon>();
  for (const g of gpus) {
    // The daemon is pinned by UUID: nvidia-smi's index order can differ from CUDA's enumeration.
    const d = new MpsDaemon({
      pipeDir: join(base, `gpu${g.index}`, 'pipe'),
      logDir: join(base, `gpu${g.index}`, 'log'),
      gpu: g.uuid,
      ...(process.env.INSS_MPS_CONTROL ? { controlCommand: process.env.INSS_MPS_CONTROL } : {}),
    });
    await d.stop(); // a daemon left by an earlier run of this agent
    const r = await d.start();
    if (!r.ok) throw new InvalidInputError(`GPU ${g.index}: MPS control daemon: ${r.message}`);
    daemons.set(g.index, d);
  }
  const agent = new Agent({
    schedulerUrl: url,
    token,
    ...(flags.tls ? { tls: flags.tls } : {}),
    agentId: flags.agentId ?? hostname(),
    gpus,
    workerKind: 'torch',
    // Telemetry: utilisation and memory of each GPU as nvidia-smi reads them.
    readGpus: async () => {
      const d = await queryGpus(process.env.INSS_NVIDIA_SMI ? { command: process.env.INSS_NVIDIA_SMI } : {});
      if (d.kind !== 'ok') throw new Error(`nvidia-smi: ${'reason' in d ? d.reason : d.error}`);
      return d.gpus.map((g) => ({ index: g.index, utilPct: g.utilPct, memUsedMb: g.memUsedMb }));
    },
    dataPath: dataPathOf(flags),
    launch: (w, gpu) => {
      const c = torchWorkerCommand({ model: w.model, device: 'auto' });
      return { command: c.command, args: c.args, env: daemons.get(gpu.index)!.clientEnv(w.pct) };
    },
    logger,
  });
  const supervisors = [...daemons.entries()].map(
    ([gpu, d]) =>
      new MpsSupervisor(d, {
        intervalMs: 1000,
        onFailure: (why) => {
          logger.error(
            { gpu, reason: why.reason, err: why.message },
            'MPS failed on this GPU: restarting its daemon and workers',
          );
          agent.failGpu(gpu, `MPS server of GPU ${gpu} failed: ${why.message}`);
        },
        onRecovered: () => logger.warn({ gpu }, 'MPS daemon restarted'),
      }),
  );
  agent.start();
  for (const s of supervisors) s.start();
  return {
    agent,
    stop: async () => {
      for (const s of supervisors) s.stop();
      // A recovery in progress (restarting a daemon) finishes before the daemons are stopped for good.
      await Promise.all(supervisors.map((s) => s.idle()));
      await agent.stop();
      for (const d of daemons.values()) await d.stop();
    },
  };
}

async function requireTorch(): Promise<void> {
  if (!(await torchAvailable())) {
    throw new InvalidInputError(
      `--worker torch: ${resolvePython()} cannot import torch and torchvision (install Debian's python3-torch and python3-torchvision, or point INSS_PYTHON at a Python that has them)`,
    );
  }
}

async function startAgent(url: string, token: string, flags: AgentFlags, logger: Logger): Promise<RunningAgent> {
  if (!flags.simulate) {
    const found = await discoveredGpus();
    if ('none' in found)
      throw new InvalidInputError(
        `no GPU on this machine (${found.none}); give --simulate <profile>:<count> to run simulated GPUs`,
      );
    return startGpuAgent(url, token, flags, found.gpus, logger);
  }
  const { gpus, profilePaths } = agentGpus(flags);
  if (flags.worker === 'torch') await requireTorch();
  const agent = new Agent({
    schedulerUrl: url,
    token,
    ...(flags.tls ? { tls: flags.tls } : {}),
    agentId: flags.agentId ?? hostname(),
    gpus,
    workerKind: flags.worker,
    launch: flags.worker === 'torch' ? torchWorkerLaunch() : simWorkerLaunch(profilePaths, flags),
    dataPath: dataPathOf(flags),
    logger,
  });
  agent.start();
  return { agent, stop: () => agent.stop() };
}

/** The gRPC address for the printed endpoint line ('' when off). */
function grpcShown(service: SchedulerService): string {
  return service.grpcAddress ? `grpc ${service.grpcAddress}  ` : '';
}

/** Resolves when SIGINT or SIGTERM arrives, after running `stop` once. */
function untilSignal(stop: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const onSignal = (sig: string) => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`inss: ${sig}: shutting down\n`);
      void stop().then(resolve, (e: unknown) => {
        process.stderr.write(`inss: shutdown failed: ${String(e)}\n`);
        resolve();
      });
    };
    // `on`, not `once`: execa's cleanup hook (signal-exit) re-raises a signal that has no other listener left.
    process.on('SIGINT', () => onSignal('SIGINT'));
    process.on('SIGTERM', () => onSignal('SIGTERM'));
  });
}

/** The token of --token (or INSS_TOKEN) or --token-file (one line); undefined when neither is given. */
function sharedToken(opts: { token?: string; tokenFile?: string }): string | undefined {
  if (opts.token !== undefined && opts.tokenFile !== undefined)
    throw new InvalidInputError('--token (or INSS_TOKEN) and --token-file: give one');
  if (opts.tokenFile === undefined) return opts.token;
  const t = readFlagFile('--token-file', opts.tokenFile).toString('utf8').trim();
  if (!/^[\x21-\x7e]+$/.test(t))
    throw new InvalidInputError(
      `--token-file ${opts.tokenFile}: expected one token (printable ASCII, no spaces) on one line`,
    );
  return t;
}

function agentUrl(v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new InvalidArgumentError(`'${v}' is not a URL (e.g. ws://10.0.0.5:8000)`);
  }
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:')
    throw new InvalidArgumentError(`'${v}': must start with ws:// or wss://`);
  if (u.pathname === '/' || u.pathname === '') u.pathname = '/agents';
  return u.toString();
}

function addSchedulerOptions(c: Command): Command {
  return c
    .option(
      '--scenario <name|file>',
      'models, SLOs and expected rates to serve, from a built-in scenario or a scenario file',
      'paper-6',
    )
    .option('--policy <name>', 'scheduling policy (inss, gpulet, gslice, igniter, static-even, timeshare, ...)', 'inss')
    .option('--policy-file <file>', 'trained policy for inss / inss-ni (default: the one shipped for the scenario)')
    .option('--epoch-ms <ms>', "decision epoch (default: the scenario's epochS)", positiveInt)
    .option(
      '--monitor-window-ms <ms>',
      "window of the arrival-rate estimate (default: the scenario's monitorWindowS)",
      positiveInt,
    )
    .option('--state-dir <dir>', 'where the SQLite state lives (default ~/.inss)')
    .option('--log-level <level>', 'pino log level (fatal, error, warn, info, debug)', 'info')
    .option(
      '--host <host>',
      'address to bind (127.0.0.1 unless told otherwise; beyond loopback, introspection routes need a token)',
      '127.0.0.1',
    )
    .option('--tls-cert <file>', 'serve HTTPS, and wss:// to agents, with this PEM certificate (and --tls-key)')
    .option('--tls-key <file>', 'the PEM private key of --tls-cert')
    .addOption(
      new Option(
        '--auth-tokens-file <file>',
        'bearer tokens (one a line) clients must send on every route but health',
      ).env('INSS_AUTH_TOKENS_FILE'),
    )
    .addOption(
      new Option(
        '--auth-tokens <list>',
        'the same tokens, comma-separated (environment only: keep them off the command line)',
      )
        .env('INSS_AUTH_TOKENS')
        .hideHelp(),
    )
    .option('--insecure-introspection', 'bound beyond loopback, leave /metrics and /v2/inss/* open without a token')
    .option(
      '--body-limit-factor <x>',
      "a model's body limit: its largest legitimate request (JSON) times this",
      factorAtLeastOne,
      DEFAULT_LIMITS.bodyLimitFactor,
    )
    .option(
      '--max-connections <n>',
      'connections open at once (beyond: 503)',
      positiveInt,
      DEFAULT_LIMITS.maxConnections,
    )
    .option(
      '--max-connections-per-client <n>',
      'connections open at once from one address (beyond: 503)',
      positiveInt,
      DEFAULT_LIMITS.maxConnectionsPerClient,
    )
    .option(
      '--shm-mb <n>',
      'MB of shared memory (/dev/shm) for request bodies, which workers on this host read in place (0: off; batches carry the bytes)',
      shmMegabytes,
      DEFAULT_SHM_MB,
    )
    .option('--port <port>', 'HTTP port (0: any free port)', portNumber, 8000)
    .option(
      '--grpc-port <port>',
      "gRPC port (Triton's GRPCInferenceService; default: --port + 1, so 8001; 0: any free port)",
      portNumber,
    )
    .option('--no-grpc', 'serve no gRPC endpoint');
}

/** How batches reach the workers (docs/serving.md, "The path of a batch"). */
const DATA_PATH_OPTION = () =>
  new Option(
    '--data-path <path>',
    'how batches reach workers: unix (straight from the scheduler over a Unix socket per worker; the scheduler on this host), tcp (straight over TCP; give --data-advertise), off (relayed by the agent)',
  )
    .choices(['unix', 'tcp', 'off'])
    .default('unix');

/** --pooled-gpu: what the agent's simulated GPUs do with different models' batches at once when pooled. */
const POOLED_GPU_OPTION = (fallback: string) =>
  new Option(
    '--pooled-gpu <mode>',
    `simulated GPUs when pooled: overlap (workers under an MPS server, batches at once) or serial (separate processes time-sliced, one batch at a time) (default: ${fallback}; real GPUs run under MPS: overlap)`,
  ).choices(POOLED_GPU_MODES);

export function registerServe(program: Command): void {
  addSchedulerOptions(
    program
      .command('scheduler')
      .description('Run the scheduler service: the KServe v2 task endpoint, /metrics and the agents hub')
      .addOption(
        new Option(
          '--token <token>',
          'shared token agents present, for any agent id (prefer INSS_TOKEN or --token-file: argv is visible in ps)',
        ).env('INSS_TOKEN'),
      )
      .option('--token-file <file>', 'the shared agent token, from a file')
      .option(
        '--agent-tokens-file <file>',
        "per-agent tokens, '<agent-id> <token>' a line: with its token an agent can only be that id",
      ),
  ).action(
    async (
      opts: ServeOptions & { host: string; port: number; token?: string; tokenFile?: string; agentTokensFile?: string },
    ) => {
      const logger = makeLogger(opts.logLevel);
      const agentTokens =
        opts.agentTokensFile !== undefined
          ? tokensFrom('--agent-tokens-file', opts.agentTokensFile, parseAgentTokens)
          : undefined;
      const given = sharedToken(opts);
      // No token given: a random shared one (printed), unless per-agent tokens are the only way in.
      const token = given ?? (agentTokens ? null : randomBytes(16).toString('hex'));
      const { service, store } = await startScheduler(
        { ...opts, command: 'scheduler', token, ...(agentTokens ? { agentTokens } : {}) },
        logger,
      );
      const shown =
        token === null
          ? `per-agent tokens of ${opts.agentTokensFile}`
          : given !== undefined
            ? 'token as given'
            : `token ${token}`;
      console.log(
        `inss scheduler: endpoint ${service.url}/v2  ${grpcShown(service)}agents ${service.agentUrl}  ${shown}`,
      );
      await untilSignal(async () => {
        await service.close();
        store.close();
      });
    },
  );

  program
    .command('agent')
    .description('Run a node agent: connects to the scheduler and runs the workers it wants')
    .requiredOption('--scheduler <url>', 'the scheduler hub, ws://HOST:PORT', agentUrl)
    .addOption(
      new Option(
        '--token <token>',
        "the token the scheduler printed, or this agent's own (prefer INSS_TOKEN or --token-file: argv is visible in ps)",
      ).env('INSS_TOKEN'),
    )
    .option('--token-file <file>', 'the token, from a file')
    .option(
      '--ca <file>',
      'wss://: PEM certificate(s) to trust for the scheduler (its self-signed certificate, or a private CA)',
    )
    .option('--simulate <profile:count,...>', 'simulated GPUs from profiles (e.g. rtx2060s:2,rtx2060:2)', parseSimulate)
    .addOption(
      new Option(
        '--worker <kind>',
        'worker implementation: sim (simulated timing) or torch (PyTorch, native/torch_worker.py; on the CPU where the GPUs are simulated)',
      )
        .choices(['sim', 'torch'])
        .default('sim'),
    )
    .option('--agent-id <id>', 'stable id of this agent (default: the host name)')
    .option('--state-dir <dir>', "where the agent keeps its MPS daemons' pipe and log directories (default ~/.inss)")
    .option('--zero-time', 'simulated workers answer at once (system-overhead benchmark)')
    .option('--seed <n>', 'seed of the simulated GPUs', positiveInt, 1)
    .addOption(POOLED_GPU_OPTION('overlap'))
    .addOption(DATA_PATH_OPTION())
    .option('--data-advertise <host>', '--data-path tcp: the address the scheduler reaches this machine at')
    .option('--log-level <level>', 'pino log level', 'info')
    .action(
      async (
        opts: AgentFlags & { scheduler: string; token?: string; tokenFile?: string; ca?: string; logLevel: string },
      ) => {
        const logger = makeLogger(opts.logLevel);
        const token = sharedToken(opts);
        if (token === undefined)
          throw new InvalidInputError('no token: set INSS_TOKEN, or give --token-file (or --token)');
        if (opts.ca !== undefined && !opts.scheduler.startsWith('wss:'))
          throw new InvalidInputError('--ca: only for a wss:// scheduler URL');
        const tls = opts.ca !== undefined ? { ca: readFlagFile('--ca', opts.ca) } : undefined;
        const agent = await startAgent(opts.scheduler, token, { ...opts, ...(tls ? { tls } : {}) }, logger);
        await untilSignal(() => agent.stop());
      },
    );

  addSchedulerOptions(
    program
      .command('up')
      .description(
        'Start everything on this machine: the scheduler and a local agent (simulated GPUs where there are none)',
      )
      .option('--simulate <profile:count,...>', "simulated GPUs (default: the scenario's cluster)", parseSimulate)
      .addOption(
        new Option(
          '--worker <kind>',
          'worker implementation: sim (simulated timing) or torch (PyTorch, native/torch_worker.py; on the CPU where the GPUs are simulated)',
        )
          .choices(['sim', 'torch'])
          .default('sim'),
      )
      .option('--zero-time', 'simulated workers answer at once (system-overhead benchmark)')
      .option('--seed <n>', 'seed of the simulated GPUs', positiveInt, 1)
      .addOption(POOLED_GPU_OPTION("the scenario's timeshareGpu"))
      .addOption(DATA_PATH_OPTION()),
  ).action(async (opts: ServeOptions & AgentFlags & { host: string; port: number }) => {
    const logger = makeLogger(opts.logLevel);
    const token = randomBytes(16).toString('hex');
    const { service, store, config, tls } = await startScheduler({ ...opts, command: 'up', token }, logger);
    // The machine's GPUs when it has some and the PyTorch worker is asked for; else the scenario's
    // cluster, simulated.
    let simulate = opts.simulate;
    if (!simulate) {
      const found = await discoveredGpus();
      const real = 'gpus' in found && opts.worker === 'torch';
      if ('gpus' in found && !real)
        logger.warn(
          { gpus: found.gpus.map((g) => g.name) },
          'this machine has GPUs; serving simulated GPUs because the worker is sim (use --worker torch for the real ones)',
        );
      const sc = config.scenario.scenario;
      if (!real)
        simulate = sc.gpus.map((g) => ({
          profile: g.profile,
          count: g.count,
          pooled: opts.pooledGpu ?? g.timeshareGpu ?? sc.timeshareGpu,
        }));
    }
    // Over TLS the local agent trusts exactly the certificate its scheduler serves, whatever names it carries.
    const agentTls = tls ? { tls: { ca: tls.cert, checkServerIdentity: () => undefined } } : {};
    // The local agent's workers are on this host: over TCP (`--data-path tcp`) the scheduler reaches them on loopback.
    const dataAdvertise = opts.dataPath === 'tcp' ? { dataAdvertise: '127.0.0.1' } : {};
    const agent = await startAgent(
      service.agentUrl,
      token,
      { ...opts, ...(simulate ? { simulate } : {}), ...agentTls, ...dataAdvertise, agentId: opts.agentId ?? 'local' },
      logger.child({ part: 'agent' }),
    );
    console.log(
      `inss up: endpoint ${service.url}/v2  ${grpcShown(service)}(models: ${config.models.map((m) => m.name).join(', ')}; policy ${opts.policy})`,
    );
    console.log(`inss up: agents ${service.agentUrl}  token ${token}`);
    console.log(`inss up: try  curl ${service.url}/v2/health/ready`);
    await untilSignal(async () => {
      await agent.stop();
      await service.close();
      store.close();
    });
  });
}

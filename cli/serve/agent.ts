// `inss agent`, and the agent half of `inss up`: the GPUs it serves (simulated ones from profiles, or the
// machine's as nvidia-smi lists them, each under its own MPS daemon and supervisor) and the agent itself.
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import type { Logger } from 'pino';
import { Agent } from '../../agent/agent.js';
import { MpsDaemon, MpsSupervisor } from '../../agent/mps.js';
import { matchProfile, queryGpus } from '../../agent/nvidiaSmi.js';
import { torchWorkerCommand } from '../../agent/torchWorker.js';
import { DEFAULT_POOLED_GPU_MODE, type PooledGpuMode } from '../../src/model/pooledGpu.js';
import { InvalidInputError, type Profile } from '../../src/profile/schema.js';
import type { AgentGpu } from '../../src/protocol/agent.js';
import type { RepositoryModel } from '../../src/repository/types.js';
import { BUILTIN_PROFILE_DIR, listProfileIds, loadProfile } from '../profiles.js';
import { loadRepository } from '../repository.js';
import { readFlagFile, sharedToken } from './access.js';
import {
  type AgentFlags,
  agentUrl,
  DATA_PATH_OPTION,
  MODEL_REPOSITORY_OPTION,
  parseSimulate,
  POOLED_GPU_OPTION,
  WORKER_OPTION,
} from './options.js';
import { positiveInt } from '../flags.js';
import { makeLogger, untilSignal } from './process.js';
import { cpuWorkerEnv, repositoryLaunch, requireTorch, simWorkerLaunch, torchWorkerLaunch } from './workers.js';

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
export async function discoveredGpus(): Promise<{ gpus: AgentGpu[] } | { none: string }> {
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

interface RunningAgent {
  readonly agent: Agent;
  /** The models of --model-repository this agent launches workers of, by name (empty without it). */
  readonly repository: ReadonlyMap<string, RepositoryModel>;
  stop(): Promise<void>;
}

/**
 * The agent's copy of the model repository (--model-repository, the scheduler's as this machine sees
 * it): the models by name. A model that fails here is logged; the scheduler lists its own failures.
 */
function agentRepository(flags: AgentFlags, logger: Logger): Map<string, RepositoryModel> {
  if (flags.modelRepository === undefined) return new Map();
  const loaded = loadRepository(flags.modelRepository);
  for (const f of loaded.failures)
    logger.error({ model: f.name, reason: f.reason }, `model repository: '${f.name}' cannot be launched here`);
  return new Map(loaded.models.map((m) => [m.name, m]));
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
      `this machine has GPUs (${gpus.map((g) => g.name).join(', ')}): real GPUs are served by the PyTorch ` +
        `worker, add --worker torch (or use --simulate)`,
    );
  if (flags.pooledGpu !== undefined && flags.pooledGpu !== REAL_GPU_POOLED)
    throw new InvalidInputError(
      `--pooled-gpu ${flags.pooledGpu}: only for simulated GPUs; real GPUs run under an MPS server, so they ` +
        `pool as ${REAL_GPU_POOLED}`,
    );
  await requireTorch();
  const repository = agentRepository(flags, logger);
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
    launch: repositoryLaunch(
      repository,
      (w, gpu) => {
        const c = torchWorkerCommand({ model: w.model, device: 'auto' });
        return { command: c.command, args: c.args, env: daemons.get(gpu.index)!.clientEnv(w.pct) };
      },
      (w, gpu) => daemons.get(gpu.index)!.clientEnv(w.pct),
    ),
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
    repository,
    stop: async () => {
      for (const s of supervisors) s.stop();
      // A recovery in progress (restarting a daemon) finishes before the daemons are stopped for good.
      await Promise.all(supervisors.map((s) => s.idle()));
      await agent.stop();
      for (const d of daemons.values()) await d.stop();
    },
  };
}

export async function startAgent(url: string, token: string, flags: AgentFlags, logger: Logger): Promise<RunningAgent> {
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
  const repository = agentRepository(flags, logger);
  const agent = new Agent({
    schedulerUrl: url,
    token,
    ...(flags.tls ? { tls: flags.tls } : {}),
    agentId: flags.agentId ?? hostname(),
    gpus,
    workerKind: flags.worker,
    launch: repositoryLaunch(
      repository,
      flags.worker === 'torch' ? torchWorkerLaunch() : simWorkerLaunch(profilePaths, flags),
      cpuWorkerEnv,
    ),
    dataPath: dataPathOf(flags),
    logger,
  });
  agent.start();
  return { agent, repository, stop: () => agent.stop() };
}

export function registerAgentCommand(program: Command): void {
  program
    .command('agent')
    .description('Run a node agent: connects to the scheduler and runs the workers it wants')
    .requiredOption('--scheduler <url>', 'the scheduler hub, ws://HOST:PORT', agentUrl)
    .addOption(
      new Option(
        '--token <token>',
        "the token the scheduler printed, or this agent's own (prefer INSS_TOKEN or --token-file: argv is " +
          'visible in ps)',
      ).env('INSS_TOKEN'),
    )
    .option('--token-file <file>', 'the token, from a file')
    .option(
      '--ca <file>',
      'wss://: PEM certificate(s) to trust for the scheduler (its self-signed certificate, or a private CA)',
    )
    .option('--simulate <profile:count,...>', 'simulated GPUs from profiles (e.g. rtx2060s:2,rtx2060:2)', parseSimulate)
    .addOption(WORKER_OPTION())
    .option('--agent-id <id>', 'stable id of this agent (default: the host name)')
    .option('--state-dir <dir>', "where the agent keeps its MPS daemons' pipe and log directories (default ~/.inss)")
    .option('--zero-time', 'simulated workers answer at once (system-overhead benchmark)')
    .option('--seed <n>', 'seed of the simulated GPUs', positiveInt, 1)
    .addOption(POOLED_GPU_OPTION('overlap'))
    .addOption(DATA_PATH_OPTION())
    .option('--data-advertise <host>', '--data-path tcp: the address the scheduler reaches this machine at')
    .addOption(MODEL_REPOSITORY_OPTION())
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
}

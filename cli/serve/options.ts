// The flags of `inss scheduler`, `inss agent` and `inss up`: their parsers (each refuses a bad value
// with a line naming what it wants), the options the commands share, and the option objects they yield.
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { AgentTls } from '../../agent/connect.js';
import { DEFAULT_LIMITS } from '../../scheduler/limits.js';
import { DEFAULT_SHM_MB, MAX_SHM_MB } from '../../scheduler/shmRegion.js';
import {
  DEFAULT_HEARTBEAT_MS,
  HEARTBEAT_MS_RANGE,
  LOST_AFTER_BEATS,
  validHeartbeatMs,
} from '../../src/protocol/heartbeat.js';
import { POOLED_GPU_MODES, type PooledGpuMode } from '../../src/model/pooledGpu.js';
import { InvalidInputError } from '../../src/profile/schema.js';
import type { MonitorKind } from '../../src/serving/monitor.js';
import {
  attainmentTarget,
  MONITOR_FLAG_HELP,
  monitorKind,
  POOLED_PREDICTION_FLAG_HELP,
  pooledPrediction,
  positiveInt,
} from '../flags.js';
import type { PooledPrediction } from '../../src/serving/settings.js';

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

function heartbeatMs(v: string): number {
  const n = v.trim() === '' ? NaN : Number(v);
  const { min, max } = HEARTBEAT_MS_RANGE;
  if (!validHeartbeatMs(n)) throw new InvalidArgumentError(`must be an integer number of ms from ${min} to ${max}`);
  return n;
}

/** --agent-lost-ms's default: past the heartbeats' detection (3-4 s at 1 s beats), a host not back at once. */
export const DEFAULT_AGENT_LOST_MS = 5000;
/** The longest --agent-lost-ms: an hour (0 turns re-placing off). */
export const MAX_AGENT_LOST_MS = 3_600_000;

export function parseAgentLostMs(v: string): number {
  const n = v.trim() === '' ? NaN : Number(v);
  if (!Number.isInteger(n) || n < 0 || n > MAX_AGENT_LOST_MS)
    throw new InvalidArgumentError(`must be an integer number of ms from 0 (never) to ${MAX_AGENT_LOST_MS}`);
  return n;
}

function factorAtLeastOne(v: string): number {
  const x = Number(v);
  if (!Number.isFinite(x) || x < 1 || x > 100) throw new InvalidArgumentError('must be a number from 1 to 100');
  return x;
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

export interface ServeOptions {
  /** --grpc-port (undefined: the HTTP port + 1); false with --no-grpc. */
  grpcPort?: number;
  grpc: boolean;
  bodyLimitFactor: number;
  maxConnections: number;
  maxConnectionsPerClient: number;
  shmMb: number;
  heartbeatMs: number;
  /** --agent-lost-ms: an agent away this long has its models re-placed on the others (0: never). */
  agentLostMs: number;
  tlsCert?: string;
  tlsKey?: string;
  authTokensFile?: string;
  authTokens?: string;
  insecureIntrospection?: boolean;
  scenario: string;
  /** Whether --scenario was given (with --model-repository and no --scenario, only the repository is served). */
  scenarioGiven?: boolean;
  /** --model-repository: a model repository in Triton's layout (docs/model-repository.md). */
  modelRepository?: string;
  /** Which command runs (for its printed lines). */
  command: 'scheduler' | 'up' | 'frontdoor';
  policy: string;
  policyFile?: string;
  /** --attainment-target: overrides the scenario's `attainmentTarget` (undefined: the scenario's). */
  attainmentTarget?: number;
  /** Overrides of the scenario's epoch, monitor window and monitor (undefined: the scenario's). */
  epochMs?: number;
  monitorWindowMs?: number;
  monitor?: MonitorKind;
  pooledPrediction?: PooledPrediction;
  /** --share-tiers: names of one network share workers under inss (default: the scenario's `shareTiers`). */
  shareTiers?: boolean;
  stateDir?: string;
  logLevel: string;
}

export interface AgentFlags {
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
  /** --model-repository: the same repository as the scheduler's, whose workers this agent launches. */
  modelRepository?: string;
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

export function agentUrl(v: string): string {
  return hubUrl(v, '/agents');
}

/** A scheduler hub's ws:// or wss:// URL; `path` where none is given. */
export function hubUrl(v: string, path: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new InvalidArgumentError(`'${v}' is not a URL (e.g. ws://10.0.0.5:8000)`);
  }
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:')
    throw new InvalidArgumentError(`'${v}': must start with ws:// or wss://`);
  if (u.pathname === '/' || u.pathname === '') u.pathname = path;
  return u.toString();
}

export function addSchedulerOptions(c: Command): Command {
  return c
    .option(
      '--scenario <name|file>',
      'models, SLOs and expected rates to serve, from a built-in scenario or a scenario file',
      'paper-6',
    )
    .option(
      '--model-repository <dir>',
      "serve the models of a repository in Triton's layout (<dir>/<name>/config.pbtxt, <name>/<version>/model.onnx " +
        "or model.pt) beside the scenario's; without --scenario, only these (docs/model-repository.md)",
    )
    .option('--policy <name>', 'scheduling policy (inss, gpulet, gslice, igniter, static-even, timeshare, ...)', 'inss')
    .option('--policy-file <file>', 'trained policy for inss / inss-ni (default: the one shipped for the scenario)')
    .option(
      '--attainment-target <x>',
      "fraction of tasks inss plans to serve within SLO, in (0.5, 1) (default: the scenario's attainmentTarget, " +
        'else 0.99)',
      attainmentTarget,
    )
    .option('--epoch-ms <ms>', "decision epoch (default: the scenario's epochS)", positiveInt)
    .option(
      '--monitor-window-ms <ms>',
      "window of the arrival-rate estimate (default: the scenario's monitorWindowS)",
      positiveInt,
    )
    .option('--monitor <kind>', MONITOR_FLAG_HELP, monitorKind)
    .option('--pooled-prediction <kind>', POOLED_PREDICTION_FLAG_HELP, pooledPrediction)
    .option(
      '--share-tiers',
      'names that run one network (profileModel) share workers under inss, batching across their SLO tiers earliest ' +
        "deadline first (default: the scenario's shareTiers, else apart; docs/inss.md)",
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
      'MB of shared memory (/dev/shm) for request bodies, which workers on this host read in place (0: off; ' +
        'batches carry the bytes)',
      shmMegabytes,
      DEFAULT_SHM_MB,
    )
    .option(
      '--heartbeat-ms <ms>',
      `ping each agent every <ms>; an agent silent ${LOST_AFTER_BEATS} beats in a row is unreachable (its tasks go ` +
        'to other workers) and an agent that hears nothing for as long reconnects',
      heartbeatMs,
      DEFAULT_HEARTBEAT_MS,
    )
    .option(
      '--agent-lost-ms <ms>',
      'an agent disconnected for <ms> leaves the plan: the policy re-places its models on the other agents ' +
        'until it is back (0: never; its models wait for it)',
      parseAgentLostMs,
      DEFAULT_AGENT_LOST_MS,
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
export const DATA_PATH_OPTION = () =>
  new Option(
    '--data-path <path>',
    'how batches reach workers: unix (straight from the scheduler over a Unix socket per worker; the scheduler ' +
      'on this host), tcp (straight over TCP; give --data-advertise), off (relayed by the agent)',
  )
    .choices(['unix', 'tcp', 'off'])
    .default('unix');

/** --pooled-gpu: what the agent's simulated GPUs do with different models' batches at once when pooled. */
export const POOLED_GPU_OPTION = (fallback: string) =>
  new Option(
    '--pooled-gpu <mode>',
    `simulated GPUs when pooled: overlap (workers under an MPS server, batches at once) or serial (separate ` +
      `processes time-sliced, one batch at a time) (default: ${fallback}; real GPUs run under MPS: overlap)`,
  ).choices(POOLED_GPU_MODES);

/** --worker: which worker implementation the agent launches (cli/serve/workers.ts). */
export const WORKER_OPTION = () =>
  new Option(
    '--worker <kind>',
    'worker implementation: sim (simulated timing) or torch (PyTorch, native/torch_worker.py; ' +
      'on the CPU where the GPUs are simulated)',
  )
    .choices(['sim', 'torch'])
    .default('sim');

/** --model-repository on `inss agent`. */
export const MODEL_REPOSITORY_OPTION = () =>
  new Option(
    '--model-repository <dir>',
    "the scheduler's model repository, as this machine sees it (the agent launches its models' workers)",
  );

// `inss scheduler`, and the scheduler half of `inss up`: the models, SLOs, rates and policy of a scenario
// (the one place that reads scenarios and policy files), the SQLite state, and the service that serves
// them, with a failed listen turned into a line an operator can act on.
import { tierGroups } from '../../src/serving/tiers.js';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import type { Logger } from 'pino';
import { parseAgentTokens } from '../../scheduler/auth.js';
import type { ServedModelConfig } from '../../scheduler/control.js';
import { SchedulerService, type SchedulerOptions } from '../../scheduler/service.js';
import { withLearnedProfiles } from '../../src/policy/online/clusterMap.js';
import { Store } from '../../scheduler/store.js';
import type { ClusterInfo } from '../../src/policy/types.js';
import { withOnlineProfiling } from '../../src/policy/online/policy.js';
import { type CostBatching, servedCost } from '../../src/model/costDistribution.js';
import { DEFAULT_ATTAINMENT_TARGET } from '../../src/policy/attainment.js';
import { InvalidInputError, type Profile } from '../../src/profile/schema.js';
import { modelSignature } from '../../src/protocol/tensor.js';
import { DEFAULT_REPOSITORY_SLO_MS, type RepositoryModel } from '../../src/repository/types.js';
import { initialRates, plannerProfiles, withPipelinesByName } from '../../src/scenario/build.js';
import { servingSettings, withOverrides } from '../../src/serving/settings.js';
import { rateFunction } from '../../src/workload/arrivals.js';
import { BUILTIN_POLICY_DIR, listProfileIds, loadProfile, readJsonFile } from '../profiles.js';
import { PolicyRegistry } from '../registry.js';
import { loadRepository } from '../repository.js';
import { loadScenario } from '../scenarios.js';
import { accessFrom, sharedToken, tlsFiles, tokensFrom, warnIfExposed } from './access.js';
import { addSchedulerOptions, grpcPortOf, type ServeOptions } from './options.js';
import { scenarioEnsemble, servedPipelines } from './pipelines.js';
import { grpcShown, makeLogger, untilSignal } from './process.js';

const VERSION = '0.1.0';

/** Every built-in profile, plus the ones a scenario names by path. */
function allProfiles(extra: ReadonlyMap<string, Profile> = new Map()): Map<string, Profile> {
  const m = new Map<string, Profile>();
  for (const id of listProfileIds()) m.set(id, loadProfile(id));
  for (const [id, p] of extra) m.set(id, p);
  return m;
}

/** How the planner takes a model's cost classes: the scenario's costBatching, at the attainment target. */
export interface CostPlanning {
  readonly batching: CostBatching;
  readonly quantile: number;
}

/**
 * The served model of a repository model. Its SLO: the configuration's `slo_ms` parameter, else the
 * scenario's for a model of that name, else DEFAULT_REPOSITORY_SLO_MS; its queue policy: the
 * scenario's, else the configuration's default_queue_policy (docs/model-repository.md, "SLO"); its
 * input-dependent cost: the configuration's `cost_classes`, else the scenario model's `cost`.
 */
export function repositoryServed(
  r: RepositoryModel,
  planning: CostPlanning,
  fromScenario?: ScenarioModel,
): ServedModelConfig {
  const queuePolicy = fromScenario?.queuePolicy ?? r.queuePolicy;
  const classes = r.costClasses ?? fromScenario?.cost?.classes;
  return {
    name: r.name,
    sloMs: r.sloMs ?? fromScenario?.sloMs ?? DEFAULT_REPOSITORY_SLO_MS,
    signature: r.signature,
    maxBatchSize: r.maxBatchSize,
    ...(queuePolicy ? { queuePolicy } : {}),
    ...(classes ? { cost: servedCost(classes, planning.batching, planning.quantile) } : {}),
    repository: r,
  };
}

type ScenarioModel = ReturnType<typeof loadScenario>['scenario']['models'][number];

/**
 * The models served: the scenario's (a name the repository has is the repository's model; one whose
 * repository model failed is not served), then the repository's others. With --model-repository and
 * no --scenario, the repository's alone.
 */
function servedModels(opts: ServeOptions, loaded: ReturnType<typeof loadScenario>, logger: Logger) {
  const planning: CostPlanning = {
    batching: loaded.scenario.costBatching,
    quantile: opts.attainmentTarget ?? loaded.scenario.attainmentTarget ?? DEFAULT_ATTAINMENT_TARGET,
  };
  const repository = opts.modelRepository !== undefined ? loadRepository(opts.modelRepository) : undefined;
  const byName = new Map((repository?.models ?? []).map((r) => [r.name, r]));
  const failed = new Set((repository?.failures ?? []).map((f) => f.name));
  for (const f of repository?.failures ?? [])
    logger.error({ model: f.name, reason: f.reason }, `model repository: '${f.name}' is not served`);
  const fromScenario = repository !== undefined && !opts.scenarioGiven ? [] : loaded.scenario.models;
  const models: ServedModelConfig[] = [];
  // Live workers load a model by its name: a name that runs another's network is served only as a shared tier, by
  // the workers of its network's tightest tier, which must be named as the network (src/serving/tiers.ts).
  const shared = opts.shareTiers === true || loaded.scenario.shareTiers === true;
  const lanes = tierGroups(fromScenario);
  fromScenario.forEach((m, i) => {
    if (
      m.profileModel !== undefined &&
      m.profileModel !== m.name &&
      !(shared && fromScenario[lanes[i]!]!.name === m.profileModel)
    )
      throw new InvalidInputError(
        `scenario ${opts.scenario}: models[${i}].profileModel: live workers load a model by its name; a name that ` +
          `runs '${m.profileModel}' is served only with shareTiers (--share-tiers), as a tier of the served model ` +
          `'${m.profileModel}', whose SLO must be the tightest of its tiers`,
      );
    if (failed.has(m.name)) return;
    const r = byName.get(m.name);
    if (r) {
      if (r.sloMs !== undefined && r.sloMs !== m.sloMs)
        logger.warn(
          { model: m.name, configSloMs: r.sloMs, scenarioSloMs: m.sloMs },
          "the configuration's slo_ms parameter overrides the scenario's SLO",
        );
      models.push(repositoryServed(r, planning, m));
      return;
    }
    // A model the repository does not have is a zoo model: a profile must have it (its signature).
    const net = m.profileModel ?? m.name;
    const p = [...loaded.profiles.values()].find((x) => x.models[net]);
    if (!p) throw new InvalidInputError(`scenario ${opts.scenario}: no profile has model '${net}'`);
    const mp = p.models[net]!;
    models.push({
      name: m.name,
      sloMs: m.sloMs,
      signature: modelSignature(mp.inputBytes, mp.outputBytes),
      ...(net !== m.name ? { profileModel: net } : {}),
      ...(m.queuePolicy ? { queuePolicy: m.queuePolicy } : {}),
    });
  });
  for (const r of repository?.models ?? [])
    if (!models.some((m) => m.name === r.name)) models.push(repositoryServed(r, planning));
  if (models.length === 0)
    throw new InvalidInputError(
      `no model to serve: every model of --model-repository ${opts.modelRepository} failed ` +
        `(${(repository?.failures ?? []).map((f) => `${f.name}: ${f.reason}`).join('; ')})`,
    );
  const rates = initialRates(loaded.scenario, loaded.traces);
  const initialRatePerS = Object.fromEntries(
    fromScenario.map((m, i) => [m.name, rates[i]!] as const).filter(([n]) => models.some((m) => m.name === n)),
  );
  // The scenario's pipelines, then the repository's ensembles (a name is one or the other).
  const pipelines = fromScenario.length === 0 ? [] : loaded.scenario.pipelines;
  const own = pipelines.map((p, i) => scenarioEnsemble(p, i, models, `scenario ${opts.scenario}`));
  const ensembles = [...own, ...(repository?.ensembles ?? []).filter((e) => !own.some((o) => o.name === e.name))];
  // A step model's tasks come at its pipeline's rate (a trace's is learned as it serves).
  for (const p of pipelines)
    if (p.rate.kind !== 'trace') for (const s of p.steps) initialRatePerS[s.model] = rateFunction(p.rate).rateAt(0);
  return {
    ...servedPipelines(ensembles, models, logger, new Set(own.map((e) => e.name))),
    initialRatePerS,
    unavailable: repository?.failures ?? [],
    repositoryOnly: fromScenario.length === 0,
  };
}

/** Models, SLOs, initial rates and the policy from a scenario and a model repository (and flags). */
function schedulerConfig(opts: ServeOptions, logger: Logger, store: Store) {
  const loaded = loadScenario(opts.scenario);
  // The profiles learned online for models no profile had (scheduler/store.ts) join their GPU types'.
  // A scenario's `unprofiled` models are hidden from the planner and the dispatch rule, as in the simulator;
  // the profiles learned online for models no profile had (scheduler/store.ts) join their GPU types'.
  const profiles = withLearnedProfiles(
    plannerProfiles(loaded.scenario, allProfiles(loaded.profiles)),
    Object.fromEntries(store.learnedProfiles()),
  );
  const served = servedModels(opts, loaded, logger);
  const { models, pipelines, initialRatePerS, unavailable, repositoryOnly } = served;
  const registry = new PolicyRegistry();
  // Models without a profile (a repository's, a scenario's unprofiled ones) are served with AIMD
  // batching and profiled while they serve (docs/online-profiling.md), the fit kept in the store.
  const unprofiled = models.some((m) => m.repository) || loaded.scenario.models.some((m) => m.unprofiled);
  const factory = unprofiled
    ? withOnlineProfiling(registry.get(opts.policy), { store: store.onlineStatePort(() => new Date().toISOString()) })
    : registry.get(opts.policy);
  const shipped = join(BUILTIN_POLICY_DIR, `${loaded.scenario.name}.json`);
  // The policy shipped for a scenario was trained on its models: not for a repository's alone.
  const shippedFits = opts.policy.startsWith('inss') && existsSync(shipped) && !repositoryOnly;
  const policyFile = opts.policyFile ?? (shippedFits ? shipped : undefined);
  const policyData = policyFile ? readJsonFile(policyFile) : undefined;
  // The operator's target overrides the scenario's; a policy label (`inss@95`) overrides both.
  const target = opts.attainmentTarget ?? loaded.scenario.attainmentTarget;
  let settings;
  try {
    settings = withOverrides(servingSettings(loaded.scenario), {
      epochMs: opts.epochMs,
      monitorWindowMs: opts.monitorWindowMs,
      monitor: opts.monitor,
      pooledPrediction: opts.pooledPrediction,
    });
  } catch (e) {
    throw new InvalidInputError(`--epoch-ms / --monitor-window-ms / --monitor: ${(e as Error).message}`);
  }
  const pipelinesPlanned = [...loaded.scenario.pipelines, ...served.scenarioPipelines];
  return {
    // The repository's ensembles join the scenario's pipelines: the planner sees them as the simulator does.
    scenario: {
      ...loaded,
      scenario: { ...loaded.scenario, pipelines: pipelinesPlanned },
    },
    settings,
    profiles,
    models,
    pipelines,
    unavailable,
    initialRatePerS,
    policyFile,
    // A cluster the policy does not support (e.g. too large for the oracle) is refused with its reason,
    // which the control plane reports; an error from `create` on a supported cluster is a real failure.
    createPolicy: (served: ClusterInfo) => {
      // The planner splits each pipeline's SLO over its steps, as in the twin (Deployment.pipelineBudgetsMs).
      const shared = opts.shareTiers === true || loaded.scenario.shareTiers === true;
      const cluster = withPipelinesByName(shared ? { ...served, shareTiers: true } : served, pipelinesPlanned);
      const options = {
        seed: loaded.scenario.seed,
        ...(policyData !== undefined ? { policyData } : {}),
        ...(target !== undefined ? { attainmentTarget: target } : {}),
      };
      const why = factory.supports(cluster, options);
      if (why !== null) throw new Error(`${opts.policy} cannot run on this cluster: ${why}`);
      return factory.create(cluster, options);
    },
  };
}

/** A failed listen as one line an operator can act on (a busy port is common; its stack trace says nothing). */
function listenError(e: unknown, host: string, port: number): unknown {
  // grpc-js reports a failed bind in its message ("No address added out of total 1 resolved errors: [listen EADDRINUSE
  // ...]").
  const grpcBind = /grpc port ([0-9]+): .*?(EADDRINUSE|EACCES)/s.exec((e as Error).message ?? '');
  if (grpcBind) {
    const p = grpcBind[1]!;
    return new InvalidInputError(
      grpcBind[2] === 'EADDRINUSE'
        ? `--grpc-port ${p}: ${host}:${p} is already in use (another inss, or another program); ` +
            'pick another port or --no-grpc'
        : `--grpc-port ${p}: not allowed to bind ${host}:${p}; pick another port`,
    );
  }
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE')
    return new InvalidInputError(
      `--port ${port}: ${host}:${port} is already in use (another inss, or another program); stop it or pick ` +
        `another port`,
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

export async function startScheduler(
  opts: ServeOptions & {
    host: string;
    port: number;
    token: string | null;
    agentTokens?: ReadonlyMap<string, string>;
    /** `inss frontdoor`: the link to its scheduler (no state kept: its store is in memory). */
    frontDoor?: SchedulerOptions['frontDoor'];
    advertiseUrl?: string;
  },
  logger: Logger,
): Promise<{
  service: SchedulerService;
  store: Store;
  config: ReturnType<typeof schedulerConfig>;
  tls: { cert: Buffer; key: Buffer } | undefined;
}> {
  const tls = tlsFiles(opts);
  const { access, generated } = accessFrom(opts);
  const store = new Store(opts.frontDoor ? ':memory:' : stateDbPath(opts.stateDir));
  let config: ReturnType<typeof schedulerConfig>;
  try {
    config = schedulerConfig(opts, logger, store);
  } catch (e) {
    store.close();
    throw e;
  }
  const grpcPort = grpcPortOf(opts);
  const service = await SchedulerService.start({
    host: opts.host,
    port: opts.port,
    ...(grpcPort !== undefined ? { grpcPort } : {}),
    token: opts.token,
    ...(opts.agentTokens ? { agentTokens: opts.agentTokens } : {}),
    access,
    ...(tls ? { tls } : {}),
    models: config.models,
    pipelines: config.pipelines,
    unavailableModels: config.unavailable,
    profiles: config.profiles,
    policyName: opts.policy,
    createPolicy: config.createPolicy,
    logger,
    ...(opts.frontDoor ? { frontDoor: opts.frontDoor } : { store }),
    ...(opts.advertiseUrl !== undefined ? { advertiseUrl: opts.advertiseUrl } : {}),
    version: VERSION,
    settings: config.settings,
    initialRatePerS: config.initialRatePerS,
    limits: {
      bodyLimitFactor: opts.bodyLimitFactor,
      maxConnections: opts.maxConnections,
      maxConnectionsPerClient: opts.maxConnectionsPerClient,
    },
    shmMb: opts.shmMb,
    heartbeatMs: opts.heartbeatMs,
    agentLostMs: opts.agentLostMs,
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

export function registerSchedulerCommand(program: Command): void {
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
      command: Command,
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
        {
          ...opts,
          command: 'scheduler',
          scenarioGiven: command.getOptionValueSource('scenario') !== 'default',
          token,
          ...(agentTokens ? { agentTokens } : {}),
        },
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
}

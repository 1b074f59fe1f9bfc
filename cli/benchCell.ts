// One cell of `inss bench --suite` (a policy's violation-versus-load curve on one scenario at one
// seed), run in this process or in a suite worker thread (suiteWorker.ts). Reads the scenario, its
// profiles and the shipped trained policy; caches what it read for the next cell.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ALL_ADDITIONS, inssVariantFactory } from '../rl/inss.js';
import { type PolicyResult, policyCurve, runPolicy } from '../tools/bench/run.js';
import type { SuiteCell } from '../tools/bench/suite.js';
import { HEADROOM_SUFFIX, withHeadroom } from '../src/policy/headroom.js';
import { attainmentLabel, readsAttainmentTarget } from '../src/policy/attainment.js';
import type { PolicyFactory, PolicyOptions } from '../src/policy/types.js';
import { scenarioCluster } from '../src/scenario/build.js';
import type { PooledGpuMode } from '../src/model/pooledGpu.js';
import type { MonitorKind } from '../src/serving/monitor.js';
import type { TransportModel } from '../src/serving/transport.js';
import { PolicyRegistry } from './registry.js';
import { BUILTIN_POLICY_DIR, readJsonFile } from './profiles.js';
import { type LoadedScenario, loadScenario } from './scenarios.js';

/** The baselines that also run with inss's headroom, as `<name>-h` (src/policy/headroom.ts). */
export const HEADROOM_BASELINES = ['gpulet', 'gslice', 'igniter', 'static-even', 'oracle'] as const;

/**
 * inss with one addition left out, for the ablation (docs/inss.md), run by name: `inss-nopool` is
 * inss without pooling (the actor's allocation refined, no pooled GPUs; needs a trained policy that fits).
 */
export const INSS_ABLATIONS: readonly PolicyFactory[] = [
  inssVariantFactory({
    name: 'inss-nopool',
    interference: true,
    additions: { ...ALL_ADDITIONS, pooling: false },
    description: 'inss without pooling: the trained actor refined on the latency model, MPS only (ablation)',
  }),
  inssVariantFactory({
    name: 'inss-fb',
    interference: true,
    additions: { ...ALL_ADDITIONS, missFeedback: true },
    description:
      'inss with feedback from measured misses: a model missing > 2% over 5 epochs is planned for more rate (ablation)',
  }),
  inssVariantFactory({
    name: 'inss-nopf',
    interference: true,
    additions: { ...ALL_ADDITIONS, planFeedback: false },
    description: 'inss keeping a deployment predicted to meet the target whatever it was measured to miss (ablation)',
  }),
];

/**
 * Names of the variants benchRegistry adds (run by name, not by default in a single-scenario bench): headroom
 * baselines, then inss ablations.
 */
export const HEADROOM_VARIANTS: readonly string[] = [
  ...HEADROOM_BASELINES.map((n) => `${n}${HEADROOM_SUFFIX}`),
  ...INSS_ABLATIONS.map((f) => f.name),
];

/** The registered policies, each model-based baseline with inss's headroom beside it, and inss's ablations. */
export function benchRegistry(base = new PolicyRegistry()): PolicyRegistry {
  const known = new Set(base.names());
  return new PolicyRegistry([
    ...base.all(),
    ...HEADROOM_BASELINES.filter((n) => known.has(n)).map((n) => withHeadroom(base.get(n))),
    ...INSS_ABLATIONS,
  ]);
}

/** The trained policy inss variants load: the given file, else the one shipped for the scenario (by its name). */
export function inssPolicyData(scenarioName: string, policyFile?: string): unknown {
  const shipped = join(BUILTIN_POLICY_DIR, `${scenarioName}.json`);
  const file = policyFile ?? (existsSync(shipped) ? shipped : undefined);
  return file ? readJsonFile(file) : undefined;
}

/**
 * Each policy's options: inss variants get the trained policy `data` and the scenario's attainment
 * target (a label such as `inss@95` overrides the target: src/policy/attainment.ts).
 */
export function policyOptionsFor(data: unknown, attainmentTarget?: number): (name: string) => PolicyOptions {
  return (name) => ({
    ...(data !== undefined && name.startsWith('inss') ? { policyData: data } : {}),
    ...(attainmentTarget !== undefined && readsAttainmentTarget(name) ? { attainmentTarget } : {}),
  });
}

/**
 * The policy names as a bench with `--attainment-target target` runs them: each that reads the target
 * labelled with it (`inss` -> `inss@95`), so that a table tells it apart from a run at another target;
 * the others as they are.
 */
export function labelForTarget(names: readonly string[], target: number | undefined): string[] {
  if (target === undefined) return [...names];
  return names.map((n) => (readsAttainmentTarget(n) ? attainmentLabel(n, target) : n));
}

export interface CellJob {
  /** Built-in scenario name or file path. */
  readonly scenario: string;
  readonly policy: string;
  readonly seed: number;
  readonly loads: readonly number[];
  /** Stop the curve after the first load below this attainment. */
  readonly stopAtAttainment?: number;
  readonly timeshareGpu?: PooledGpuMode;
  /** The monitor every run uses (src/serving/monitor.ts); absent: the scenario's. */
  readonly monitor?: MonitorKind;
  /** Front doors every run uses (src/sim/doors.ts); absent: the scenario's. */
  readonly frontDoors?: number;
  readonly policyFile?: string;
}

const loadedCache = new Map<string, LoadedScenario>();
let registry: PolicyRegistry | null = null;

/**
 * The scenario as a cell runs it: loaded once per process, with the time-shared GPU model, the monitor and the
 * front doors overridden when asked.
 */
export function cellScenario(
  job: Pick<CellJob, 'scenario' | 'timeshareGpu' | 'monitor' | 'frontDoors'>,
): LoadedScenario {
  const loaded = timeshareScenario(job);
  const scenario = {
    ...loaded.scenario,
    ...(job.monitor ? { monitor: job.monitor } : {}),
    ...(job.frontDoors ? { frontDoors: job.frontDoors } : {}),
  };
  return job.monitor || job.frontDoors ? { ...loaded, scenario } : loaded;
}

function timeshareScenario(job: Pick<CellJob, 'scenario' | 'timeshareGpu'>): LoadedScenario {
  let loaded = loadedCache.get(job.scenario);
  if (!loaded) {
    loaded = loadScenario(job.scenario);
    loadedCache.set(job.scenario, loaded);
  }
  // The run's mode replaces the scenario's, on every GPU entry too.
  const mode = job.timeshareGpu;
  return mode
    ? {
        ...loaded,
        scenario: {
          ...loaded.scenario,
          timeshareGpu: mode,
          gpus: loaded.scenario.gpus.map((g) => ({ ...g, timeshareGpu: mode })),
        },
      }
    : loaded;
}

/**
 * Runs one cell. A policy that cannot run on the scenario (`supports`: e.g. inss-paper
 * without a trained policy for it, or the oracle on an instance too large) gives a cell marked not
 * runnable, with the reason (the suite only gets here with --skip-unsupported); any other error propagates.
 */
export function runCell(job: CellJob): SuiteCell {
  registry ??= benchRegistry();
  const loaded = cellScenario(job);
  const s = loaded.scenario;
  const factory: PolicyFactory = registry.get(job.policy);
  const options = policyOptionsFor(inssPolicyData(s.name, job.policyFile), s.attainmentTarget);
  const ctx = { scenario: s, profiles: loaded.profiles, traces: loaded.traces, policyOptions: options };
  const base = { scenario: s.name, policy: job.policy, seed: job.seed };
  const cluster = scenarioCluster(s, loaded.profiles);
  const reason = factory.supports(cluster, { seed: job.seed, ...options(job.policy) });
  if (reason !== null) return { ...base, runnable: false, reason, curve: [], wallMs: 0 };
  const note = factory.create(cluster, { seed: job.seed, ...options(job.policy) }).note;
  const t0 = performance.now();
  const curve = policyCurve(ctx, factory, job.loads, job.seed, job.stopAtAttainment);
  return { ...base, runnable: true, ...(note !== undefined ? { note } : {}), curve, wallMs: performance.now() - t0 };
}

/** One policy's run of a single-scenario `inss bench` (in this process or a worker thread). */
export interface PolicyJob {
  readonly kind: 'policy';
  /** Built-in scenario name or file path. */
  readonly scenario: string;
  readonly policy: string;
  readonly timeshareGpu?: PooledGpuMode;
  readonly monitor?: MonitorKind;
  readonly frontDoors?: number;
  readonly policyFile?: string;
  readonly transport?: TransportModel;
}

/** Runs one policy on the scenario at its own seed, its decisions timed by this thread's clock. */
export function runPolicyJob(job: PolicyJob): PolicyResult {
  registry ??= benchRegistry();
  const loaded = cellScenario(job);
  const options = policyOptionsFor(
    inssPolicyData(loaded.scenario.name, job.policyFile),
    loaded.scenario.attainmentTarget,
  );
  const ctx = {
    scenario: loaded.scenario,
    profiles: loaded.profiles,
    traces: loaded.traces,
    clock: () => performance.now(),
    policyOptions: options,
    ...(job.transport ? { transport: job.transport } : {}),
  };
  return runPolicy(ctx, registry.get(job.policy));
}

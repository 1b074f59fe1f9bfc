// Turns a validated scenario into what the simulator needs. Pure: profiles and trace files come in
// already read (the CLI reads them).
import { servedCost } from '../model/costDistribution.js';
import { DEFAULT_ATTAINMENT_TARGET } from '../policy/attainment.js';
import { resolveQueuePolicy } from '../serving/queuePolicy.js';
import { servingSettings } from '../serving/settings.js';
import { buildCluster } from '../policy/cluster.js';
import type { ClusterInfo, ClusterPipeline } from '../policy/types.js';
import type { Profile } from '../profile/schema.js';
import type { PooledGpuMode } from '../model/pooledGpu.js';
import { DEFAULT_SIM_SETTINGS, type SimSettings } from '../sim/simulator.js';
import { type ArrivalStream, rateFunction, RenewalStream, TraceStream } from '../workload/arrivals.js';
import { mixSeed, Rng } from '../workload/random.js';
import type { Scenario } from './schema.js';

/** Expected problems with a scenario that only show once profiles are known. */
export class ScenarioError extends Error {
  override readonly name = 'ScenarioError';
}

/**
 * The served models with their input-dependent cost, where they declare one: planned against the
 * quantile at the scenario's attainment target with `costBatching: tail` (Orloj's rule). A pipeline's step
 * model has its step's even budget as its SLO (its own `sloMs` is unused): what a policy that knows nothing of
 * pipelines plans it with, and what the twin budgets its tasks with until a plan splits the SLO otherwise.
 */
function servedModels(s: Scenario) {
  const quantile = s.attainmentTarget ?? DEFAULT_ATTAINMENT_TARGET;
  const stepSlo = new Map<string, number>();
  for (const p of s.pipelines) for (const st of p.steps) stepSlo.set(st.model, p.sloMs / p.steps.length);
  return s.models.map(({ cost, ...m }) => {
    const served = { ...m, sloMs: stepSlo.get(m.name) ?? m.sloMs };
    return cost ? { ...served, cost: servedCost(cost.classes, s.costBatching, quantile) } : served;
  });
}

/** The scenario's pipelines with their step models' indices (the schema has checked that each step names one). */
export function scenarioPipelines(s: Scenario): ClusterPipeline[] {
  return s.pipelines.map((p) => ({
    name: p.name,
    sloMs: p.sloMs,
    steps: p.steps,
    stepModels: p.steps.map((st) => s.models.findIndex((m) => m.name === st.model)),
  }));
}

/**
 * `cluster` with `pipelines` over its served models, their steps found by name (the live scheduler's cluster, whose
 * models are in its own order); a pipeline with a step the cluster does not serve is left out.
 */
export function withPipelinesByName(cluster: ClusterInfo, pipelines: Scenario['pipelines']): ClusterInfo {
  const found: ClusterPipeline[] = [];
  for (const p of pipelines) {
    const stepModels = p.steps.map((st) => cluster.models.findIndex((m) => m.name === st.model));
    if (stepModels.every((m) => m >= 0)) found.push({ name: p.name, sloMs: p.sloMs, steps: p.steps, stepModels });
  }
  return found.length === 0 ? cluster : { ...cluster, pipelines: found };
}

/** `cluster` with the scenario's pipelines and tier sharing, where it has them (the same object otherwise). */
function withPipelines(s: Scenario, cluster: ClusterInfo): ClusterInfo {
  const shared = s.shareTiers === true ? { ...cluster, shareTiers: true } : cluster;
  if (s.pipelines.length === 0) return shared;
  return { ...shared, pipelines: scenarioPipelines(s) };
}

/** The GPUs in order: each entry of `gpus` expanded `count` times. */
export function scenarioCluster(s: Scenario, profiles: ReadonlyMap<string, Profile>): ClusterInfo {
  const gpuProfiles: Profile[] = [];
  const pooled: PooledGpuMode[] = [];
  s.gpus.forEach((g, i) => {
    const p = profiles.get(g.profile);
    if (!p) throw new ScenarioError(`gpus[${i}].profile: unknown profile '${g.profile}'`);
    for (let k = 0; k < g.count; k++) {
      gpuProfiles.push(p);
      pooled.push(g.timeshareGpu ?? s.timeshareGpu);
    }
  });
  s.models.forEach((m, i) => {
    const what = m.profileModel ?? m.name;
    if (!gpuProfiles.some((p) => p.models[what]))
      throw new ScenarioError(
        `models[${i}].${m.profileModel === undefined ? 'name' : 'profileModel'}: ` +
          `no GPU profile of this scenario has model '${what}'`,
      );
  });
  return withPipelines(s, buildCluster(gpuProfiles, servedModels(s), pooled));
}

/** The served models marked `unprofiled`, by name. */
export function unprofiledModels(s: Scenario): string[] {
  return s.models.filter((m) => m.unprofiled).map((m) => m.name);
}

/**
 * The profiles less the models the scenario marks `unprofiled`: what the planner and the serving side
 * know, in the simulator and live alike (the simulator's ground truth keeps the true ones).
 */
export function plannerProfiles(s: Scenario, profiles: ReadonlyMap<string, Profile>): Map<string, Profile> {
  const hidden = new Set(s.models.filter((m) => m.unprofiled).map((m) => m.profileModel ?? m.name));
  const out = new Map<string, Profile>();
  for (const [id, p] of profiles) {
    // A profile left with no model keeps its GPU: no served model has a profile there.
    out.set(
      id,
      hidden.size === 0
        ? p
        : { ...p, models: Object.fromEntries(Object.entries(p.models).filter(([n]) => !hidden.has(n))) },
    );
  }
  return out;
}

/**
 * The cluster as the planner knows it: `scenarioCluster` with the profile models of the `unprofiled` served
 * models taken out of every GPU profile, so their `profileIndex` is -1 (the ground truth times them with
 * `scenarioCluster`'s). The same object as `scenarioCluster` when no model is unprofiled.
 */
export function plannerCluster(s: Scenario, profiles: ReadonlyMap<string, Profile>): ClusterInfo {
  if (!s.models.some((m) => m.unprofiled)) return scenarioCluster(s, profiles);
  const stripped = plannerProfiles(s, profiles);
  const gpuProfiles: Profile[] = [];
  const pooled: PooledGpuMode[] = [];
  s.gpus.forEach((g, i) => {
    const p = stripped.get(g.profile);
    if (!p) throw new ScenarioError(`gpus[${i}].profile: unknown profile '${g.profile}'`);
    for (let k = 0; k < g.count; k++) {
      gpuProfiles.push(p);
      pooled.push(g.timeshareGpu ?? s.timeshareGpu);
    }
  });
  return withPipelines(s, buildCluster(gpuProfiles, servedModels(s), pooled));
}

/** Arrival streams for one run; `loadScale` multiplies every rate; `runSeed` varies the draw. */
export function scenarioStreams(
  s: Scenario,
  traces: ReadonlyMap<string, readonly number[]>,
  loadScale = 1,
  runSeed = s.seed,
): ArrivalStream[] {
  return s.models.map((m, i) =>
    arrivalStream(m, `models[${i}]`, traces, loadScale, () => new Rng(mixSeed(runSeed, i, 0x61727269))),
  );
}

/**
 * One arrival stream per pipeline (scenarioPipelines' order), as `scenarioStreams`; each from its own seeded
 * stream, so the models' draws are the same with or without pipelines.
 */
export function pipelineStreams(
  s: Scenario,
  traces: ReadonlyMap<string, readonly number[]>,
  loadScale = 1,
  runSeed = s.seed,
): ArrivalStream[] {
  return s.pipelines.map((p, i) =>
    arrivalStream(p, `pipelines[${i}]`, traces, loadScale, () => new Rng(mixSeed(runSeed, i, 0x70697065))),
  );
}

/** A model's or a pipeline's arrivals: its trace replayed, or its renewal process drawn from `rng()`. */
function arrivalStream(
  e: Pick<Scenario['models'][number], 'rate' | 'arrival'>,
  where: string,
  traces: ReadonlyMap<string, readonly number[]>,
  loadScale: number,
  rng: () => Rng,
): ArrivalStream {
  if (e.rate.kind === 'trace') {
    const times = traces.get(e.rate.file);
    if (!times) throw new ScenarioError(`${where}.rate.file: trace '${e.rate.file}' not loaded`);
    return new TraceStream(
      times.map((t) => t * 1000),
      loadScale,
    );
  }
  const cv = e.arrival.process === 'gamma' ? e.arrival.cv : 1;
  return new RenewalStream(rateFunction(e.rate, loadScale), rng(), cv);
}

type RateSpecOf = Scenario['models'][number]['rate'];

function rateAtStart(rate: RateSpecOf, traces: ReadonlyMap<string, readonly number[]>, loadScale: number): number {
  if (rate.kind === 'trace') {
    const t = traces.get(rate.file) ?? [];
    const firstS = t.filter((x) => x < 1).length;
    return firstS * loadScale;
  }
  return rateFunction(rate, loadScale).rateAt(0);
}

/**
 * The rate each model has at time 0 (what an operator would configure before traffic arrives); a pipeline's step
 * model, its pipeline's (each pipeline request is one task of every step).
 */
export function initialRates(s: Scenario, traces: ReadonlyMap<string, readonly number[]>, loadScale = 1): number[] {
  const stepRate = new Map<string, number>();
  for (const p of s.pipelines) {
    const r = rateAtStart(p.rate, traces, loadScale);
    for (const st of p.steps) stepRate.set(st.model, r);
  }
  return s.models.map((m) => stepRate.get(m.name) ?? rateAtStart(m.rate, traces, loadScale));
}

export function scenarioSettings(s: Scenario): SimSettings {
  return {
    ...DEFAULT_SIM_SETTINGS,
    // Epoch, monitor window and dispatch slack: the same as `inss scheduler` reads (src/serving/settings.ts).
    ...servingSettings(s),
    durationMs: s.durationS * 1000,
    swapMs: s.swapS * 1000,
    groundTruth: { ...s.groundTruth, seed: s.seed },
    queuePolicies: s.models.map((m) => resolveQueuePolicy(m.queuePolicy)),
    samplesPerRequest: s.models.map((m) => m.samplesPerRequest),
    ...(s.frontDoors !== undefined ? { frontDoors: s.frontDoors } : {}),
  };
}

/** Parses a trace file: one arrival time in seconds per line (blank lines and # comments ignored). */
export function parseTrace(text: string, where: string): number[] {
  const out: number[] = [];
  text.split('\n').forEach((line, i) => {
    const t = line.replace(/#.*/, '').trim();
    if (t === '') return;
    const v = Number(t);
    if (!Number.isFinite(v) || v < 0)
      throw new ScenarioError(`${where}:${i + 1}: not a non-negative number of seconds: '${t}'`);
    out.push(v);
  });
  return out;
}

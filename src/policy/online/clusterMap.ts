// The clusters the online-profiling decorator (policy.ts) works with, and the index mapping between
// them. Pure.
// - The known cluster: the cluster it was given, its GPUs' profiles with the fitted models added
//   (`withProfiles`); a model is profiled on a GPU when that GPU's profile has it (profileIndex >= 0).
// - The inner cluster: the known cluster restricted to the models profiled on some GPU, renumbered
//   0..n-1 (`innerCluster`): what the wrapped policy is created on. `map[i]` is inner model i's index in the
//   known (outer) cluster.
import { buildCluster } from '../cluster.js';
import type { ModelProfile, Profile } from '../../profile/schema.js';
import type {
  BatchRecord,
  ClusterInfo,
  Deployment,
  GpuMode,
  LearnedProfiles,
  Observation,
  Placement,
  ServedModel,
} from '../types.js';
import { predictOnGpu } from '../util.js';

/** The name a served model has in a GPU profile. */
export function profileName(m: ServedModel): string {
  return m.profileModel ?? m.name;
}

/** The cluster's GPU profiles by id (GPUs of one type share one). */
export function profilesOf(cluster: ClusterInfo): Map<string, Profile> {
  return new Map(cluster.gpus.map((g) => [g.profileId, g.model.profile]));
}

/**
 * The profiles with the models fitted online added (`learned`: per GPU profile id, model name -> its fitted
 * profile): a model a profile has already keeps its numbers unless `replace` (a fit restored at the start, which
 * the fit now in force supersedes). Profiles left as they were are the same objects (their compiled latency models
 * are reused).
 */
export function withLearnedProfiles(
  profiles: ReadonlyMap<string, Profile>,
  learned: LearnedProfiles,
  replace = false,
): Map<string, Profile> {
  const out = new Map<string, Profile>();
  for (const [id, p] of profiles) {
    const add = Object.entries(learned[id] ?? {}).filter(([n, m]) => (replace ? p.models[n] !== m : !p.models[n]));
    out.set(id, add.length === 0 ? p : { ...p, models: { ...p.models, ...Object.fromEntries(add) } });
  }
  return out;
}

/**
 * The cluster the serving side predicts with once a policy has profiled models while serving them
 * (`Deployment.learned`): `cluster` with the learned profiles in its GPUs' (`withLearnedProfiles`; they replace a fit
 * the cluster was started with: the policy learns only models it was given no measured profile for), everything else
 * as it was. The simulator and the scheduler's worker set both call it (`LearnedCluster`): one rule.
 */
export function withLearned(cluster: ClusterInfo, learned: LearnedProfiles): ClusterInfo {
  const profiles = profilesOf(cluster);
  const merged = withLearnedProfiles(profiles, learned, true);
  if ([...merged].every(([id, p]) => profiles.get(id) === p)) return cluster;
  return { ...cluster, gpus: withProfiles(cluster, merged).gpus };
}

/**
 * The cluster a serving side's dispatch rule predicts with: the one it was given, with the profiles its policy learned
 * while serving added (`Deployment.learned`, `withLearned`). The simulator and the scheduler's worker set each keep
 * one, so both predict a model profiled online alike from the deployment that carries its profile on.
 */
export class LearnedCluster {
  private given: ClusterInfo | null = null;
  /** The learned profiles in force (undefined: none yet). */
  learned: LearnedProfiles | undefined;
  cluster: ClusterInfo | null = null;

  /** A new given cluster (the agents' GPUs changed): the profiles learned so far join it too. */
  setGiven(given: ClusterInfo | null): void {
    this.given = given;
    this.cluster = given && this.learned ? withLearned(given, this.learned) : given;
  }

  /** A deployment's learned profiles; true when they changed the cluster (the caller redoes its predictions). */
  learn(learned: LearnedProfiles | undefined): boolean {
    if (learned === undefined || learned === this.learned) return false;
    this.learned = learned;
    this.setGiven(this.given);
    return true;
  }
}

/** `Deployment.learned` of the profiles fitted online (`fitted`: served model name, its GPU profile id, profile). */
export function learnedOf(
  cluster: ClusterInfo,
  fitted: Iterable<{ readonly model: string; readonly profileId: string; readonly profile: ModelProfile | null }>,
): LearnedProfiles | null {
  const out: Record<string, Record<string, ModelProfile>> = {};
  for (const f of fitted) {
    const m = cluster.models.find((x) => x.name === f.model);
    if (!f.profile || !m) continue;
    (out[f.profileId] ??= {})[profileName(m)] = f.profile;
  }
  return Object.keys(out).length > 0 ? out : null;
}

/** The same cluster with each GPU's profile replaced by `profiles`' (by id): the latency models recompiled. */
export function withProfiles(cluster: ClusterInfo, profiles: ReadonlyMap<string, Profile>): ClusterInfo {
  const built = buildCluster(
    cluster.gpus.map((g) => profiles.get(g.profileId) ?? g.model.profile),
    // A model keeps its input-dependent cost: the inner policy plans against it as the simulator does.
    cluster.models.map((m) => ({
      name: m.name,
      sloMs: m.sloMs,
      profileModel: m.profileModel,
      ...(m.cost ? { cost: m.cost } : {}),
    })),
    cluster.gpus.map((g) => g.pooled),
  );
  // Its pipelines and whether tiers share workers stay the cluster's.
  return {
    ...built,
    ...(cluster.pipelines ? { pipelines: cluster.pipelines } : {}),
    ...(cluster.shareTiers ? { shareTiers: true } : {}),
  };
}

/** Served models no GPU of the cluster has a profile for. */
export function unprofiledIndices(cluster: ClusterInfo): number[] {
  return cluster.models
    .filter((m) => cluster.gpus.every((g) => (g.profileIndex[m.index] ?? -1) < 0))
    .map((m) => m.index);
}

export interface InnerView {
  readonly cluster: ClusterInfo;
  /** Inner model index -> outer model index. */
  readonly map: readonly number[];
  /** Outer model index -> inner model index, or -1. */
  readonly back: readonly number[];
  /** Inner GPU index -> outer GPU index. */
  readonly gpus: readonly number[];
  /** Outer GPU index -> inner GPU index, or -1 (a GPU kept for unprofiled models). */
  readonly gpuBack: readonly number[];
}

/**
 * The known cluster restricted to the models some GPU has a profile for, and to the GPUs `gpus` (outer
 * indices, ascending; the others are kept for unprofiled models; every GPU by default); null when there is no
 * such model.
 */
export function innerCluster(
  known: ClusterInfo,
  gpus: readonly number[] = known.gpus.map((g) => g.index),
): InnerView | null {
  const unprofiled = new Set(unprofiledIndices(known));
  const map = known.models.filter((m) => !unprofiled.has(m.index)).map((m) => m.index);
  if (map.length === 0) return null;
  const back = known.models.map((m) => map.indexOf(m.index));
  const gpuBack = known.gpus.map((g) => gpus.indexOf(g.index));
  const models: ServedModel[] = map.map((o, index) => ({ ...known.models[o]!, index }));
  const inner = gpus.map((o, index) => {
    const g = known.gpus[o]!;
    return { ...g, index, profileIndex: map.map((m) => g.profileIndex[m]!) };
  });
  // The pipelines whose every step is profiled, their steps renumbered; tiers share workers as in the known cluster.
  const pipelines = (known.pipelines ?? [])
    .filter((p) => p.stepModels.every((m) => back[m]! >= 0))
    .map((p) => ({ ...p, stepModels: p.stepModels.map((m) => back[m]!) }));
  const cluster: ClusterInfo = {
    gpus: inner,
    models,
    ...(pipelines.length > 0 ? { pipelines } : {}),
    ...(known.shareTiers ? { shareTiers: true } : {}),
  };
  return { cluster, map, back, gpus, gpuBack };
}

/**
 * The GPUs an inner policy keeps when `keep` are held back for unprofiled models: all but the `keep` fastest
 * by the median profiled model's time alone at batch 8 (`typicalMs`, one per GPU index; the fastest carries a
 * model whose rate one GPU barely holds, before its fit can place it on more), ties to the last GPUs.
 */
export function innerGpus(typicalMs: readonly number[], keep: number): number[] {
  const order = typicalMs.map((ms, i) => ({ ms: Number.isFinite(ms) ? ms : Infinity, i }));
  order.sort((a, b) => a.ms - b.ms || b.i - a.i);
  const kept = new Set(order.slice(0, keep).map((o) => o.i));
  return typicalMs.map((_, i) => i).filter((i) => !kept.has(i));
}

function pick<T>(xs: readonly T[] | undefined, map: readonly number[]): T[] | undefined {
  return xs === undefined ? undefined : map.map((o) => xs[o]!);
}

/** A deployment of the outer cluster as the inner policy sees it: its models' placements on its GPUs, renumbered. */
export function toInnerDeployment(d: Deployment, v: InnerView): Deployment {
  const placements = d.placements
    .filter((p) => (v.back[p.model] ?? -1) >= 0 && (v.gpuBack[p.gpu] ?? -1) >= 0)
    .map((p) => ({ ...p, model: v.back[p.model]!, gpu: v.gpuBack[p.gpu]! }));
  return d.gpuModes ? { placements, gpuModes: v.gpus.map((o) => d.gpuModes![o]!) } : { placements };
}

/** The inner policy's deployment in outer model and GPU indices (a kept GPU's mode: `mps`, nothing on it yet). */
export function toOuterDeployment(d: Deployment, v: InnerView): Deployment {
  const placements = d.placements.map((p) => ({ ...p, model: v.map[p.model]!, gpu: v.gpus[p.gpu]! }));
  // Which model's lane serves each (SLO tiers sharing workers): an outer model not the inner policy's, its own.
  const sharedBy = d.sharedBy && v.back.map((i, o) => (i >= 0 ? v.map[d.sharedBy![i]!]! : o));
  return {
    placements,
    ...(d.gpuModes ? { gpuModes: v.gpuBack.map((i): GpuMode => (i >= 0 ? d.gpuModes![i]! : 'mps')) } : {}),
    ...(d.pipelineBudgetsMs ? { pipelineBudgetsMs: d.pipelineBudgetsMs } : {}),
    ...(sharedBy ? { sharedBy } : {}),
  };
}

/** The observation renumbered for the inner policy; `current`: the deployment it is told is in force. */
export function toInnerObservation(obs: Observation, v: InnerView, current: Deployment): Observation {
  const m = v.map;
  const e = obs.lastEpoch;
  const batches = e.batches
    ?.filter((b) => (v.back[b.model] ?? -1) >= 0 && (v.gpuBack[b.gpu] ?? -1) >= 0)
    .map((b): BatchRecord => ({
      ...b,
      model: v.back[b.model]!,
      gpu: v.gpuBack[b.gpu]!,
      beside: b.beside.filter((x) => (v.back[x.model] ?? -1) >= 0).map((x) => ({ ...x, model: v.back[x.model]! })),
    }));
  const cv2 = pick(obs.arrivalCv2, m);
  const mean = pick(obs.meanRatePerS, m);
  return {
    nowMs: obs.nowMs,
    ratePerS: pick(obs.ratePerS, m)!,
    ...(mean ? { meanRatePerS: mean } : {}),
    ...(cv2 ? { arrivalCv2: cv2 } : {}),
    queued: pick(obs.queued, m)!,
    lastEpoch: {
      served: pick(e.served, m)!,
      violated: pick(e.violated, m)!,
      dropped: pick(e.dropped, m)!,
      meanExecMs: pick(e.meanExecMs, m)!,
      meanLatencyMs: pick(e.meanLatencyMs, m)!,
      ...(batches ? { batches } : {}),
    },
    current,
  };
}

/** The cluster with the named served models' profiles taken out of every GPU profile. */
export function hideModels(cluster: ClusterInfo, names: readonly string[]): ClusterInfo {
  const hidden = new Set(cluster.models.filter((m) => names.includes(m.name)).map(profileName));
  if (hidden.size === 0) return cluster;
  const profiles = new Map<string, Profile>();
  for (const [id, p] of profilesOf(cluster)) {
    profiles.set(id, { ...p, models: Object.fromEntries(Object.entries(p.models).filter(([n]) => !hidden.has(n))) });
  }
  return withProfiles(cluster, profiles);
}

/** The GPU whose placements are predicted busy the least of the time at the observed rates. */
export function leastLoadedGpu(
  known: ClusterInfo,
  obs: Observation,
  placements: readonly Placement[],
  modes: readonly GpuMode[],
): number {
  let best = 0;
  let bestLoad = Infinity;
  for (const gpu of known.gpus) {
    let load = 0;
    for (const p of placements) {
      if (p.gpu !== gpu.index) continue;
      const rate = obs.ratePerS[p.model] ?? 0;
      const profiled = (gpu.profileIndex[p.model] ?? -1) >= 0;
      const pct = modes[gpu.index] === 'timeshare' ? 100 : p.pct;
      const ms = profiled ? predictOnGpu(gpu, [{ ...p, pct }])[0]! : obs.lastEpoch.meanExecMs[p.model]!;
      load += Number.isFinite(ms) ? (rate * ms) / p.batch / 1000 : 1;
    }
    if (load < bestLoad) {
      bestLoad = load;
      best = gpu.index;
    }
  }
  return best;
}

// Serving models that have no latency profile from their first request, and learning their profiles
// while they serve: a decorator around any policy (docs/online-profiling.md). Pure.
//
// The wrapped (inner) policy is created on the models some GPU has a profile for (clusterMap.ts) and
// decides for them as it always does. Every other model gets a conservative placement of the decorator's
// own, its batch from AIMD (aimd.ts), a timeout of 0 (a free worker takes what is queued, up to the batch,
// as Clipper's does: the dispatch rule has no prediction for it):
// - a GPU of its own, at 100%, when the inner deployment leaves one unused (the one it had, if still free), every
//   other batch padded to AIMD's size (Placement.padBatch) so that its fit sees sizes the load does not fill;
// - else time-shared: the GPU it had, or the least loaded one (predicted busy fraction of its placements),
//   switched to timeshare mode (src/model/pooledGpu.ts), its other placements kept.
// Each epoch's batch records (Observation.lastEpoch.batches) feed AIMD and the model's fit on that GPU type
// (fit.ts). When a fit passes its held-out test the fitted ModelProfile joins that GPU type's profile, the
// latency models are recompiled and the inner policy is created anew on the larger cluster (if its factory
// refuses it, the model keeps its conservative placement and the note says why). A promoted profile is
// refitted with its own shapes (prior.ts, `ownShapes`) and refreshed (`promote`).
//
// Each deployment carries the fitted profiles (Deployment.learned), which the serving side predicts with from then
// on (its dispatch rule, clusterMap.ts `withLearned`), as for a model profiled from the start.
import { toLwrPoints } from '../../model/lwr.js';
import { LatencyModel } from '../../model/predictor.js';
import type { Profile } from '../../profile/schema.js';
import type {
  BatchRecord,
  ClusterInfo,
  Deployment,
  GpuMode,
  LearnedProfiles,
  Observation,
  Placement,
  Policy,
  PolicyFactory,
  PolicyOptions,
} from '../types.js';
import { type AimdBatch, aimdEpoch, aimdTargetMs, type AimdSettings, DEFAULT_AIMD } from './aimd.js';
import {
  hideModels,
  innerCluster,
  innerGpus,
  learnedOf,
  leastLoadedGpu,
  type InnerView,
  profileName,
  profilesOf,
  toInnerDeployment,
  toInnerObservation,
  toOuterDeployment,
  unprofiledIndices,
  withProfiles,
} from './clusterMap.js';
import { DEFAULT_FIT, type FitSettings, fitModel, heldOutCheck, takeRecord } from './fit.js';
import { gpuPrior, ownShapes, type Prior, transferProfile } from './prior.js';
import { climbing, DEFAULT_PROBE, probing, type ProbeSettings } from './probe.js';
import { DEFAULT_START, flooredBatch, type StartBatchSettings } from './startBatch.js';
import { type LearnerState, learnerToJson, type OnlineStatePort, restoreLearner } from './state.js';

export interface OnlineProfilingOptions {
  /** Served models to treat as unprofiled even where a GPU profile has them (their profile is hidden). */
  readonly unprofiled?: readonly string[];
  /** Where learner state is restored from at creation and saved after each decision (scheduler/store.ts). */
  readonly store?: OnlineStatePort;
  readonly fit?: FitSettings;
  readonly aimd?: AimdSettings;
  /** Pad every other batch of a model alone on its GPU to AIMD's size (Placement.padBatch; default true). */
  readonly padAlone?: boolean;
  /** The floor under AIMD's batch from the model's arrival rate (startBatch.ts); null: AIMD alone. */
  readonly start?: StartBatchSettings | null;
  /** The share probe before promotion (probe.ts); null: none. */
  readonly probe?: ProbeSettings | null;
  /** Told when a model's fit passes its held-out test and joins its GPU type's profile. */
  readonly onPromote?: (state: Readonly<LearnerState>) => void;
}

/** Wraps a policy factory so that models without a profile are served and profiled online (file head). */
export function withOnlineProfiling(factory: PolicyFactory, opts: OnlineProfilingOptions = {}): PolicyFactory {
  return {
    name: factory.name,
    description: `${factory.description}; models without a profile served with AIMD batching and profiled online`,
    supports(cluster, options) {
      // The cluster the inner policy gets at least: every GPU (innerView keeps GPUs back only where it may).
      const v = innerCluster(hideModels(cluster, opts.unprofiled ?? []));
      return v ? factory.supports(v.cluster, options) : null;
    },
    create(cluster, options) {
      return new OnlineProfilingPolicy(factory, cluster, options, opts);
    },
  };
}

const key = (model: string, profileId: string) => `${model}\u0000${profileId}`;

interface Inner {
  readonly view: InnerView;
  readonly policy: Policy;
  last: Deployment | null;
}

export class OnlineProfilingPolicy implements Policy {
  readonly name: string;
  /** The cluster as given, the hidden models' profiles taken out: what the serving side predicts with. */
  private readonly base: ClusterInfo;
  private known: ClusterInfo;
  private readonly profiles: Map<string, Profile>;
  private readonly priors = new Map<string, Prior>();
  private readonly learners = new Map<string, LearnerState>();
  private inner: Inner | null = null;
  private readonly notes: string[] = [];
  /** Per outer model, the GPU of its conservative placement; the models placed alone on theirs. */
  private readonly assigned = new Map<number, number>();
  private readonly alone = new Set<number>();
  private readonly fitSettings: FitSettings;
  private readonly aimd: AimdSettings;
  /** The learners that ran a batch over AIMD's target in the epoch just ingested. */
  private readonly overTarget = new Set<LearnerState>();
  /** The fitted profiles for the serving side's predictions (`Deployment.learned`); a new object at each change. */
  private learned: LearnedProfiles | null = null;

  constructor(
    private readonly factory: PolicyFactory,
    cluster: ClusterInfo,
    private readonly options: PolicyOptions,
    private readonly opts: OnlineProfilingOptions,
  ) {
    this.name = factory.name;
    this.fitSettings = opts.fit ?? DEFAULT_FIT;
    this.aimd = opts.aimd ?? DEFAULT_AIMD;
    this.base = hideModels(cluster, opts.unprofiled ?? []);
    this.profiles = profilesOf(this.base);
    for (const m of unprofiledIndices(this.base)) {
      const name = this.base.models[m]!.name;
      for (const profileId of this.profiles.keys())
        this.learners.set(key(name, profileId), restoreLearner(this.opts.store, name, profileId, this.notes));
    }
    for (const l of this.learners.values()) if (l.profile) this.addToProfile(l);
    this.known = withProfiles(this.base, this.profiles);
    this.learned = learnedOf(this.base, this.learners.values());
    this.remakeInner();
  }

  get note(): string {
    const parts = [...this.learners.values()].map((l) =>
      l.profile
        ? l.transferredFrom
          ? `${l.model} on ${l.profileId}: profile carried over from ${l.transferredFrom}`
          : `${l.model} on ${l.profileId}: profiled online after ${l.promotedAfter} batches`
        : `${l.model} on ${l.profileId}: unprofiled, AIMD batch ${l.batch}, ${l.fit.seen} batches, held-out error ` +
          `${Number.isNaN(l.meanRelErr) ? 'n/a' : `${(100 * l.meanRelErr).toFixed(1)}%`} on ${l.heldOut}`,
    );
    const all = [this.inner?.policy.note, ...parts, ...this.notes].filter((x): x is string => !!x);
    return all.length > 0 ? all.join('; ') : 'every model profiled';
  }

  /** Each model's learner state (a copy's worth of reading: the benchmark and tests). */
  states(): readonly Readonly<LearnerState>[] {
    return [...this.learners.values()];
  }

  /** The cluster with the fitted profiles added. */
  knownCluster(): ClusterInfo {
    return this.known;
  }

  decide(obs: Observation): Deployment {
    const dirty = this.ingest(obs.lastEpoch.batches ?? []);
    if (this.promote(dirty, obs)) {
      this.known = withProfiles(this.base, this.profiles);
      this.learned = learnedOf(this.base, this.learners.values());
      this.remakeInner();
    }
    let placements: Placement[] = [];
    let modes: GpuMode[] = this.base.gpus.map(() => 'mps');
    let rest: Pick<Deployment, 'pipelineBudgetsMs' | 'sharedBy'> = {};
    if (this.inner) {
      const v = this.inner.view;
      const current = this.inner.last ?? toInnerDeployment(obs.current, v);
      const d = this.inner.policy.decide(toInnerObservation(obs, v, current));
      this.inner.last = d;
      const od = toOuterDeployment(d, v);
      placements = [...od.placements];
      if (od.gpuModes) modes = [...od.gpuModes];
      if (od.pipelineBudgetsMs) rest = { pipelineBudgetsMs: od.pipelineBudgetsMs };
      if (od.sharedBy) rest = { ...rest, sharedBy: od.sharedBy };
    }
    this.placeConservatively(obs, placements, modes);
    if (this.opts.store) for (const l of dirty) this.opts.store.save(l.model, l.profileId, learnerToJson(l));
    const timeshare = modes.includes('timeshare') ? { gpuModes: modes } : {};
    return { placements, ...timeshare, ...rest, ...(this.learned ? { learned: this.learned } : {}) };
  }

  private prior(profileId: string): Prior {
    let p = this.priors.get(profileId);
    if (!p) {
      p = gpuPrior(this.base.gpus.find((g) => g.profileId === profileId)!.model);
      this.priors.set(profileId, p);
    }
    return p;
  }

  /** The prior a learner's fit extrapolates with: the GPU type's, or once profiled its own shapes (`ownShapes`). */
  private refitPrior(l: LearnerState, p: Profile): Prior {
    const m = this.base.models.find((x) => x.name === l.model);
    const prior = this.prior(l.profileId);
    return l.profile && m ? ownShapes(prior, LatencyModel.compile(p), profileName(m)) : prior;
  }

  /** Feeds each record to its model's AIMD and fit on its GPU type; returns the learners that took one. */
  private ingest(records: readonly BatchRecord[]): Set<LearnerState> {
    const dirty = new Set<LearnerState>();
    const epochBatches = new Map<LearnerState, AimdBatch[]>();
    this.overTarget.clear();
    for (const r of records) {
      const gpu = this.known.gpus[r.gpu];
      const model = this.known.models[r.model];
      if (!gpu || !model) continue;
      const l = this.learners.get(key(model.name, gpu.profileId));
      if (!l) continue;
      if (!this.inner || (this.inner.view.back[r.model] ?? -1) < 0) {
        const list = epochBatches.get(l) ?? [];
        list.push({ ran: r.batch, execMs: r.execMs });
        epochBatches.set(l, list);
      }
      dirty.add(l);
      takeRecord(l.fit, r, gpu, this.fitSettings);
    }
    for (const [l, list] of epochBatches) {
      const target = aimdTargetMs(this.known.models.find((m) => m.name === l.model)!.sloMs);
      if (list.some((b) => b.execMs > target)) this.overTarget.add(l);
      l.batch = aimdEpoch(l.batch, list, target, this.aimd);
    }
    return dirty;
  }

  /**
   * Refits the learners that took batches; true when a profile was added or refreshed. A promoted profile is
   * refitted every `refreshEvery` usable batches and replaced when the refit identifies alpha_cache for the
   * first time, or when the profile in use misses its held-out batches by more than the threshold (the model
   * now runs where it was not seen: other shares, other batches) and the refit misses them by less.
   */
  private promote(dirty: ReadonlySet<LearnerState>, obs: Observation): boolean {
    let changed = false;
    const s = this.fitSettings;
    for (const l of dirty) {
      if (l.profile && l.fit.seen - l.refreshedAt < s.refreshEvery) continue;
      const p = this.profiles.get(l.profileId)!;
      const fit = fitModel(l.fit, this.refitPrior(l, p), p.gpu, p.lwr, s);
      if (!fit) continue;
      const next = heldOutCheck(l.fit, fit, p.gpu, p.lwr, s);
      if (!l.profile) {
        l.heldOut = next.heldOut;
        l.meanRelErr = next.meanRelErr;
        const m = this.known.models.find((x) => x.name === l.model)!;
        const probe = this.opts.probe === undefined ? DEFAULT_PROBE : this.opts.probe;
        const rate = obs.ratePerS[m.index] ?? 0;
        const prior = this.prior(l.profileId);
        const alone = this.alone.has(m.index);
        const padded = alone && this.opts.padAlone !== false;
        const target = aimdTargetMs(m.sloMs);
        if (!next.pass || (padded && climbing(l.fit, l.batch, target, this.aimd.maxBatch))) continue;
        if (probing(l, alone, padded, rate, target, prior, probe)) continue;
        l.promotedAfter = l.fit.seen;
      } else {
        const inUse = { ...fit, profile: l.profile, points: toLwrPoints(l.profile.runSamples) };
        const now = heldOutCheck(l.fit, inUse, p.gpu, p.lwr, s);
        l.heldOut = now.heldOut;
        l.meanRelErr = now.meanRelErr;
        l.refreshedAt = l.fit.seen;
        const identifies = fit.alphaCacheFitted && !l.alphaCacheFitted;
        if (!identifies && !(now.meanRelErr > s.maxRelErr && next.meanRelErr < now.meanRelErr)) continue;
        l.meanRelErr = next.meanRelErr;
      }
      l.profile = fit.profile;
      l.alphaCacheFitted = fit.alphaCacheFitted;
      l.refreshedAt = l.fit.seen;
      if (Number.isNaN(l.promotedAfter)) l.promotedAfter = l.fit.seen;
      l.transferredFrom = null;
      this.addToProfile(l);
      if (l.refreshedAt === l.promotedAfter) {
        this.opts.onPromote?.(l);
        this.transfer(l);
      }
      changed = true;
    }
    return changed;
  }

  /**
   * A model just profiled on one GPU type gets the fit carried over to the types where it has no profile yet
   * (prior.ts, `transferProfile`), so the inner policy may place it there too; its own batches there refit it
   * (`promote`'s refresh) when the carried-over profile misses them.
   */
  private transfer(from: LearnerState): void {
    const lm = (id: string) => this.base.gpus.find((g) => g.profileId === id)!.model;
    for (const l of this.learners.values()) {
      if (l.model !== from.model || l.profile || l.profileId === from.profileId) continue;
      const note = `carried over from ${from.profileId} by the ratio of the other models' running times`;
      const read = from.fit.memory.length > 0;
      const p = transferProfile(
        from.profile!,
        lm(from.profileId),
        lm(l.profileId),
        this.prior(l.profileId),
        note,
        read,
      );
      if (!p) continue;
      l.profile = p;
      l.transferredFrom = from.profileId;
      l.refreshedAt = l.fit.seen;
      this.addToProfile(l);
      this.opts.store?.save(l.model, l.profileId, learnerToJson(l));
    }
  }

  private addToProfile(l: LearnerState): void {
    const p = this.profiles.get(l.profileId);
    const m = this.base.models.find((x) => x.name === l.model);
    if (!p || !m || !l.profile) return;
    this.profiles.set(l.profileId, { ...p, models: { ...p.models, [profileName(m)]: l.profile } });
  }

  private remakeInner(): void {
    const v = this.innerView();
    if (!v) return;
    if (this.inner && v.map.length === this.inner.view.map.length && this.sameProfiles(v)) return;
    const reason = this.factory.supports(v.cluster, this.options);
    if (reason !== null) {
      if (!this.inner) throw new RangeError(`${this.factory.name}: ${reason}`);
      const newly = v.map.filter((o) => this.inner!.view.back[o]! < 0).map((o) => this.known.models[o]!.name);
      this.notes.push(
        `${newly.join(', ')} kept on AIMD placements: ${this.factory.name} refuses the larger cluster: ${reason}`,
      );
      return;
    }
    // A model just promoted: plan afresh, as for one profiled from the start, not from its AIMD placement.
    const last = this.inner !== null && v.map.length > this.inner.view.map.length ? { placements: [] } : null;
    this.inner = { view: v, policy: this.factory.create(v.cluster, this.options), last };
  }

  /**
   * The inner view: less the fastest GPUs while models are unprofiled, one each (`innerGpus`), so that their
   * batches run alone; every GPU where the factory refuses that cluster (the unprofiled models time-share).
   */
  private innerView(): InnerView | null {
    const n = this.known.gpus.length;
    const keep = Math.min(unprofiledIndices(this.known).length, n - 1);
    if (keep > 0) {
      const typical = this.known.gpus.map((g) => this.prior(g.profileId).typicalMs(8));
      const v = innerCluster(this.known, innerGpus(typical, keep));
      if (v && this.factory.supports(v.cluster, this.options) === null) return v;
    }
    return innerCluster(this.known);
  }

  /** The inner view's GPUs and latency models as the known cluster's (a refreshed profile needs a new policy). */
  private sameProfiles(v: InnerView): boolean {
    const { cluster, gpus } = this.inner!.view;
    return gpus.join() === v.gpus.join() && cluster.gpus.every((g, i) => g.model === v.cluster.gpus[i]!.model);
  }

  private placeConservatively(obs: Observation, placements: Placement[], modes: GpuMode[]): void {
    const back = this.inner?.view.back;
    const models = this.known.models.filter((m) => !back || (back[m.index] ?? -1) < 0);
    for (const m of models) {
      const used = new Set(placements.map((p) => p.gpu));
      const free = this.known.gpus.filter((g) => !used.has(g.index)).map((g) => g.index);
      const prev = this.assigned.get(m.index);
      const g =
        prev !== undefined && !used.has(prev)
          ? prev
          : free.length > 0
            ? free[0]!
            : (prev ?? leastLoadedGpu(this.known, obs, placements, modes));
      const alone = !used.has(g);
      if (!alone) modes[g] = 'timeshare';
      const l = this.learners.get(key(m.name, this.known.gpus[g]!.profileId));
      if (l) this.floorBatch(l, obs.ratePerS[m.index] ?? 0, m.sloMs);
      const pad = alone && this.opts.padAlone !== false ? { padBatch: true } : {};
      const pct = alone && l && l.probePct < 100 ? l.probePct : 100;
      placements.push({ model: m.index, gpu: g, pct, batch: l?.batch ?? 1, timeoutMs: 0, ...pad });
      if (alone) this.alone.add(m.index);
      else this.alone.delete(m.index);
      this.assigned.set(m.index, g);
    }
  }

  /** AIMD's batch held to the rate's floor (startBatch.ts, `flooredBatch`). */
  private floorBatch(l: LearnerState, ratePerS: number, sloMs: number): void {
    const s = this.opts.start === undefined ? DEFAULT_START : this.opts.start;
    if (s === null) return;
    const over = this.overTarget.has(l);
    const pct = l.probePct < 100 ? l.probePct : 100;
    l.batch = flooredBatch(l.batch, over, l.fit, this.prior(l.profileId), ratePerS, aimdTargetMs(sloMs), s, pct);
  }
}

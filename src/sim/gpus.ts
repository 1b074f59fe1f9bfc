// The simulated GPUs: the workers placed on them, each GPU's mode, the batches running, and the MPS
// share held over time. A batch takes the ground truth's time (groundTruth.ts) for the models running
// on its GPU when it starts; on a pooled (`timeshare`) GPU, the GPU's own mode says whether batches of
// different models overlap or run one at a time (src/model/pooledGpu.ts).
import { LearnedCluster } from '../policy/online/clusterMap.js';
import type { BesideBatch, ClusterInfo, GpuMode, LearnedProfiles } from '../policy/types.js';
import { pooledConcurrency } from '../model/pooledGpu.js';
import { refreshTimes, RunningBatches } from '../serving/dispatch.js';
import { runBatchSize } from '../serving/padding.js';
import { GroundTruth, type GroundTruthSettings, gpuTypeIndex, type ProfileModelIndex } from './groundTruth.js';
import type { SimTrace } from './types.js';
import type { SimStats } from './stats.js';
import { serves, type SimWorker, State } from './worker.js';

export class SimGpus {
  workers: SimWorker[] = [];
  modes: GpuMode[];
  /** Per timeshare GPU, the batches running on it now (what the dispatch rule predicts a pooled batch beside). */
  readonly running: RunningBatches[];
  /** The dispatch rule predicts a batch on a pooled overlap GPU beside the batches running there (`running`). */
  followRunning = false;
  /** Per GPU, the MPS share held integrated over time (% x ms; timeshare GPUs count 100 while busy). */
  readonly shareTime: Float64Array;
  /** How many batches may run at once on each GPU when pooled (its mode's rule). */
  private readonly pooledLimit: number[];
  private readonly truth: GroundTruth;
  private readonly gpuType: number[];
  private lastShareMs = 0;
  private readonly scratchModels: ProfileModelIndex[] = [];
  private readonly scratchBatches: number[] = [];
  private readonly scratchPcts: number[] = [];
  private readonly scratchOut: number[] = [];

  /** The cluster the dispatch rule predicts with: the planner's, with the profiles the policy learned added. */
  private readonly dispatch = new LearnedCluster();

  /**
   * `plannerCluster`: the planner's (the dispatch rule predicts with it, and with what a deployment says was learned);
   * `truthCluster`: every model with its true profile, which batches are timed and memory is counted with (the same
   * but for unprofiled models).
   */
  constructor(
    plannerCluster: ClusterInfo,
    private readonly truthCluster: ClusterInfo,
    truth: GroundTruthSettings,
    private readonly stats: SimStats,
    private readonly trace: SimTrace | undefined,
  ) {
    this.dispatch.setGiven(plannerCluster);
    const n = plannerCluster.gpus.length;
    this.modes = new Array<GpuMode>(n).fill('mps');
    this.running = plannerCluster.gpus.map(() => new RunningBatches());
    this.shareTime = new Float64Array(n);
    this.pooledLimit = plannerCluster.gpus.map((g) => pooledConcurrency(g.pooled));
    this.truth = new GroundTruth(truth);
    this.gpuType = plannerCluster.gpus.map((g) => gpuTypeIndex(g.profileId));
  }

  timeshared(g: number): boolean {
    return this.modes[g] === 'timeshare';
  }

  /** A pooled GPU that runs as many batches as its mode allows. */
  full(g: number): boolean {
    return this.timeshared(g) && this.running[g]!.size >= this.pooledLimit[g]!;
  }

  liveOn(g: number): SimWorker[] {
    return this.workers.filter((w) => w.gpu === g && w.state !== State.Stopped);
  }

  /**
   * A deployment's learned profiles (`Deployment.learned`): the dispatch rule predicts those models with them from
   * now on, as the scheduler's does (`LearnedCluster`). The caller redoes every GPU's predictions (the engine's
   * `apply` does at each deployment).
   */
  learn(learned: LearnedProfiles | undefined): void {
    this.dispatch.learn(learned);
  }

  private get cluster(): ClusterInfo {
    return this.dispatch.cluster!;
  }

  /** Recomputes every worker's predicted t_inf table on a GPU (its placements as the scheduler sees them). */
  refreshPredictions(g: number): void {
    // Workers that serve: a shadow still warming up runs no task batches and is not counted.
    const onGpu = this.liveOn(g).filter(serves);
    const gpu = this.cluster.gpus[g]!;
    const timeshared = this.timeshared(g);
    const running = this.followRunning ? this.running[g]! : null;
    onGpu.forEach((w, k) =>
      refreshTimes(gpu, onGpu, k, timeshared, running, w.predicted, this.cluster.models[w.model]!.cost?.plan),
    );
  }

  /** The memory its live workers (shadows included) need is more than GPU g has. */
  overcommitted(g: number): boolean {
    const gpu = this.truthCluster.gpus[g]!;
    const mem = this.liveOn(g).reduce((s, w) => s + gpu.model.memoryMb(gpu.profileIndex[w.model]!, w.batch), 0);
    return mem > gpu.memMb + 1e-6;
  }

  /** Adds the shares held since the last call; call before any change to workers, states or modes. */
  accountShares(nowMs: number): void {
    const dt = nowMs - this.lastShareMs;
    if (dt <= 0) return;
    for (const w of this.workers) {
      if (w.state === State.Stopped || w.state === State.Starting) continue;
      if (!this.timeshared(w.gpu)) this.shareTime[w.gpu]! += w.pct * dt;
    }
    // A timeshare GPU counts 100 while any batch runs on it, however many overlap.
    for (let g = 0; g < this.running.length; g++)
      if (this.timeshared(g) && this.running[g]!.size > 0) this.shareTime[g]! += 100 * dt;
    this.lastShareMs = nowMs;
  }

  /** `w`'s batch ended (answered or lost): it no longer runs on its GPU. */
  endBatch(w: SimWorker): void {
    if (w.timeshared) this.running[w.gpu]!.remove(w);
  }

  /**
   * Batch of `size` (its arrival times in w.arrivals) starts on `w` at `nowMs`: its GPU time from the
   * neighbours running now, answered after `transportLeftMs` + that time. `sentMs`: when it was sent
   * (its tasks' queueing ends there).
   */
  startBatch(w: SimWorker, nowMs: number, size: number, sentMs: number, transportLeftMs: number): void {
    const g = w.gpu;
    const run = runBatchSize(w, size);
    const gpu = this.truthCluster.gpus[g]!;
    this.accountShares(nowMs);
    // The models running on this GPU now, and this batch: MPS partitions at their shares; on a pooled
    // GPU, its mode's rule (src/model/pooledGpu.ts, the simulated worker's too).
    const timeshared = this.timeshared(g);
    const models = this.scratchModels;
    const batches = this.scratchBatches;
    const pcts = this.scratchPcts;
    models.length = batches.length = pcts.length = this.scratchOut.length = 0;
    models.push(gpu.profileIndex[w.model]! as ProfileModelIndex);
    batches.push(run);
    pcts.push(w.pct);
    const beside: BesideBatch[] = [];
    for (const x of this.workers) {
      if (x !== w && x.gpu === g && x.busy) {
        models.push(gpu.profileIndex[x.model]! as ProfileModelIndex);
        batches.push(x.runSize);
        pcts.push(x.pct);
        beside.push({ model: x.model, batch: x.runSize, pct: x.pct });
      }
    }
    this.scratchOut.length = models.length;
    const pooled = timeshared ? gpu.pooled : null;
    // Samples whose cost depends on the input: the batch is padded to its most expensive one.
    const t = this.truth.batchMs(
      gpu.model,
      this.gpuType[g]!,
      pooled,
      models,
      batches,
      pcts,
      models.length,
      this.scratchOut,
      this.truthCluster.models[w.model]!.cost?.distribution,
    );
    // On a pooled GPU the ground truth rewrote the shares to the even split it timed the batches at.
    if (timeshared) for (let k = 0; k < beside.length; k++) beside[k] = { ...beside[k]!, pct: pcts[k + 1]! };
    // The most GPU memory its process uses while running it, as the worker measures it (its profile's).
    const memoryMb = gpu.model.memoryMb(gpu.profileIndex[w.model]!, run);
    w.detail = { gpu: g, batch: run, pct: pcts[0]!, pooled: timeshared, beside, memoryMb };
    if (timeshared) this.running[g]!.add(w, w, w.model, run);
    w.timeshared = timeshared;
    w.busy = true;
    w.size = size;
    w.runSize = run;
    w.startMs = sentMs;
    w.execMs = t;
    w.doneAtMs = nowMs + t + transportLeftMs;
    // Told at its start on the GPU; a batch held by pipelining was sent earlier (tMs = when it was sent).
    this.trace?.batchStart?.(sentMs, w.model, g, run, w.doneAtMs - sentMs, w.predicted.ms(run));
    this.stats.batchStarted(w.model, size);
  }
}

// The simulator's ground truth: how long a batch really takes. It is NOT the predictor. It starts
// from the latency model evaluated on the models actually running on the GPU at that moment, then
// adds what the predictor does not know (docs/simulator.md):
// - a systematic error per configuration (GPU type, model, batch, share rounded to 5%): a fixed
//   multiplicative factor exp(sigma_sys * z), z ~ N(0,1) drawn from a hash of the seed and the
//   configuration, so the same configuration is always off by the same amount, as a real GPU is;
// - per-batch noise: a log-normal factor with standard deviation sigma_noise and mean 1;
// - DRAM bandwidth contention, an interference channel the predictor does not model: each running
//   neighbour j adds dramAlpha * (pct_j / 100) * intensity_j, with intensity_j in [0.5, 1.5] drawn
//   per model from the seed.
// A model whose cost depends on the input (src/model/costDistribution.ts) has each batch's time multiplied
// by its batch's cost factor: each sample's class drawn from the model's distribution, padded to the
// longest (`batchCost`, from a stream of its own, so that models without one draw as they would alone).
import { type CostDistribution, drawBatchCost } from '../model/costDistribution.js';
import { pooledBatchMs, type PooledGpuMode } from '../model/pooledGpu.js';
import type { LatencyModel } from '../model/predictor.js';
import { stableHash } from '../serving/hash.js';
import { mixSeed, Rng } from '../workload/random.js';

/**
 * A model's index in a GPU profile's latency model (`LatencyModel.modelIndex`, `GpuInfo.profileIndex`),
 * never its index among the served models: the ground truth keys its per-configuration error and its
 * DRAM intensities by it, so the simulator and the simulated worker draw the same for the same model.
 */
export type ProfileModelIndex = number & { readonly __profileModelIndex: true };

export function profileModelIndex(i: number): ProfileModelIndex {
  if (!Number.isInteger(i) || i < 0) throw new RangeError(`not a profile model index: ${i}`);
  return i as ProfileModelIndex;
}

/**
 * The GPU type of the ground truth's per-configuration error: a stable hash of the profile id, the
 * same in the simulator and in every simulated worker whatever order the GPUs were listed in.
 */
export function gpuTypeIndex(profileId: string): number {
  return stableHash(profileId) % 1024;
}

export interface GroundTruthSettings {
  /**
   * Standard deviation of the per-configuration error, percent (default 3: the predictor's error on real V100
   * measurements).
   */
  readonly systematicErrorPct: number;
  /** Standard deviation of the per-batch noise, percent. */
  readonly noisePct: number;
  /** Strength of the unmodelled DRAM contention (relative slowdown per neighbour at 100% share and intensity 1). */
  readonly dramAlpha: number;
  readonly seed: number;
}

export const DEFAULT_GROUND_TRUTH: Omit<GroundTruthSettings, 'seed'> = {
  systematicErrorPct: 3,
  noisePct: 2,
  dramAlpha: 0.08,
};

/** Standard normal from two 32-bit hashes (Box-Muller): deterministic in its inputs. */
function hashedNormal(seed: number, a: number, b: number, c: number, d: number): number {
  const u1 = (mixSeed(seed, a, b, c, d, 1) + 1) / 4294967297;
  const u2 = mixSeed(seed, a, b, c, d, 2) / 4294967296;
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

export class GroundTruth {
  private readonly noise: Rng;
  private readonly costs: Rng;
  private readonly sigmaSys: number;
  private readonly sigmaNoise: number;
  private readonly cache = new Map<number, number>();

  constructor(readonly settings: GroundTruthSettings) {
    this.noise = new Rng(mixSeed(settings.seed, 0x6e6f6973));
    this.costs = new Rng(mixSeed(settings.seed, 0x636f7374));
    this.sigmaSys = settings.systematicErrorPct / 100;
    this.sigmaNoise = settings.noisePct / 100;
  }

  /** Fixed multiplicative error of a configuration (`gpuType` from gpuTypeIndex). */
  systematicFactor(gpuType: number, model: ProfileModelIndex, batch: number, pct: number): number {
    if (this.sigmaSys === 0) return 1;
    const bucket = Math.round(pct / 5);
    const key = ((gpuType * 64 + model) * 64 + batch) * 32 + bucket;
    let f = this.cache.get(key);
    if (f === undefined) {
      f = Math.exp(this.sigmaSys * hashedNormal(this.settings.seed, gpuType, model, batch, bucket));
      this.cache.set(key, f);
    }
    return f;
  }

  /** A fresh per-batch noise factor with mean 1. */
  noiseFactor(): number {
    if (this.sigmaNoise === 0) return 1;
    return Math.exp(this.sigmaNoise * this.noise.normal() - (this.sigmaNoise * this.sigmaNoise) / 2);
  }

  /**
   * What the ground truth multiplies the latency model's prediction by for one batch: the
   * configuration's systematic error, fresh per-batch noise, and the DRAM contention of the
   * neighbours running beside it (sum over them of pct_j / 100 * dramIntensity(j)). Entry 0 of
   * `models`, `batches` and `pcts` is this batch, the others its neighbours on the GPU (the layout
   * LatencyModel.predictGpu takes). The simulator and the simulated worker (agent/simWorker.ts) both
   * time batches with it.
   */
  batchFactor(
    gpuType: number,
    models: readonly ProfileModelIndex[],
    batches: readonly number[],
    pcts: readonly number[],
  ): number {
    let dram = 0;
    for (let j = 1; j < models.length; j++) dram += (pcts[j]! / 100) * this.dramIntensity(models[j]!);
    return (
      this.systematicFactor(gpuType, models[0]!, batches[0]!, pcts[0]!) *
      this.noiseFactor() *
      (1 + this.settings.dramAlpha * dram)
    );
  }

  /**
   * How long a batch really takes (ms): entry 0 of `models`, `batches` and `pcts` (the first `count`
   * entries, the layout LatencyModel.predictGpu takes) is the batch, the others the batches running
   * beside it on its GPU. On MPS partitions (`pooled` null) the latency model at their shares; on a
   * pooled GPU its mode's rule (src/model/pooledGpu.ts), which rewrites `pcts` with the even split it
   * times them at. Then this batch's factor, and for a model whose cost depends on the input (`cost`,
   * its distribution) its samples' drawn cost (`batchCost`). `out`: scratch of at least `count` entries.
   * The simulator and the simulated worker (agent/simWorker.ts) time every batch with it.
   */
  batchMs(
    lm: LatencyModel,
    gpuType: number,
    pooled: PooledGpuMode | null,
    models: ProfileModelIndex[],
    batches: number[],
    pcts: number[],
    count: number,
    out: number[],
    cost?: CostDistribution,
  ): number {
    let modelMs: number;
    if (pooled !== null) modelMs = pooledBatchMs(lm, pooled, models, batches, count, pcts, out);
    else {
      lm.predictGpu(models, batches, pcts, count, out);
      modelMs = out[0]!;
    }
    const ms = modelMs * this.batchFactor(gpuType, models, batches, pcts);
    return cost ? ms * this.batchCost(cost, batches[0]!) : ms;
  }

  /** The cost factor of a batch of `size` samples of a model with distribution `d`: its samples' classes drawn. */
  batchCost(d: CostDistribution, size: number): number {
    return drawBatchCost(d, size, () => this.costs.next());
  }

  /** DRAM intensity of a model, in [0.5, 1.5], fixed by the seed. */
  dramIntensity(model: ProfileModelIndex): number {
    return 0.5 + mixSeed(this.settings.seed, 0x6472616d, model) / 4294967296;
  }
}

// GSLICE (Dhakal, Kulkarni, Ramakrishnan, "GSLICE: controlled spatial sharing of GPUs for a scalable
// inference platform", ACM SoCC 2020), the InSS paper's second baseline (section 6.1: "adjusts the
// allocation of GPU resources and batch sizes by traversing the average latency and throughput").
// docs/policies/gslice.md lists every choice the paper leaves open and what we chose.
//
// GSLICE is measurement-driven; it has no interference model:
//  - Initial GPU% of a model: the knee of its latency-vs-GPU% curve (the smallest share whose
//    latency is within GSLICE_KNEE_SLACK of the full-GPU latency), from the offline profile.
//  - Self-tuning (per model, every epoch once the last change has settled): residual latency
//    RL = SLO - measured mean task latency and residual throughput RT = measured capacity
//    (batch / measured batch execution time, summed over instances) - arrival rate. A deficit in
//    either (RL <= 0 or RT <= 0) raises the GPU% in proportion to the larger relative deficit;
//    both surpluses above the threshold (5%) lower it in proportion to the smaller one; otherwise it
//    stays. Per-model formula as in the Gpulet authors' GSLICE re-implementation
//    (github.com/casys-kaist/glet src/common/self_tuning.cpp, GetNewGPUPart, threshold 5).
//  - Adaptive batching: the largest batch whose execution fits SLO/2 (profile), scaled down when the
//    measured batch execution time exceeds SLO/2; dispatched with a timeout of SLO/2.
//  - A GPU% above 100 is served by replicas on several GPUs (scale-out); shares above what the
//    cluster holds are cut max-min fairly (glet's AllocateMinMaxFair).
//  - Share steps in whole percents rounded up to the next MPS unit, as the reference does (gsliceStep).
//  - Reallocation is a shadow-process swap (the simulator applies it): the policy only emits the
//    new share, and does not tune a model again until GSLICE_SETTLE_MS after its last change, so the
//    measurements it tunes on come from the new share.
// State: per model, its target GPU% and the time of its last change. Pure given the observations.
import { BDA_MAX_BATCH } from '../bda.js';
import { ceilToUnit, deploymentProblem, floorToUnit, memoryOnGpu, predictOnGpu, shareLevels } from '../util.js';
import type {
  ClusterInfo,
  Deployment,
  GpuInfo,
  Observation,
  Placement,
  Policy,
  PolicyFactory,
  PolicyOptions,
} from '../types.js';
import { runsAnywhere } from '../contract.js';

/** GSLICE's tuning threshold (%): residuals within it leave the GPU% alone (glet self_tuning.h _THRESHOLD). */
export const GSLICE_THRESHOLD_PCT = 5;
/** The knee: the smallest share whose latency is within this fraction of the full-GPU latency. */
export const GSLICE_KNEE_SLACK = 0.1;
/**
 * No re-tuning of a model until this long after its share changed (the shadow swap, ~3 s, plus one epoch of
 * measurement).
 */
export const GSLICE_SETTLE_MS = 4000;
/** Fraction of all GPUs' share the max-min fair cut aims at, leaving room for MPS-unit rounding and fragmentation. */
export const GSLICE_PACK_FILL = 0.97;

interface ModelState {
  /** Target GPU% of the model summed over its instances (may exceed 100: replicas). */
  targetPct: number;
  /** Batch cap from the measured-latency feedback. */
  batchCap: number;
  lastChangeMs: number;
}

interface Instance {
  readonly model: number;
  gpu: number;
  pct: number;
  batch: number;
}

/** Solo execution latency (ms) of a model on a GPU at a batch and share. */
function soloMs(gpu: GpuInfo, model: number, batch: number, pct: number): number {
  return predictOnGpu(gpu, [{ model, batch, pct }])[0]!;
}

/** GSLICE's profiled batch bound: the largest b with solo t_inf(b, pct) <= SLO/2 (1 when none). */
export function gsliceBatch(gpu: GpuInfo, model: number, pct: number, sloMs: number): number {
  for (let b = BDA_MAX_BATCH; b >= 1; b--) if (soloMs(gpu, model, b, pct) <= sloMs / 2) return b;
  return 1;
}

/** The knee of the latency-vs-share curve at the SLO/2 batch of the full GPU. */
export function gsliceKneePct(gpu: GpuInfo, model: number, sloMs: number): number {
  const b = gsliceBatch(gpu, model, 100, sloMs);
  const fullMs = soloMs(gpu, model, b, 100);
  for (const pct of shareLevels(gpu)) if (soloMs(gpu, model, b, pct) <= (1 + GSLICE_KNEE_SLACK) * fullMs) return pct;
  return 100;
}

/** Feedback of one model for one epoch, as GSLICE reads it. */
export interface GsliceFeedback {
  readonly sloMs: number;
  readonly ratePerS: number;
  /** Mean task latency (ms), NaN when nothing completed. */
  readonly meanLatencyMs: number;
  /** Measured capacity (tasks/s) of the model's instances: batch / measured execution time, summed. */
  readonly capacityPerS: number;
  /** (late + dropped) / (served + dropped) over the epoch. */
  readonly violationFraction: number;
}

/**
 * GSLICE's self-tuning step: the new GPU% from the current one and the residuals. Residual latency
 * is read from the mean task latency; an epoch whose SLO violations exceed the threshold counts as a
 * latency deficit of that fraction even when the mean is under the SLO (the mean hides a tail of
 * dropped tasks, which have no latency).
 */
export function gsliceTune(currentPct: number, f: GsliceFeedback): number {
  let resLatFrac = Number.isFinite(f.meanLatencyMs) ? (f.sloMs - f.meanLatencyMs) / f.sloMs : Number.NaN;
  if (f.violationFraction * 100 > GSLICE_THRESHOLD_PCT)
    resLatFrac = Math.min(Number.isNaN(resLatFrac) ? 0 : resLatFrac, -f.violationFraction);
  if (Number.isNaN(resLatFrac)) resLatFrac = 0; // nothing completed and nothing violated: no latency signal
  const resTrpFrac = f.ratePerS > 0 ? (f.capacityPerS - f.ratePerS) / f.ratePerS : 1;
  const t = GSLICE_THRESHOLD_PCT / 100;
  if (resLatFrac <= 0 || resTrpFrac <= 0) {
    const deficit = Math.max(resLatFrac <= 0 ? -resLatFrac : 0, resTrpFrac <= 0 ? -resTrpFrac : 0);
    return currentPct * (1 + Math.max(deficit, t));
  }
  // Both residuals positive. The throughput surplus as a fraction of capacity is how much of the
  // share can go before capacity falls to the rate.
  const trpCut = f.capacityPerS > 0 ? (f.capacityPerS - f.ratePerS) / f.capacityPerS : 0;
  const cut = Math.min(resLatFrac, trpCut);
  if (resLatFrac < t || resTrpFrac < t || cut < t) return currentPct;
  return currentPct * (1 - cut);
}

/**
 * The share GSLICE moves to, as its reference does it (glet self_tuning.cpp): the change is a whole
 * number of percent, truncated (`int(change_factor * curr_gpu_part)`), and the result is rounded UP to
 * the next available partition (AllocateMinMaxFair's getNextLargestPart), here the next MPS unit. So
 * any increase of at least 1% takes at least one unit, while a decrease smaller than one unit rounds
 * back up to where it was. (Dropping a change smaller than one unit either way would leave a small model
 * whose multiplicative step is under a unit unable to ever grow.)
 */
export function gsliceStep(currentPct: number, nextPct: number, unitPct: number): number {
  const wholeCurrent = Math.round(currentPct);
  const changePct = Math.trunc(nextPct - currentPct + (nextPct >= currentPct ? 1e-9 : -1e-9));
  const wanted = Math.max(1, wholeCurrent + changePct);
  return Math.max(unitPct, Math.ceil(wanted / unitPct - 1e-9) * unitPct);
}

/** Max-min fair cut of demands (%) to a total (glet AllocateMinMaxFair, without its partition rounding). */
export function maxMinFair(demands: readonly number[], totalPct: number): number[] {
  const out = demands.map(() => 0);
  let left = totalPct;
  const order = demands.map((d, i) => ({ d, i })).sort((a, b) => a.d - b.d || a.i - b.i);
  let remaining = order.length;
  for (const { d, i } of order) {
    const fair = left / remaining;
    out[i] = Math.min(d, fair);
    left -= out[i];
    remaining--;
  }
  return out;
}

class GslicePolicy implements Policy {
  readonly name = 'gslice';
  private readonly state = new Map<number, ModelState>();
  private instances: Instance[] = [];
  private lastNowMs: number | null = null;

  constructor(private readonly cluster: ClusterInfo) {}

  /** The GPU whose profile serves as GSLICE's offline profile of a model: the first that has it. */
  private refGpu(model: number): GpuInfo | undefined {
    return this.cluster.gpus.find((g) => (g.profileIndex[model] ?? -1) >= 0);
  }

  decide(obs: Observation): Deployment {
    const models = this.cluster.models;
    const rates = models.map((m) => Math.max(0, obs.ratePerS[m.index] ?? 0));
    const epochMs = this.lastNowMs === null ? 0 : obs.nowMs - this.lastNowMs;
    this.lastNowMs = obs.nowMs;
    // 1. Self-tuning of every model with traffic.
    for (const m of models) {
      const ref = this.refGpu(m.index);
      if (!ref || rates[m.index]! <= 0) continue;
      let st = this.state.get(m.index);
      if (!st) {
        st = {
          targetPct: gsliceKneePct(ref, m.index, m.sloMs),
          batchCap: BDA_MAX_BATCH,
          lastChangeMs: Number.NEGATIVE_INFINITY,
        };
        this.state.set(m.index, st);
        continue;
      }
      const mine = this.instances.filter((x) => x.model === m.index);
      if (mine.length === 0 || epochMs <= 0 || obs.nowMs - st.lastChangeMs < GSLICE_SETTLE_MS) continue;
      const served = obs.lastEpoch.served[m.index] ?? 0;
      const dropped = obs.lastEpoch.dropped[m.index] ?? 0;
      const violated = obs.lastEpoch.violated[m.index] ?? 0;
      if (served + dropped <= 0) continue; // no measurement this epoch
      const meanExecMs = obs.lastEpoch.meanExecMs[m.index] ?? Number.NaN;
      // Adaptive batching: measured execution above SLO/2 shrinks the batch cap proportionally.
      const maxBatch = Math.max(...mine.map((x) => x.batch));
      if (Number.isFinite(meanExecMs) && meanExecMs > m.sloMs / 2) {
        st.batchCap = Math.max(1, Math.min(maxBatch, Math.floor((maxBatch * (m.sloMs / 2)) / meanExecMs)));
      } else if (Number.isFinite(meanExecMs)) {
        st.batchCap = Math.min(BDA_MAX_BATCH, st.batchCap + 1);
      }
      const capacityPerS = mine.reduce((s, x) => {
        const execMs = Number.isFinite(meanExecMs)
          ? meanExecMs
          : soloMs(this.cluster.gpus[x.gpu]!, m.index, x.batch, x.pct);
        return s + (x.batch * 1000) / execMs;
      }, 0);
      const currentPct = mine.reduce((s, x) => s + x.pct, 0);
      const next = gsliceTune(currentPct, {
        sloMs: m.sloMs,
        ratePerS: rates[m.index]!,
        meanLatencyMs: obs.lastEpoch.meanLatencyMs[m.index] ?? Number.NaN,
        capacityPerS,
        violationFraction: (violated + dropped) / (served + dropped),
      });
      const stepped = gsliceStep(currentPct, next, ref.mpsUnitPct);
      if (Math.abs(stepped - currentPct) > 1e-9) st.lastChangeMs = obs.nowMs;
      st.targetPct = stepped;
    }
    // 2. Demands, cut max-min fairly to what the cluster holds.
    const active = models.filter((m) => rates[m.index]! > 0 && this.state.has(m.index)).map((m) => m.index);
    const capacityPct = this.cluster.gpus.length * 100 * GSLICE_PACK_FILL;
    const granted = maxMinFair(
      active.map((i) => this.state.get(i)!.targetPct),
      capacityPct,
    );
    // 3. Pack.
    this.instances = this.pack(active, granted);
    // Tuning continues from the share actually held (step 1 reads it from the instances), so a cut
    // by the fair share is not mistaken for a decision of the model's own.
    const placements: Placement[] = this.instances.map((x) => ({
      model: x.model,
      gpu: x.gpu,
      pct: x.pct,
      batch: x.batch,
      timeoutMs: models[x.model]!.sloMs / 2,
    }));
    placements.sort((a, b) => a.gpu - b.gpu || a.model - b.model);
    const d: Deployment = { placements };
    if (deploymentProblem(this.cluster, d) !== null) return obs.current; // cannot happen by construction
    return d;
  }

  /**
   * Places each model's granted GPU% as instances of at most 100% (replicas on distinct GPUs).
   * Sticky: an instance stays on the GPU it held when it still fits; the rest go first-fit onto the
   * GPU with the most free share. Each model's first instance is placed before any replica. When an
   * instance does not fit whole, it takes the largest free share (>= one MPS unit) on a GPU without
   * the model; a model still without any instance takes one unit from the largest instance on a GPU.
   */
  private pack(active: readonly number[], grantedPct: readonly number[]): Instance[] {
    const gpus = this.cluster.gpus;
    const usedPct = gpus.map(() => 0);
    const onGpu: Instance[][] = gpus.map(() => []);
    const prevGpus = new Map<number, number[]>();
    for (const x of this.instances) prevGpus.set(x.model, [...(prevGpus.get(x.model) ?? []), x.gpu]);
    // Instances wanted: k = ceil(granted / 100) per model, equal shares.
    const wanted: { model: number; pct: number; replica: number }[] = [];
    active.forEach((model, k) => {
      const g = Math.max(grantedPct[k]!, 1e-6);
      const n = Math.max(1, Math.ceil(g / 100 - 1e-9));
      for (let r = 0; r < n; r++) wanted.push({ model, pct: g / n, replica: r });
    });
    wanted.sort((a, b) => a.replica - b.replica || b.pct - a.pct || a.model - b.model);
    // A GPU whose profile lacks the model can neither hold it nor size its batch.
    const serves = (gpu: GpuInfo, model: number) => (gpu.profileIndex[model] ?? -1) >= 0;
    const fits = (gpu: GpuInfo, model: number, pct: number, batch: number) =>
      !onGpu[gpu.index]!.some((x) => x.model === model) &&
      usedPct[gpu.index]! + pct <= 100 + 1e-9 &&
      memoryOnGpu(gpu, [...onGpu[gpu.index]!, { model, batch }]) <= gpu.memMb + 1e-6;
    const put = (gpu: GpuInfo, model: number, pct: number) => {
      const batch = this.batchFor(gpu, model, pct);
      const inst: Instance = { model, gpu: gpu.index, pct, batch };
      onGpu[gpu.index]!.push(inst);
      usedPct[gpu.index]! += pct;
    };
    const byFree = () => [...gpus].sort((a, b) => usedPct[a.index]! - usedPct[b.index]! || a.index - b.index);
    for (const w of wanted) {
      const prev = prevGpus.get(w.model) ?? [];
      const candidates = [...prev.map((g) => gpus[g]!), ...byFree().filter((g) => !prev.includes(g.index))].filter(
        (g) => serves(g, w.model),
      );
      let placed = false;
      for (const gpu of candidates) {
        const pct = ceilToUnit(gpu, w.pct);
        if (fits(gpu, w.model, pct, this.batchFor(gpu, w.model, pct))) {
          put(gpu, w.model, pct);
          placed = true;
          break;
        }
      }
      if (placed) continue;
      // Out of room: the largest free share on a GPU without the model.
      for (const gpu of byFree()) {
        if (!serves(gpu, w.model)) continue;
        const free = 100 - usedPct[gpu.index]!;
        if (free < gpu.mpsUnitPct - 1e-9) continue;
        const pct = floorToUnit(gpu, free);
        if (fits(gpu, w.model, pct, this.batchFor(gpu, w.model, pct))) {
          put(gpu, w.model, pct);
          placed = true;
          break;
        }
      }
    }
    // Every model with traffic gets at least one instance: take one unit from the largest instance.
    for (const model of active) {
      if (onGpu.some((l) => l.some((x) => x.model === model))) continue;
      let best: Instance | null = null;
      for (const l of onGpu) {
        for (const x of l) {
          const gpu = gpus[x.gpu]!;
          if (x.pct < 2 * gpu.mpsUnitPct - 1e-9 || l.some((y) => y.model === model) || !serves(gpu, model)) continue;
          if (!best || x.pct > best.pct) best = x;
        }
      }
      if (!best) continue;
      const gpu = gpus[best.gpu]!;
      best.pct = floorToUnit(gpu, best.pct - gpu.mpsUnitPct);
      best.batch = this.batchFor(gpu, best.model, best.pct);
      usedPct[gpu.index] = onGpu[gpu.index]!.reduce((s, x) => s + x.pct, 0);
      const pct = floorToUnit(gpu, 100 - usedPct[gpu.index]!);
      if (fits(gpu, model, pct, 1)) {
        onGpu[gpu.index]!.push({ model, gpu: gpu.index, pct, batch: 1 });
        usedPct[gpu.index]! += pct;
      }
    }
    return onGpu.flat();
  }

  /**
   * The batch of an instance: GSLICE's SLO/2 bound at its share, under the model's measured cap, shrunk until memory
   * allows.
   */
  private batchFor(gpu: GpuInfo, model: number, pct: number): number {
    const cap = this.state.get(model)?.batchCap ?? BDA_MAX_BATCH;
    return Math.max(1, Math.min(cap, gsliceBatch(gpu, model, pct, this.cluster.models[model]!.sloMs)));
  }
}

export const gsliceFactory: PolicyFactory = {
  name: 'gslice',
  description:
    'GSLICE (SoCC 2020): per-model GPU% from the latency knee, self-tuned from measured residual latency and ' +
    'throughput, adaptive batch within SLO/2, timeout SLO/2, shadow-swap reallocation; no interference model',
  supports: runsAnywhere,
  create(cluster: ClusterInfo, _options: PolicyOptions): Policy {
    return new GslicePolicy(cluster);
  },
};

// Gpulet (Choi et al., "Serving Heterogeneous Machine Learning Models on Multi-GPU Servers with
// Spatio-Temporal Sharing", USENIX ATC 2022; prototype github.com/casys-kaist/glet,
// src/scheduler/scheduler_incremental.cpp), the InSS paper's first baseline (section 6.1).
// docs/policies/gpulet.md lists every choice the paper leaves open and what we chose.
//
// A GPU is cut into at most two gpu-lets (MPS partitions) of the nominal sizes 20/40/50/60/80/100%.
// The elastic-partitioning scheduler (the paper's Algorithm 1, the prototype's elasticPartitioning):
//  1. models sorted by request rate, highest first;
//  2. for each model, while rate is left over:
//     p_eff   = MaxEfficientPartition: the partition after the step of the partition ladder with the
//               largest throughput gain per % (prototype getMaxReturnPart);
//     p_ideal = MinRequiredPartition: the smallest partition whose saturated throughput covers the
//               remaining rate;
//     p_req   = min(p_eff, p_ideal);
//     FindBestFit: the smallest empty gpu-let of at least p_req that fits in memory and passes the
//               interference check (both co-located gpu-lets still meet their SLO with the predicted
//               interference); an untouched GPU (one 100% gpu-let) is split into p_req and the rest;
//     assign, and subtract the gpu-let's throughput from the remaining rate.
//  No gpu-let left: the rest of that model's rate is unschedulable (no further gpu-lets are added).
// Batch sizes (Nexus-style duty cycle, as in Gpulet): a saturated gpu-let runs the largest b with
// 2 * L(b) <= SLO; the gpu-let that takes a model's residual rate runs the largest b whose
// collection time plus execution fits the SLO (b / rate + L(b) <= SLO, and 2 * L(b) <= SLO). L is
// the solo latency at the gpu-let's share times the prototype's latency ratio (1.1): Gpulet decides
// batches without interference; interference only gates placement. Every worker gets a timeout of
// SLO/2 (kept although it costs throughput: InSS section 6.3).
// Pure: the only state is the last plan and the rates it was made for.
import { BDA_MAX_BATCH } from '../bda.js';
import { type ReplanGate, ratesMoved } from '../replan.js';
import { alignToCurrent, deploymentProblem, floorToUnit, memoryOnGpu, predictOnGpu } from '../util.js';
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

/** Gpulet's partition sizes (% of a GPU), ascending. */
export const GPULET_PARTITIONS_PCT: readonly number[] = [20, 40, 50, 60, 80, 100];
/**
 * The prototype's "Latency Ratio" (resource/SchedConfigs/config-gpulet-int.json): profiled latencies are inflated by
 * 10%.
 */
export const GPULET_LATENCY_RATIO = 1.1;
/** getMaxReturnPart ignores a ladder step whose throughput gain is below 5%. */
export const GPULET_MIN_STEP_GAIN = 1.05;
/** Re-plan when some model's rate moved by more than this fraction of the rate last planned for. */
export const GPULET_RATE_CHANGE_FRACTION = 0.1;
/** Rates below this (tasks/s) count as this much when measuring a change. */
export const GPULET_RATE_FLOOR_PER_S = 1;

/**
 * The MPS share of a nominal partition on a GPU: the nearest multiple of the GPU's MPS unit (ties
 * downwards), at least one unit; 100 stays 100.
 */
export function partitionPct(gpu: GpuInfo, nominalPct: number): number {
  if (nominalPct >= 100) return 100;
  const units = Math.max(1, Math.round(nominalPct / gpu.mpsUnitPct - 1e-9));
  return Math.min(100, Math.round(units * gpu.mpsUnitPct * 1e6) / 1e6);
}

/** One gpu-let: a partition of a GPU, empty or serving one model. */
interface Gpulet {
  readonly gpu: number;
  nominalPct: number;
  pct: number;
  model: number; // -1 when empty
  batch: number;
  /** Nexus duty cycle (ms): how often the gpu-let starts a batch; L(b) when saturated. */
  dutyMs: number;
  /** Rate this gpu-let serves in Gpulet's accounting (tasks/s). */
  servedPerS: number;
}

/** Per (GPU profile, model, share) numbers that do not depend on the rate. */
interface SatEntry {
  /** Largest b with 2 * L(b) <= SLO (1 when none). */
  readonly batch: number;
  readonly latencyMs: number;
  /** b / L(b), tasks/s. */
  readonly throughputPerS: number;
}

/** Gpulet's scheduler over one cluster; caches the profile look-ups. */
export class GpuletPlanner {
  private readonly satCache = new Map<string, SatEntry>();

  constructor(
    readonly cluster: ClusterInfo,
    readonly latencyRatio = GPULET_LATENCY_RATIO,
  ) {}

  /** Gpulet's L(b): solo GPU execution latency at a share, times the latency ratio (ms). */
  latencyMs(gpu: GpuInfo, model: number, batch: number, pct: number): number {
    return predictOnGpu(gpu, [{ model, batch, pct }])[0]! * this.latencyRatio;
  }

  /** The saturated configuration of a model on a share: largest b with 2 * L(b) <= SLO (prototype initSaturateTrp). */
  saturated(gpu: GpuInfo, model: number, pct: number): SatEntry {
    const key = `${gpu.profileId}/${model}/${pct}`;
    let e = this.satCache.get(key);
    if (!e) {
      const sloMs = this.cluster.models[model]!.sloMs;
      let batch = 1; // 2 * L(1) > SLO: the prototype fixes the batch to 1
      for (let b = BDA_MAX_BATCH; b >= 1; b--) {
        if (2 * this.latencyMs(gpu, model, b, pct) <= sloMs) {
          batch = b;
          break;
        }
      }
      const latencyMs = this.latencyMs(gpu, model, batch, pct);
      e = { batch, latencyMs, throughputPerS: (batch * 1000) / latencyMs };
      this.satCache.set(key, e);
    }
    return e;
  }

  /**
   * The residual configuration for a rate the share can absorb: the largest b with
   * b / rate + L(b) <= SLO and 2 * L(b) <= SLO (Nexus's residual node), 1 when none.
   */
  residualBatch(gpu: GpuInfo, model: number, pct: number, ratePerS: number): number {
    const sloMs = this.cluster.models[model]!.sloMs;
    const maxB = this.saturated(gpu, model, pct).batch;
    for (let b = maxB; b >= 1; b--) {
      const l = this.latencyMs(gpu, model, b, pct);
      if ((b * 1000) / ratePerS + l <= sloMs && 2 * l <= sloMs) return b;
    }
    return 1;
  }

  /**
   * MaxEfficientPartition (prototype getMaxReturnPart): over the ladder steps 20->40, 40->50,
   * 50->60, 60->80 (the prototype never considers the step to 100), the larger partition of the step
   * with the largest throughput gain per % of GPU, counting only steps that gain at least 5%;
   * the smallest partition when none does.
   */
  maxEfficientPartition(gpu: GpuInfo, model: number): number {
    const parts = GPULET_PARTITIONS_PCT;
    let best = parts[0]!;
    let bestReturn = 0;
    for (let i = 0; i + 2 < parts.length; i++) {
      const lowPct = partitionPct(gpu, parts[i]!);
      const highPct = partitionPct(gpu, parts[i + 1]!);
      if (highPct <= lowPct) continue;
      const low = this.saturated(gpu, model, lowPct).throughputPerS;
      const high = this.saturated(gpu, model, highPct).throughputPerS;
      if (high / low < GPULET_MIN_STEP_GAIN) continue;
      const ret = (high - low) / (highPct - lowPct);
      if (ret > bestReturn) {
        bestReturn = ret;
        best = parts[i + 1]!;
      }
    }
    return best;
  }

  /** MinRequiredPartition: the smallest partition whose saturated throughput covers `ratePerS`; 100 when none does. */
  minRequiredPartition(gpu: GpuInfo, model: number, ratePerS: number): number {
    for (const p of GPULET_PARTITIONS_PCT) {
      if (this.saturated(gpu, model, partitionPct(gpu, p)).throughputPerS >= ratePerS) return p;
    }
    return 100;
  }

  /** p_req = min(p_eff, p_ideal) for a model's remaining rate on a GPU's profile. */
  requiredPartition(gpu: GpuInfo, model: number, ratePerS: number): number {
    return Math.min(this.maxEfficientPartition(gpu, model), this.minRequiredPartition(gpu, model, ratePerS));
  }

  /**
   * Elastic partitioning for one rate vector. `roundRobinFirst` (overload repair, see plan()) first
   * gives every model one gpu-let (a model that finds none by best fit takes the last resort at
   * once, before any model gets a second), then continues each model's remaining rate in order.
   */
  elasticPartitioning(ratePerS: readonly number[], roundRobinFirst: boolean): Gpulet[][] {
    const gpulets: Gpulet[][] = this.cluster.gpus.map((g) => [emptyGpulet(g.index, 100, 100)]);
    // Step 1: models with traffic, by rate, highest first (ties: lower index).
    const order = this.cluster.models
      .map((m) => m.index)
      .filter((i) => (ratePerS[i] ?? 0) > 0)
      .sort((a, b) => ratePerS[b]! - ratePerS[a]! || a - b);
    const remaining = order.map((i) => ratePerS[i]!);
    const blocked = order.map(() => false);
    if (roundRobinFirst) {
      order.forEach((m, k) => {
        let served = this.allocateOne(gpulets, m, remaining[k]!, true);
        if (served < 0) {
          blocked[k] = true;
          served = this.allocateOne(gpulets, m, remaining[k]!, false, true);
        }
        if (served > 0) remaining[k] = Math.max(0, remaining[k]! - served);
      });
    }
    order.forEach((m, k) => {
      // Step 2: gpu-lets until the rate is covered or none is left (the rest is unschedulable).
      while (!blocked[k] && remaining[k]! > 1e-9) {
        const served = this.allocateOne(gpulets, m, remaining[k]!, true);
        if (served < 0) blocked[k] = true;
        else remaining[k] = Math.max(0, remaining[k]! - served);
      }
    });
    return gpulets;
  }

  /**
   * One iteration of Algorithm 1's inner loop for model `m`: p_req, FindBestFit, split, assign.
   * Returns the rate the new gpu-let serves, or -1 when no gpu-let qualifies.
   */
  allocateOne(
    gpulets: Gpulet[][],
    m: number,
    remainingPerS: number,
    interferenceCheck: boolean,
    lastResort = false,
  ): number {
    const sloMs = this.cluster.models[m]!.sloMs;
    // Candidates: empty gpu-lets of at least p_req (per GPU profile) on GPUs that have the model and do not hold it
    // already.
    const candidates: { g: Gpulet; reqNominal: number }[] = [];
    for (const gpu of this.cluster.gpus) {
      if ((gpu.profileIndex[m] ?? -1) < 0) continue;
      const list = gpulets[gpu.index]!;
      if (list.some((x) => x.model === m)) continue;
      const reqNominal = this.requiredPartition(gpu, m, remainingPerS);
      for (const g of list)
        if (g.model < 0 && (lastResort || g.nominalPct >= reqNominal)) candidates.push({ g, reqNominal });
    }
    // Best fit: the smallest gpu-let (nominal size), lowest GPU index on ties. As a last resort
    // (overload repair) any empty gpu-let will do, the largest first.
    candidates.sort(
      (a, b) => (lastResort ? b.g.nominalPct - a.g.nominalPct : a.g.nominalPct - b.g.nominalPct) || a.g.gpu - b.g.gpu,
    );
    for (const { g, reqNominal } of candidates) {
      const gpu = this.cluster.gpus[g.gpu]!;
      const list = gpulets[g.gpu]!;
      // A whole GPU is split into p_req and the rest; a partial gpu-let is taken whole (at most two per GPU).
      const split = g.nominalPct === 100 && list.length === 1 && reqNominal < 100;
      const pct = split ? partitionPct(gpu, reqNominal) : g.pct;
      const sat = this.saturated(gpu, m, pct);
      let batch: number;
      let dutyMs: number;
      let servedPerS: number;
      if (sat.throughputPerS >= remainingPerS) {
        batch = this.residualBatch(gpu, m, pct, remainingPerS);
        const latencyMs = this.latencyMs(gpu, m, batch, pct);
        dutyMs = Math.max((batch * 1000) / remainingPerS, latencyMs);
        // A residual batch smaller than the saturated one may not keep up; the shortfall stays unserved here.
        servedPerS = Math.min(remainingPerS, (batch * 1000) / latencyMs);
      } else {
        batch = sat.batch;
        dutyMs = sat.latencyMs;
        servedPerS = sat.throughputPerS;
      }
      const self = { model: m, batch, pct };
      const neighbour = list.find((x) => x !== g && x.model >= 0);
      const onGpu = neighbour ? [self, { model: neighbour.model, batch: neighbour.batch, pct: neighbour.pct }] : [self];
      // The last resort shrinks the batch until the worker fits in memory.
      while (lastResort && self.batch > 1 && memoryOnGpu(gpu, onGpu) > gpu.memMb + 1e-6) self.batch--;
      if (self.batch !== batch) {
        batch = self.batch;
        servedPerS = Math.min(servedPerS, (batch * 1000) / this.latencyMs(gpu, m, batch, pct));
      }
      if (memoryOnGpu(gpu, onGpu) > gpu.memMb + 1e-6) continue;
      if (interferenceCheck && neighbour) {
        // The interference check: with the predicted interference, each gpu-let's batch must still
        // finish within the SLO after one duty cycle of waiting.
        const lat = predictOnGpu(gpu, onGpu).map((t) => t * this.latencyRatio);
        if (lat[0]! + dutyMs > sloMs + 1e-9) continue;
        if (lat[1]! + neighbour.dutyMs > this.cluster.models[neighbour.model]!.sloMs + 1e-9) continue;
      }
      if (split) {
        g.nominalPct = reqNominal;
        g.pct = pct;
        list.push(emptyGpulet(g.gpu, 100 - reqNominal, floorToUnit(gpu, 100 - pct)));
      }
      g.model = m;
      g.batch = batch;
      g.dutyMs = dutyMs;
      g.servedPerS = servedPerS;
      return servedPerS;
    }
    return -1;
  }

  /**
   * The deployment for a rate vector. Overload (the cluster's GPUs cannot hold every model's rate):
   * Gpulet would add GPUs; here it gives what it can. If that leaves a model with traffic without
   * any gpu-let, the plan is redone giving every model its first gpu-let before any model its
   * second; a model still without one is placed, as a last resort, in the largest empty gpu-let
   * that fits in memory, whatever its size, ignoring the interference check. With no such gpu-let
   * it stays unplaced.
   */
  plan(ratePerS: readonly number[]): Deployment {
    const hasTraffic = (i: number) => (ratePerS[i] ?? 0) > 0;
    const unplaced = (gl: Gpulet[][]) =>
      this.cluster.models.filter((m) => hasTraffic(m.index) && !gl.some((l) => l.some((g) => g.model === m.index)));
    let gpulets = this.elasticPartitioning(ratePerS, false);
    if (unplaced(gpulets).length > 0) {
      gpulets = this.elasticPartitioning(ratePerS, true);
      for (const m of unplaced(gpulets)) this.allocateOne(gpulets, m.index, ratePerS[m.index]!, false, true);
    }
    const placements: Placement[] = [];
    for (const list of gpulets) {
      for (const g of list) {
        if (g.model < 0) continue;
        placements.push({
          model: g.model,
          gpu: g.gpu,
          pct: g.pct,
          batch: g.batch,
          timeoutMs: this.cluster.models[g.model]!.sloMs / 2,
        });
      }
    }
    placements.sort((a, b) => a.gpu - b.gpu || a.model - b.model);
    return { placements };
  }
}

function emptyGpulet(gpu: number, nominalPct: number, pct: number): Gpulet {
  return { gpu, nominalPct, pct, model: -1, batch: 0, dutyMs: 0, servedPerS: 0 };
}

/** Gpulet re-plans when a rate moved by the fraction, or when a model's traffic started or stopped. */
const GPULET_REPLAN: ReplanGate = {
  fraction: GPULET_RATE_CHANGE_FRACTION,
  floorPerS: GPULET_RATE_FLOOR_PER_S,
  onStartStop: true,
};

class GpuletPolicy implements Policy {
  readonly name = 'gpulet';
  private readonly planner: GpuletPlanner;
  private lastRates: readonly number[] | null = null;
  private lastPlan: Deployment = { placements: [] };

  constructor(private readonly cluster: ClusterInfo) {
    this.planner = new GpuletPlanner(cluster);
  }

  decide(obs: Observation): Deployment {
    const rates = this.cluster.models.map((m) => Math.max(0, obs.ratePerS[m.index] ?? 0));
    if (this.lastRates !== null && !ratesMoved(this.lastRates, rates, GPULET_REPLAN)) return this.lastPlan;
    const plan = alignToCurrent(this.cluster, this.planner.plan(rates), obs.current);
    const problem = deploymentProblem(this.cluster, plan);
    // Cannot happen by construction (memory and shares are checked as gpu-lets are made); keep the
    // previous plan rather than emit an invalid one.
    if (problem !== null) return this.lastPlan;
    this.lastRates = rates;
    this.lastPlan = plan;
    return plan;
  }
}

export const gpuletFactory: PolicyFactory = {
  name: 'gpulet',
  description:
    'Gpulet (ATC 2022): at most two gpu-lets per GPU from 20/40/50/60/80/100%, elastic partitioning by rate with ' +
    'the most efficient partition, best fit with an interference check, batch 2*L(b) <= SLO, timeout SLO/2',
  supports: runsAnywhere,
  create(cluster: ClusterInfo, _options: PolicyOptions): Policy {
    return new GpuletPolicy(cluster);
  },
};

// iGniter (Xu et al., IEEE TPDS 2023; github.com/icloud-ecnu/igniter, i-Gniter/Algorithm/igniter-algorithm.py),
// the InSS paper's third baseline (section 6.1): a closed-form batch size and minimum GPU share per
// model from the latency model and the arrival rate, then an interference-aware greedy placement.
// docs/policies/igniter.md lists every choice the source leaves open.
//
// The steps, as in the reference implementation's `algorithm()`:
//  1. SLO split: iGniter budgets SLO/2 for the batch to fill and SLO/2 for its inference.
//  2. Batch: b = ceil((SLO/2) * r * B / (B + p_d * r)), the batch that fills at rate r, its upload
//     included, within SLO/2.
//  3. Lower bound of resources r_lower: the smallest share (in MPS units) at which the batch's
//     predicted solo inference latency t_inf is within SLO/2 (the source inverts its fitted
//     active-time curve in closed form; our running time is an LWR, so we invert it by scanning
//     the share levels, which yields the same "smallest unit multiple" answer).
//  4. Placement: models by r_lower, largest first; each goes to the used GPU where the predicted
//     interference is smallest: the newcomer is added at r_lower and every co-located model whose
//     predicted t_inf exceeds its SLO/2 gets one more MPS unit, round after round, until all fit or
//     the GPU is over 100%; the cost is the share added on that GPU. None fits: open a new GPU.
// Pure: the only state is the last plan and the rates it was made for (re-provisioning hysteresis).
import { BDA_MAX_BATCH } from '../bda.js';
import { type ReplanGate, ratesMoved } from '../replan.js';
import { alignToCurrent, deploymentProblem, memoryOnGpu, predictOnGpu, shareLevels } from '../util.js';
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

/** Re-provision when some model's rate moved by more than this fraction of the rate last provisioned for. */
export const IGNITER_RATE_CHANGE_FRACTION = 0.1;
/** Rates below this (tasks/s) count as this much when measuring a change, so near-idle models do not flap. */
export const IGNITER_RATE_FLOOR_PER_S = 1;
const IGNITER_REPLAN: ReplanGate = { fraction: IGNITER_RATE_CHANGE_FRACTION, floorPerS: IGNITER_RATE_FLOOR_PER_S };

/** iGniter's per-model, per-GPU-profile demand (steps 1-3). */
export interface IgniterDemand {
  readonly model: number;
  /** Per GPU (cluster index): the batch size, or 0 where the GPU's profile lacks the model. */
  readonly batchByGpu: readonly number[];
  /**
   * Per GPU: r_lower in %, a share level of that GPU; 100 where even the whole GPU misses SLO/2. NaN where the profile
   * lacks the model.
   */
  readonly lowerPctByGpu: readonly number[];
  /** Per GPU: true when even 100% misses SLO/2 (the source aborts with "workload is too large!"). */
  readonly tooLargeByGpu: readonly boolean[];
}

/** Solo t_inf (ms) of one model at a batch and share on a GPU. */
function soloTInfMs(gpu: GpuInfo, model: number, batch: number, pct: number): number {
  return predictOnGpu(gpu, [{ model, batch, pct }])[0]!;
}

/**
 * Steps 1-3 for every model on every GPU profile: iGniter's batch b = ceil(SLO/2 * r * B / (B + p_d r))
 * (r in tasks/ms, B in bytes/ms, p_d in bytes; at least 1, at most the profiled 32) and r_lower, the
 * smallest share level with solo t_inf(b, share) <= SLO/2.
 */
export function igniterDemands(cluster: ClusterInfo, ratePerS: readonly number[]): IgniterDemand[] {
  const cache = new Map<string, { batch: number; lowerPct: number; tooLarge: boolean }>();
  return cluster.models.map((m) => {
    const batchByGpu: number[] = [];
    const lowerPctByGpu: number[] = [];
    const tooLargeByGpu: boolean[] = [];
    for (const gpu of cluster.gpus) {
      const pIdx = gpu.profileIndex[m.index] ?? -1;
      if (pIdx < 0) {
        batchByGpu.push(0);
        lowerPctByGpu.push(Number.NaN);
        tooLargeByGpu.push(true);
        continue;
      }
      const key = `${gpu.profileId}/${m.index}`;
      let d = cache.get(key);
      if (!d) {
        const sloHalfMs = m.sloMs / 2;
        const ratePerMs = Math.max(0, ratePerS[m.index] ?? 0) / 1000;
        const bandwidthBytesPerMs = gpu.model.profile.gpu.pcieBytesPerMs;
        const inputBytes = gpu.model.profile.models[m.profileModel ?? m.name]!.inputBytes;
        const exact = (sloHalfMs * ratePerMs * bandwidthBytesPerMs) / (bandwidthBytesPerMs + inputBytes * ratePerMs);
        // 1e-9 guards ceil against a product like 4.000000000001 from floating point.
        const batch = Math.min(BDA_MAX_BATCH, Math.max(1, Math.ceil(exact - 1e-9)));
        let lowerPct = 100;
        let tooLarge = true;
        for (const pct of shareLevels(gpu)) {
          if (soloTInfMs(gpu, m.index, batch, pct) <= sloHalfMs) {
            lowerPct = pct;
            tooLarge = false;
            break;
          }
        }
        d = { batch, lowerPct, tooLarge };
        cache.set(key, d);
      }
      batchByGpu.push(d.batch);
      lowerPctByGpu.push(d.lowerPct);
      tooLargeByGpu.push(d.tooLarge);
    }
    return { model: m.index, batchByGpu, lowerPctByGpu, tooLargeByGpu };
  });
}

interface Slot {
  model: number;
  pct: number;
  batch: number;
}

/** Next share level above `pct` on this GPU (one MPS unit more, or 100 past the last unit multiple). */
function nextLevel(levels: readonly number[], pct: number): number {
  for (const l of levels) if (l > pct + 1e-9) return l;
  return Number.POSITIVE_INFINITY;
}

const sumPct = (slots: readonly Slot[]): number => slots.reduce((s, x) => s + x.pct, 0);

/**
 * The source's `alloc_gpus`: the newcomer joins at r_lower; while the GPU is within 100%, every model
 * whose predicted t_inf (with interference) exceeds its SLO/2 gets one more MPS unit. Returns the
 * adjusted slots, or null when the GPU ends over 100% or out of memory.
 */
function tryAllocate(cluster: ClusterInfo, gpu: GpuInfo, slots: readonly Slot[], newcomer: Slot): Slot[] | null {
  const next = [...slots.map((s) => ({ ...s })), { ...newcomer }];
  if (memoryOnGpu(gpu, next) > gpu.memMb + 1e-6) return null;
  const levels = shareLevels(gpu);
  let raised = true;
  while (sumPct(next) <= 100 + 1e-9 && raised) {
    raised = false;
    const tInfMs = predictOnGpu(gpu, next);
    next.forEach((s, k) => {
      if (tInfMs[k]! > cluster.models[s.model]!.sloMs / 2) {
        s.pct = nextLevel(levels, s.pct);
        raised = true;
      }
    });
  }
  return sumPct(next) <= 100 + 1e-9 ? next : null;
}

/**
 * The whole provisioning plan for one rate vector (steps 1-4), within the cluster's GPUs.
 *
 * Out of GPUs (iGniter would rent another): a model that fits no GPU is placed, after all the others,
 * on the GPU with the most unallocated share where it fits in memory, with min(r_lower, free share);
 * a GPU where that keeps every model already there within its SLO/2 is preferred. It will likely
 * miss its own SLO. With no free MPS unit or memory anywhere it stays unplaced.
 */
export function igniterPlan(cluster: ClusterInfo, ratePerS: readonly number[]): Deployment {
  const demands = igniterDemands(cluster, ratePerS);
  const gpus = cluster.gpus;
  // Sort key: r_lower averaged over the GPUs whose profile has the model (= r_lower on a homogeneous cluster).
  const demandPct = demands.map((d) => {
    const v = d.lowerPctByGpu.filter((x) => !Number.isNaN(x));
    return v.length === 0 ? -1 : v.reduce((a, b) => a + b, 0) / v.length;
  });
  const order = demands
    .map((d) => d.model)
    .filter((i) => demandPct[i]! >= 0)
    .sort((a, b) => demandPct[b]! - demandPct[a]! || a - b);
  const slots: Slot[][] = gpus.map(() => []);
  const overflow: number[] = [];
  for (const i of order) {
    const d = demands[i]!;
    let bestGpu = -1;
    let bestSlots: Slot[] | null = null;
    let bestExtraPct = Number.POSITIVE_INFINITY;
    for (const gpu of gpus) {
      const j = gpu.index;
      if (slots[j]!.length === 0 || Number.isNaN(d.lowerPctByGpu[j]!)) continue;
      const after = tryAllocate(cluster, gpu, slots[j]!, {
        model: i,
        pct: d.lowerPctByGpu[j]!,
        batch: d.batchByGpu[j]!,
      });
      if (!after) continue;
      const extraPct = sumPct(after) - sumPct(slots[j]!); // r_lower plus the interference it causes
      if (extraPct < bestExtraPct - 1e-9) {
        bestGpu = j;
        bestSlots = after;
        bestExtraPct = extraPct;
      }
    }
    if (bestSlots) {
      slots[bestGpu] = bestSlots;
      continue;
    }
    // Open a new GPU: the unused one where this model's r_lower is smallest (lowest index on ties).
    let fresh = -1;
    for (const gpu of gpus) {
      const j = gpu.index;
      if (slots[j]!.length > 0 || Number.isNaN(d.lowerPctByGpu[j]!)) continue;
      if (memoryOnGpu(gpu, [{ model: i, batch: d.batchByGpu[j]! }]) > gpu.memMb + 1e-6) continue;
      if (fresh < 0 || d.lowerPctByGpu[j]! < d.lowerPctByGpu[fresh]! - 1e-9) fresh = j;
    }
    if (fresh >= 0) slots[fresh] = [{ model: i, pct: d.lowerPctByGpu[fresh]!, batch: d.batchByGpu[fresh]! }];
    else overflow.push(i);
  }
  for (const i of overflow) {
    const d = demands[i]!;
    let best: { j: number; slot: Slot; protects: boolean; freePct: number } | null = null;
    for (const gpu of gpus) {
      const j = gpu.index;
      if (Number.isNaN(d.lowerPctByGpu[j]!)) continue;
      const freePct = 100 - sumPct(slots[j]!);
      const fitting = shareLevels(gpu).filter((l) => l <= freePct + 1e-9);
      if (fitting.length === 0) continue;
      const pct = Math.min(d.lowerPctByGpu[j]!, fitting[fitting.length - 1]!);
      const slot = { model: i, pct, batch: d.batchByGpu[j]! };
      const after = [...slots[j]!, slot];
      if (memoryOnGpu(gpu, after) > gpu.memMb + 1e-6) continue;
      const tInfMs = predictOnGpu(gpu, after);
      const protects = slots[j]!.every((s, k) => tInfMs[k]! <= cluster.models[s.model]!.sloMs / 2);
      const better =
        !best || (protects && !best.protects) || (protects === best.protects && freePct > best.freePct + 1e-9);
      if (better) best = { j, slot, protects, freePct };
    }
    if (best) slots[best.j]!.push(best.slot);
  }
  const placements: Placement[] = [];
  slots.forEach((list, j) => {
    for (const s of [...list].sort((a, b) => a.model - b.model)) {
      // timeoutMs: the queueing half of iGniter's SLO split (see docs/policies/igniter.md).
      placements.push({
        model: s.model,
        gpu: j,
        pct: s.pct,
        batch: s.batch,
        timeoutMs: cluster.models[s.model]!.sloMs / 2,
      });
    }
  });
  return { placements };
}

class IgniterPolicy implements Policy {
  readonly name = 'igniter';
  private provisionedFor: number[] | null = null;
  private plan: Deployment = { placements: [] };

  constructor(private readonly cluster: ClusterInfo) {}

  decide(obs: Observation): Deployment {
    const rates = obs.ratePerS.map((r) => (Number.isFinite(r) && r > 0 ? r : 0));
    if (this.provisionedFor === null || ratesMoved(this.provisionedFor, rates, IGNITER_REPLAN)) {
      const fresh = alignToCurrent(this.cluster, igniterPlan(this.cluster, rates), obs.current);
      // Every emitted deployment must be valid; igniterPlan only builds valid ones, this keeps the contract explicit.
      if (deploymentProblem(this.cluster, fresh) === null) {
        this.plan = fresh;
        this.provisionedFor = rates;
      }
    }
    return this.plan;
  }
}

export const igniterFactory: PolicyFactory = {
  name: 'igniter',
  description:
    'iGniter (TPDS 2023): closed-form batch (fills within SLO/2) and minimum MPS share (t_inf <= SLO/2) per model, ' +
    'interference-aware greedy placement; re-provisions when a rate moves >10%',
  supports: runsAnywhere,
  create(cluster: ClusterInfo, _options: PolicyOptions): Policy {
    return new IgniterPolicy(cluster);
  },
};

// The MDP of paper section 5.2 for the GPU-provisioning layer of TS:
// - state s_t = {M_t, W_t}: memory used per GPU by the previous action (u_k / M_k), and per model
//   the arrival rate lambda_i and the queued work G_i (scaled, see `encodeState`);
// - action a_t = {y_ik, rho_ik}: per model one discrete choice among (GPU k, share level u) pairs,
//   a "head" per model (the factorised encoding is our decision: the paper leaves it open);
// - reward by eq. (3): r_t = sum_i (h_i / H_i - omega * v_i), omega = 100.
// Every action becomes a feasible deployment by `decodeAction`'s documented repair (docs/inss.md):
// shares on a GPU at most 100%, memory fits, each model placed exactly once.
// Pure: no clock, no I/O.
import { throughputPerS } from '../src/model/latency.js';
import { bda, bdaInput, type BdaOptions } from '../src/policy/bda.js';
import type { ClusterInfo, Deployment, GpuInfo, Placement } from '../src/policy/types.js';
import { shareLevels } from '../src/policy/util.js';

export const OMEGA = 100;

/** One option of a model's head: a GPU and a share (an MPS percentage that is a multiple of the GPU's unit). */
export interface ActionOption {
  readonly gpu: number;
  readonly pct: number;
}

/** The action space of a cluster: the same options for every model head. */
export interface ActionSpace {
  readonly options: readonly ActionOption[];
  readonly heads: number;
}

/**
 * Options per head: for every GPU, every share level from one unit up to `maxPct` (a model alone on a
 * GPU gains little past the point where it saturates, and capping keeps the head small).
 */
export function actionSpace(cluster: ClusterInfo, maxPct = 100): ActionSpace {
  const options: ActionOption[] = [];
  for (const gpu of cluster.gpus)
    for (const pct of shareLevels(gpu)) if (pct <= maxPct + 1e-9) options.push({ gpu: gpu.index, pct });
  return { options, heads: cluster.models.length };
}

/** H_i: throughput of model i at 100% of a GPU at batch 1 (the reward's normaliser), on the fastest GPU type. */
export function referenceThroughput(cluster: ClusterInfo): number[] {
  return cluster.models.map((m) => {
    let best = 0;
    for (const gpu of cluster.gpus) {
      const idx = gpu.profileIndex[m.index]!;
      if (idx < 0) continue;
      const out = [0];
      gpu.model.predictGpu([idx], [1], [100], 1, out);
      best = Math.max(best, throughputPerS(1, out[0]!));
    }
    return best;
  });
}

export function stateDim(cluster: ClusterInfo): number {
  return cluster.gpus.length + 2 * cluster.models.length;
}

/**
 * The state vector: u_k / M_k per GPU, then lambda_i / H_i and G_i / (H_i * 1 s) per model. Scaling
 * by H_i keeps every entry near [0, 1] whatever the model; the agent also normalises online.
 */
export function encodeState<T extends Float32Array>(
  cluster: ClusterInfo,
  refPerS: readonly number[],
  memUsedMb: readonly number[],
  ratePerS: readonly number[],
  queued: readonly number[],
  out: T = new Float32Array(stateDim(cluster)) as T,
): T {
  let k = 0;
  cluster.gpus.forEach((g, i) => (out[k++] = memUsedMb[i]! / g.memMb));
  cluster.models.forEach((_, i) => (out[k++] = ratePerS[i]! / refPerS[i]!));
  cluster.models.forEach((_, i) => (out[k++] = queued[i]! / refPerS[i]!));
  return out;
}

/** Memory used per GPU by a deployment (the state's M_t). */
export function memoryUsed(cluster: ClusterInfo, d: Deployment): number[] {
  const mem = new Array<number>(cluster.gpus.length).fill(0);
  for (const p of d.placements) {
    const g = cluster.gpus[p.gpu]!;
    mem[p.gpu]! += g.model.memoryMb(g.profileIndex[p.model]!, p.batch);
  }
  return mem;
}

/**
 * Options a model may never take: a GPU whose profile lacks the model, or whose memory cannot hold
 * it even alone at batch 1. Used as the agent's action mask (1 = allowed).
 */
export function staticMasks(cluster: ClusterInfo, space: ActionSpace): Uint8Array[] {
  return cluster.models.map((m) =>
    Uint8Array.from(space.options, (o) => {
      const g = cluster.gpus[o.gpu]!;
      const idx = g.profileIndex[m.index]!;
      return idx >= 0 && g.model.memoryMb(idx, 1) <= g.memMb ? 1 : 0;
    }),
  );
}

/**
 * Turns one option per model into a feasible placement (batch 1; BDA sets batches). Repair, in order:
 * 1. memory: while a GPU cannot hold its models at batch 1, the model with the largest footprint
 *    there moves to the GPU with the most free memory that holds it (keeping its share, capped to
 *    what is left there);
 * 2. shares: on a GPU whose shares sum past 100%, every share is scaled by 100 / sum and floored to
 *    the GPU's unit (at least one unit); if one unit each is still too much, the GPU cannot host
 *    them all and the smallest-share models move as in 1.
 * Returns the placements and how many models the repair touched (for diagnostics).
 */
export function decodeAction(
  cluster: ClusterInfo,
  space: ActionSpace,
  action: ArrayLike<number>,
): { placements: Placement[]; repaired: number } {
  const gpuOf = new Int32Array(cluster.models.length);
  const pctOf = new Float64Array(cluster.models.length);
  for (let i = 0; i < cluster.models.length; i++) {
    const o = space.options[action[i]!]!;
    gpuOf[i] = o.gpu;
    pctOf[i] = o.pct;
  }
  const touched = new Set<number>();
  const memOf = (i: number, g: number) => cluster.gpus[g]!.model.memoryMb(cluster.gpus[g]!.profileIndex[i]!, 1);
  const modelsOn = (g: number) => [...gpuOf.keys()].filter((i) => gpuOf[i] === g);
  const freeMem = (g: number) => cluster.gpus[g]!.memMb - modelsOn(g).reduce((s, i) => s + memOf(i, g), 0);
  const unitsFree = (gpu: GpuInfo) => 100 - modelsOn(gpu.index).reduce((s, i) => s + pctOf[i]!, 0);
  const relocate = (i: number): void => {
    const from = gpuOf[i]!;
    let best = -1;
    let bestFree = -Infinity;
    for (const gpu of cluster.gpus) {
      if (gpu.index === from || gpu.profileIndex[i]! < 0) continue;
      const f = freeMem(gpu.index) - memOf(i, gpu.index);
      if (f >= 0 && unitsFree(gpu) >= gpu.mpsUnitPct - 1e-9 && f > bestFree) {
        best = gpu.index;
        bestFree = f;
      }
    }
    if (best < 0) return; // nowhere to go: stays, and the share repair below squeezes it in
    gpuOf[i] = best;
    const gpu = cluster.gpus[best]!;
    const room = unitsFree(gpu) + 0; // its own share is not counted yet on the new GPU
    pctOf[i] = Math.max(gpu.mpsUnitPct, Math.min(pctOf[i]!, Math.floor(room / gpu.mpsUnitPct + 1e-9) * gpu.mpsUnitPct));
    touched.add(i);
  };
  // 1. memory
  for (const gpu of cluster.gpus) {
    let guard = cluster.models.length;
    while (freeMem(gpu.index) < 0 && guard-- > 0) {
      const on = modelsOn(gpu.index).sort((a, b) => memOf(b, gpu.index) - memOf(a, gpu.index));
      const before = gpuOf[on[0]!];
      relocate(on[0]!);
      if (gpuOf[on[0]!] === before) break;
    }
  }
  // 2. shares
  for (const gpu of cluster.gpus) {
    let on = modelsOn(gpu.index);
    const unit = gpu.mpsUnitPct;
    while (on.length * unit > 100 + 1e-9) {
      const smallest = on.sort((a, b) => pctOf[a]! - pctOf[b]!)[0]!;
      const before = gpuOf[smallest];
      relocate(smallest);
      if (gpuOf[smallest] === before) break;
      on = modelsOn(gpu.index);
    }
    const sum = on.reduce((s, i) => s + pctOf[i]!, 0);
    if (sum > 100 + 1e-9) {
      for (const i of on) {
        pctOf[i] = Math.max(unit, Math.floor((pctOf[i]! * 100) / sum / unit + 1e-9) * unit);
        touched.add(i);
      }
      // Flooring to units keeps the sum <= 100 unless the one-unit minimum pushed it over: trim the largest.
      let total = on.reduce((s, i) => s + pctOf[i]!, 0);
      while (total > 100 + 1e-9) {
        const largest = on.sort((a, b) => pctOf[b]! - pctOf[a]!)[0]!;
        if (pctOf[largest]! <= unit) break;
        pctOf[largest] = pctOf[largest]! - unit;
        total -= unit;
      }
    }
  }
  const placements: Placement[] = cluster.models.map((m) => ({
    model: m.index,
    gpu: gpuOf[m.index]!,
    pct: Math.round(pctOf[m.index]! * 1e6) / 1e6,
    batch: 1,
  }));
  return { placements, repaired: touched.size };
}

export interface ScoreOptions extends BdaOptions {
  /**
   * Credit a model's capacity in the reward only up to this multiple of its rate (beyond the paper,
   * for the `inss` refinement; absent: eq. (3) as it is, uncapped). With eq. (3)'s uncapped h_i a
   * search gains as much by adding capacity to a model that has plenty as to one near its limit.
   */
  readonly capacityCreditX?: number;
}

export interface StepOutcome {
  readonly deployment: Deployment;
  /** eq. (3) */
  readonly reward: number;
  /** h_i: predicted throughput (capacity) per model at the batch BDA chose, tasks/s. */
  readonly capacityPerS: number[];
  /** v_i: predicted fraction of model i's tasks that miss the SLO. */
  readonly violation: number[];
  readonly bdaOk: boolean;
}

/**
 * Each placement's part of its model's arrival rate: a model with one placement carries its whole
 * rate; replicas of a model (beyond the paper: one queue, several workers on distinct GPUs, each
 * free worker taking the next batch) split it in proportion to their predicted throughput at batch
 * 1 with their co-located workers, which is how the shared queue feeds them.
 */
export function replicaWeights(cluster: ClusterInfo, placements: readonly Placement[], interference = true): number[] {
  const count = new Array<number>(cluster.models.length).fill(0);
  for (const p of placements) count[p.model]!++;
  if (placements.every((p) => count[p.model] === 1)) return placements.map(() => 1);
  // Each replica's t_inf at batch 1 beside its GPU's other workers (their shares, in placement order).
  const byGpu = new Map<number, number[]>();
  for (let i = 0; i < placements.length; i++) {
    const on = byGpu.get(placements[i]!.gpu);
    if (on) on.push(i);
    else byGpu.set(placements[i]!.gpu, [i]);
  }
  const thr = new Array<number>(placements.length).fill(0);
  const { models, pcts } = weightScratch;
  for (const [g, on] of byGpu) {
    if (on.every((i) => count[placements[i]!.model] === 1)) continue;
    const gpu = cluster.gpus[g]!;
    on.forEach((i, k) => {
      models[k] = gpu.profileIndex[placements[i]!.model]!;
      pcts[k] = placements[i]!.pct;
    });
    on.forEach((i, k) => {
      if (count[placements[i]!.model]! > 1)
        thr[i] = throughputPerS(1, gpu.model.predictOne(models, pcts, on.length, k, 1, interference));
    });
  }
  const total = new Array<number>(cluster.models.length).fill(0);
  placements.forEach((p, i) => (total[p.model]! += thr[i]!));
  return placements.map((p, i) =>
    count[p.model] === 1 ? 1 : total[p.model]! > 0 ? thr[i]! / total[p.model]! : 1 / count[p.model]!,
  );
}

/** replicaWeights' prediction inputs, reused (predictOne keeps none). */
const weightScratch = { models: [] as number[], pcts: [] as number[] };

/**
 * Per cluster, whether a (model, GPU, share) meets its SLO at batch 1 alone at rate 0: a pure function of
 * them, asked often.
 */
const sloAloneMemo = new WeakMap<ClusterInfo, Map<string, Map<number, boolean>>>();

function meetsSloAlone(cluster: ClusterInfo, p: Placement, options: BdaOptions): boolean {
  let byOptions = sloAloneMemo.get(cluster);
  if (!byOptions) sloAloneMemo.set(cluster, (byOptions = new Map<string, Map<number, boolean>>()));
  const optionsKey = `${options.sloFraction ?? 1}|${options.interference ?? true}|${options.onThroughputShort ?? ''}`;
  let memo = byOptions.get(optionsKey);
  if (!memo) byOptions.set(optionsKey, (memo = new Map<number, boolean>()));
  const key = (Math.round(p.pct * 1e4) * 4096 + p.gpu) * 4096 + p.model;
  let ok = memo.get(key);
  if (ok === undefined) {
    ok = bda(cluster.gpus, [bdaInput(cluster, p, 0)], options).feasible[0] ?? false;
    memo.set(key, ok);
  }
  return ok;
}

/**
 * Applies BDA to placements and scores them by eq. (3) with the latency model (the fast training
 * environment). v_i is predicted: 1 where no batch meets the SLO even at batch 1 or memory does not
 * fit, else the fraction of the arrival rate the capacity cannot carry, max(0, 1 - h_i / lambda_i).
 * A model with replicas (several placements) gets one term: h_i sums its replicas' throughput, each
 * replica carries its part of the rate (`replicaWeights`), and a replica that misses the SLO even at
 * batch 1 counts its part of the rate as missed.
 */
export function scorePlacements(
  cluster: ClusterInfo,
  refPerS: readonly number[],
  placements: readonly Placement[],
  ratePerS: readonly number[],
  options: ScoreOptions = {},
): StepOutcome {
  const weights = replicaWeights(cluster, placements, options.interference ?? true);
  const inputs = placements.map((p, i) => bdaInput(cluster, p, ratePerS[p.model]! * weights[i]!));
  const r = bda(cluster.gpus, inputs, options);
  const deployment: Deployment = { placements: placements.map((p, i) => ({ ...p, batch: r.batches[i]! })) };
  const capacity = new Array<number>(cluster.models.length).fill(0);
  const violation = new Array<number>(cluster.models.length).fill(0);
  // BDA's t_inf at each chosen batch (a worker's t_inf depends on its neighbours' shares, not their batches).
  placements.forEach((p, i) => (capacity[p.model]! += throughputPerS(r.batches[i]!, r.tInfMs[i]!)));
  const latencyMissed = new Array<number>(cluster.models.length).fill(0);
  placements.forEach((p, i) => {
    const m = p.model;
    const rate = ratePerS[m]!;
    if (r.feasible[i] || rate <= 0) return;
    // Infeasible at every batch: the worst task misses at batch 1, or capacity falls short.
    violation[m] = Math.max(violation[m]!, Math.max(0, 1 - capacity[m]! / rate));
    if (!meetsSloAlone(cluster, p, options)) latencyMissed[m]! += weights[i]!;
  });
  let reward = 0;
  const counted = new Array<boolean>(cluster.models.length).fill(false);
  for (const p of placements) {
    const m = p.model;
    if (counted[m]) continue;
    counted[m] = true;
    violation[m] = Math.min(1, Math.max(violation[m]!, latencyMissed[m]!));
    const credit =
      options.capacityCreditX === undefined
        ? capacity[m]!
        : Math.min(capacity[m]!, options.capacityCreditX * ratePerS[m]!);
    reward += credit / refPerS[m]! - OMEGA * violation[m];
  }
  return { deployment, reward, capacityPerS: capacity, violation, bdaOk: r.ok };
}

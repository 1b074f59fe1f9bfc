// BDA, the binary-search batch decision (paper section 5.3, Algorithm 1). Given placements and
// shares, it picks each worker's batch size in 1..32 against memory (4a), task latency by eq. (2)
// (4b) and throughput at least the arrival rate (4c), and says whether every model got one.
//
// Two readings of Algorithm 1 are settled here (docs/bda.md):
// - The pseudo-code sets flag_i on line 7 (a constraint failed) but the text says flag_i becomes
//   true when all constraints hold (line 9). We follow the text: flag_i means "a feasible batch was found".
// - Line 10 stops the search when (4a) and (4b) hold but (4c) does not. Throughput rises with the
//   batch, so a larger batch may still meet all three; `onThroughputShort: 'search-up'` (the
//   default) searches upward instead, `'break'` is the literal algorithm.
// A model whose cost depends on the input and is batched against its tail (`BdaInput.plan`,
// src/model/costDistribution.ts) is checked with its batch time's quantile in (4b) and its mean in (4c):
// a batch of b padded to its longest sample takes t_inf(b) times the max of b draws (docs/bda.md).
import { type CostPlan, planFactor } from '../model/costDistribution.js';
import { taskLatencyMs, throughputPerS } from '../model/latency.js';
import type { ClusterInfo, GpuInfo, Placement } from './types.js';

export const BDA_MIN_BATCH = 1;
export const BDA_MAX_BATCH = 32;

export interface BdaOptions {
  readonly onThroughputShort?: 'search-up' | 'break';
  /** Ignore interference when predicting (what `inss-ni` decides with). */
  readonly interference?: boolean;
  /** Batch a worker starts with before BDA sets it (line 1: "b_i = default"). */
  readonly defaultBatch?: number;
  /** Plan (4b) against this fraction of each SLO (1 = the paper), leaving room for prediction error. */
  readonly sloFraction?: number;
}

export interface BdaResult {
  /** Batch size per placement, in the order given. */
  readonly batches: number[];
  /** Per placement: a batch meeting (4a)-(4c) was found. */
  readonly feasible: boolean[];
  /** All placements feasible (Algorithm 1's returned flag). */
  readonly ok: boolean;
  /** Per placement: the predicted t_inf (ms) at the batch returned (its mean over the cost plan's draws). */
  readonly tInfMs: number[];
}

/** One GPU's workers (indices into BDA's inputs, in order), their profile indices and shares. */
interface GpuGroup {
  readonly peers: number[];
  readonly models: number[];
  readonly pcts: number[];
}

/** What BDA needs to know about one worker: where it runs, its share, its SLO and the rate it must carry. */
export interface BdaInput {
  readonly placement: Pick<Placement, 'model' | 'gpu' | 'pct'>;
  readonly sloMs: number;
  readonly ratePerS: number;
  /** The model's cost plan (ServedModel.cost.plan); absent: every sample costs the profile's. */
  readonly plan?: CostPlan;
}

/** BDA's input for a placement of a served model carrying `ratePerS`: its SLO and cost plan from the cluster. */
export function bdaInput(
  cluster: ClusterInfo,
  placement: Pick<Placement, 'model' | 'gpu' | 'pct'>,
  ratePerS: number,
): BdaInput {
  const m = cluster.models[placement.model]!;
  const plan = m.cost?.plan;
  return plan ? { placement, sloMs: m.sloMs, ratePerS, plan } : { placement, sloMs: m.sloMs, ratePerS };
}

/**
 * Worst-case latency of a task under eq. (2) at batch b in steady state: the first task of a batch
 * (W = 1) waits for b - 1 more arrivals or for the batch now on the GPU (at most one t_inf),
 * whichever is longer, then its own batch runs.
 */
export function worstTaskLatencyMs(batch: number, tInfMs: number, ratePerS: number): number {
  return taskLatencyMs({ queuedTasks: 0, batch, tInfMs, execRemainingMs: tInfMs, ratePerS });
}

/**
 * Runs Algorithm 1 over `inputs` (one per worker). Interference depends on the co-located models'
 * shares, not on their batches, so each worker's t_inf is independent of the batches chosen for the
 * others; memory (4a) uses the batches already chosen for earlier workers on the GPU and the default
 * for later ones.
 */
export function bda(gpus: readonly GpuInfo[], inputs: readonly BdaInput[], options: BdaOptions = {}): BdaResult {
  const mode = options.onThroughputShort ?? 'search-up';
  const interference = options.interference ?? true;
  const defaultBatch = options.defaultBatch ?? 1;
  const sloFraction = options.sloFraction ?? 1;
  const n = inputs.length;
  const batches = new Array<number>(n).fill(defaultBatch);
  const feasible = new Array<boolean>(n).fill(false);
  const tInfMs = new Array<number>(n).fill(NaN);
  // Workers by GPU (in the order given), with their profile indices and shares: the co-location
  // each prediction needs. `self[i]`: worker i's position in its GPU's group.
  const byGpu = new Map<number, GpuGroup>();
  const self = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const p = inputs[i]!.placement;
    let group = byGpu.get(p.gpu);
    if (!group) byGpu.set(p.gpu, (group = { peers: [], models: [], pcts: [] }));
    self[i] = group.peers.length;
    group.peers.push(i);
    group.models.push(gpus[p.gpu]!.profileIndex[p.model]!);
    group.pcts.push(p.pct);
  }
  let ok = true;
  for (let i = 0; i < n; i++) {
    const inp = inputs[i]!;
    const gpu = gpus[inp.placement.gpu]!;
    const { peers, models, pcts } = byGpu.get(inp.placement.gpu)!;
    const k = self[i]!;
    const model = gpu.model;
    let memOthers = 0;
    for (let q = 0; q < peers.length; q++) if (q !== k) memOthers += model.memoryMb(models[q]!, batches[peers[q]!]!);
    const budgetMs = inp.sloMs * sloFraction;
    let minB = BDA_MIN_BATCH;
    let maxB = BDA_MAX_BATCH;
    while (minB <= maxB) {
      const mid = Math.floor((minB + maxB) / 2);
      const base = model.predictOne(models, pcts, peers.length, k, mid, interference);
      // Without a plan both are the profile's t_inf: the paper's algorithm to the last bit.
      const tailMs = inp.plan ? base * planFactor(inp.plan.latency, mid) : base;
      const tInf = inp.plan ? base * planFactor(inp.plan.throughput, mid) : base;
      const memOk = memOthers + model.memoryMb(models[k]!, mid) <= gpu.memMb; // (4a)
      const latOk = worstTaskLatencyMs(mid, tailMs, inp.ratePerS) <= budgetMs; // (4b)
      if (!memOk || !latOk) {
        maxB = mid - 1;
      } else if (throughputPerS(mid, tInf) >= inp.ratePerS) {
        batches[i] = mid; // (4c) holds too: feasible; look for a larger batch
        feasible[i] = true;
        tInfMs[i] = tInf;
        minB = mid + 1;
      } else if (mode === 'search-up') {
        minB = mid + 1;
      } else {
        break;
      }
    }
    if (!feasible[i]) {
      ok = false;
      const base = model.predictOne(models, pcts, peers.length, k, batches[i]!, interference);
      tInfMs[i] = inp.plan ? base * planFactor(inp.plan.throughput, batches[i]!) : base;
    }
  }
  return { batches, feasible, ok, tInfMs };
}

// The compiled latency model: a profile turned into flat tables so that one GPU's prediction is a
// few dozen arithmetic operations. The batch decision, the RL environment, the baselines and the
// simulator call `predictGpu` millions of times, so it allocates nothing.
//
// LWR is evaluated once per (batch, share) on a grid at compile time: every integer batch from 1 to
// `tableMaxBatch` and every share from 0.5% to 100% in steps of 0.5% (this covers the MPS allocation
// units of the GPUs we know: 2.5%, 6%, 7%). A share between grid points is interpolated linearly
// between its two neighbours; a batch beyond the table, or a share below 0.5%, is evaluated by LWR
// directly (slow but exact).
import type { Profile } from '../profile/schema.js';
import {
  execLatencyMs,
  feedbackMs,
  l2Utilisation,
  memoryMb,
  runningMs,
  schedInterferencePerKernelMs,
  schedulingMs,
  throughputPerS,
  uploadMs,
} from './latency.js';
import { type LwrPoint, lwrRunMs, toLwrPoints } from './lwr.js';

const PCT_STEPS_PER_UNIT = 2; // grid step 0.5%
const PCT_COLUMNS = 100 * PCT_STEPS_PER_UNIT + 1; // index 0 .. 200 <=> 0% .. 100%
export const TABLE_MAX_BATCH = 32;

/** One model placed on a GPU: its batch size and MPS active-thread percentage. */
export interface Placement {
  readonly model: string;
  readonly batch: number;
  readonly pct: number;
}

export interface PredictOptions {
  /** false ignores interference (no scheduling or cache term): what `inss-ni` decides with. */
  readonly interference?: boolean;
}

interface CompiledModel {
  readonly name: string;
  readonly transferPerItemMs: number; // (p_d + p_f) / B_k
  readonly schedSoloMs: number; // o_sch * n
  readonly kernels: number;
  readonly alphaU: number;
  readonly betaU: number;
  readonly alphaCache: number;
  readonly baseMb: number;
  readonly perBatchMb: number;
  readonly runTable: Float64Array; // o_r at (batch - 1) * PCT_COLUMNS + pct * 2
  readonly points: readonly LwrPoint[];
}

/** Expected problems with a placement, reported to the caller as values. */
export type PlacementCheck = { ok: true } | { ok: false; reason: string };

export class LatencyModel {
  readonly profile: Profile;
  readonly modelNames: readonly string[];
  private readonly models: readonly CompiledModel[];
  private readonly index: ReadonlyMap<string, number>;
  // Scratch space for predictGpu: L2 utilisation of each model on the GPU being predicted.
  private scratchL2 = new Float64Array(16);

  private constructor(profile: Profile, models: CompiledModel[]) {
    this.profile = profile;
    this.models = models;
    this.modelNames = models.map((m) => m.name);
    this.index = new Map(models.map((m, i) => [m.name, i]));
  }

  /** Builds the tables for every model of a validated profile (about 10 ms a model). */
  static compile(profile: Profile): LatencyModel {
    const gpu = profile.gpu;
    const models = Object.entries(profile.models).map(([name, m]): CompiledModel => {
      const points = toLwrPoints(m.runSamples);
      const runTable = new Float64Array(TABLE_MAX_BATCH * PCT_COLUMNS);
      for (let b = 1; b <= TABLE_MAX_BATCH; b++) {
        const row = (b - 1) * PCT_COLUMNS;
        for (let c = 1; c < PCT_COLUMNS; c++)
          runTable[row + c] = lwrRunMs(points, profile.lwr, b, c / PCT_STEPS_PER_UNIT);
        runTable[row] = runTable[row + 1]!; // never read for a valid share; keeps the row finite
      }
      return {
        name,
        transferPerItemMs:
          uploadMs(m.inputBytes, 1, gpu.pcieBytesPerMs) + feedbackMs(m.outputBytes, 1, gpu.pcieBytesPerMs),
        schedSoloMs: schedulingMs(m.schedPerKernelMs, 0, m.kernels),
        kernels: m.kernels,
        alphaU: m.l2.alphaU,
        betaU: m.l2.betaU,
        alphaCache: m.alphaCache,
        baseMb: m.memory.baseMb,
        perBatchMb: m.memory.perBatchMb,
        runTable,
        points,
      };
    });
    return new LatencyModel(profile, models);
  }

  /** Index of a model in this profile, or -1. */
  modelIndex(name: string): number {
    return this.index.get(name) ?? -1;
  }

  /** `o_r`: running time of a batch alone at a share, from the LWR (ms). */
  soloRunMs(model: number, batch: number, pct: number): number {
    const m = this.models[model]!;
    if (
      batch >= 1 &&
      batch <= TABLE_MAX_BATCH &&
      Number.isInteger(batch) &&
      pct >= 1 / PCT_STEPS_PER_UNIT &&
      pct <= 100
    ) {
      const x = pct * PCT_STEPS_PER_UNIT;
      const c = Math.floor(x);
      const row = (batch - 1) * PCT_COLUMNS;
      const lo = m.runTable[row + c]!;
      if (c === x) return lo;
      return lo + (x - c) * (m.runTable[row + c + 1]! - lo);
    }
    return lwrRunMs(m.points, this.profile.lwr, batch, pct);
  }

  /** `m_i(b)` in MB. */
  memoryMb(model: number, batch: number): number {
    const m = this.models[model]!;
    return memoryMb(m.baseMb, m.perBatchMb, batch);
  }

  /**
   * GPU execution latency `t_inf` of each of `n` models sharing one GPU (section 4.1), written to
   * `outLatencyMs[0..n)`. `models`, `batches` and `pcts` are parallel arrays; the caller has checked
   * them (`checkPlacement`). Allocation-free; safe to call from hot loops.
   */
  predictGpu(
    models: ArrayLike<number>,
    batches: ArrayLike<number>,
    pcts: ArrayLike<number>,
    n: number,
    outLatencyMs: Float64Array | number[],
    interference = true,
  ): void {
    const gpu = this.profile.gpu;
    const shared = interference && n > 1;
    if (this.scratchL2.length < n) this.scratchL2 = new Float64Array(n * 2);
    const l2 = this.scratchL2;
    let l2Sum = 0;
    if (shared) {
      for (let i = 0; i < n; i++) {
        const m = this.models[models[i]!]!;
        const l = l2Utilisation(m.alphaU, m.betaU, pcts[i]!);
        l2[i] = l;
        l2Sum += l;
      }
    }
    const interPerKernel = shared
      ? schedInterferencePerKernelMs(n, gpu.schedInterference.alphaSMs, gpu.schedInterference.betaSMs)
      : 0;
    for (let i = 0; i < n; i++)
      outLatencyMs[i] = this.colocatedMs(
        models[i]!,
        batches[i]!,
        pcts[i]!,
        l2Sum,
        shared ? l2[i]! : 0,
        shared,
        interPerKernel,
      );
  }

  /** One model's t_inf beside others whose L2 utilisations sum to `l2Sum` (its own, `selfL2`, included). */
  private colocatedMs(
    mi: number,
    batch: number,
    pct: number,
    l2Sum: number,
    selfL2: number,
    shared: boolean,
    interPerKernel: number,
  ): number {
    const m = this.models[mi]!;
    const solo = this.soloRunMs(mi, batch, pct);
    const run = runningMs(solo, m.alphaCache, l2Sum - selfL2, selfL2, this.profile.gpu.cacheSelfWeight, shared);
    const sched = m.schedSoloMs + interPerKernel * m.kernels;
    return execLatencyMs(m.transferPerItemMs * batch, sched, run, 0);
  }

  /**
   * `predictGpu`'s `t_inf` of the one model at `self`, run at `batch` (the others' batches do not
   * enter: interference depends on shares only). The same arithmetic in the same order, so the same
   * number to the last bit; for the batch decision's search, which asks one model at many batches.
   */
  predictOne(
    models: ArrayLike<number>,
    pcts: ArrayLike<number>,
    n: number,
    self: number,
    batch: number,
    interference = true,
  ): number {
    const gpu = this.profile.gpu;
    const shared = interference && n > 1;
    let l2Sum = 0;
    let selfL2 = 0;
    if (shared) {
      for (let i = 0; i < n; i++) {
        const m = this.models[models[i]!]!;
        const l = l2Utilisation(m.alphaU, m.betaU, pcts[i]!);
        if (i === self) selfL2 = l;
        l2Sum += l;
      }
    }
    const interPerKernel = shared
      ? schedInterferencePerKernelMs(n, gpu.schedInterference.alphaSMs, gpu.schedInterference.betaSMs)
      : 0;
    return this.colocatedMs(models[self]!, batch, pcts[self]!, l2Sum, selfL2, shared, interPerKernel);
  }

  /**
   * Checks a GPU's placements against the profile: known models, integer batches >= 1, shares in (0, 100] summing to
   * at most 100.
   */
  checkPlacement(placements: readonly Placement[]): PlacementCheck {
    if (placements.length === 0) return { ok: false, reason: 'no models given' };
    let sum = 0;
    const seen = new Set<string>();
    for (const [i, p] of placements.entries()) {
      if (this.modelIndex(p.model) < 0) {
        return {
          ok: false,
          reason:
            `models[${i}].model: unknown model '${p.model}' in profile '${this.profile.id}' ` +
            `(known: ${this.modelNames.join(', ')})`,
        };
      }
      if (seen.has(p.model))
        return { ok: false, reason: `models[${i}].model: '${p.model}' is placed twice on one GPU` };
      seen.add(p.model);
      if (!Number.isInteger(p.batch) || p.batch < 1)
        return { ok: false, reason: `models[${i}].batch: must be an integer >= 1, got ${p.batch}` };
      if (!(p.pct > 0 && p.pct <= 100))
        return { ok: false, reason: `models[${i}].pct: must be in (0, 100], got ${p.pct}` };
      sum += p.pct;
    }
    if (sum > 100 + 1e-9) return { ok: false, reason: `shares sum to ${sum}%, more than 100%` };
    return { ok: true };
  }

  /**
   * Convenience form of `predictGpu` for callers that hold names (CLI, tests). Checks first; throws on a bad
   * placement.
   */
  predict(
    placements: readonly Placement[],
    options: PredictOptions = {},
  ): { latencyMs: number[]; throughputPerS: number[] } {
    const check = this.checkPlacement(placements);
    if (!check.ok) throw new RangeError(check.reason);
    const n = placements.length;
    const latencyMs = new Array<number>(n).fill(0);
    this.predictGpu(
      placements.map((p) => this.modelIndex(p.model)),
      placements.map((p) => p.batch),
      placements.map((p) => p.pct),
      n,
      latencyMs,
      options.interference ?? true,
    );
    return { latencyMs, throughputPerS: latencyMs.map((t, i) => throughputPerS(placements[i]!.batch, t)) };
  }
}

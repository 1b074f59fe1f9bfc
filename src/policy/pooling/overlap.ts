// The pooled GPUs' fixed point: each pooled server's mean batch, its overlap slowdown beside the GPU's
// other servers, and the rate split over each model's servers, settled together. Pooled GPUs dispatch
// with timeout 0 (a free worker takes whatever is queued, up to its batch): a server's mean batch is
// gatedMeanBatch's, and its batches run alone at the whole GPU or overlapping the batches of the GPU's
// other models that are running (src/model/pooledGpu.ts). Its capacity is at the full batch, slowed by
// the same overlap.
import { BDA_MAX_BATCH } from '../bda.js';
import type { GpuInfo } from '../types.js';
import { gatedMeanBatch } from './batching.js';
import { MAX_OVERLAP, type PassScratch, type PoolingContext } from './context.js';
import { type Servers, splitRates } from './servers.js';

/** Most passes of the pooled servers' fixed point (batch, overlap slowdown, rate split). */
const POOLED_PASSES = 8;

/** Relative change below which the fixed point's batches, slowdowns and rate split count as settled. */
const SETTLED = 1e-3;

/**
 * Runs the fixed point over `s` in place (fill, slow, effMs, effMu, lam) until the split, every batch
 * and every slowdown are as in the pass before, or POOLED_PASSES. (The split alone does not say it is
 * settled: with one server per model it never moves, while the batches and slowdowns still do.)
 */
export function settlePooled(ctx: PoolingContext, s: Servers, ratePerS: readonly number[]): void {
  const { modes, byGpu } = s;
  if (!modes.some((m) => m === 'timeshare')) return;
  let widest = 0;
  for (const g of ctx.cluster.gpus)
    if (modes[g.index] === 'timeshare') widest = Math.max(widest, byGpu[g.index]!.length);
  // Reused by every pass (the fixed point runs up to POOLED_PASSES times over each pooled GPU, for
  // every candidate scored); an overlap time is reused while its prefix of members (each one's
  // placement and rounded batch) is the one of the pass before.
  const scratch = ctx.passScratch(widest, s.ps.length);
  for (let pass = 0; pass < POOLED_PASSES; pass++) {
    let moved = false; // a pooled server's batch or slowdown changed in this pass
    for (const g of ctx.cluster.gpus) {
      if (modes[g.index] !== 'timeshare') continue;
      if (pooledGpuPass(ctx, s, g, pass, scratch)) moved = true;
    }
    const next = splitRates(s.ps, s.byModel.length, ratePerS, s.effMu);
    const settled = next.every((x, i) => Math.abs(x - s.lam[i]!) <= SETTLED * Math.max(1, x));
    s.lam = next;
    if (settled && !moved) break;
  }
}

/** One pass over one pooled GPU: its servers' mean batches, then their slowdowns. True when any moved. */
function pooledGpuPass(ctx: PoolingContext, s: Servers, g: GpuInfo, pass: number, scratch: PassScratch): boolean {
  const { ps, lam, batch, tMs, fill, slow, effMs, effMu } = s;
  const { rho, byBusy, lastStep } = scratch;
  const on = s.byGpu[g.index]!;
  const width = on.length;
  let moved = false;
  for (const i of on) {
    const b = gatedMeanBatch(ctx, g, ps[i]!.model, lam[i]!, slow[i]!, batch[i]!, pass === 0 ? 1 : fill[i]!);
    if (Math.abs(fill[i]! - b) > SETTLED * b) moved = true;
    fill[i] = b;
  }
  // Busy fractions at the slowed batch times (each server's batches overlap the others').
  let rhoSum = 0;
  for (let j = 0; j < width; j++) {
    const i = on[j]!;
    rho[j] = Math.min(1, (lam[i]! * ctx.soloMsAt(g, ps[i]!.model, fill[i]!) * slow[i]!) / (1000 * fill[i]!));
    rhoSum += rho[j]!;
  }
  // The GPU's servers, busiest first (ties: placement order); an insertion sort (a handful).
  for (let j = 0; j < width; j++) {
    let at = j;
    while (at > 0 && (rho[j]! - rho[byBusy[at - 1]!]! || on[byBusy[at - 1]!]! - on[j]!) > 0) {
      byBusy[at] = byBusy[at - 1]!;
      at--;
    }
    byBusy[at] = j;
  }
  for (let k = 0; k < width; k++) {
    const i = on[k]!;
    const slowdown = width > 1 && rhoSum - rho[k]! > 0 ? expectedSlowdown(ctx, s, g, k, scratch) : 1;
    // Damped (the mean with the previous pass's) from the second pass on where the step turns back:
    // a batch and its slowdown feed each other and would otherwise oscillate. A step that goes on in
    // the direction of the one before is taken whole: damped, a monotone approach would close only a
    // third of its gap a pass and run out of passes.
    const step = slowdown - slow[i]!;
    const damped = pass === 0 ? slowdown : step * lastStep[i]! > 0 ? slowdown : slow[i]! + step / 2;
    lastStep[i] = damped - slow[i]!;
    if (Math.abs(slow[i]! - damped) > SETTLED * damped) moved = true;
    slow[i] = damped;
    effMs[i] = ctx.soloMsAt(g, ps[i]!.model, fill[i]!) * damped;
    effMu[i] = (1000 * batch[i]!) / (tMs[i]! * damped);
  }
  return moved;
}

/**
 * The expected slowdown of the `k`-th server on pooled GPU `g` from the others' batches running beside
 * its own. How many of the others run: each busy independently for its busy fraction (a
 * Poisson-binomial count), and overlapping n of them slows it as overlapping the n busiest does (at
 * most MAX_OVERLAP - 1). The expectation over the count, not the slowdown at the mean count: the
 * slowdown grows faster than the count (an even split of the GPU), so the latter understates it.
 */
function expectedSlowdown(ctx: PoolingContext, s: Servers, g: GpuInfo, k: number, scratch: PassScratch): number {
  const { ps, fill } = s;
  const { rho, byBusy, count, prefixSig, prefixMs } = scratch;
  const { models, batches } = ctx.overlapMembers;
  const on = s.byGpu[g.index]!;
  const width = on.length;
  const i = on[k]!;
  let counts = 1;
  count[0] = 1;
  for (let j = 0; j < width; j++) {
    if (j === k) continue;
    const r = rho[j]!;
    count[counts++] = 0;
    for (let c = counts - 1; c > 0; c--) count[c] = count[c]! * (1 - r) + count[c - 1]! * r;
    count[0] = count[0] * (1 - r);
  }
  models[0] = ps[i]!.model;
  batches[0] = Math.max(1, Math.round(fill[i]!));
  let members = 1;
  const solo = ctx.soloMs(g, models[0], batches[0]);
  const slot = i * MAX_OVERLAP;
  let same = prefixSig[slot] === batches[0];
  prefixSig[slot] = batches[0]!;
  let ratio = 1;
  let slowdown = count[0];
  for (let j = 0, c = 1; c < counts; c++) {
    if (members < MAX_OVERLAP) {
      if (byBusy[j] === k) j++;
      const other = on[byBusy[j++]!]!;
      models[members] = ps[other]!.model;
      batches[members] = Math.max(1, Math.round(fill[other]!));
      const at = slot + members;
      const sig = other * (BDA_MAX_BATCH + 1) + batches[members]!;
      members++;
      same = same && prefixSig[at] === sig;
      if (!same) {
        prefixSig[at] = sig;
        prefixMs[at] = ctx.overlapMs(g, members);
      }
      ratio = prefixMs[at]! / solo;
    }
    slowdown += count[c]! * ratio;
  }
  return slowdown;
}

// The trained actor's forward pass in plain JS, for the online scheduler: no TensorFlow.js, no
// tensors, no async. Same inputs as the TF actor (the same float32 normalised state), float64
// accumulation, so probabilities agree with the TF path to about 1e-6 and greedy actions exactly
// (up to exact ties in float32 logits). The object is immutable: the normaliser is frozen at save.
import { normalizeStateInto, type RunningStatsJson } from './normalize.js';
import { z } from 'zod';
import { formatIssues } from '../src/profile/schema.js';
import { decodeF32, InvalidSerializedAgentError, parseSerializedAgent, type SerializedAgent } from './settings.js';

/**
 * What deciding needs of a trained agent: the actor's layers and the frozen state normaliser. The
 * policy file ships this, not the whole agent (critics, targets and optimiser moments are for
 * training only and are ten times larger).
 */
export const ActorSnapshotSchema = z
  .object({
    format: z.literal('inss/actor'),
    stateDim: z.number().int().min(1),
    headSizes: z.array(z.number().int().min(1)).min(1),
    hidden: z.array(z.number().int().min(1)).min(1),
    normClip: z.number().positive(),
    stateNormalizer: z
      .object({
        count: z.number().int().min(0),
        mean: z.array(z.number().finite()),
        m2: z.array(z.number().finite().min(0)),
      })
      .strict()
      .nullable(),
    actor: z.array(z.object({ w: z.string(), b: z.string() }).strict()).min(2),
  })
  .strict();
export type ActorSnapshot = z.infer<typeof ActorSnapshotSchema>;

/** The actor-only part of a saved agent. */
export function actorSnapshot(agent: SerializedAgent): ActorSnapshot {
  return {
    format: 'inss/actor',
    stateDim: agent.stateDim,
    headSizes: [...agent.headSizes],
    hidden: [...agent.settings.hidden],
    normClip: agent.settings.normClip,
    stateNormalizer: agent.stateNormalizer,
    actor: agent.networks.actor,
  };
}

export interface ForwardActOptions {
  /** Argmax per head (default true here: inference); false samples from the policy. */
  readonly greedy?: boolean;
  /** One array per head, `masks[i][a]` nonzero = option a allowed; at least one per head. */
  readonly masks?: readonly Uint8Array[];
  /** Uniform [0, 1) source for sampling (default Math.random). */
  readonly random?: () => number;
}

/**
 * Concatenates per-head masks after checking them (`where` names the argument in errors);
 * null when `masks` is undefined (all allowed).
 */
export function concatMasks(
  masks: readonly Uint8Array[] | undefined,
  headSizes: readonly number[],
  where: string,
): Uint8Array | null {
  if (masks === undefined) return null;
  if (masks.length !== headSizes.length)
    throw new RangeError(`${where}: expected ${headSizes.length} head masks, got ${masks.length}`);
  const total = headSizes.reduce((a, n) => a + n, 0);
  const out = new Uint8Array(total);
  let o = 0;
  headSizes.forEach((n, i) => {
    const m = masks[i]!;
    if (m.length !== n) throw new RangeError(`${where}[${i}]: expected ${n} entries, got ${m.length}`);
    let allowed = 0;
    for (let k = 0; k < n; k++) {
      const v = m[k]! !== 0 ? 1 : 0;
      out[o + k] = v;
      allowed += v;
    }
    if (allowed === 0) throw new RangeError(`${where}[${i}]: every option is masked; at least one must be allowed`);
    o += n;
  });
  return out;
}

/**
 * One option per head from concatenated logits: the allowed argmax (greedy; lowest index on a tie)
 * or a draw from the masked softmax with `random`.
 */
export function pickActions(
  logits: ArrayLike<number>,
  headSizes: readonly number[],
  masks: Uint8Array | null,
  greedy: boolean,
  random: () => number,
): Int32Array {
  const out = new Int32Array(headSizes.length);
  let o = 0;
  headSizes.forEach((n, i) => {
    let best = -1;
    let bestZ = -Infinity;
    for (let k = 0; k < n; k++) {
      if (masks && masks[o + k] === 0) continue;
      const z = logits[o + k]!;
      if (best < 0 || z > bestZ) {
        best = k;
        bestZ = z;
      }
    }
    if (!greedy) {
      let sum = 0;
      for (let k = 0; k < n; k++) if (!masks || masks[o + k] !== 0) sum += Math.exp(logits[o + k]! - bestZ);
      let u = random() * sum;
      for (let k = 0; k < n; k++) {
        if (masks && masks[o + k] === 0) continue;
        u -= Math.exp(logits[o + k]! - bestZ);
        if (u < 0) {
          best = k;
          break;
        }
      }
      // u >= 0 after the loop only by rounding; `best` (the argmax) is then an allowed option.
    }
    out[i] = best;
    o += n;
  });
  return out;
}

/** Per-head masked softmax of concatenated logits (float64 arithmetic). */
export function headSoftmax(
  logits: ArrayLike<number>,
  headSizes: readonly number[],
  masks: Uint8Array | null,
): Float32Array[] {
  const out: Float32Array[] = [];
  let o = 0;
  for (const n of headSizes) {
    const p = new Float32Array(n);
    let max = -Infinity;
    for (let k = 0; k < n; k++) if ((!masks || masks[o + k] !== 0) && logits[o + k]! > max) max = logits[o + k]!;
    let sum = 0;
    const e = new Float64Array(n);
    for (let k = 0; k < n; k++) {
      if (masks && masks[o + k] === 0) continue;
      e[k] = Math.exp(logits[o + k]! - max);
      sum += e[k]!;
    }
    for (let k = 0; k < n; k++) p[k] = e[k]! / sum;
    out.push(p);
    o += n;
  }
  return out;
}

interface Layer {
  readonly inDim: number;
  readonly outDim: number;
  /** [inDim * outDim], row-major: W[i, j] at i * outDim + j (as saved). */
  readonly w: Float32Array;
  readonly b: Float32Array;
}

export class ActorForward {
  private readonly input: Float32Array;
  private readonly acts: Float64Array[];

  private constructor(
    readonly stateDim: number,
    readonly headSizes: readonly number[],
    private readonly layers: readonly Layer[],
    private readonly stateStats: RunningStatsJson | null,
    private readonly normClip: number,
  ) {
    this.input = new Float32Array(stateDim);
    this.acts = layers.map((l) => new Float64Array(l.outDim));
  }

  /** From an actor snapshot (`actorSnapshot`), validated; layer sizes are checked. */
  static fromSnapshot(raw: unknown): ActorForward {
    const r = ActorSnapshotSchema.safeParse(raw);
    if (!r.success) throw new InvalidSerializedAgentError(`invalid actor snapshot: ${formatIssues(r.error)}`);
    const a = r.data;
    const sizes = [a.stateDim, ...a.hidden, a.headSizes.reduce((x, n) => x + n, 0)];
    if (a.actor.length !== sizes.length - 1)
      throw new InvalidSerializedAgentError(
        `invalid actor snapshot: actor: expected ${sizes.length - 1} layers, got ${a.actor.length}`,
      );
    const layers = a.actor.map((l, k) => {
      const layer = { inDim: sizes[k]!, outDim: sizes[k + 1]!, w: decodeF32(l.w), b: decodeF32(l.b) };
      if (layer.w.length !== layer.inDim * layer.outDim || layer.b.length !== layer.outDim)
        throw new InvalidSerializedAgentError(
          `invalid actor snapshot: actor.${k}: ` +
            `expected ${layer.inDim}x${layer.outDim} weights and ${layer.outDim} biases`,
        );
      return layer;
    });
    if (a.stateNormalizer && a.stateNormalizer.mean.length !== a.stateDim)
      throw new InvalidSerializedAgentError('invalid actor snapshot: stateNormalizer: must have stateDim entries');
    return new ActorForward(a.stateDim, a.headSizes, layers, a.stateNormalizer, a.normClip);
  }

  /** Validates `s` (InvalidSerializedAgentError naming the field) and copies the actor's weights. */
  static fromSerialized(s: unknown): ActorForward {
    const a: SerializedAgent = parseSerializedAgent(s);
    const total = a.headSizes.reduce((x, n) => x + n, 0);
    const sizes = [a.stateDim, ...a.settings.hidden, total];
    const layers = a.networks.actor.map((l, k) => ({
      inDim: sizes[k]!,
      outDim: sizes[k + 1]!,
      w: decodeF32(l.w),
      b: decodeF32(l.b),
    }));
    return new ActorForward(a.stateDim, a.headSizes, layers, a.stateNormalizer, a.settings.normClip);
  }

  /** The actor's concatenated logits for one raw state; the returned array is reused by the next call. */
  logits(state: ArrayLike<number>): Float64Array {
    if (state.length !== this.stateDim)
      throw new RangeError(`state: expected ${this.stateDim} values, got ${state.length}`);
    normalizeStateInto(this.stateStats, this.normClip, state, this.input);
    // y = x W + b as a sum of rows of W scaled by x[i] (row-major W read sequentially), float64
    // accumulators. Measured at about 0.2 ms for 40 -> 512 -> 256 -> 384 (docs/rl.md); a
    // transposed dot-product form with four accumulators was no faster in V8.
    let x: ArrayLike<number> = this.input;
    const last = this.layers.length - 1;
    this.layers.forEach((layer, l) => {
      const y = this.acts[l]!;
      const { inDim, outDim, w, b } = layer;
      for (let j = 0; j < outDim; j++) y[j] = b[j]!;
      for (let i = 0; i < inDim; i++) {
        const xi = x[i]!;
        if (xi === 0) continue; // ReLU zeros, often half the hidden units
        const row = i * outDim;
        for (let j = 0; j < outDim; j++) y[j] = y[j]! + xi * w[row + j]!;
      }
      if (l < last) for (let j = 0; j < outDim; j++) if (y[j]! < 0) y[j] = 0;
      x = y;
    });
    return this.acts[this.acts.length - 1]!;
  }

  /** One option per head. Unlike SacDiscrete.act, greedy by default (see ForwardActOptions). */
  act(state: ArrayLike<number>, opts: ForwardActOptions = {}): Int32Array {
    const masks = concatMasks(opts.masks, this.headSizes, 'masks');
    return pickActions(this.logits(state), this.headSizes, masks, opts.greedy ?? true, opts.random ?? Math.random);
  }

  /** pi_i(. | s) for every head i (masked options get 0). */
  probabilities(state: ArrayLike<number>, masks?: readonly Uint8Array[]): Float32Array[] {
    return headSoftmax(this.logits(state), this.headSizes, concatMasks(masks, this.headSizes, 'masks'));
  }
}

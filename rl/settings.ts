// Hyperparameters of the SAC-Discrete agent (rl/sacDiscrete.ts), in one validated object.
// Defaults are the paper's Table 1 (section 6.1) where the paper gives a value; the rest are
// named here with the reason for their default. docs/rl.md explains each choice.
import { z } from 'zod';
import { formatIssues } from '../src/profile/schema.js';

const positive = z.number().finite().positive();
const positiveInt = z.number().int().positive();

/**
 * Target entropy `H^` of eq. (9), for the joint policy (the sum of the heads' entropies, since
 * the heads are independent given the state):
 * - `'paper'`: Table 1's `-log(1 + iota)`, iota = the actor's output size (sum of head sizes).
 *   A discrete policy's entropy is >= 0 > `-log(1 + iota)`, so eq. (9) always pushes the
 *   temperature down: alpha decays toward 0 at a rate set by `lrAlpha`. It works as an annealing
 *   schedule from exploration to a near-greedy policy, not as an entropy constraint.
 * - `'christodoulou'`: SAC-Discrete's original (Christodoulou 2019), `0.98 * log |A_i|` per head,
 *   summed over heads, where `|A_i|` counts the options the state's mask allows (all when no
 *   mask), so a state with few allowed options does not ask for more entropy than it can have.
 * - a number: the joint target in nats, used as given.
 */
export const TargetEntropySchema = z.union([z.literal('paper'), z.literal('christodoulou'), z.number().finite()]);
export type TargetEntropy = z.infer<typeof TargetEntropySchema>;

export const SacSettingsSchema = z
  .object({
    /** Seeds weight initialisation, action sampling and replay sampling (three derived streams). */
    seed: z.number().int().min(0).max(0xffffffff).default(0),
    /** `|F|`, Table 1: replay capacity in transitions; the oldest is overwritten when full. */
    replaySize: positiveInt.default(10_000),
    /** `|F_j|`, Table 1: transitions per minibatch, sampled uniformly with replacement. */
    batchSize: positiveInt.default(100),
    /** `l_Q`, Table 1: Adam learning rate of both Q-networks (one optimiser over qf1 and qf2). */
    lrQ: positive.default(1e-4),
    /** `l_pi`, Table 1: Adam learning rate of the actor. */
    lrActor: positive.default(1e-4),
    /** `l_tau`, Table 1: Adam learning rate of `logAlpha` (the paper's temperature tau, here alpha). */
    lrAlpha: positive.default(1e-4),
    /** `gamma`, Table 1: discount of eq. (7). */
    gamma: z.number().min(0).max(1).default(0.99),
    /** `kappa`, Table 1: soft update factor, `theta' <- kappa theta + (1 - kappa) theta'` (Alg. 2 line 14). */
    tau: z.number().gt(0).max(1).default(0.01),
    /** Initial temperature alpha (the paper's tau), Table 1; the agent learns `logAlpha = log alpha`. */
    initialTemperature: positive.default(1.0),
    /** Hidden layer widths, ReLU, shared by actor and critics (section 6.1: two layers, 512 and 256). */
    hidden: z.array(positiveInt).min(1).default([512, 256]),
    /** See TargetEntropySchema. Default: Table 1. */
    targetEntropy: TargetEntropySchema.default('paper'),
    /** Gradient updates per environment step in `step()` (Alg. 2: one). */
    updatesPerStep: z.number().int().min(0).default(1),
    /** `step()` starts updating once the replay holds this many transitions (>= batchSize). */
    learningStarts: positiveInt.default(100),
    /**
     * Optional: clip each optimiser's gradients to this global L2 norm (critics together, actor, alpha).
     * Off by default, as in the paper.
     */
    gradClipNorm: positive.optional(),
    /** Adam's epsilon (PyTorch's default; the paper's implementation is PyTorch). */
    adamEpsilon: positive.default(1e-8),
    /** Adam's beta1 and beta2 (PyTorch's defaults). */
    adamBeta1: z.number().min(0).lt(1).default(0.9),
    adamBeta2: z.number().min(0).lt(1).default(0.999),
    /** Section 5.2/5.4 state normalisation: running mean and std of states seen by `observe` (Welford). */
    normalizeState: z.boolean().default(true),
    /**
     * Reward normalisation (section 5.4): rewards are divided (never shifted, so signs and the
     * meaning of a terminal state are kept) by a running std of
     * - `'returns'`: the discounted return `R_t = gamma R_{t-1} + r_t` (reset at `done`), as in
     *   Stable-Baselines3's VecNormalize; keeps Q-values O(1) whatever the horizon;
     * - `'rewards'`: the rewards themselves;
     * - `'none'`: rewards used as given.
     */
    rewardNormalization: z.enum(['returns', 'rewards', 'none']).default('returns'),
    /** Normalised states and rewards are clipped to [-normClip, normClip]. */
    normClip: positive.default(10),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (s.batchSize > s.replaySize)
      ctx.addIssue({ code: 'custom', path: ['batchSize'], message: `must be <= replaySize (${s.replaySize})` });
    if (s.learningStarts < s.batchSize)
      ctx.addIssue({ code: 'custom', path: ['learningStarts'], message: `must be >= batchSize (${s.batchSize})` });
    if (s.learningStarts > s.replaySize)
      ctx.addIssue({ code: 'custom', path: ['learningStarts'], message: `must be <= replaySize (${s.replaySize})` });
  });

/** Settings after defaults. */
export type SacSettings = z.infer<typeof SacSettingsSchema>;
/** Settings as a caller writes them: every field optional. */
export type SacSettingsInput = z.input<typeof SacSettingsSchema>;

/** Thrown for settings that do not validate; the message names each field (`hidden.1: ...`). */
export class InvalidSacSettingsError extends Error {
  override readonly name = 'InvalidSacSettingsError';
}

export function parseSacSettings(input: unknown): SacSettings {
  const result = SacSettingsSchema.safeParse(input ?? {});
  if (!result.success) throw new InvalidSacSettingsError(`invalid SAC settings: ${formatIssues(result.error)}`);
  return result.data;
}

/**
 * The joint target entropy for a state whose heads allow `allowed[i]` options each. `actorOutputs`
 * is iota (the sum of all head sizes, masked or not) for the paper's formula.
 */
export function targetEntropyFor(setting: TargetEntropy, allowed: ArrayLike<number>, actorOutputs: number): number {
  if (setting === 'paper') return -Math.log(1 + actorOutputs);
  if (setting === 'christodoulou') {
    let sum = 0;
    for (let i = 0; i < allowed.length; i++) sum += 0.98 * Math.log(allowed[i]!);
    return sum;
  }
  return setting;
}

// ---------------------------------------------------------------------------------------------
// SerializedAgent: the plain-JSON form of a SacDiscrete (save/load) that ActorForward also reads.
// It lives here, beside the settings it embeds, because ActorForward must validate it without
// loading TensorFlow.js.

/** Little-endian float32 bytes as base64 (every platform Node runs on is little-endian). */
export function encodeF32(a: Float32Array): string {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');
}

export function decodeF32(s: string): Float32Array {
  const buf = Buffer.from(s, 'base64');
  if (buf.byteLength % 4 !== 0) throw new Error(`base64 float32 data has ${buf.byteLength} bytes, not a multiple of 4`);
  const out = new Float32Array(buf.byteLength / 4);
  new Uint8Array(out.buffer).set(buf);
  return out;
}

const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');
const RunningStatsSchema = z
  .object({
    count: z.number().int().min(0),
    mean: z.array(z.number().finite()),
    m2: z.array(z.number().finite().min(0)),
  })
  .strict();
const DenseLayerSchema = z.object({ w: base64, b: base64 }).strict();
const NetworkSchema = z.array(DenseLayerSchema).min(2);
const AdamSchema = z.object({ step: z.number().int().min(0), m: z.array(base64), v: z.array(base64) }).strict();
const uint32 = z.number().int().min(0).max(0xffffffff);

export const SERIALIZED_AGENT_FORMAT = 'inss/sac-discrete';

export const SerializedAgentSchema = z
  .object({
    format: z.literal(SERIALIZED_AGENT_FORMAT),
    version: z.literal(1),
    settings: SacSettingsSchema,
    stateDim: positiveInt,
    headSizes: z.array(z.number().int().min(1)).min(1),
    /** Gradient updates done so far. */
    updates: z.number().int().min(0),
    /** null when settings.normalizeState is false. */
    stateNormalizer: RunningStatsSchema.nullable(),
    rewardScaler: z
      .object({
        mode: z.enum(['returns', 'rewards', 'none']),
        gamma: z.number().min(0).max(1),
        stats: RunningStatsSchema,
        runningReturn: z.number().finite(),
      })
      .strict(),
    logAlpha: z.number().finite(),
    /** Each network: one {w, b} per dense layer, W [in, out] row-major, base64 float32. */
    networks: z
      .object({
        actor: NetworkSchema,
        qf1: NetworkSchema,
        qf2: NetworkSchema,
        qf1Target: NetworkSchema,
        qf2Target: NetworkSchema,
      })
      .strict(),
    /** Adam moments in variable order (layer by layer, w then b; q = qf1's then qf2's). */
    optimizers: z.object({ q: AdamSchema, actor: AdamSchema, alpha: AdamSchema }).strict(),
    /** Mulberry32 states of the action-sampling and replay-sampling streams. */
    rng: z.object({ act: uint32, replay: uint32 }).strict(),
  })
  .strict()
  .superRefine((a, ctx) => {
    const total = a.headSizes.reduce((x, n) => x + n, 0);
    const sizes = (out: number) => [a.stateDim, ...a.settings.hidden, out];
    const bytes = (s: string) => Buffer.byteLength(s, 'base64');
    for (const name of ['actor', 'qf1', 'qf2', 'qf1Target', 'qf2Target'] as const) {
      const net = a.networks[name];
      const sz = sizes(total);
      if (net.length !== sz.length - 1) {
        ctx.addIssue({
          code: 'custom',
          path: ['networks', name],
          message:
            `expected ${sz.length - 1} layers for hidden ${JSON.stringify(a.settings.hidden)}, ` + `got ${net.length}`,
        });
        continue;
      }
      net.forEach((layer, l) => {
        const fanIn = sz[l]!;
        const fanOut = sz[l + 1]!;
        if (bytes(layer.w) !== 4 * fanIn * fanOut)
          ctx.addIssue({
            code: 'custom',
            path: ['networks', name, l, 'w'],
            message:
              `expected ${fanIn}x${fanOut} = ${fanIn * fanOut} float32 (${4 * fanIn * fanOut} bytes), ` +
              `got ${bytes(layer.w)} bytes`,
          });
        if (bytes(layer.b) !== 4 * fanOut)
          ctx.addIssue({
            code: 'custom',
            path: ['networks', name, l, 'b'],
            message: `expected ${fanOut} float32 (${4 * fanOut} bytes), got ${bytes(layer.b)} bytes`,
          });
      });
    }
    if (
      a.stateNormalizer &&
      (a.stateNormalizer.mean.length !== a.stateDim || a.stateNormalizer.m2.length !== a.stateDim)
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['stateNormalizer'],
        message: `mean and m2 must have stateDim (${a.stateDim}) entries`,
      });
    }
    if (a.settings.normalizeState !== (a.stateNormalizer !== null)) {
      ctx.addIssue({
        code: 'custom',
        path: ['stateNormalizer'],
        message:
          `must be ${a.settings.normalizeState ? 'present' : 'null'} ` +
          `when settings.normalizeState is ${a.settings.normalizeState}`,
      });
    }
  });

export type SerializedAgent = z.infer<typeof SerializedAgentSchema>;

/** Thrown when a SerializedAgent does not validate; the message names each bad field. */
export class InvalidSerializedAgentError extends Error {
  override readonly name = 'InvalidSerializedAgentError';
}

export function parseSerializedAgent(raw: unknown): SerializedAgent {
  const result = SerializedAgentSchema.safeParse(raw);
  if (!result.success)
    throw new InvalidSerializedAgentError(`invalid serialized SAC agent: ${formatIssues(result.error)}`);
  return result.data;
}

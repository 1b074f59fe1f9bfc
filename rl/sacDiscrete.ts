// SAC-Discrete with a factorised discrete action: the scheduler TS of section 5.4 (Alg. 2).
// Over 400 lines because the algorithm reads best as one file, as CleanRL's single-file SAC does: the
// networks, the update of eqs. (7)-(9) and the temperature sit side by side in the paper's names, and
// splitting the one class would scatter one training step over modules.
//
// The action is H independent choices ("heads"; head i has headSizes[i] options, e.g. one head
// per DNN model choosing a GPU x share level). Components, as the paper lists them:
// i)   actor pi_phi (state -> logits of every head, softmax per head), twin Q-networks qf1, qf2 and
//      targets qf1Target, qf2Target, clipped double Q (min of the two) in eqs. (7) and (8);
// ii)  experience replay (rl/replay.ts), uniform minibatches;
// iii) discrete outputs: the critics output one Q value per option of every head ("branching"
//      critic, Q_i(s, a_i)), so no output grows with the product of the head sizes;
// iv)  entropy regularisation with a learned temperature alpha = exp(logAlpha), eq. (9).
//
// The factorised action is a decision the paper leaves open. We follow Branching Dueling
// Q-Networks (Tavakoli et al. 2018): every head is trained toward one shared target built from
// the mean over heads of the heads' soft state values,
//   y = r + gamma (1 - done) * (1/H) sum_i V_i(s'),
//   V_i(s') = sum_a pi_i(a|s') (min(qf1Target_i, qf2Target_i)(s', a) - alpha log pi_i(a|s')),
// the soft version of eq. (7) per branch. Eq. (8) is summed over heads (the joint policy's KL to
// the Boltzmann policy of the summed branch Q values); eq. (9) uses the joint entropy (the sum of
// the heads' entropies, the heads being independent given s). docs/rl.md discusses the choice.
//
// Call pattern: `create`, then per environment step `act` and `step` (or `observe` and `update`
// as the caller schedules them). Not reentrant; all methods synchronous except create/load.
import type * as tfType from '@tensorflow/tfjs';
import * as tf from '@tensorflow/tfjs';
import { concatMasks, pickActions } from './actorForward.js';
import { initTf } from './backend.js';
import { Adam, assignFrom, headLogSoftmax, headSumMatrix, layerSizes, MASKED_LOGIT, Mlp } from './networks.js';
import { normalizeStateInto, RewardScaler, RunningMeanStd } from './normalize.js';
import { ReplayBuffer, Rng } from './replay.js';
import {
  decodeF32,
  encodeF32,
  parseSacSettings,
  parseSerializedAgent,
  SERIALIZED_AGENT_FORMAT,
  targetEntropyFor,
  type SacSettings,
  type SacSettingsInput,
  type SerializedAgent,
} from './settings.js';

export interface ActOptions {
  /** Argmax per head instead of a draw from pi (default false: training explores). */
  readonly greedy?: boolean;
  /** One array per head, nonzero = allowed; a masked option has probability 0. */
  readonly masks?: readonly Uint8Array[];
}

/** One environment transition (Alg. 2 line 9), states raw (the agent normalises). */
export interface Transition {
  readonly state: Float32Array;
  readonly action: Int32Array;
  readonly reward: number;
  readonly nextState: Float32Array;
  /** True when s' is terminal: no bootstrap from it. A time-limit cut is not terminal. */
  readonly done: boolean;
  /** Masks in force at s (the action must be allowed by them); default all allowed. */
  readonly masks?: readonly Uint8Array[];
  /** Masks in force at s', used for pi(.|s') in the target; default all allowed. */
  readonly nextMasks?: readonly Uint8Array[];
}

/** Per-update scalars, CleanRL-style names. */
export interface UpdateMetrics {
  /** Eq. (6) for qf1 and qf2: 0.5 * mean over batch and heads of the squared Bellman residual. */
  'losses/qf1': number;
  'losses/qf2': number;
  /** Eq. (8), summed over heads, mean over the batch. */
  'losses/actor': number;
  /** Eq. (9): alpha * (H(pi(.|s)) - H^), mean over the batch. */
  'losses/alpha': number;
  /** Temperature used in this update (before its own step). */
  'charts/alpha': number;
  /** Joint policy entropy (sum over heads, nats), mean over the batch. */
  'charts/entropy': number;
  /** Mean joint target entropy H^ of the batch. */
  'charts/targetEntropy': number;
  /** Mean qf1 value of the taken options. */
  'charts/qf1Values': number;
}

export class SacDiscrete {
  readonly totalOptions: number;
  private readonly headSum: tfType.Tensor2D;
  private readonly qf1: Mlp;
  private readonly qf2: Mlp;
  private readonly qf1Target: Mlp;
  private readonly qf2Target: Mlp;
  private readonly actor: Mlp;
  private readonly logAlpha: tfType.Variable<tfType.Rank.R0>;
  private readonly qOptimizer: Adam;
  private readonly actorOptimizer: Adam;
  private readonly alphaOptimizer: Adam;
  private readonly replay: ReplayBuffer;
  private readonly actRng: Rng;
  private readonly replayRng: Rng;
  private readonly stateStats: RunningMeanStd | null;
  private rewardScaler: RewardScaler;
  /** Whether any transition carried masks: when none did, the mask tensors are skipped. */
  private anyMasks = false;
  private updates = 0;
  private disposed = false;

  private constructor(
    readonly stateDim: number,
    readonly headSizes: readonly number[],
    readonly settings: SacSettings,
  ) {
    const s = settings;
    this.totalOptions = headSizes.reduce((a, n) => a + n, 0);
    const initRng = new Rng(Rng.derive(s.seed, 0));
    this.actRng = new Rng(Rng.derive(s.seed, 1));
    this.replayRng = new Rng(Rng.derive(s.seed, 2));
    const sizes = layerSizes(stateDim, s.hidden, this.totalOptions);
    // Alg. 2 line 1: phi, theta_1, theta_2 at random; theta'_v <- theta_v.
    this.actor = Mlp.init('actor', sizes, initRng, true);
    this.qf1 = Mlp.init('qf1', sizes, initRng, true);
    this.qf2 = Mlp.init('qf2', sizes, initRng, true);
    this.qf1Target = Mlp.copyOf('qf1Target', this.qf1, false);
    this.qf2Target = Mlp.copyOf('qf2Target', this.qf2, false);
    this.logAlpha = tf.tidy(() => tf.variable(tf.scalar(Math.log(s.initialTemperature)), true));
    const adam = (params: tfType.Variable[], lr: number) =>
      new Adam(params, lr, s.adamBeta1, s.adamBeta2, s.adamEpsilon, s.gradClipNorm);
    this.qOptimizer = adam([...this.qf1.variables, ...this.qf2.variables], s.lrQ);
    this.actorOptimizer = adam(this.actor.variables, s.lrActor);
    this.alphaOptimizer = adam([this.logAlpha], s.lrAlpha);
    this.headSum = headSumMatrix(headSizes);
    this.replay = new ReplayBuffer(s.replaySize, stateDim, headSizes.length, this.totalOptions);
    this.stateStats = s.normalizeState ? new RunningMeanStd(stateDim) : null;
    this.rewardScaler = new RewardScaler(s.rewardNormalization, s.gamma);
  }

  /**
   * Builds an agent with fresh weights from `settings` (validated; InvalidSacSettingsError names
   * the bad field). Initialises the TF.js backend if no one has (rl/backend.ts).
   */
  static async create(
    stateDim: number,
    headSizes: readonly number[],
    settings: SacSettingsInput = {},
  ): Promise<SacDiscrete> {
    if (!Number.isInteger(stateDim) || stateDim < 1)
      throw new RangeError(`stateDim: must be a positive integer, got ${stateDim}`);
    if (headSizes.length === 0 || !headSizes.every((n) => Number.isInteger(n) && n >= 1))
      throw new RangeError(
        `headSizes: must be a non-empty list of positive integers, got ${JSON.stringify(headSizes)}`,
      );
    const parsed = parseSacSettings(settings);
    await initTf();
    return new SacDiscrete(stateDim, [...headSizes], parsed);
  }

  /** Transitions held in the replay buffer. */
  get replaySize(): number {
    return this.replay.size;
  }

  /** Gradient updates done (survives save/load). */
  get updateCount(): number {
    return this.updates;
  }

  /** Alg. 2 line 6: one option per head, drawn from pi_phi(.|s) (or its argmax when greedy). */
  act(state: Float32Array, opts: ActOptions = {}): Int32Array {
    const masks = concatMasks(opts.masks, this.headSizes, 'masks');
    return pickActions(this.actorLogits(state), this.headSizes, masks, opts.greedy ?? false, () => this.actRng.next());
  }

  /** pi_i(.|s) per head, computed by the TF actor (for tests and diagnostics). */
  probabilities(state: Float32Array, masks?: readonly Uint8Array[]): Float32Array[] {
    const m = concatMasks(masks, this.headSizes, 'masks');
    const x = this.normalizedState(state);
    const p = tf.tidy(() => {
      const bias = m ? tf.tensor2d(maskBiasOf(m), [1, this.totalOptions]) : null;
      return tf.exp(headLogSoftmax(this.actor.apply(tf.tensor2d(x, [1, this.stateDim])), this.headSizes, bias));
    });
    const flat = p.dataSync() as Float32Array;
    p.dispose();
    const out: Float32Array[] = [];
    let o = 0;
    for (const n of this.headSizes) {
      out.push(flat.slice(o, o + n));
      o += n;
    }
    return out;
  }

  /**
   * Alg. 2 line 9: stores a transition and updates the state and reward normalisers (the only
   * place they change). Throws RangeError on a malformed transition (a caller bug).
   */
  observe(t: Transition): void {
    this.checkState(t.state, 'state');
    this.checkState(t.nextState, 'nextState');
    if (!Number.isFinite(t.reward)) throw new RangeError(`reward: must be finite, got ${t.reward}`);
    const masks = concatMasks(t.masks, this.headSizes, 'masks');
    const nextMasks = concatMasks(t.nextMasks, this.headSizes, 'nextMasks');
    if (t.action.length !== this.headSizes.length)
      throw new RangeError(`action: expected ${this.headSizes.length} entries, got ${t.action.length}`);
    let o = 0;
    this.headSizes.forEach((n, i) => {
      const a = t.action[i]!;
      if (a < 0 || a >= n) throw new RangeError(`action[${i}]: must be in [0, ${n}), got ${a}`);
      if (masks && masks[o + a] === 0) throw new RangeError(`action[${i}]: option ${a} is masked at this state`);
      o += n;
    });
    if (masks || nextMasks) this.anyMasks = true;
    this.stateStats?.update(t.state);
    this.rewardScaler.observe(t.reward, t.done);
    this.replay.add(t.state, t.action, t.reward, t.nextState, t.done, masks, nextMasks);
  }

  /**
   * observe(t), then `updatesPerStep` updates once the replay holds `learningStarts` transitions
   * (Alg. 2 lines 9-14). Returns the last update's metrics, or null when none ran.
   */
  step(t: Transition): UpdateMetrics | null {
    this.observe(t);
    if (this.replay.size < this.settings.learningStarts) return null;
    let metrics: UpdateMetrics | null = null;
    for (let k = 0; k < this.settings.updatesPerStep; k++) metrics = this.update();
    return metrics;
  }

  /**
   * One gradient update (Alg. 2 lines 10-14) from a minibatch of the replay buffer: critics by
   * eqs. (6)-(7), actor by eq. (8), temperature by eq. (9), then the soft target update.
   * Requires at least one stored transition. Leaves no tensors behind.
   */
  update(): UpdateMetrics {
    if (this.disposed) throw new Error('SacDiscrete: used after dispose()');
    const s = this.settings;
    const B = s.batchSize;
    const D = this.stateDim;
    const T = this.totalOptions;
    const batch = this.replay.sample(B, this.replayRng);

    // Inputs, prepared in JS: normalised states, scaled rewards, one-hot actions, mask biases.
    const states = new Float32Array(B * D);
    const nextStates = new Float32Array(B * D);
    for (let k = 0; k < B; k++) {
      normalizeStateInto(this.stateStats, s.normClip, batch.states.subarray(k * D, (k + 1) * D), states, k * D);
      normalizeStateInto(this.stateStats, s.normClip, batch.nextStates.subarray(k * D, (k + 1) * D), nextStates, k * D);
    }
    const rewardScale = this.rewardScaler.scale();
    const rewards = new Float32Array(B);
    for (let k = 0; k < B; k++)
      rewards[k] = Math.max(-s.normClip, Math.min(s.normClip, batch.rewards[k]! * rewardScale));
    const taken = new Float32Array(B * T);
    for (let k = 0; k < B; k++) {
      let o = 0;
      this.headSizes.forEach((n, i) => {
        taken[k * T + o + batch.actions[k * this.headSizes.length + i]!] = 1;
        o += n;
      });
    }
    const targetEntropy = new Float32Array(B);
    const allowed = new Float64Array(this.headSizes.length);
    for (let k = 0; k < B; k++) {
      let o = 0;
      this.headSizes.forEach((n, i) => {
        let c = 0;
        for (let a = 0; a < n; a++) c += batch.masks[k * T + o + a]!;
        allowed[i] = c;
        o += n;
      });
      targetEntropy[k] = targetEntropyFor(s.targetEntropy, allowed, T);
    }

    const metricsTensor = tf.tidy(() => {
      const sT = tf.tensor2d(states, [B, D]);
      const s2T = tf.tensor2d(nextStates, [B, D]);
      const takenT = tf.tensor2d(taken, [B, T]);
      const biasT = this.anyMasks ? tf.tensor2d(maskBiasOf(batch.masks), [B, T]) : null;
      const nextBiasT = this.anyMasks ? tf.tensor2d(maskBiasOf(batch.nextMasks), [B, T]) : null;
      const alpha = tf.exp(this.logAlpha);

      // Eq. (7), per branch, combined by the mean over heads (BDQ): y [B, 1].
      const nextLogPi = headLogSoftmax(this.actor.apply(s2T), this.headSizes, nextBiasT);
      const minQNext = tf.minimum(this.qf1Target.apply(s2T), this.qf2Target.apply(s2T));
      const piSoftQ = tf.mul(tf.exp(nextLogPi), tf.sub(minQNext, tf.mul(alpha, nextLogPi))); // [B, T]
      const softV = tf.matMul(piSoftQ, this.headSum); // [B, H]
      const notDone = tf.sub(1, tf.tensor2d(batch.dones, [B, 1]));
      const y = tf.add(tf.tensor2d(rewards, [B, 1]), tf.mul(tf.mul(notDone, s.gamma), tf.mean(softV, 1, true)));

      // Eq. (6) for both critics in one tape: d(l1 + l2) splits into each critic's own gradient.
      const qVars = this.qOptimizer.params;
      let criticKept: tfType.Tensor1D | null = null; // [l1, l2, mean Q1(s, a)], kept out of the tape's tidy
      const critic = tf.variableGrads(() => {
        const q1Taken = tf.matMul(tf.mul(this.qf1.apply(sT), takenT), this.headSum); // Q1_i(s, a_i), [B, H]
        const q2Taken = tf.matMul(tf.mul(this.qf2.apply(sT), takenT), this.headSum);
        const l1 = tf.mul(0.5, tf.mean(tf.square(tf.sub(q1Taken, y))));
        const l2 = tf.mul(0.5, tf.mean(tf.square(tf.sub(q2Taken, y))));
        criticKept = tf.keep(tf.stack([l1, l2, tf.mean(q1Taken)]) as tfType.Tensor1D);
        return tf.add(l1, l2);
      }, qVars as tfType.Variable[]);
      this.qOptimizer.apply(qVars.map((v) => critic.grads[v.name]!));

      // Eq. (8), against the updated critics (as CleanRL), summed over heads.
      const minQ = tf.minimum(this.qf1.apply(sT), this.qf2.apply(sT));
      let logPiKept: tfType.Tensor2D | null = null;
      const actorStep = tf.variableGrads(() => {
        const logPi = headLogSoftmax(this.actor.apply(sT), this.headSizes, biasT);
        logPiKept = tf.keep(logPi);
        return tf.mean(tf.sum(tf.mul(tf.exp(logPi), tf.sub(tf.mul(alpha, logPi), minQ)), 1));
      }, this.actorOptimizer.params as tfType.Variable[]);
      this.actorOptimizer.apply(this.actorOptimizer.params.map((v) => actorStep.grads[v.name]!));
      const logPi = logPiKept as unknown as tfType.Tensor2D;
      const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logPi), logPi), 1)); // joint entropy per state, [B]
      logPi.dispose();

      // Eq. (9): pi^T [-alpha (log pi + H^)] = alpha (H(pi) - H^), minimised through logAlpha.
      const gap = tf.sub(entropy, tf.tensor1d(targetEntropy));
      const alphaStep = tf.variableGrads(() => tf.mean(tf.mul(tf.exp(this.logAlpha), gap)), [this.logAlpha]);
      this.alphaOptimizer.apply([alphaStep.grads[this.logAlpha.name]!]);

      // Alg. 2 line 14.
      this.qf1Target.softUpdateFrom(this.qf1, s.tau);
      this.qf2Target.softUpdateFrom(this.qf2, s.tau);

      const [l1, l2, q1Mean] = tf.unstack(criticKept as unknown as tfType.Tensor1D) as [
        tfType.Scalar,
        tfType.Scalar,
        tfType.Scalar,
      ];
      (criticKept as unknown as tfType.Tensor1D).dispose();
      return tf.stack([
        l1,
        l2,
        actorStep.value,
        alphaStep.value,
        alpha,
        tf.mean(entropy),
        tf.mean(tf.tensor1d(targetEntropy)),
        q1Mean,
      ]);
    });
    const m = metricsTensor.dataSync();
    metricsTensor.dispose();
    this.updates += 1;
    return {
      'losses/qf1': m[0]!,
      'losses/qf2': m[1]!,
      'losses/actor': m[2]!,
      'losses/alpha': m[3]!,
      'charts/alpha': m[4]!,
      'charts/entropy': m[5]!,
      'charts/targetEntropy': m[6]!,
      'charts/qf1Values': m[7]!,
    };
  }

  /**
   * Everything needed to act (ActorForward) and to resume training: settings, dimensions, the
   * five networks, logAlpha, Adam moments and step counts, normaliser statistics and the RNG
   * states. Not the replay buffer: a resumed agent refills it (step() waits for learningStarts).
   */
  save(): SerializedAgent {
    const net = (m: Mlp) =>
      m.layers.map((l) => ({
        w: encodeF32(l.w.dataSync() as Float32Array),
        b: encodeF32(l.b.dataSync() as Float32Array),
      }));
    return {
      format: SERIALIZED_AGENT_FORMAT,
      version: 1,
      settings: structuredClone(this.settings),
      stateDim: this.stateDim,
      headSizes: [...this.headSizes],
      updates: this.updates,
      stateNormalizer: this.stateStats ? this.stateStats.toJSON() : null,
      rewardScaler: this.rewardScaler.toJSON(),
      logAlpha: this.logAlpha.dataSync()[0]!,
      networks: {
        actor: net(this.actor),
        qf1: net(this.qf1),
        qf2: net(this.qf2),
        qf1Target: net(this.qf1Target),
        qf2Target: net(this.qf2Target),
      },
      optimizers: {
        q: this.qOptimizer.toJSON(),
        actor: this.actorOptimizer.toJSON(),
        alpha: this.alphaOptimizer.toJSON(),
      },
      rng: { act: this.actRng.state, replay: this.replayRng.state },
    };
  }

  /** Rebuilds a saved agent (validated: InvalidSerializedAgentError names the bad field). */
  static async load(raw: unknown): Promise<SacDiscrete> {
    const s = parseSerializedAgent(raw);
    const agent = await SacDiscrete.create(s.stateDim, s.headSizes, s.settings);
    try {
      for (const name of ['actor', 'qf1', 'qf2', 'qf1Target', 'qf2Target'] as const) {
        agent[name].layers.forEach((layer, l) => {
          const saved = s.networks[name][l]!;
          assignFrom(layer.w, decodeF32(saved.w), `networks.${name}.${l}.w`);
          assignFrom(layer.b, decodeF32(saved.b), `networks.${name}.${l}.b`);
        });
      }
      tf.tidy(() => agent.logAlpha.assign(tf.scalar(s.logAlpha)));
      agent.qOptimizer.restore(s.optimizers.q, 'optimizers.q');
      agent.actorOptimizer.restore(s.optimizers.actor, 'optimizers.actor');
      agent.alphaOptimizer.restore(s.optimizers.alpha, 'optimizers.alpha');
      if (agent.stateStats && s.stateNormalizer) {
        agent.stateStats.count = s.stateNormalizer.count;
        agent.stateStats.mean.set(s.stateNormalizer.mean);
        agent.stateStats.m2.set(s.stateNormalizer.m2);
      }
      agent.rewardScaler = RewardScaler.fromJSON(s.rewardScaler);
      agent.actRng.state = s.rng.act;
      agent.replayRng.state = s.rng.replay;
      agent.updates = s.updates;
    } catch (err) {
      agent.dispose();
      throw err;
    }
    return agent;
  }

  /** Frees every tensor the agent holds. The agent is unusable afterwards. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const m of [this.actor, this.qf1, this.qf2, this.qf1Target, this.qf2Target]) m.dispose();
    this.logAlpha.dispose();
    this.qOptimizer.dispose();
    this.actorOptimizer.dispose();
    this.alphaOptimizer.dispose();
    this.headSum.dispose();
  }

  private checkState(x: Float32Array, where: string): void {
    if (x.length !== this.stateDim) throw new RangeError(`${where}: expected ${this.stateDim} values, got ${x.length}`);
  }

  private normalizedState(state: Float32Array): Float32Array {
    this.checkState(state, 'state');
    const x = new Float32Array(this.stateDim);
    normalizeStateInto(this.stateStats, this.settings.normClip, state, x);
    return x;
  }

  private actorLogits(state: Float32Array): Float32Array {
    if (this.disposed) throw new Error('SacDiscrete: used after dispose()');
    const x = this.normalizedState(state);
    const logits = tf.tidy(() => this.actor.apply(tf.tensor2d(x, [1, this.stateDim])));
    const out = logits.dataSync() as Float32Array;
    logits.dispose();
    return out;
  }
}

/** 0 for allowed, MASKED_LOGIT for masked, as float32 logit offsets. */
function maskBiasOf(masks: Uint8Array): Float32Array {
  const out = new Float32Array(masks.length);
  for (let k = 0; k < masks.length; k++) if (masks[k] === 0) out[k] = MASKED_LOGIT;
  return out;
}

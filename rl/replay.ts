// Experience replay F of section 5.4 (component ii, Alg. 2 lines 9-10) and the seeded random
// streams the agent draws from. Plain typed arrays: no tensors live here.

/**
 * Mulberry32: a 32-bit-state PRNG, enough for minibatch indices and action sampling, and its state
 * is one number, so it round-trips through JSON for an exact resume.
 */
export class Rng {
  constructor(private s: number) {
    this.s = s >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  get state(): number {
    return this.s;
  }

  set state(s: number) {
    this.s = s >>> 0;
  }

  /** A well-mixed seed for stream `stream` of a user seed (splitmix32 finaliser), so streams differ. */
  static derive(seed: number, stream: number): number {
    let z = (seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  }
}

/** One minibatch, laid out row-major for direct upload as tensors. */
export interface ReplayBatch {
  readonly size: number;
  /** [size * stateDim], raw (unnormalised) states. */
  readonly states: Float32Array;
  readonly nextStates: Float32Array;
  /** [size * heads], the chosen option of each head. */
  readonly actions: Int32Array;
  /** [size], raw rewards. */
  readonly rewards: Float32Array;
  /** [size], 1 where the episode ended at this transition (no bootstrap). */
  readonly dones: Float32Array;
  /** [size * totalOptions], 1 = allowed, over the concatenated heads. */
  readonly masks: Uint8Array;
  readonly nextMasks: Uint8Array;
}

/**
 * Ring buffer of transitions. Capacity fixed at construction; when full, `add` overwrites the oldest.
 * Sampling is uniform with replacement, as in CleanRL/SB3, from the given Rng.
 */
export class ReplayBuffer {
  private readonly states: Float32Array;
  private readonly nextStates: Float32Array;
  private readonly actions: Int32Array;
  private readonly rewards: Float32Array;
  private readonly dones: Uint8Array;
  private readonly masks: Uint8Array;
  private readonly nextMasks: Uint8Array;
  private next = 0;
  private count = 0;

  constructor(
    readonly capacity: number,
    readonly stateDim: number,
    readonly heads: number,
    readonly totalOptions: number,
  ) {
    this.states = new Float32Array(capacity * stateDim);
    this.nextStates = new Float32Array(capacity * stateDim);
    this.actions = new Int32Array(capacity * heads);
    this.rewards = new Float32Array(capacity);
    this.dones = new Uint8Array(capacity);
    this.masks = new Uint8Array(capacity * totalOptions);
    this.nextMasks = new Uint8Array(capacity * totalOptions);
  }

  get size(): number {
    return this.count;
  }

  /** `masks`/`nextMasks`: concatenated over heads, or null for all allowed. Inputs are validated by the caller. */
  add(
    state: Float32Array,
    action: Int32Array,
    reward: number,
    nextState: Float32Array,
    done: boolean,
    masks: Uint8Array | null,
    nextMasks: Uint8Array | null,
  ): void {
    const i = this.next;
    this.states.set(state, i * this.stateDim);
    this.nextStates.set(nextState, i * this.stateDim);
    this.actions.set(action, i * this.heads);
    this.rewards[i] = reward;
    this.dones[i] = done ? 1 : 0;
    const o = i * this.totalOptions;
    if (masks) this.masks.set(masks, o);
    else this.masks.fill(1, o, o + this.totalOptions);
    if (nextMasks) this.nextMasks.set(nextMasks, o);
    else this.nextMasks.fill(1, o, o + this.totalOptions);
    this.next = (i + 1) % this.capacity;
    this.count = Math.min(this.count + 1, this.capacity);
  }

  sample(batchSize: number, rng: Rng): ReplayBatch {
    if (this.count === 0) throw new Error('cannot sample an empty replay buffer');
    const d = this.stateDim;
    const h = this.heads;
    const t = this.totalOptions;
    const b: ReplayBatch = {
      size: batchSize,
      states: new Float32Array(batchSize * d),
      nextStates: new Float32Array(batchSize * d),
      actions: new Int32Array(batchSize * h),
      rewards: new Float32Array(batchSize),
      dones: new Float32Array(batchSize),
      masks: new Uint8Array(batchSize * t),
      nextMasks: new Uint8Array(batchSize * t),
    };
    for (let k = 0; k < batchSize; k++) {
      const j = rng.int(this.count);
      b.states.set(this.states.subarray(j * d, (j + 1) * d), k * d);
      b.nextStates.set(this.nextStates.subarray(j * d, (j + 1) * d), k * d);
      b.actions.set(this.actions.subarray(j * h, (j + 1) * h), k * h);
      b.rewards[k] = this.rewards[j]!;
      b.dones[k] = this.dones[j]!;
      b.masks.set(this.masks.subarray(j * t, (j + 1) * t), k * t);
      b.nextMasks.set(this.nextMasks.subarray(j * t, (j + 1) * t), k * t);
    }
    return b;
  }
}

// State and reward normalisation (sections 5.2 and 5.4: "TS also performs normalization on the
// state and reward"). Statistics are float64 and updated only by `observe` (training); acting and
// the tf-free ActorForward read them without changing them, so a saved agent's normaliser is frozen.

/** Plain-JSON form of a RunningMeanStd. */
export interface RunningStatsJson {
  count: number;
  mean: number[];
  m2: number[];
}

/** Per-dimension running mean and variance by Welford's algorithm (numerically stable, one pass). */
export class RunningMeanStd {
  count = 0;
  readonly mean: Float64Array;
  readonly m2: Float64Array;

  constructor(readonly dim: number) {
    this.mean = new Float64Array(dim);
    this.m2 = new Float64Array(dim);
  }

  update(x: ArrayLike<number>): void {
    this.count += 1;
    for (let i = 0; i < this.dim; i++) {
      const xi = x[i]!;
      const delta = xi - this.mean[i]!;
      this.mean[i] = this.mean[i]! + delta / this.count;
      this.m2[i] = this.m2[i]! + delta * (xi - this.mean[i]!);
    }
  }

  /** Population variance; 0 before two samples. */
  variance(i: number): number {
    return this.count > 1 ? this.m2[i]! / this.count : 0;
  }

  toJSON(): RunningStatsJson {
    return { count: this.count, mean: Array.from(this.mean), m2: Array.from(this.m2) };
  }

  static fromJSON(j: RunningStatsJson): RunningMeanStd {
    const r = new RunningMeanStd(j.mean.length);
    r.count = j.count;
    r.mean.set(j.mean);
    r.m2.set(j.m2);
    return r;
  }
}

const EPS = 1e-8;

/**
 * `(x - mean) / sqrt(var + eps)`, clipped to [-clip, clip], written to `out` (float32, the
 * network input). Shared by the TF agent and ActorForward so both see bit-identical inputs.
 * `stats` null = identity (normalisation off).
 */
export function normalizeStateInto(
  stats: RunningStatsJson | RunningMeanStd | null,
  clip: number,
  x: ArrayLike<number>,
  out: Float32Array,
  outOffset = 0,
): void {
  const n = out.length - outOffset < x.length ? out.length - outOffset : x.length;
  if (stats === null) {
    for (let i = 0; i < n; i++) out[outOffset + i] = x[i]!;
    return;
  }
  const count = stats.count;
  for (let i = 0; i < n; i++) {
    const v = count > 1 ? stats.m2[i]! / count : 0;
    const z = (x[i]! - stats.mean[i]!) / Math.sqrt(v + EPS);
    out[outOffset + i] = z > clip ? clip : z < -clip ? -clip : z;
  }
}

/** Plain-JSON form of a RewardScaler. */
export interface RewardScalerJson {
  mode: 'returns' | 'rewards' | 'none';
  gamma: number;
  stats: RunningStatsJson;
  /** The running discounted return of the episode in progress (mode 'returns'). */
  runningReturn: number;
}

/**
 * Divides rewards by a running std (of discounted returns or of rewards, settings.rewardNormalization).
 * No mean is subtracted: a constant shift of rewards would change the value of ending an episode.
 * The scale is applied when a minibatch is sampled, so all rewards in one update share one scale.
 */
export class RewardScaler {
  private runningReturn = 0;
  private readonly stats = new RunningMeanStd(1);
  private readonly one = new Float64Array(1);

  constructor(
    readonly mode: 'returns' | 'rewards' | 'none',
    readonly gamma: number,
  ) {}

  /** Called once per environment transition, in order. */
  observe(reward: number, done: boolean): void {
    if (this.mode === 'none') return;
    if (this.mode === 'returns') {
      this.runningReturn = this.runningReturn * this.gamma + reward;
      this.one[0] = this.runningReturn;
      if (done) this.runningReturn = 0;
    } else {
      this.one[0] = reward;
    }
    this.stats.update(this.one);
  }

  /** The factor rewards are multiplied by: 1 / sqrt(var + eps), or 1 with too few samples or mode 'none'. */
  scale(): number {
    if (this.mode === 'none' || this.stats.count < 2) return 1;
    return 1 / Math.sqrt(this.stats.variance(0) + EPS);
  }

  toJSON(): RewardScalerJson {
    return { mode: this.mode, gamma: this.gamma, stats: this.stats.toJSON(), runningReturn: this.runningReturn };
  }

  static fromJSON(j: RewardScalerJson): RewardScaler {
    const r = new RewardScaler(j.mode, j.gamma);
    const s = RunningMeanStd.fromJSON(j.stats);
    r.stats.count = s.count;
    r.stats.mean.set(s.mean);
    r.stats.m2.set(s.m2);
    r.runningReturn = j.runningReturn;
    return r;
  }
}

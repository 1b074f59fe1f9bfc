// Network pieces of the SAC-Discrete agent: MLPs on tf.Variables, the dense layer with an explicit
// transpose gradient, per-head softmax, Adam, and the base64 weight encoding of SerializedAgent.
// Callers run everything here inside tf.tidy (the agent's update and act do).
import type * as tfType from '@tensorflow/tfjs';
import * as tf from '@tensorflow/tfjs';
import type { Rng } from './replay.js';
import { decodeF32, encodeF32 } from './settings.js';

/**
 * y = x W + b with a hand-written gradient. The wasm backend's matMul with transposeA/transposeB
 * takes a slow path, and autograd of matMul uses exactly those; transposing explicitly first and
 * then calling a plain matMul made a whole update about 4 times faster (NOTES-tfjs.md).
 */
const denseOp = tf.customGrad((...args: unknown[]) => {
  const [x, w, b, save] = args as [tfType.Tensor2D, tfType.Tensor2D, tfType.Tensor1D, tfType.GradSaveFunc];
  save([x, w]);
  return {
    value: tf.add(tf.matMul(x, w), b),
    gradFunc: (dy: tfType.Tensor, saved: tfType.Tensor[]) => {
      const [xs, ws] = saved as [tfType.Tensor2D, tfType.Tensor2D];
      const dy2 = dy as tfType.Tensor2D;
      return [tf.matMul(dy2, tf.transpose(ws)), tf.matMul(tf.transpose(xs), dy2), tf.sum(dy2, 0)];
    },
  };
}) as (x: tfType.Tensor2D, w: tfType.Tensor2D, b: tfType.Tensor1D) => tfType.Tensor2D;

export function dense(x: tfType.Tensor2D, w: tfType.Tensor2D, b: tfType.Tensor1D): tfType.Tensor2D {
  return denseOp(x, w, b);
}

/** One dense layer's parameters; W is [inDim, outDim] row-major. */
export interface DenseLayer {
  readonly w: tfType.Variable<tfType.Rank.R2>;
  readonly b: tfType.Variable<tfType.Rank.R1>;
}

/** Layer widths from input to output: [stateDim, ...hidden, outDim]. */
export function layerSizes(stateDim: number, hidden: readonly number[], outDim: number): number[] {
  return [stateDim, ...hidden, outDim];
}

/**
 * A ReLU MLP (section 6.1: input, two hidden layers, output), linear output. The actor's output
 * is logits (softmax applied per head by the caller); a critic's is one Q value per option.
 */
export class Mlp {
  private constructor(
    readonly name: string,
    readonly layers: readonly DenseLayer[],
  ) {}

  /**
   * PyTorch nn.Linear's default initialisation, U(-1/sqrt(fanIn), 1/sqrt(fanIn)) for W and b,
   * drawn from `rng` in JS so that a seed fixes the weights on every backend.
   */
  static init(name: string, sizes: readonly number[], rng: Rng, trainable: boolean): Mlp {
    const layers: DenseLayer[] = [];
    for (let l = 0; l + 1 < sizes.length; l++) {
      const fanIn = sizes[l]!;
      const fanOut = sizes[l + 1]!;
      const bound = 1 / Math.sqrt(fanIn);
      const w = new Float32Array(fanIn * fanOut);
      for (let i = 0; i < w.length; i++) w[i] = (2 * rng.next() - 1) * bound;
      const b = new Float32Array(fanOut);
      for (let i = 0; i < b.length; i++) b[i] = (2 * rng.next() - 1) * bound;
      layers.push({
        w: tf.tidy(() => tf.variable(tf.tensor2d(w, [fanIn, fanOut]), trainable)),
        b: tf.tidy(() => tf.variable(tf.tensor1d(b), trainable)),
      });
    }
    return new Mlp(name, layers);
  }

  /** A network with `source`'s architecture and weights (the targets at Alg. 2 line 1). */
  static copyOf(name: string, source: Mlp, trainable: boolean): Mlp {
    return new Mlp(
      name,
      source.layers.map((layer) => ({
        w: tf.tidy(() => tf.variable(layer.w.clone(), trainable)),
        b: tf.tidy(() => tf.variable(layer.b.clone(), trainable)),
      })),
    );
  }

  apply(x: tfType.Tensor2D): tfType.Tensor2D {
    let h = x;
    this.layers.forEach((layer, l) => {
      h = dense(h, layer.w, layer.b);
      if (l + 1 < this.layers.length) h = tf.relu(h);
    });
    return h;
  }

  get variables(): tfType.Variable[] {
    return this.layers.flatMap((l) => [l.w, l.b]);
  }

  /** `this <- kappa * source + (1 - kappa) * this` (Alg. 2 line 14). */
  softUpdateFrom(source: Mlp, kappa: number): void {
    tf.tidy(() => {
      this.layers.forEach((layer, l) => {
        const src = source.layers[l]!;
        layer.w.assign(tf.add(tf.mul(src.w, kappa), tf.mul(layer.w, 1 - kappa)));
        layer.b.assign(tf.add(tf.mul(src.b, kappa), tf.mul(layer.b, 1 - kappa)));
      });
    });
  }

  dispose(): void {
    for (const v of this.variables) v.dispose();
  }
}

/**
 * Per-head log-softmax of concatenated logits [B, sum(headSizes)], with `maskBias` (0 allowed,
 * MASKED_LOGIT disallowed) added first so that a masked option has probability exactly 0
 * (exp underflows) and log-probability about MASKED_LOGIT: finite, so 0 * log pi stays 0.
 */
export function headLogSoftmax(
  logits: tfType.Tensor2D,
  headSizes: readonly number[],
  maskBias: tfType.Tensor2D | null,
): tfType.Tensor2D {
  const z = maskBias ? tf.add(logits, maskBias) : logits;
  const batch = z.shape[0];
  const first = headSizes[0]!;
  if (headSizes.every((n) => n === first)) {
    return tf.reshape(tf.logSoftmax(tf.reshape(z, [batch, headSizes.length, first])), [
      batch,
      headSizes.length * first,
    ]);
  }
  const parts = tf.split(z, headSizes as number[], 1);
  return tf.concat(
    parts.map((p) => tf.logSoftmax(p)),
    1,
  ) as tfType.Tensor2D;
}

/** The logit added to a masked option: exp(MASKED_LOGIT - max) is 0 in float32. */
export const MASKED_LOGIT = -1e9;

/**
 * The [total, heads] 0/1 matrix S with S[o, i] = 1 iff option o belongs to head i, so that
 * `x.matMul(S)` sums a [B, total] tensor within each head.
 */
export function headSumMatrix(headSizes: readonly number[]): tfType.Tensor2D {
  const total = headSizes.reduce((a, n) => a + n, 0);
  const s = new Float32Array(total * headSizes.length);
  let o = 0;
  headSizes.forEach((n, i) => {
    for (let k = 0; k < n; k++) s[(o + k) * headSizes.length + i] = 1;
    o += n;
  });
  return tf.tensor2d(s, [total, headSizes.length]);
}

/** Adam state of one parameter group, plain JSON in a SerializedAgent. */
export interface AdamJson {
  step: number;
  /** First and second moments, one base64 float32 array per variable, in the group's order. */
  m: string[];
  v: string[];
}

/**
 * Adam as PyTorch computes it (bias-corrected, epsilon added to sqrt(v_hat)), with optional
 * clipping to a global gradient norm. Written here rather than tf.train.adam so that its moments
 * and step count are plain variables that save() reads synchronously and load() restores exactly.
 */
export class Adam {
  private step = 0;
  private readonly m: tfType.Variable[];
  private readonly v: tfType.Variable[];

  constructor(
    readonly params: readonly tfType.Variable[],
    readonly lr: number,
    readonly beta1: number,
    readonly beta2: number,
    readonly epsilon: number,
    readonly clipNorm: number | undefined,
  ) {
    this.m = params.map((p) => tf.tidy(() => tf.variable(tf.zerosLike(p), false)));
    this.v = params.map((p) => tf.tidy(() => tf.variable(tf.zerosLike(p), false)));
  }

  get steps(): number {
    return this.step;
  }

  /** `grads[k]` is the gradient of `params[k]`. Call inside tf.tidy. */
  apply(grads: readonly tfType.Tensor[]): void {
    this.step += 1;
    let gs = grads;
    if (this.clipNorm !== undefined) {
      const sq = tf.addN(gs.map((g) => tf.sum(tf.square(g))));
      const factor = tf.minimum(tf.scalar(1), tf.div(tf.scalar(this.clipNorm), tf.add(tf.sqrt(sq), 1e-6)));
      gs = gs.map((g) => tf.mul(g, factor));
    }
    const bc1 = 1 - Math.pow(this.beta1, this.step);
    const bc2 = 1 - Math.pow(this.beta2, this.step);
    const stepSize = this.lr / bc1;
    const sqrtBc2 = Math.sqrt(bc2);
    this.params.forEach((p, k) => {
      const g = gs[k]!;
      const m = this.m[k]!;
      const v = this.v[k]!;
      m.assign(tf.add(tf.mul(m, this.beta1), tf.mul(g, 1 - this.beta1)));
      v.assign(tf.add(tf.mul(v, this.beta2), tf.mul(tf.square(g), 1 - this.beta2)));
      const denom = tf.add(tf.div(tf.sqrt(v), sqrtBc2), this.epsilon);
      p.assign(tf.sub(p, tf.mul(tf.div(m, denom), stepSize)));
    });
  }

  toJSON(): AdamJson {
    return {
      step: this.step,
      m: this.m.map((t) => encodeF32(t.dataSync() as Float32Array)),
      v: this.v.map((t) => encodeF32(t.dataSync() as Float32Array)),
    };
  }

  /** Restores moments saved by toJSON; `where` names the field in errors. */
  restore(j: AdamJson, where: string): void {
    if (j.m.length !== this.m.length || j.v.length !== this.v.length)
      throw new Error(`${where}: expected ${this.m.length} moment arrays, got ${j.m.length}/${j.v.length}`);
    this.step = j.step;
    this.m.forEach((t, k) => assignFrom(t, decodeF32(j.m[k]!), `${where}.m.${k}`));
    this.v.forEach((t, k) => assignFrom(t, decodeF32(j.v[k]!), `${where}.v.${k}`));
  }

  dispose(): void {
    for (const t of [...this.m, ...this.v]) t.dispose();
  }
}

/** Overwrites a variable with `data`, checking the element count. */
export function assignFrom(v: tfType.Variable, data: Float32Array, where: string): void {
  if (data.length !== v.size) throw new Error(`${where}: expected ${v.size} floats, got ${data.length}`);
  tf.tidy(() => v.assign(tf.tensor(data, v.shape)));
}

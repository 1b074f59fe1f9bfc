// The simulated worker's stand-in for a forward pass (agent/simWorker.ts): a deterministic function of
// the input AND of the model, so a test can check that an answer belongs to its request and comes from
// its own model (a batch routed to another model's worker gives other numbers). Pure, O(outputs).
//
//   output[s][k] = input[s][k mod N] + input[s][N - 1 - (k mod N)] + modelOffset(model)
//
// for each sample s of N input elements; modelOffset is a whole number in [1, 1000] from a hash of the
// model's name (whole numbers keep the FP32 sums exact enough to compare bit for bit).

import { stableHash } from './hash.js';

/** 1 + (stable hash of the name mod 1000). */
export function modelOffset(model: string): number {
  return 1 + (stableHash(model) % 1000);
}

/**
 * The stand-in outputs of `size` samples of `inPerSample` FP32 inputs each, `outPerSample` per sample.
 * `x`: the samples one after another, or each sample's own array (read in place from shared memory).
 */
export function standInForward(
  model: string,
  x: Float32Array | readonly Float32Array[],
  size: number,
  inPerSample: number,
  outPerSample: number,
): Float32Array {
  const c = modelOffset(model);
  const y = new Float32Array(size * outPerSample);
  for (let s = 0; s < size; s++) {
    const xs = Array.isArray(x) ? (x as readonly Float32Array[])[s]! : (x as Float32Array);
    const base = Array.isArray(x) ? 0 : s * inPerSample;
    for (let k = 0; k < outPerSample; k++) {
      const j = k % inPerSample;
      y[s * outPerSample + k] = xs[base + j]! + xs[base + inPerSample - 1 - j]! + c;
    }
  }
  return y;
}

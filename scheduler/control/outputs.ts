// A batch's outputs cut into its tasks' answers: each output tensor is split along the batch dimension,
// after checking that the worker sent what its header says.
import type { TensorRef } from '../../src/protocol/tensor.js';
import type { TaskOutput } from './types.js';

export interface SplitOutputs {
  /** Why the result cannot be split (every task then fails); null when it can. */
  readonly problem: string | null;
  /** Samples whose input the worker could not decode, by index in the batch, with its message. */
  readonly failed: ReadonlyMap<number, string>;
  /** Task i's outputs (views into the payload, not copies). */
  outputsOf(i: number): TaskOutput[];
}

/** Splits a batch of `n` tasks' `outputs`, whose bytes lie one after another in `payload`. */
export function splitOutputs(n: number, outputs: readonly TensorRef[], payload: Buffer): SplitOutputs {
  let offset = 0;
  const per: { ref: TensorRef; bytesPer: number; start: number }[] = [];
  let problem: string | null = null;
  for (const ref of outputs) {
    if (ref.shape[0] !== n || ref.byteLength % n !== 0)
      problem = `output '${ref.name}' has shape [${ref.shape.join(',')}] for a batch of ${n}`;
    per.push({ ref, bytesPer: ref.byteLength / n, start: offset });
    offset += ref.byteLength;
  }
  if (offset !== payload.length) problem = `worker sent ${payload.length} output bytes, its header says ${offset}`;
  const failed = new Map(outputs.flatMap((ref) => ref.failed ?? []).map((f) => [f.index, f.message]));
  return {
    problem,
    failed,
    outputsOf: (i) =>
      per.map((p) => ({
        name: p.ref.name,
        datatype: p.ref.datatype,
        shape: [1, ...p.ref.shape.slice(1)],
        data: payload.subarray(p.start + i * p.bytesPer, p.start + (i + 1) * p.bytesPer),
      })),
  };
}

// A batch's outputs cut into its tasks' answers: each output tensor (every output of the signature, in
// the order the worker lists them, bytes one after another in the payload) is split along the batch
// dimension into one row per task, after checking that the worker sent what its header says.
import { DATATYPE_BYTES, elementCount, type TensorRef, type TensorSpec } from '../../src/protocol/tensor.js';
import type { TaskOutput } from './types.js';

export interface SplitOutputs {
  /** Why the result cannot be split (every task then fails); null when it can. */
  readonly problem: string | null;
  /** Samples whose input the worker could not decode, by index in the batch, with its message. */
  readonly failed: ReadonlyMap<number, string>;
  /** Task i's outputs (views into the payload, not copies). */
  outputsOf(i: number): TaskOutput[];
}

const dims = (shape: readonly number[]): string => `[${shape.join(',')}]`;

/** What the model's signature says of a result: its outputs, and whether they carry a batch dimension. */
export interface ResultSpec {
  readonly outputs: readonly TensorSpec[];
  /** false: max_batch_size 0, a batch of one task whose outputs are exactly their specs' shapes. */
  readonly batchDim: boolean;
}

const same = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((d, i) => d === b[i]);

/**
 * Splits a batch of `n` tasks' `outputs`, whose bytes lie one after another in `payload`. Each output's
 * byteLength must be its datatype's size times its shape's elements, and its first dimension `n`.
 * `spec`, when given: every output of the signature must be there, by name, of its datatype; without a
 * batch dimension an output is exactly its spec's shape (a leading 1 is taken too), and so is the
 * task's row.
 */
export function splitOutputs(
  n: number,
  outputs: readonly TensorRef[],
  payload: Buffer,
  spec?: ResultSpec,
): SplitOutputs {
  let offset = 0;
  const per: { ref: TensorRef; bytesPer: number; start: number; row: number[] }[] = [];
  let problem: string | null = null;
  for (const want of spec?.outputs ?? []) {
    const got = outputs.find((o) => o.name === want.name);
    if (!got || got.datatype !== want.datatype)
      problem = `output '${want.name}' ${got ? `is ${got.datatype}, expected ${want.datatype}` : 'is missing'}`;
  }
  for (const ref of outputs) {
    const bytes = DATATYPE_BYTES[ref.datatype] * elementCount(ref.shape);
    if (ref.byteLength !== bytes)
      problem = `output '${ref.name}' is ${ref.byteLength} bytes, but ${ref.datatype} ${dims(ref.shape)} is ${bytes}`;
    const own = spec?.batchDim === false ? spec.outputs.find((s) => s.name === ref.name) : undefined;
    if (own) {
      const exact = same(ref.shape, own.shape) || (ref.shape[0] === 1 && same(ref.shape.slice(1), own.shape));
      if (n !== 1 || !exact)
        problem = `output '${ref.name}' has shape ${dims(ref.shape)}, expected ${dims(own.shape)} (no batch dimension)`;
      per.push({ ref, bytesPer: ref.byteLength, start: offset, row: [...own.shape] });
    } else {
      if (ref.shape[0] !== n || ref.byteLength % n !== 0)
        problem = `output '${ref.name}' has shape ${dims(ref.shape)} for a batch of ${n}`;
      per.push({ ref, bytesPer: ref.byteLength / n, start: offset, row: [1, ...ref.shape.slice(1)] });
    }
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
        shape: [...p.row],
        data: payload.subarray(p.start + i * p.bytesPer, p.start + (i + 1) * p.bytesPer),
      })),
  };
}

// The padding rules of a batch. (1) A batch padded to its placed size (Placement.padBatch: the online profiler
// learning a model's larger batches, docs/online-profiling.md): `runBatchSize`, which the simulator's engine and
// the scheduler's dispatcher both call. (2) A batch of variable-length samples (docs/model-repository.md, "Variable
// dimensions"): each input with a variable dimension is padded, per batch, to the longest sample of the
// batch in every dimension, with zero bytes after each sample's own values (Hugging Face's
// `padding_side="right"`, pad id 0, attention mask 0). A model that treats 0 as padding (an attention
// mask input, or a pad id of 0 it ignores) answers each sample as if it ran alone; the cost model pads
// the same way (src/model/costDistribution.ts: a batch costs its longest sample). Pure.
import { elementCount } from '../protocol/tensor.js';

/** The longest of `shapes` (all of one rank) in every dimension. */
export function longestOf(shapes: readonly (readonly number[])[]): number[] {
  const out = [...shapes[0]!];
  for (const s of shapes) s.forEach((d, i) => (out[i] = Math.max(out[i]!, d)));
  return out;
}

/**
 * A sample of `shape` (row-major, `elementBytes` an element) padded with zero bytes to `to` (each
 * dimension >= the sample's). The sample itself when no dimension grows; otherwise a new buffer.
 */
export function padSample(data: Buffer, shape: readonly number[], to: readonly number[], elementBytes: number): Buffer {
  if (shape.every((d, i) => d === to[i])) return data;
  const out = Buffer.alloc(elementCount(to) * elementBytes);
  const rank = shape.length;
  const rowBytes = shape[rank - 1]! * elementBytes;
  const rows = elementCount(shape.slice(0, -1));
  const index = new Array<number>(rank - 1).fill(0);
  for (let r = 0; r < rows; r++) {
    let at = 0;
    for (let d = 0; d < rank - 1; d++) at = at * to[d]! + index[d]!;
    data.copy(out, at * to[rank - 1]! * elementBytes, r * rowBytes, (r + 1) * rowBytes);
    for (let d = rank - 2; d >= 0; d--) {
      if (++index[d]! < shape[d]!) break;
      index[d] = 0;
    }
  }
  return out;
}

/** What `runBatchSize` reads of a worker, and the turn it keeps. */
export interface PaddingWorker {
  /** Its placement pads (Placement.padBatch). */
  readonly padBatch: boolean;
  /** Its placed batch. */
  readonly batch: number;
  /** The previous batch was padded. */
  padTurn: boolean;
}

/**
 * The batch size worker `w` runs its next batch of `tasks` tasks at. Where its placement pads
 * (Placement.padBatch), every other batch runs at its placed batch, the tasks and copies of the first
 * one (their answers thrown away), never more than `maxBatchSize` (the model's; absent: no limit) nor
 * fewer than the tasks: a fit then sees the sizes the load fills and the larger one AIMD has reached.
 * Otherwise the tasks. Takes the turn: call once per batch.
 */
export function runBatchSize(w: PaddingWorker, tasks: number, maxBatchSize?: number): number {
  if (!w.padBatch) return tasks;
  w.padTurn = !w.padTurn;
  if (!w.padTurn) return tasks;
  return Math.max(tasks, maxBatchSize === undefined ? w.batch : Math.min(w.batch, Math.max(1, maxBatchSize)));
}

// A batch's input tensors as the worker protocol lays them out (docs/worker-protocol.md, "Batches of
// any signature"): one TensorRef per input of the model's signature, in signature order, each
// [size, ...spec.shape] (exactly spec.shape for a model without a batch dimension); the payload is the
// inputs' bytes one after another, each input's samples one after another. The parts are the tasks'
// own buffers (views of the request bodies): nothing is copied here, but the samples a variable
// dimension pads.
import { DATATYPE_BYTES, hasVariableDim, type SampleEncoding, type TensorRef } from '../../src/protocol/tensor.js';
import { longestOf, padSample } from '../../src/serving/padding.js';
import type { Task } from './records.js';
import type { ServedModelConfig, TaskInput } from './types.js';

/**
 * A task's `shapes` (Task.shapes) for a model with a variable input dimension: each input's sample
 * shape without the batch dimension (the codec checked it against the spec); none for other models.
 */
export function taskShapes(
  model: ServedModelConfig,
  input: TaskInput | readonly TaskInput[],
): { shapes?: (readonly number[])[] } {
  if (!model.signature.inputs.some((s) => hasVariableDim(s.shape))) return {};
  const list = 'data' in input ? [input] : input;
  return { shapes: list.map((i) => (model.maxBatchSize === 0 ? i.shape : i.shape.slice(1))) };
}

/**
 * How many of the `want` tasks the dispatch rule starts one batch takes: at most the model's
 * maxBatchSize (Triton's max_batch_size; the placements may ask for up to 64), one for a model without
 * a batch dimension (0); all of them for a model with no limit set (the zoo's).
 */
export function batchLimit(want: number, maxBatchSize: number | undefined): number {
  return maxBatchSize === undefined ? want : Math.min(want, Math.max(1, maxBatchSize));
}

/**
 * `tasks` and, up to `size`, copies of the first: a padded batch (Placement.padBatch, src/serving/dispatch.ts
 * `runBatchSize`) runs them all and answers the tasks alone. The copies are the same objects: nothing is copied.
 */
export function padded(tasks: readonly Task[], size: number): readonly Task[] {
  if (size <= tasks.length) return tasks;
  return [...tasks, ...new Array<Task>(size - tasks.length).fill(tasks[0]!)];
}

export interface BatchInputs {
  readonly inputs: TensorRef[];
  /** The payload's parts, in order: input 0's samples, then input 1's, ... */
  readonly parts: Buffer[];
  readonly bytes: number;
}

/**
 * The batch of `tasks` (each holding one sample of every input, in signature order) for the model's
 * worker. An input with a variable dimension is padded to the batch's longest sample
 * (src/serving/padding.ts): its samples of another shape are copied; the others are not.
 */
export function batchInputs(model: ServedModelConfig, tasks: readonly Task[]): BatchInputs {
  const specs = model.signature.inputs;
  const size = tasks.length;
  const sampleOf = (j: number): { shape: readonly number[]; samples: Buffer[] } => {
    const spec = specs[j]!;
    const own = tasks.map((t) => t.inputs[j]!);
    if (!hasVariableDim(spec.shape)) return { shape: spec.shape, samples: own };
    const shapes = tasks.map((t) => t.shapes?.[j] ?? spec.shape);
    const longest = longestOf(shapes);
    const bytes = DATATYPE_BYTES[spec.datatype];
    return { shape: longest, samples: own.map((b, i) => padSample(b, shapes[i]!, longest, bytes)) };
  };
  const shape = (sample: readonly number[]) => (model.maxBatchSize === 0 ? [...sample] : [size, ...sample]);
  if (specs.length === 1) {
    // The one-input path (the zoo's models): its samples may be sent encoded (UINT8, JPEG, PNG) and
    // are then listed, so the worker can decode each.
    const spec = specs[0]!;
    const one = sampleOf(0);
    const parts = one.samples;
    const bytes = byteSum(parts);
    const encoded = tasks.some((t) => t.encoding !== undefined && t.encoding !== spec.datatype);
    const samples = encoded
      ? {
          samples: tasks.map((t) => ({
            encoding: t.encoding ?? (spec.datatype as SampleEncoding),
            byteLength: t.inputs[0]!.length,
          })),
        }
      : {};
    return {
      inputs: [{ name: spec.name, datatype: spec.datatype, shape: shape(one.shape), byteLength: bytes, ...samples }],
      parts,
      bytes,
    };
  }
  const parts: Buffer[] = [];
  let bytes = 0;
  const inputs = specs.map((spec, j): TensorRef => {
    const first = parts.length;
    const one = sampleOf(j);
    parts.push(...one.samples);
    const byteLength = byteSum(parts, first);
    bytes += byteLength;
    return { name: spec.name, datatype: spec.datatype, shape: shape(one.shape), byteLength };
  });
  return { inputs, parts, bytes };
}

function byteSum(parts: readonly Buffer[], from = 0): number {
  let n = 0;
  for (let i = from; i < parts.length; i++) n += parts[i]!.length;
  return n;
}

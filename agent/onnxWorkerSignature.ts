// The ONNX Runtime worker's start-up checks, pure: the `--signature` flag (the JSON of a
// WorkerSignature, src/repository/types.ts) validated with the field at fault named, and the model's
// own inputs and outputs as its InferenceSession reports them (names, element types, shapes) checked
// against it. Called once per worker start by
// agent/onnxWorkerMain.ts; a problem found here is the worker's `fatal`.
import type * as ort from 'onnxruntime-node';
import { z } from 'zod';
import { type Datatype, DatatypeSchema, type TensorSpec } from '../src/protocol/tensor.js';
import type { WorkerSignature } from '../src/repository/types.js';

/** A typed-array constructor onnxruntime-node takes a tensor's data as. */
export type OrtArray = {
  new (b: ArrayBufferLike, offset: number, length: number): ort.Tensor['data'];
  BYTES_PER_ELEMENT: number;
};

/** The typed array of each protocol datatype's elements, as onnxruntime-node reads a tensor's data. */
export const ARRAY_OF: Readonly<Record<Datatype, OrtArray>> = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  UINT64: BigUint64Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  INT64: BigInt64Array,
  FP16: Uint16Array, // binary16 bit patterns: onnxruntime-common's float16 data
  FP32: Float32Array,
  FP64: Float64Array,
};

/** ONNX Runtime's tensor type name of each protocol datatype (onnxruntime-common Tensor.Type). */
export const ORT_TYPE: Readonly<Record<Datatype, string>> = {
  BOOL: 'bool',
  UINT8: 'uint8',
  UINT16: 'uint16',
  UINT32: 'uint32',
  UINT64: 'uint64',
  INT8: 'int8',
  INT16: 'int16',
  INT32: 'int32',
  INT64: 'int64',
  FP16: 'float16',
  FP32: 'float32',
  FP64: 'float64',
};

const TensorSpecSchema = z
  .object({
    name: z.string().min(1),
    datatype: DatatypeSchema,
    shape: z.array(z.number().int().positive()),
    image: z.boolean().optional(),
  })
  .strict();

const WorkerSignatureSchema = z
  .object({
    inputs: z.array(TensorSpecSchema).min(1),
    outputs: z.array(TensorSpecSchema).min(1),
    batchDim: z.boolean(),
  })
  .strict()
  .superRefine((sig, ctx) => {
    for (const side of ['inputs', 'outputs'] as const) {
      const seen = new Set<string>();
      sig[side].forEach((t, k) => {
        if (seen.has(t.name)) ctx.addIssue({ code: 'custom', path: [side, k, 'name'], message: `'${t.name}' twice` });
        seen.add(t.name);
        if (t.image && (side === 'outputs' || t.datatype !== 'FP32' || t.shape.length !== 3 || t.shape[0] !== 3))
          ctx.addIssue({
            code: 'custom',
            path: [side, k, 'image'],
            message: 'only an FP32 input of shape [3, H, W] is an image',
          });
      });
    }
    if (sig.inputs.some((t) => t.image) && (sig.inputs.length !== 1 || !sig.batchDim))
      ctx.addIssue({
        code: 'custom',
        path: ['inputs'],
        message: "an image input must be the model's only input, with a batch dimension",
      });
  });

/** The signature of `--signature JSON`, or why not (the field named, as `--signature inputs.1.shape: ...`). */
export function parseWorkerSignature(json: string): WorkerSignature | string {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (e) {
    return `--signature: not JSON (${(e as Error).message})`;
  }
  const parsed = WorkerSignatureSchema.safeParse(raw);
  if (!parsed.success)
    return `--signature ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`;
  const { inputs, outputs, batchDim } = parsed.data;
  const spec = (t: z.infer<typeof TensorSpecSchema>): TensorSpec => ({
    name: t.name,
    datatype: t.datatype,
    shape: t.shape,
    ...(t.image ? { image: true } : {}),
  });
  return { inputs: inputs.map(spec), outputs: outputs.map(spec), batchDim };
}

/** What ONNX Runtime says of one model input or output (InferenceSession.inputMetadata's shape). */
export interface SessionTensor {
  readonly name: string;
  readonly isTensor: boolean;
  /** Absent for a value that is not a tensor. */
  readonly type?: string;
  /** Each dim a number (fixed; -1 unknown) or a string (symbolic; '' unnamed); [] when the rank is unknown. */
  readonly shape?: readonly (number | string)[];
}

function checkSide(
  side: 'input' | 'output',
  specs: readonly TensorSpec[],
  model: readonly SessionTensor[],
  batchDim: boolean,
): string[] {
  const problems: string[] = [];
  const names = model.map((m) => m.name);
  for (const spec of specs) {
    const m = model.find((x) => x.name === spec.name);
    if (!m) {
      problems.push(`${side} '${spec.name}': the model has no ${side} of that name (it has ${names.join(', ')})`);
      continue;
    }
    if (!m.isTensor || m.type === undefined) {
      problems.push(`${side} '${spec.name}': the model's is not a tensor`);
      continue;
    }
    if (m.type !== ORT_TYPE[spec.datatype])
      problems.push(`${side} '${spec.name}': the model's element type is ${m.type}, the signature's ${spec.datatype}`);
    const dims = m.shape ?? [];
    if (dims.length === 0) continue; // rank unknown to the model: ONNX Runtime checks each run
    const want: (number | null)[] = batchDim ? [null, ...spec.shape] : [...spec.shape];
    const show = `[${dims.map((d) => (typeof d === 'string' ? d || '?' : d)).join(',')}]`;
    const wantShow = `[${want.map((d) => d ?? 'batch').join(',')}]`;
    if (dims.length !== want.length) {
      problems.push(
        `${side} '${spec.name}': the model's shape ${show} has rank ${dims.length}, the signature's ` +
          `${wantShow} ${want.length}`,
      );
      continue;
    }
    dims.forEach((d, i) => {
      if (typeof d !== 'number' || d < 0) return; // symbolic or unknown: any size fits
      const w = want[i]!;
      if (w === null)
        problems.push(
          `${side} '${spec.name}': dim 0 is ${d} in the model's shape ${show}, but it is the batch ` +
            `dimension (the signature has batchDim true): export the model with a dynamic batch axis`,
        );
      else if (d !== w)
        problems.push(
          `${side} '${spec.name}': dim ${i} is ${d} in the model's shape ${show}, ${w} in the ` +
            `signature's ${wantShow}`,
        );
    });
  }
  if (side === 'input')
    for (const m of model)
      if (!specs.some((s) => s.name === m.name))
        problems.push(`input '${m.name}': the model takes it, the signature does not list it`);
  return problems;
}

/**
 * Every difference between the model's inputs and outputs (its InferenceSession's metadata) and the
 * signature (empty: they fit). Inputs and outputs are matched by name (a repository's config names
 * them; their order need not be the model's). A model output the signature does not list is fine (it
 * is not fetched).
 */
export function checkSessionSignature(
  sig: WorkerSignature,
  inputs: readonly SessionTensor[],
  outputs: readonly SessionTensor[],
): string[] {
  return [
    ...checkSide('input', sig.inputs, inputs, sig.batchDim),
    ...checkSide('output', sig.outputs, outputs, sig.batchDim),
  ];
}

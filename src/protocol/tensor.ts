// Tensors as the KServe v2 / Open Inference Protocol describes them, and the tensor signature of each
// served model. Pure.
import { z } from 'zod';

/** KServe v2 datatypes with a fixed element size (BYTES, variable length, is not served by inss). */
export const DATATYPE_BYTES = {
  BOOL: 1,
  UINT8: 1,
  UINT16: 2,
  UINT32: 4,
  UINT64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  FP16: 2,
  FP32: 4,
  FP64: 8,
} as const;
export type Datatype = keyof typeof DATATYPE_BYTES;
export const DatatypeSchema = z.enum(Object.keys(DATATYPE_BYTES) as [Datatype, ...Datatype[]]);

/** A tensor's description inside a frame header; its bytes are a slice of the frame's payload. */
export const TensorRefSchema = z
  .object({
    name: z.string().min(1),
    datatype: DatatypeSchema,
    shape: z.array(z.number().int().nonnegative()),
    byteLength: z.number().int().nonnegative(),
  })
  .strict();
export type TensorRef = z.infer<typeof TensorRefSchema>;

/** One input or output of a model: `shape` excludes the batch dimension. */
export interface TensorSpec {
  readonly name: string;
  readonly datatype: Datatype;
  readonly shape: readonly number[];
}

export interface ModelSignature {
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

export function tensorBytes(datatype: Datatype, shape: readonly number[]): number {
  return DATATYPE_BYTES[datatype] * elementCount(shape);
}

/**
 * The signature of a profiled model. The paper's models are torchvision image classifiers: one FP32
 * image in (3 x 224 x 224, 602,112 bytes, NCHW as torchvision takes it) and 1000 FP32 class scores
 * out. A profile records only byte sizes, so an input of that size is read as the image and any other
 * as a flat FP32 vector; the output is a flat FP32 vector (docs/serving.md).
 */
export function modelSignature(inputBytes: number, outputBytes: number): ModelSignature {
  const image = inputBytes === 4 * 3 * 224 * 224;
  return {
    inputs: [{ name: 'input', datatype: 'FP32', shape: image ? [3, 224, 224] : [Math.max(1, Math.round(inputBytes / 4))] }],
    outputs: [{ name: 'output', datatype: 'FP32', shape: [Math.max(1, Math.round(outputBytes / 4))] }],
  };
}

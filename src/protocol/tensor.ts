// Tensors as the KServe v2 / Open Inference Protocol describes them, and the tensor signature of each
// served model. Pure.
import { z } from 'zod';

/**
 * KServe v2 datatypes with a fixed element size. BYTES (variable length) is taken only as an encoded
 * image input (TensorSpec.image), never as a model's tensor.
 */
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

/**
 * The field of the gRPC protocol's InferTensorContents that carries each datatype's typed values
 * (grpc_service.proto); FP16 and BF16 have none (raw contents only).
 */
export const GRPC_CONTENTS_FIELD = {
  BOOL: 'bool_contents',
  INT8: 'int_contents',
  INT16: 'int_contents',
  INT32: 'int_contents',
  INT64: 'int64_contents',
  UINT8: 'uint_contents',
  UINT16: 'uint_contents',
  UINT32: 'uint_contents',
  UINT64: 'uint64_contents',
  FP32: 'fp32_contents',
  FP64: 'fp64_contents',
  BYTES: 'bytes_contents',
} as const;

/**
 * How one sample of an image input travels from the client to the worker (docs/http-api.md, "Images:
 * what clients send"): FP32 is the model's tensor itself (the client preprocessed it); UINT8 is the
 * same C x H x W image in 8-bit values; JPEG and PNG are an encoded image (a KServe BYTES element). The
 * worker turns each into the FP32 tensor with one preprocessing rule (src/serving/image.ts).
 */
export const SampleEncodingSchema = z.enum(['FP32', 'UINT8', 'JPEG', 'PNG']);
export type SampleEncoding = z.infer<typeof SampleEncodingSchema>;

/** One sample of a batch input sent as `encoding`, `byteLength` bytes of the payload. */
export const SampleRefSchema = z
  .object({ encoding: SampleEncodingSchema, byteLength: z.number().int().nonnegative() })
  .strict();
export type SampleRef = z.infer<typeof SampleRefSchema>;

/** A sample of a batch output that is not an answer: its input could not be decoded (`message` says why). */
export const FailedSampleSchema = z.object({ index: z.number().int().nonnegative(), message: z.string() }).strict();
export type FailedSample = z.infer<typeof FailedSampleSchema>;

/** A tensor's description inside a frame header; its bytes are a slice of the frame's payload. */
export const TensorRefSchema = z
  .object({
    name: z.string().min(1),
    datatype: DatatypeSchema,
    shape: z.array(z.number().int().nonnegative()),
    byteLength: z.number().int().nonnegative(),
    /**
     * Batch inputs only, absent when every sample is the tensor's own bytes: the samples in batch
     * order, each in its own encoding, one after another in the payload (their byteLengths add up
     * to byteLength); `datatype` and `shape` are then those of the tensor the model receives.
     */
    samples: z.array(SampleRefSchema).optional(),
    /** Batch outputs only: the samples whose input failed to decode; their rows hold no answer. */
    failed: z.array(FailedSampleSchema).optional(),
  })
  .strict();
export type TensorRef = z.infer<typeof TensorRefSchema>;

/** One input or output of a model: `shape` excludes the batch dimension. */
export interface TensorSpec {
  readonly name: string;
  readonly datatype: Datatype;
  readonly shape: readonly number[];
  /**
   * An FP32 image input (shape [3, H, W], normalised as src/serving/image.ts says): it also takes the
   * image as UINT8 of the same shape, or as one encoded image (BYTES, JPEG or PNG, shape [1]).
   */
  readonly image?: boolean;
  /**
   * A repository model's input whose `shape` has variable dimensions (-1, Triton's dims: a text
   * model's sequence length): the longest each may be in a request. Absent: every dimension is fixed.
   */
  readonly maxDim?: number;
}

/** A dimension whose length each request chooses (Triton's `dims: [-1]`); only inputs have them. */
export const VARIABLE_DIM = -1;

/** Whether a spec's shape (without the batch dimension) has a variable dimension. */
export function hasVariableDim(shape: readonly number[]): boolean {
  return shape.includes(VARIABLE_DIM);
}

/**
 * Whether a sample's shape is one the spec allows: the same rank, each fixed dimension equal, each
 * variable one from 1 to the spec's maxDim.
 */
export function fitsSpec(sample: readonly number[], spec: Pick<TensorSpec, 'shape' | 'maxDim'>): boolean {
  if (sample.length !== spec.shape.length) return false;
  const max = spec.maxDim ?? 0;
  return sample.every((d, i) => (spec.shape[i] === VARIABLE_DIM ? d >= 1 && d <= max : d === spec.shape[i]));
}

/** The spec's shape with each variable dimension at its longest (what the request limits allow for). */
export function longestShape(spec: Pick<TensorSpec, 'shape' | 'maxDim'>): number[] {
  return spec.shape.map((d) => (d === VARIABLE_DIM ? (spec.maxDim ?? 1) : d));
}

/** One form an input is accepted in (model metadata, Triton's model config). */
export interface InputForm {
  readonly datatype: Datatype | 'BYTES';
  /** Without the batch dimension. */
  readonly shape: readonly number[];
  /** What the bytes are: the tensor itself, 8-bit pixels, or an encoded image. */
  readonly content: 'tensor' | 'uint8-image' | 'encoded-image';
}

/** Every form an input is accepted in, the model's own first. */
export function inputForms(spec: TensorSpec): InputForm[] {
  const own: InputForm = { datatype: spec.datatype, shape: spec.shape, content: 'tensor' };
  if (!spec.image) return [own];
  return [
    own,
    { datatype: 'UINT8', shape: spec.shape, content: 'uint8-image' },
    { datatype: 'BYTES', shape: [1], content: 'encoded-image' },
  ];
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
 * out. A profile records only byte sizes, so an input of that size is read as the image (which clients
 * may also send as UINT8 or JPEG/PNG: TensorSpec.image) and any other as a flat FP32 vector; the
 * output is a flat FP32 vector (docs/serving.md).
 */
export function modelSignature(inputBytes: number, outputBytes: number): ModelSignature {
  const image = inputBytes === 4 * 3 * 224 * 224;
  return {
    inputs: [
      image
        ? { name: 'input', datatype: 'FP32', shape: [3, 224, 224], image: true }
        : { name: 'input', datatype: 'FP32', shape: [Math.max(1, Math.round(inputBytes / 4))] },
    ],
    outputs: [{ name: 'output', datatype: 'FP32', shape: [Math.max(1, Math.round(outputBytes / 4))] }],
  };
}

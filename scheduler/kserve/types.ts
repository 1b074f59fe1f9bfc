// The KServe v2 codec's values: a parsed infer request, an answer to encode, and the metadata the
// server and each model describe themselves with. Plain data; no parsing here.
import type { Datatype, SampleEncoding } from '../../src/protocol/tensor.js';

/** A tensor in a registered system shared-memory region (Triton's extension; scheduler/sharedMemory.ts). */
export interface RegionRef {
  /** The name the client registered the region under. */
  readonly name: string;
  /** Bytes from the region's start (shared_memory_offset, 0 when absent). */
  readonly offset: number;
  readonly byteSize: number;
}

export interface InferInput {
  readonly name: string;
  /**
   * The model's datatype and shape `[k, ...spec.shape]` (k samples, 1 <= k <= the model's
   * max_batch_size: the request's batch dimension), whatever the encoding; exactly `spec.shape` for a
   * model without a batch dimension (max_batch_size 0: the request is one sample).
   */
  readonly datatype: Datatype;
  readonly shape: number[];
  /**
   * How `data` holds the sample: the model's own datatype (`datatype`: the tensor's own bytes), or,
   * for an image input, 8-bit pixels (UINT8, same shape) or an encoded image (JPEG, PNG) that the
   * worker decodes. `BYTES` only with `region`: an encoded image whose format is known once the region
   * is read.
   */
  readonly encoding: InputEncoding | 'BYTES';
  /**
   * Set when the input is in a shared-memory region: `data` is then empty until the service reads the
   * region and calls resolveRegionInput.
   */
  readonly region?: RegionRef;
  /**
   * The sample's bytes: raw little-endian, tensorBytes(datatype, shape) long for the model's datatype,
   * one byte a value for UINT8, the encoded image itself (without BYTES' 4-byte length) for JPEG and
   * PNG. For a binary input this is a view of the request body (no copy): the body belongs to this
   * request and must not be reused. With k > 1 samples of a fixed-size form, the k samples one after
   * another (`inputSamples` splits them); for encoded images, the first image (`images` has them all).
   */
  readonly data: Buffer;
  /** Encoded images (JPEG, PNG) only: every sample's image, in batch order (k of them). */
  readonly images?: readonly EncodedImage[];
}

/** One encoded image of a BYTES input: its format and bytes (without BYTES' 4-byte length). */
export interface EncodedImage {
  readonly encoding: 'JPEG' | 'PNG';
  readonly data: Buffer;
}

/**
 * What an input's bytes are: the tensor's own datatype, or an image input's other forms (UINT8
 * pixels, an encoded image; src/protocol/tensor.ts SampleEncoding).
 */
export type InputEncoding = Datatype | SampleEncoding;

/** One sample of an input as the control plane takes it: its encoding and bytes (views, no copy). */
export interface InputSample {
  readonly encoding: InputEncoding;
  readonly data: Buffer;
}

/** The request's batch dimension: how many samples it carries (1 for a model without a batch dimension). */
export function requestBatch(request: InferRequest): number {
  if (request.batchDim === false) return 1;
  return request.inputs[0]?.shape[0] ?? 1;
}

/**
 * An input's samples in batch order: views of `data` (k equal parts) for the tensor and UINT8 forms,
 * the images themselves for encoded images. The input must be resolved (not in a region). `k`: the
 * request's batch dimension (requestBatch), the input's first dimension unless given.
 */
export function inputSamples(input: InferInput, k: number = input.shape[0] ?? 1): InputSample[] {
  if (input.encoding === 'BYTES') throw new Error(`input '${input.name}' is still in a shared-memory region`);
  if (input.images) return input.images.map((i) => ({ encoding: i.encoding, data: i.data }));
  const each = input.data.length / k;
  const out: InputSample[] = [];
  for (let i = 0; i < k; i++)
    out.push({ encoding: input.encoding, data: input.data.subarray(i * each, (i + 1) * each) });
  return out;
}

export interface RequestedOutput {
  readonly name: string;
  /** true: return it as binary data after the JSON (binary tensor data extension); false: as JSON. */
  readonly binary: boolean;
  /** Write it into this shared-memory region instead, and answer without its data. */
  readonly region?: RegionRef;
  /**
   * Triton's classification extension (`parameters.classification`): answer the output as the top
   * classCount classes of each sample, a BYTES tensor of `value:index[:label]` strings
   * (src/serving/classification.ts), instead of its raw values. Absent: the raw output.
   */
  readonly classCount?: number;
}

export interface InferRequest {
  /** The request's `id`, to echo in the response; absent when the request had none. */
  readonly id?: string;
  /** One per input of the signature, in the signature's input order. */
  readonly inputs: InferInput[];
  /**
   * false: the model has no batch dimension (max_batch_size 0): every input and output is exactly its
   * spec's shape and the request is one sample. Absent: the first dimension is the batch dimension.
   */
  readonly batchDim?: false;
  /** What to return and how, in the order the request named them (all outputs of the signature when it named none). */
  readonly outputs: RequestedOutput[];
}

export type InferParse =
  | { readonly ok: true; readonly request: InferRequest }
  | { readonly ok: false; readonly status: 400; readonly error: string };

export interface ResponseOutput {
  readonly name: string;
  /** BYTES: a classification (Triton's extension), its strings serialized as in the binary tensor data extension. */
  readonly datatype: Datatype | 'BYTES';
  /** As the client should see it (with the batch dimension). */
  readonly shape: readonly number[];
  /**
   * Little-endian bytes, expected to be tensorBytes(datatype, shape) long (the control plane checks
   * worker results); for BYTES, each element's 4-byte little-endian length, then its bytes.
   */
  readonly data: Buffer;
  readonly binary: boolean;
  /** Written into this region by the service: the answer names it and carries no data. */
  readonly region?: RegionRef;
}

export interface InferResponse {
  readonly modelName: string;
  readonly modelVersion?: string;
  /** The request's id, when it had one. */
  readonly id?: string;
  readonly outputs: readonly ResponseOutput[];
}

export interface ServerMetadata {
  readonly name: 'inss';
  readonly version: string;
  /** Only the protocol extensions inss implements. */
  readonly extensions: string[];
}

export interface MetadataTensor {
  readonly name: string;
  readonly datatype: Datatype;
  /** `[-1, ...spec.shape]`: -1 is the batch dimension (a request sends 1). */
  readonly shape: number[];
}

/**
 * One form an input may be sent in (inss's addition to the metadata): its datatype and shape with the batch dimension.
 */
export interface MetadataForm {
  readonly datatype: Datatype | 'BYTES';
  readonly shape: number[];
  /**
   * `tensor`: the model's input itself; `uint8-image`: 8-bit pixels, channel-first; `encoded-image`: one JPEG or PNG.
   */
  readonly content: 'tensor' | 'uint8-image' | 'encoded-image';
}

export interface ModelMetadata {
  readonly name: string;
  readonly versions?: string[];
  readonly platform: string;
  readonly inputs: MetadataTensor[];
  readonly outputs: MetadataTensor[];
  /**
   * inss's additions to the protocol's model metadata: `slo_ms`, the model's latency SLO (`inss loadgen`
   * reads it), and `input_forms`, by input name, every form the input is accepted in (the one in
   * `inputs` first; an image input also takes UINT8 pixels and JPEG/PNG images).
   */
  readonly parameters: { readonly slo_ms: number; readonly input_forms: Record<string, MetadataForm[]> };
}

// The KServe v2 / Open Inference Protocol codec over HTTP/REST: infer request bodies in (JSON tensors,
// and Triton's binary tensor data extension), infer responses, errors and metadata out.
//
// Pure: buffers and header values in, values out. The scheduler service (scheduler/service.ts) calls
// parseInferRequest once per POST /v2/models/{name}/infer with the raw body, whatever its content
// type, and encodeInferResponse once per answer. Nothing here throws on client input: every bad
// request is an `{ ok: false, status: 400, error }` whose text names the field that is wrong. Body
// size limits are the HTTP layer's. What is supported, and the batch-dimension rule: docs/serving.md
// ("The KServe v2 endpoint").
//
// References: the Open Inference Protocol REST spec (kserve/open-inference-protocol), Triton's
// binary tensor data extension (triton-inference-server/server docs/protocol/extension_binary_data.md),
// and the two clients that must work unchanged: tritonclient.http (_utils._get_inference_request,
// InferResult) and KServe's InferRequest.to_rest / InferResponse.from_bytes.
import { z } from 'zod';
import { type JsonBudget, scanJson } from './limits.js';
import {
  DATATYPE_BYTES,
  type Datatype,
  elementCount,
  inputForms,
  type ModelSignature,
  type SampleEncoding,
  type TensorSpec,
  tensorBytes,
} from '../src/protocol/tensor.js';
import { classifiable } from '../src/serving/classification.js';
import { imageHeader, MAX_IMAGE_BYTES } from '../src/serving/image.js';

// ---------------------------------------------------------------------------------------------------
// Types

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
   * max_batch_size: the request's batch dimension), whatever the encoding.
   */
  readonly datatype: Datatype;
  readonly shape: number[];
  /**
   * How `data` holds the sample: the model's own datatype (FP32 for the paper's models), or, for an
   * image input, 8-bit pixels (UINT8, same shape) or an encoded image (JPEG, PNG) that the worker
   * decodes. `BYTES` only with `region`: an encoded image whose format is known once the region is read.
   */
  readonly encoding: SampleEncoding | 'BYTES';
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

/** One sample of an input as the control plane takes it: its encoding and bytes (views, no copy). */
export interface InputSample {
  readonly encoding: SampleEncoding;
  readonly data: Buffer;
}

/** The request's batch dimension: how many samples it carries. */
export function requestBatch(request: InferRequest): number {
  return request.inputs[0]?.shape[0] ?? 1;
}

/**
 * An input's samples in batch order: views of `data` (k equal parts) for the tensor and UINT8 forms,
 * the images themselves for encoded images. The input must be resolved (not in a region).
 */
export function inputSamples(input: InferInput): InputSample[] {
  if (input.encoding === 'BYTES') throw new Error(`input '${input.name}' is still in a shared-memory region`);
  if (input.images) return input.images.map((i) => ({ encoding: i.encoding, data: i.data }));
  const k = input.shape[0] ?? 1;
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

/** One form an input may be sent in (inss's addition to the metadata): its datatype and shape with the batch dimension. */
export interface MetadataForm {
  readonly datatype: Datatype | 'BYTES';
  readonly shape: number[];
  /** `tensor`: the model's input itself; `uint8-image`: 8-bit pixels, channel-first; `encoded-image`: one JPEG or PNG. */
  readonly content: 'tensor' | 'uint8-image' | 'encoded-image';
}

export interface ModelMetadata {
  readonly name: string;
  readonly versions?: string[];
  readonly platform: 'inss';
  readonly inputs: MetadataTensor[];
  readonly outputs: MetadataTensor[];
  /**
   * inss's additions to the protocol's model metadata: `slo_ms`, the model's latency SLO (`inss loadgen`
   * reads it), and `input_forms`, by input name, every form the input is accepted in (the one in
   * `inputs` first; an image input also takes UINT8 pixels and JPEG/PNG images).
   */
  readonly parameters: { readonly slo_ms: number; readonly input_forms: Record<string, MetadataForm[]> };
}

// ---------------------------------------------------------------------------------------------------
// The request's JSON shape. Not .strict(): clients send fields inss has no use for (KServe's client
// sends `model_name`; tritonclient sends `priority`, `timeout`, `sequence_id` parameters), and the
// protocol lets them. Parameters are read one by one below, where their meaning is known.

const Parameters = z.record(z.string(), z.unknown()).optional();
const Shape = z.array(
  z
    .number({ error: 'expected a number' })
    .int({ error: 'expected an integer' })
    .nonnegative({ error: 'expected a dimension >= 0' }),
);
const RequestInput = z.object({
  name: z.string(),
  shape: Shape,
  datatype: z.string(),
  parameters: Parameters,
  data: z.array(z.unknown(), { error: 'expected an array (flat or nested) of values' }).optional(),
});
const RequestOutput = z.object({ name: z.string(), parameters: Parameters });
const RequestSchema = z.object(
  {
    id: z.string().optional(),
    parameters: Parameters,
    inputs: z.array(RequestInput),
    outputs: z.array(RequestOutput).optional(),
  },
  { error: 'expected a JSON object (an inference request)' },
);
type RequestJson = z.infer<typeof RequestSchema>;

// ---------------------------------------------------------------------------------------------------
// Small helpers for error texts: they echo client strings, so they clip them.

const fail = (error: string): InferParse => ({ ok: false, status: 400, error });

const MAX_ECHO_CHARS = 64;

function clip(s: string): string {
  return s.length > MAX_ECHO_CHARS ? `${s.slice(0, MAX_ECHO_CHARS)}...` : s;
}

/** A client value as an error text shows it: short, and never throws (JSON.stringify may, on deep values). */
function show(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(clip(v));
    case 'number':
    case 'boolean':
      return String(v);
    case 'undefined':
      return 'nothing';
    default:
      return 'an object';
  }
}

const dims = (shape: readonly number[]): string => `[${shape.join(',')}]`;

/** zod's path as the field reads in the request: `inputs[0].shape[2]`. */
function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : `${out ? '.' : ''}${String(p)}`;
  return out || '(body)';
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Flattens nested JSON arrays in row-major order (the protocol allows flat or nested `data`; like
 * Triton, the nesting is not checked against the shape, only the element count). Iterative: a
 * client can nest deeper than the call stack.
 */
function flatten(data: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  const stack: { items: readonly unknown[]; next: number }[] = [{ items: data, next: 0 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.next === top.items.length) {
      stack.pop();
      continue;
    }
    const x = top.items[top.next++];
    if (Array.isArray(x)) stack.push({ items: x as unknown[], next: 0 });
    else out.push(x);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Datatypes: JSON values <-> little-endian bytes.

/**
 * Integer ranges a JSON value may take. INT64 and UINT64 stop at 2^53 - 1: JSON numbers are read as
 * doubles, so a larger integer has already lost its low bits when it arrives; such values must be
 * sent as binary data.
 */
const INT_RANGE: Partial<Record<Datatype, readonly [number, number]>> = {
  UINT8: [0, 0xff],
  UINT16: [0, 0xffff],
  UINT32: [0, 0xffffffff],
  UINT64: [0, Number.MAX_SAFE_INTEGER],
  INT8: [-0x80, 0x7f],
  INT16: [-0x8000, 0x7fff],
  INT32: [-0x80000000, 0x7fffffff],
  INT64: [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/**
 * The IEEE 754 binary16 bits nearest to a double (round to nearest, ties to even), straight from the
 * double: going through a float32 first would round twice and can land on the wrong half. Magnitudes
 * that round beyond 65504 give infinity (0x7c00 with the sign); NaN gives 0x7e00.
 */
export function toHalf(v: number): number {
  if (Number.isNaN(v)) return 0x7e00;
  const sign = v < 0 || Object.is(v, -0) ? 0x8000 : 0;
  const a = Math.abs(v);
  if (a === Infinity) return sign | 0x7c00;
  if (a < 2 ** -14) return sign | roundHalfEven(a * 2 ** 24); // subnormal (1024 rounds up into the smallest normal, which is the right encoding)
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
  if (e > 15) return sign | 0x7c00;
  const m = roundHalfEven(a * 2 ** (10 - e)); // in [1024, 2048]; 2048 carries into the exponent, and past 15 into infinity
  return sign | (((e + 15) << 10) + (m - 1024));
}

/** The double a binary16 bit pattern stands for (exact). */
export function fromHalf(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

type Encoded = { ok: true; data: Buffer } | { ok: false; index: number; reason: string };

/** JSON values (already flattened) -> little-endian bytes; or the row-major index and reason of the first bad value. */
function encodeValues(values: readonly unknown[], datatype: Datatype): Encoded {
  const size = DATATYPE_BYTES[datatype];
  const buf = Buffer.alloc(values.length * size);
  const range = INT_RANGE[datatype];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    const o = i * size;
    if (datatype === 'BOOL') {
      if (typeof v !== 'boolean') return { ok: false, index: i, reason: `expected true or false, got ${show(v)}` };
      buf[o] = v ? 1 : 0;
      continue;
    }
    if (typeof v !== 'number') return { ok: false, index: i, reason: `expected a number, got ${show(v)}` };
    if (range) {
      if (!Number.isInteger(v)) return { ok: false, index: i, reason: `expected an integer (${datatype}), got ${v}` };
      if (v < range[0] || v > range[1]) {
        const why =
          datatype === 'INT64' || datatype === 'UINT64'
            ? '; larger integers lose precision in JSON: send them as binary data'
            : '';
        return {
          ok: false,
          index: i,
          reason: `${v} is out of range for ${datatype} (${range[0]} to ${range[1]}${why})`,
        };
      }
    }
    switch (datatype) {
      case 'FP16': {
        const h = toHalf(v);
        if ((h & 0x7c00) === 0x7c00)
          return { ok: false, index: i, reason: `${v} is out of range for FP16 (largest magnitude 65504)` };
        buf.writeUInt16LE(h, o);
        break;
      }
      case 'FP32':
        if (!Number.isFinite(Math.fround(v)))
          return {
            ok: false,
            index: i,
            reason: `${v} is out of range for FP32 (largest magnitude 3.4028234663852886e+38)`,
          };
        buf.writeFloatLE(v, o);
        break;
      case 'FP64':
        buf.writeDoubleLE(v, o);
        break;
      case 'UINT8':
        buf.writeUInt8(v, o);
        break;
      case 'INT8':
        buf.writeInt8(v, o);
        break;
      case 'UINT16':
        buf.writeUInt16LE(v, o);
        break;
      case 'INT16':
        buf.writeInt16LE(v, o);
        break;
      case 'UINT32':
        buf.writeUInt32LE(v, o);
        break;
      case 'INT32':
        buf.writeInt32LE(v, o);
        break;
      case 'INT64':
        buf.writeBigInt64LE(BigInt(v), o);
        break;
      case 'UINT64':
        buf.writeBigUInt64LE(BigInt(v), o);
        break;
    }
  }
  return { ok: true, data: buf };
}

/** The element at byte offset `o` of a numeric (non-BOOL) tensor, as a number (INT64/UINT64 beyond 2^53 lose their low bits). */
function readNumber(data: Buffer, o: number, datatype: Exclude<Datatype, 'BOOL'>): number {
  switch (datatype) {
    case 'FP16':
      return fromHalf(data.readUInt16LE(o));
    case 'FP32':
      return data.readFloatLE(o);
    case 'FP64':
      return data.readDoubleLE(o);
    case 'UINT8':
      return data.readUInt8(o);
    case 'INT8':
      return data.readInt8(o);
    case 'UINT16':
      return data.readUInt16LE(o);
    case 'INT16':
      return data.readInt16LE(o);
    case 'UINT32':
      return data.readUInt32LE(o);
    case 'INT32':
      return data.readInt32LE(o);
    case 'INT64':
      return Number(data.readBigInt64LE(o));
    case 'UINT64':
      return Number(data.readBigUInt64LE(o));
  }
}

/**
 * Little-endian bytes -> JS values of a datatype (booleans for BOOL; numbers otherwise, so INT64 and
 * UINT64 beyond 2^53 lose their low bits: encodeInferResponse writes those exactly). A trailing
 * partial element is ignored.
 */
export function decodeValues(data: Buffer, datatype: Datatype): (number | boolean)[] {
  const size = DATATYPE_BYTES[datatype];
  const n = Math.floor(data.length / size);
  const out = new Array<number | boolean>(n);
  for (let i = 0; i < n; i++) out[i] = datatype === 'BOOL' ? data[i] !== 0 : readNumber(data, i * size, datatype);
  return out;
}

/**
 * A tensor's bytes as the JSON text of a flat array. Exact for every datatype: INT64 and UINT64 are
 * written digit for digit (JSON numbers have no size limit; Python's and numpy's readers keep them),
 * floats as the shortest text that reads back to the same value. NaN and infinities are written as
 * Triton's JSON writer writes them (rapidjson with kWriteNanAndInfFlag): the bare tokens `NaN`,
 * `Infinity` and `-Infinity`, which Python's json module (tritonclient) reads as floats; strict JSON
 * parsers (JavaScript's JSON.parse, orjson) refuse them, and a client that needs them exactly asks
 * for binary output. BYTES (a classification) are written as one string per element. A trailing
 * partial element is ignored.
 */
function jsonArray(data: Buffer, datatype: Datatype | 'BYTES'): string {
  if (datatype === 'BYTES')
    return `[${bytesElements(data)
      .map((e) => JSON.stringify(e.toString('utf8')))
      .join(',')}]`;
  const size = DATATYPE_BYTES[datatype];
  const n = Math.floor(data.length / size);
  const parts = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const o = i * size;
    if (datatype === 'BOOL') parts[i] = data[o] !== 0 ? 'true' : 'false';
    else if (datatype === 'INT64') parts[i] = data.readBigInt64LE(o).toString();
    else if (datatype === 'UINT64') parts[i] = data.readBigUInt64LE(o).toString();
    else {
      const v = readNumber(data, o, datatype);
      parts[i] = Number.isFinite(v) ? String(v) : Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity';
    }
  }
  return `[${parts.join(',')}]`;
}

/** The elements of a serialized BYTES tensor (each a 4-byte little-endian length, then its bytes); a truncated last one is dropped. */
function bytesElements(data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o + 4 <= data.length;) {
    const end = o + 4 + data.readUInt32LE(o);
    if (end > data.length) break;
    out.push(data.subarray(o + 4, end));
    o = end;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Requests

/** The body split into the JSON header and the binary tensors after it (binary tensor data extension). */
function splitBody(
  body: Buffer,
  inferenceHeaderLength: string | undefined,
): { ok: true; json: Buffer; binary: Buffer | undefined } | { ok: false; error: string } {
  if (inferenceHeaderLength === undefined) return { ok: true, json: body, binary: undefined };
  const raw = inferenceHeaderLength.trim();
  if (!/^\d+$/.test(raw))
    return {
      ok: false,
      error: `Inference-Header-Content-Length ${show(inferenceHeaderLength)} is not a non-negative integer`,
    };
  const n = Number(raw);
  if (n > body.length)
    return {
      ok: false,
      error: `Inference-Header-Content-Length ${clip(raw)} is larger than the body (${body.length} bytes)`,
    };
  return { ok: true, json: body.subarray(0, n), binary: body.subarray(n) };
}

/** Region names as inss accepts them (registration checks the same): no path characters, at most 128. */
export const REGION_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * The shared memory extension's parameters of an input or output: none, or a region, offset and
 * byte size (Triton's shared_memory_region, shared_memory_offset, shared_memory_byte_size). Whether
 * the region exists and holds that range is the service's check (scheduler/sharedMemory.ts).
 */
function regionParameters(
  where: string,
  parameters: Record<string, unknown> | undefined,
): { ok: true; region: RegionRef | undefined } | { ok: false; error: string } {
  const name = parameters?.shared_memory_region;
  const size = parameters?.shared_memory_byte_size;
  const offset = parameters?.shared_memory_offset ?? 0;
  if (name === undefined) {
    const stray =
      size !== undefined
        ? 'shared_memory_byte_size'
        : parameters?.shared_memory_offset !== undefined
          ? 'shared_memory_offset'
          : undefined;
    return stray
      ? { ok: false, error: `${where}.parameters.${stray}: given without shared_memory_region` }
      : { ok: true, region: undefined };
  }
  if (typeof name !== 'string' || !REGION_NAME.test(name))
    return {
      ok: false,
      error: `${where}.parameters.shared_memory_region: expected a region name (letters, digits, '_', '.', '-'), got ${show(name)}`,
    };
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 0)
    return {
      ok: false,
      error: `${where}.parameters.shared_memory_byte_size: expected a non-negative integer, got ${show(size)}`,
    };
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0)
    return {
      ok: false,
      error: `${where}.parameters.shared_memory_offset: expected a non-negative integer, got ${show(offset)}`,
    };
  return { ok: true, region: { name, offset, byteSize: size } };
}

/** An input's region, checked against its form's size; or undefined when it has none. */
function regionInput(
  where: string,
  inp: RequestJson['inputs'][number],
  bytes: number | null,
  images = 1,
): { ok: true; region: RegionRef | undefined } | { ok: false; error: string } {
  const r = regionParameters(where, inp.parameters);
  if (!r.ok || r.region === undefined) return r;
  if (inp.data !== undefined || inp.parameters?.binary_data_size !== undefined)
    return {
      ok: false,
      error: `${where}: has both parameters.shared_memory_region and ${inp.data !== undefined ? 'data' : 'parameters.binary_data_size'} (send one)`,
    };
  const size = r.region.byteSize;
  if (bytes !== null && size !== bytes)
    return {
      ok: false,
      error: `${where}.parameters.shared_memory_byte_size: ${size} bytes, but the input is ${bytes} bytes`,
    };
  if (bytes === null && (size < 4 * images || size > images * (4 + MAX_IMAGE_BYTES))) {
    return {
      ok: false,
      error: `${where}.parameters.shared_memory_byte_size: ${size} bytes is not ${images === 1 ? 'one BYTES image' : `${images} BYTES images`} (each 4 bytes of length, then at most ${MAX_IMAGE_BYTES})`,
    };
  }
  return r;
}

/**
 * An input whose region the service has read (`bytes`, exactly region.byteSize): checked as its form
 * requires (an encoded image's header, as for binary data) and returned with its data. Pure.
 */
export function resolveRegionInput(
  k: number,
  input: InferInput,
  bytes: Buffer,
): { ok: true; input: InferInput } | { ok: false; error: string } {
  const { region: _region, ...rest } = input;
  if (input.encoding !== 'BYTES') return { ok: true, input: { ...rest, data: bytes } };
  const images = readImageElements(`inputs[${k}]`, input.name, bytes, input.shape[0] ?? 1);
  return images.ok
    ? {
        ok: true,
        input: { ...rest, encoding: images.images[0]!.encoding, data: images.images[0]!.data, images: images.images },
      }
    : images;
}

const EMPTY = Buffer.alloc(0);

/** A boolean parameter, or undefined when absent; or an error text. */
function boolParameter(
  where: string,
  name: string,
  parameters: Record<string, unknown> | undefined,
): { ok: true; value: boolean | undefined } | { ok: false; error: string } {
  const v = parameters?.[name];
  if (v === undefined || typeof v === 'boolean') return { ok: true, value: v };
  return { ok: false, error: `${where}parameters.${name}: expected true or false, got ${show(v)}` };
}

/** Reads the binary tensors of the inputs that carry binary_data_size, in request order. */
class BinaryCursor {
  private offset = 0;
  constructor(readonly bytes: Buffer | undefined) {}

  take(where: string, size: number): { ok: true; data: Buffer } | { ok: false; error: string } {
    if (this.bytes === undefined)
      return {
        ok: false,
        error: `${where}.parameters.binary_data_size is set, but the request has no Inference-Header-Content-Length header`,
      };
    const end = this.offset + size;
    if (end > this.bytes.length) {
      return {
        ok: false,
        error: `${where}.parameters.binary_data_size: the binary data runs past the end of the body (the binary inputs so far need ${end} bytes after the JSON header; there are ${this.bytes.length})`,
      };
    }
    const data = this.bytes.subarray(this.offset, end);
    this.offset = end;
    return { ok: true, data };
  }

  /** An error text when bytes are left over after the last binary input. */
  leftover(): string | undefined {
    const n = this.bytes?.length ?? 0;
    if (this.offset === n) return undefined;
    return `the binary data after the JSON header is ${n} bytes, but the inputs' binary_data_size add up to ${this.offset}`;
  }
}

/**
 * One element of a BYTES tensor as the binary tensor data extension (and tritonclient's
 * serialize_byte_tensor) lays it out: a 4-byte little-endian length, then the bytes; checked as an
 * encoded image (its header: scheduler-side, cheap). The input's name is in every error.
 */
export function readImageElement(
  where: string,
  name: string,
  data: Buffer,
): { ok: true; encoding: 'JPEG' | 'PNG'; data: Buffer } | { ok: false; error: string } {
  if (data.length < 4)
    return {
      ok: false,
      error: `${where} ('${name}'): a BYTES element starts with its 4-byte length; got ${data.length} bytes`,
    };
  const n = data.readUInt32LE(0);
  if (n !== data.length - 4)
    return {
      ok: false,
      error: `${where} ('${name}'): the BYTES element says ${n} bytes, but ${data.length - 4} follow its length (send exactly one image)`,
    };
  const image = data.subarray(4);
  const head = imageHeader(image);
  if (!head.ok) return { ok: false, error: `${where} ('${name}'): ${head.reason}` };
  return { ok: true, encoding: head.format, data: image };
}

/** The forms an input may be sent in, as an error text lists them: `FP32 [1,3,224,224], UINT8 [1,3,224,224] or BYTES [1,1] (a JPEG or PNG)`. */
function formsText(spec: TensorSpec): string {
  const all = inputForms(spec).map(
    (f) => `${f.datatype} ${dims([1, ...f.shape])}${f.content === 'encoded-image' ? ' (a JPEG or PNG)' : ''}`,
  );
  return all.length === 1 ? all[0]! : `${all.slice(0, -1).join(', ')} or ${all[all.length - 1]}`;
}

/**
 * A model's max_batch_size unless its configuration says otherwise: the most samples one request may
 * carry. Each sample is a task of its own, so this bounds a request's size, not the batches inss
 * forms (those follow the placements, up to 64); a JSON request of 8 FP32 images is ~12-31 MB.
 */
export const DEFAULT_MAX_BATCH_SIZE = 8;

/** What the request parser knows of the model: its name, signature and how many samples a request may carry. */
export interface ParseModel {
  readonly name: string;
  readonly signature: ModelSignature;
  /** The largest batch dimension a request may have (Triton's max_batch_size); default DEFAULT_MAX_BATCH_SIZE. */
  readonly maxBatchSize?: number;
  /** The JSON's counts, checked before it is parsed (scheduler/limits.ts). */
  readonly budget?: JsonBudget;
}

/**
 * The batch dimension of an input's shape `[k, ...sample]`: k, or an error naming the field. A shape
 * of the sample alone (no batch dimension) gets a hint, as does a k beyond max_batch_size.
 */
function batchDimension(
  where: string,
  shape: readonly number[],
  sample: readonly number[],
  maxBatch: number,
  what: string,
): { ok: true; k: number } | { ok: false; error: string } {
  const want = `[k,${sample.join(',')}] with 1 <= k <= ${maxBatch}${what}`;
  if (shape.length === sample.length + 1 && sameShape(shape.slice(1), sample)) {
    const k = shape[0]!;
    if (k >= 1 && k <= maxBatch) return { ok: true, k };
    if (k === 0)
      return {
        ok: false,
        error: `${where}.shape: batch dimension 0: a request carries at least one sample (expected ${want})`,
      };
    return {
      ok: false,
      error: `${where}.shape: batch dimension ${k} is larger than the model's max_batch_size ${maxBatch} (split the request)`,
    };
  }
  const hint = sameShape(shape, sample) ? ' (the first dimension is the batch dimension: add it)' : '';
  return {
    ok: false,
    error: `${where}.shape: expected ${want}, got ${dims(shape.slice(0, 16))}${shape.length > 16 ? '...' : ''}${hint}`,
  };
}

function readInput(
  k: number,
  inp: RequestJson['inputs'][number],
  spec: TensorSpec,
  binary: BinaryCursor,
  maxBatch: number,
): { ok: true; input: InferInput } | { ok: false; error: string } {
  const where = `inputs[${k}]`;
  const form = inputForms(spec).find((f) => f.datatype === inp.datatype);
  if (!form) {
    const also = spec.image ? ` (this image input takes ${formsText(spec)})` : '';
    return { ok: false, error: `${where}.datatype: expected ${spec.datatype}, got ${clip(inp.datatype)}${also}` };
  }
  if (form.content !== 'tensor') return readImageInput(where, inp, spec, form.content, binary, maxBatch);
  const batch = batchDimension(where, inp.shape, spec.shape, maxBatch, '');
  if (!batch.ok) return batch;
  const want = [batch.k, ...spec.shape];
  const bytes = tensorBytes(spec.datatype, want);
  const shm = regionInput(where, inp, bytes);
  if (!shm.ok) return shm;
  if (shm.region)
    return {
      ok: true,
      input: {
        name: spec.name,
        datatype: spec.datatype,
        shape: want,
        encoding: spec.datatype as SampleEncoding,
        data: EMPTY,
        region: shm.region,
      },
    };
  const binSize = inp.parameters?.binary_data_size;
  if (binSize !== undefined) {
    if (typeof binSize !== 'number' || !Number.isInteger(binSize) || binSize < 0)
      return {
        ok: false,
        error: `${where}.parameters.binary_data_size: expected a non-negative integer, got ${show(binSize)}`,
      };
    if (inp.data !== undefined)
      return { ok: false, error: `${where}: has both data and parameters.binary_data_size (send one)` };
    if (binSize !== bytes)
      return {
        ok: false,
        error: `${where}.parameters.binary_data_size: ${binSize} bytes, but shape ${dims(want)} of ${spec.datatype} is ${bytes} bytes`,
      };
    const taken = binary.take(where, binSize);
    if (!taken.ok) return taken;
    return {
      ok: true,
      input: {
        name: spec.name,
        datatype: spec.datatype,
        shape: want,
        encoding: spec.datatype as SampleEncoding,
        data: taken.data,
      },
    };
  }
  if (inp.data === undefined)
    return {
      ok: false,
      error: `${where}.data: missing (send data, or parameters.binary_data_size with the binary tensor data extension)`,
    };
  const values = flatten(inp.data);
  const count = elementCount(want);
  if (values.length !== count)
    return { ok: false, error: `${where}.data: expected ${count} values, got ${values.length}` };
  const enc = encodeValues(values, spec.datatype);
  if (!enc.ok)
    return {
      ok: false,
      error: `${where}.data: element ${enc.index} (row-major) of input '${spec.name}': ${enc.reason}`,
    };
  return {
    ok: true,
    input: {
      name: spec.name,
      datatype: spec.datatype,
      shape: want,
      encoding: spec.datatype as SampleEncoding,
      data: enc.data,
    },
  };
}

/**
 * The k elements of a BYTES tensor as the binary tensor data extension (and tritonclient's
 * serialize_byte_tensor) lays them out, each a 4-byte little-endian length then the bytes, each
 * checked as an encoded image. Pure; the elements are views of `data`.
 */
export function readImageElements(
  where: string,
  name: string,
  data: Buffer,
  k: number,
): { ok: true; images: EncodedImage[] } | { ok: false; error: string } {
  const images: EncodedImage[] = [];
  let at = 0;
  for (let i = 0; i < k; i++) {
    const el = k === 1 ? where : `${where} element ${i}`;
    if (data.length - at < 4)
      return {
        ok: false,
        error: `${el} ('${name}'): a BYTES element starts with its 4-byte length; ${data.length - at} bytes are left`,
      };
    const n = data.readUInt32LE(at);
    const end = i === k - 1 ? data.length : at + 4 + n;
    const image = readImageElement(el, name, data.subarray(at, Math.min(end, data.length)));
    if (!image.ok) return image;
    images.push({ encoding: image.encoding, data: image.data });
    at = end;
  }
  return { ok: true, images };
}

/**
 * An image input sent as UINT8 pixels (the model's C x H x W shape per sample; JSON or binary data)
 * or as encoded images (BYTES, shape [k,1] or [k], one JPEG or PNG a sample, binary data only: JSON
 * strings cannot carry a JPEG's bytes). What the worker does with them: src/serving/image.ts.
 */
function readImageInput(
  where: string,
  inp: RequestJson['inputs'][number],
  spec: TensorSpec,
  content: 'uint8-image' | 'encoded-image',
  binary: BinaryCursor,
  maxBatch: number,
): { ok: true; input: InferInput } | { ok: false; error: string } {
  const what =
    content === 'uint8-image'
      ? ` for ${inp.datatype} (UINT8 pixels, channel-first)`
      : ` for ${inp.datatype} (one encoded image a sample)`;
  const sample = content === 'uint8-image' ? spec.shape : [1];
  // BYTES images: [k,1] as tritonclient sends them, or [k].
  const flat = content === 'encoded-image' && inp.shape.length === 1 ? [inp.shape[0]!, 1] : inp.shape;
  const batch = batchDimension(where, flat, sample, maxBatch, what);
  if (!batch.ok) return batch;
  const k = batch.k;
  const model = { name: spec.name, datatype: spec.datatype, shape: [k, ...spec.shape] };
  const want = [k, ...sample];
  const shm = regionInput(where, inp, content === 'uint8-image' ? elementCount(want) : null, k);
  if (!shm.ok) return shm;
  if (shm.region)
    return {
      ok: true,
      input: { ...model, encoding: content === 'uint8-image' ? 'UINT8' : 'BYTES', data: EMPTY, region: shm.region },
    };
  const binSize = inp.parameters?.binary_data_size;
  if (binSize !== undefined) {
    if (typeof binSize !== 'number' || !Number.isInteger(binSize) || binSize < 0)
      return {
        ok: false,
        error: `${where}.parameters.binary_data_size: expected a non-negative integer, got ${show(binSize)}`,
      };
    if (inp.data !== undefined)
      return { ok: false, error: `${where}: has both data and parameters.binary_data_size (send one)` };
    const bytes = elementCount(want);
    if (content === 'uint8-image' && binSize !== bytes)
      return {
        ok: false,
        error: `${where}.parameters.binary_data_size: ${binSize} bytes, but shape ${dims(want)} of UINT8 is ${bytes} bytes`,
      };
    const taken = binary.take(where, binSize);
    if (!taken.ok) return taken;
    if (content === 'uint8-image') return { ok: true, input: { ...model, encoding: 'UINT8', data: taken.data } };
    const images = readImageElements(where, spec.name, taken.data, k);
    return images.ok
      ? {
          ok: true,
          input: {
            ...model,
            encoding: images.images[0]!.encoding,
            data: images.images[0]!.data,
            images: images.images,
          },
        }
      : images;
  }
  if (content === 'encoded-image') {
    return {
      ok: false,
      error: `${where}: a BYTES image must be sent as binary data (parameters.binary_data_size, the binary tensor data extension): JSON strings cannot carry a JPEG's or PNG's bytes`,
    };
  }
  if (inp.data === undefined)
    return {
      ok: false,
      error: `${where}.data: missing (send data, or parameters.binary_data_size with the binary tensor data extension)`,
    };
  const values = flatten(inp.data);
  const count = elementCount(want);
  if (values.length !== count)
    return { ok: false, error: `${where}.data: expected ${count} values, got ${values.length}` };
  const enc = encodeValues(values, 'UINT8');
  if (!enc.ok)
    return {
      ok: false,
      error: `${where}.data: element ${enc.index} (row-major) of input '${spec.name}': ${enc.reason}`,
    };
  return { ok: true, input: { ...model, encoding: 'UINT8', data: enc.data } };
}

/**
 * Triton's classification extension: `parameters.classification`, the number of top classes to
 * return per sample: an integer from 1 to the output's element count per sample, of an output whose
 * datatype has an order (Triton refuses FP16 and BOOL), and not with a shared-memory region (as
 * Triton: the classes are computed from the output, not stored). Undefined when absent.
 */
function classCountParameter(
  where: string,
  parameters: Record<string, unknown> | undefined,
  spec: TensorSpec,
  inRegion: boolean,
): { ok: true; value: number | undefined } | { ok: false; error: string } {
  const v = parameters?.classification;
  if (v === undefined) return { ok: true, value: undefined };
  const field = `${where}.parameters.classification`;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
    return {
      ok: false,
      error: `${field}: expected an integer >= 1 (the number of top classes to return), got ${show(v)}`,
    };
  const classes = elementCount(spec.shape);
  if (v > classes)
    return { ok: false, error: `${field}: ${v} classes asked, but output '${spec.name}' has ${classes} a sample` };
  if (!classifiable(spec.datatype))
    return {
      ok: false,
      error: `${field}: output '${spec.name}' is ${spec.datatype}, which has no class order (classification takes integer, FP32 and FP64 outputs)`,
    };
  if (inRegion)
    return {
      ok: false,
      error: `${field}: cannot be set with shared_memory_region (the classes are computed from the output, not written to the region)`,
    };
  return { ok: true, value: v };
}

function readOutputs(
  req: RequestJson,
  model: { name: string; signature: ModelSignature },
  batch: number,
): { ok: true; outputs: RequestedOutput[] } | { ok: false; error: string } {
  const all = boolParameter('', 'binary_data_output', req.parameters);
  if (!all.ok) return all;
  const allBinary = all.value ?? false;
  const sig = model.signature;
  if (!req.outputs || req.outputs.length === 0)
    return { ok: true, outputs: sig.outputs.map((s) => ({ name: s.name, binary: allBinary })) };
  const outputs: RequestedOutput[] = [];
  for (let k = 0; k < req.outputs.length; k++) {
    const o = req.outputs[k]!;
    const where = `outputs[${k}]`;
    if (!sig.outputs.some((s) => s.name === o.name)) {
      return {
        ok: false,
        error: `${where}.name: '${clip(o.name)}' is not an output of model '${model.name}' (outputs: ${sig.outputs.map((s) => s.name).join(', ')})`,
      };
    }
    if (outputs.some((x) => x.name === o.name))
      return { ok: false, error: `${where}.name: output '${clip(o.name)}' is requested twice` };
    const shm = regionParameters(where, o.parameters);
    if (!shm.ok) return shm;
    const spec = sig.outputs.find((s) => s.name === o.name)!;
    const bytes = tensorBytes(spec.datatype, [batch, ...spec.shape]);
    if (shm.region && shm.region.byteSize < bytes)
      return {
        ok: false,
        error: `${where}.parameters.shared_memory_byte_size: ${shm.region.byteSize} bytes, but output '${o.name}' is ${bytes} bytes`,
      };
    const classes = classCountParameter(where, o.parameters, spec, shm.region !== undefined);
    if (!classes.ok) return classes;
    const b = boolParameter(`${where}.`, 'binary_data', o.parameters);
    if (!b.ok) return b;
    // A per-output binary_data overrides binary_data_output; an output in shared memory carries no data.
    outputs.push({
      name: o.name,
      binary: shm.region ? false : (b.value ?? allBinary),
      ...(shm.region ? { region: shm.region } : {}),
      ...(classes.value !== undefined ? { classCount: classes.value } : {}),
    });
  }
  return { ok: true, outputs };
}

/**
 * Parses and validates one infer request body against the model's signature.
 *
 * - `headers.inferenceHeaderLength` (the Inference-Header-Content-Length header) decides the framing:
 *   present, the first N bytes are the JSON header and the rest are the binary tensors of the inputs
 *   that carry `parameters.binary_data_size`, in the order those inputs appear; absent, the whole body
 *   is JSON. `headers.contentType` is not consulted (clients send application/json,
 *   application/octet-stream or nothing).
 * - Each input must be an input of the signature, given once, with the signature's datatype and shape
 *   `[k, ...spec.shape]` (k samples, 1 <= k <= the model's max_batch_size: the control plane batches
 *   each sample with others' and the answer carries k rows, in order), and its data as JSON (flat or
 *   nested) or binary; inputs with JSON data and binary inputs may be mixed.
 * - Outputs: those the request names (none named: all of the signature's), binary when the output's
 *   `parameters.binary_data` is true, or when it is absent and the request's
 *   `parameters.binary_data_output` is true.
 *
 * - `model.budget`, when given: the JSON's values, containers and depth are counted first and a
 *   request beyond it is refused without being parsed (scheduler/limits.ts).
 *
 * Never throws; the result's error names the field that is wrong.
 */
export function parseInferRequest(
  body: Buffer,
  headers: { contentType?: string | undefined; inferenceHeaderLength?: string | undefined },
  model: ParseModel,
): InferParse {
  const split = splitBody(body, headers.inferenceHeaderLength);
  if (!split.ok) return fail(split.error);
  // Counts over the model's budget are refused before JSON.parse builds anything (scheduler/limits.ts).
  const over = model.budget && scanJson(split.json, model.budget);
  if (over) return fail(over);
  let json: unknown;
  try {
    json = JSON.parse(split.json.toString('utf8'));
  } catch (e) {
    // The likely cause when a client forgets the header: binary tensors after the JSON.
    const hint =
      split.binary === undefined && body.includes('"binary_data_size"')
        ? ' (a body with binary tensor data needs the Inference-Header-Content-Length header)'
        : '';
    return fail(`malformed JSON: ${(e as Error).message}${hint}`);
  }
  return parseInferFields(json, split.binary, model);
}

/**
 * The request's fields once its JSON is parsed, validated against the model: the one validation of
 * every protocol (the HTTP body here; gRPC's ModelInferRequest, whose codec builds the same object
 * with its raw contents as `binary`). An input with `parameters.binary_data_size = n` takes the next
 * n bytes of `binary`, in input order; `binary` undefined: no input may. Every input carries the same
 * batch dimension k (1 <= k <= model.maxBatchSize). Never throws.
 */
export function parseInferFields(json: unknown, binaryBytes: Buffer | undefined, model: ParseModel): InferParse {
  const parsed = RequestSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues;
    const shown = issues.slice(0, 3).map((i) => `${fieldPath(i.path)}: ${i.message}`);
    return fail(
      `invalid inference request: ${shown.join('; ')}${issues.length > 3 ? ` (and ${issues.length - 3} more)` : ''}`,
    );
  }
  const req = parsed.data;
  const sig = model.signature;
  const binary = new BinaryCursor(binaryBytes);
  const byName = new Map<string, InferInput>();
  let batch: number | undefined;
  for (let k = 0; k < req.inputs.length; k++) {
    const inp = req.inputs[k]!;
    const spec = sig.inputs.find((s) => s.name === inp.name);
    if (!spec)
      return fail(
        `input '${clip(inp.name)}' is not an input of model '${model.name}' (inputs: ${sig.inputs.map((s) => s.name).join(', ')})`,
      );
    if (byName.has(inp.name)) return fail(`inputs[${k}].name: input '${inp.name}' is given twice`);
    const read = readInput(k, inp, spec, binary, model.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE);
    if (!read.ok) return fail(read.error);
    const kk = read.input.shape[0]!;
    if (batch !== undefined && kk !== batch)
      return fail(
        `inputs[${k}].shape: batch dimension ${kk}, but the inputs before it have ${batch} (every input carries the same samples)`,
      );
    batch = kk;
    byName.set(inp.name, read.input);
  }
  const leftover = binary.leftover();
  if (leftover) return fail(leftover);
  const missing = sig.inputs.filter((s) => !byName.has(s.name));
  if (missing.length > 0) {
    return fail(
      `inputs: missing ${missing.map((s) => `'${s.name}'`).join(', ')} (model '${model.name}' takes ${sig.inputs.map((s) => s.name).join(', ')})`,
    );
  }
  const outputs = readOutputs(req, model, batch ?? 1);
  if (!outputs.ok) return fail(outputs.error);
  return {
    ok: true,
    request: {
      ...(req.id !== undefined ? { id: req.id } : {}),
      inputs: sig.inputs.map((s) => byName.get(s.name)!),
      outputs: outputs.outputs,
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Responses

/**
 * The infer response, in the order of `r.outputs`. No binary output: a JSON body
 * (`content-type: application/json`). Any binary output: the JSON header, then the binary outputs'
 * bytes in the order they appear, with `inference-header-content-length` (the JSON's byte length) and
 * `content-type: application/octet-stream`. Header names are lower case, as Node reads and writes them
 * (HTTP header names are case-insensitive; tritonclient and KServe's client read them either way).
 */
export function encodeInferResponse(r: InferResponse): { body: Buffer; headers: Record<string, string> } {
  const binaries: Buffer[] = [];
  const outputs = r.outputs.map((o) => {
    const head = `{"name":${JSON.stringify(o.name)},"datatype":"${o.datatype}","shape":${JSON.stringify(o.shape)}`;
    if (o.region)
      return `${head},"parameters":{"shared_memory_region":${JSON.stringify(o.region.name)},"shared_memory_byte_size":${o.data.length}}}`;
    if (!o.binary) return `${head},"data":${jsonArray(o.data, o.datatype)}}`;
    binaries.push(o.data);
    return `${head},"parameters":{"binary_data_size":${o.data.length}}}`;
  });
  const top = [`"model_name":${JSON.stringify(r.modelName)}`];
  if (r.modelVersion !== undefined) top.push(`"model_version":${JSON.stringify(r.modelVersion)}`);
  if (r.id !== undefined) top.push(`"id":${JSON.stringify(r.id)}`);
  top.push(`"outputs":[${outputs.join(',')}]`);
  const header = Buffer.from(`{${top.join(',')}}`, 'utf8');
  if (binaries.length === 0) return { body: header, headers: { 'content-type': 'application/json' } };
  return {
    body: Buffer.concat([header, ...binaries]),
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) },
  };
}

/** The protocol's error body, `{"error": message}`, for every 4xx/5xx answer. */
export function errorBody(message: string): Buffer {
  return Buffer.from(JSON.stringify({ error: message }));
}

// ---------------------------------------------------------------------------------------------------
// Metadata

/**
 * GET /v2. Lists only the extensions inss implements: binary tensor data and classification here
 * (src/serving/classification.ts computes the classes); statistics, model
 * configuration and the model repository (index only; load and unload are refused) in
 * scheduler/triton.ts; system shared memory in scheduler/sharedMemory.ts.
 */
export function serverMetadata(version: string): ServerMetadata {
  return {
    name: 'inss',
    version,
    extensions: [
      'binary_tensor_data',
      'classification',
      'statistics',
      'model_configuration',
      'model_repository',
      'system_shared_memory',
    ],
  };
}

/**
 * GET /v2/models/{name}. Shapes carry the batch dimension as -1 (a request sends 1). `inputs` lists
 * each input in the model's own datatype; `parameters` are inss's additions: `slo_ms` (the model's
 * latency SLO) and `input_forms` (each input's accepted datatypes and shapes).
 */
/** Every input's accepted forms by input name, shapes with the batch dimension -1 (metadata and Triton's model config). */
export function inputFormsByName(signature: ModelSignature): Record<string, MetadataForm[]> {
  return Object.fromEntries(
    signature.inputs.map((s) => [
      s.name,
      inputForms(s).map((f) => ({ datatype: f.datatype, shape: [-1, ...f.shape], content: f.content })),
    ]),
  );
}

export function modelMetadata(model: {
  name: string;
  signature: ModelSignature;
  sloMs: number;
  versions?: string[];
}): ModelMetadata {
  const tensor = (s: TensorSpec): MetadataTensor => ({ name: s.name, datatype: s.datatype, shape: [-1, ...s.shape] });
  return {
    name: model.name,
    ...(model.versions !== undefined ? { versions: model.versions } : {}),
    platform: 'inss',
    inputs: model.signature.inputs.map(tensor),
    outputs: model.signature.outputs.map(tensor),
    parameters: { slo_ms: model.sloMs, input_forms: inputFormsByName(model.signature) },
  };
}

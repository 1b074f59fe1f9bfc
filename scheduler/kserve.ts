// The KServe v2 / Open Inference Protocol codec: infer request bodies in (JSON tensors, and Triton's
// binary tensor data extension), infer responses and metadata out. Pure: buffers and headers in,
// values out; every bad input is a `{ ok: false }` value naming what is wrong, never an exception.
// docs/serving.md describes what is supported.
import { z } from 'zod';
import { DATATYPE_BYTES, type Datatype, elementCount, type ModelSignature, tensorBytes } from '../src/protocol/tensor.js';

export interface InferInput {
  readonly name: string;
  readonly datatype: Datatype;
  readonly shape: number[];
  /** Raw little-endian bytes, exactly tensorBytes(datatype, shape) long. */
  readonly data: Buffer;
}

export interface InferRequest {
  readonly id?: string;
  /** In the signature's input order. */
  readonly inputs: InferInput[];
  /** What to return, and whether as binary data. */
  readonly outputs: { name: string; binary: boolean }[];
}

export type InferParse = { readonly ok: true; readonly request: InferRequest } | { readonly ok: false; readonly status: 400; readonly error: string };

const Parameters = z.record(z.string(), z.unknown()).optional();
const RequestInput = z.object({
  name: z.string(),
  shape: z.array(z.number().int().nonnegative()),
  datatype: z.string(),
  parameters: Parameters,
  data: z.unknown().optional(),
});
const RequestOutput = z.object({ name: z.string(), parameters: Parameters });
const RequestSchema = z.object({
  id: z.string().optional(),
  parameters: Parameters,
  inputs: z.array(RequestInput).min(1),
  outputs: z.array(RequestOutput).optional(),
});

const fail = (error: string): InferParse => ({ ok: false, status: 400, error });

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Flattens nested JSON arrays (row-major), or says where a non-array, non-scalar sits. */
function flatten(data: unknown, out: unknown[]): boolean {
  if (!Array.isArray(data)) {
    out.push(data);
    return true;
  }
  for (const x of data) if (!flatten(x, out)) return false;
  return true;
}

const INT_RANGE: Partial<Record<Datatype, [number, number]>> = {
  UINT8: [0, 255],
  UINT16: [0, 65535],
  UINT32: [0, 4294967295],
  INT8: [-128, 127],
  INT16: [-32768, 32767],
  INT32: [-2147483648, 2147483647],
  INT64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  UINT64: [0, Number.MAX_SAFE_INTEGER],
};

/** IEEE 754 half from a double (round to nearest even). */
export function toHalf(v: number): number {
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  f[0] = v;
  const x = u[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++;
  e = h >>> 10;
  return sign | h;
}

export function fromHalf(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** JSON values -> little-endian bytes of a datatype; or the index and reason of the first bad value. */
function encodeValues(values: readonly unknown[], datatype: Datatype): { ok: true; data: Buffer } | { ok: false; index: number; reason: string } {
  const n = values.length;
  const buf = Buffer.alloc(n * DATATYPE_BYTES[datatype]);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (datatype === 'BOOL') {
      if (typeof v !== 'boolean') return { ok: false, index: i, reason: `expected true or false, got ${JSON.stringify(v)}` };
      buf[i] = v ? 1 : 0;
      continue;
    }
    if (typeof v !== 'number' || !Number.isFinite(v)) return { ok: false, index: i, reason: `expected a number, got ${JSON.stringify(v)}` };
    const range = INT_RANGE[datatype];
    if (range) {
      if (!Number.isInteger(v)) return { ok: false, index: i, reason: `expected an integer for ${datatype}, got ${v}` };
      if (v < range[0] || v > range[1]) return { ok: false, index: i, reason: `${v} is out of range for ${datatype}` };
    }
    switch (datatype) {
      case 'FP32':
        buf.writeFloatLE(v, i * 4);
        break;
      case 'FP64':
        buf.writeDoubleLE(v, i * 8);
        break;
      case 'FP16':
        buf.writeUInt16LE(toHalf(v), i * 2);
        break;
      case 'UINT8':
        buf.writeUInt8(v, i);
        break;
      case 'INT8':
        buf.writeInt8(v, i);
        break;
      case 'UINT16':
        buf.writeUInt16LE(v, i * 2);
        break;
      case 'INT16':
        buf.writeInt16LE(v, i * 2);
        break;
      case 'UINT32':
        buf.writeUInt32LE(v, i * 4);
        break;
      case 'INT32':
        buf.writeInt32LE(v, i * 4);
        break;
      case 'INT64':
        buf.writeBigInt64LE(BigInt(v), i * 8);
        break;
      case 'UINT64':
        buf.writeBigUInt64LE(BigInt(v), i * 8);
        break;
    }
  }
  return { ok: true, data: buf };
}

/** Little-endian bytes -> JSON numbers (or booleans) of a datatype. */
export function decodeValues(data: Buffer, datatype: Datatype): (number | boolean)[] {
  const size = DATATYPE_BYTES[datatype];
  const n = Math.floor(data.length / size);
  const out = new Array<number | boolean>(n);
  for (let i = 0; i < n; i++) {
    const o = i * size;
    switch (datatype) {
      case 'BOOL':
        out[i] = data[o] !== 0;
        break;
      case 'FP32':
        out[i] = data.readFloatLE(o);
        break;
      case 'FP64':
        out[i] = data.readDoubleLE(o);
        break;
      case 'FP16':
        out[i] = fromHalf(data.readUInt16LE(o));
        break;
      case 'UINT8':
        out[i] = data.readUInt8(o);
        break;
      case 'INT8':
        out[i] = data.readInt8(o);
        break;
      case 'UINT16':
        out[i] = data.readUInt16LE(o);
        break;
      case 'INT16':
        out[i] = data.readInt16LE(o);
        break;
      case 'UINT32':
        out[i] = data.readUInt32LE(o);
        break;
      case 'INT32':
        out[i] = data.readInt32LE(o);
        break;
      case 'INT64':
        out[i] = Number(data.readBigInt64LE(o));
        break;
      case 'UINT64':
        out[i] = Number(data.readBigUInt64LE(o));
        break;
    }
  }
  return out;
}

/**
 * Parses and validates an infer request against a model's signature. With `inferenceHeaderLength`
 * (the Inference-Header-Content-Length header) the body is a JSON header followed by the binary
 * tensors of the inputs that carry `parameters.binary_data_size`, in input order.
 */
export function parseInferRequest(body: Buffer, headers: { contentType?: string | undefined; inferenceHeaderLength?: string | undefined }, model: { name: string; signature: ModelSignature }): InferParse {
  let jsonBytes: Buffer = body;
  let binary: Buffer = Buffer.alloc(0);
  if (headers.inferenceHeaderLength !== undefined) {
    const raw = headers.inferenceHeaderLength.trim();
    if (!/^\d+$/.test(raw)) return fail(`Inference-Header-Content-Length '${headers.inferenceHeaderLength}' is not a non-negative integer`);
    const n = Number(raw);
    if (n > body.length) return fail(`Inference-Header-Content-Length ${n} is larger than the body (${body.length} bytes)`);
    jsonBytes = body.subarray(0, n);
    binary = body.subarray(n);
  }
  let json: unknown;
  try {
    json = JSON.parse(jsonBytes.toString('utf8'));
  } catch (e) {
    return fail(`malformed JSON: ${(e as Error).message}`);
  }
  const parsed = RequestSchema.safeParse(json);
  if (!parsed.success) return fail(`invalid infer request: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')}`);
  const req = parsed.data;
  const sig = model.signature;
  const seen = new Set<string>();
  const byName = new Map<string, InferInput>();
  let offset = 0;
  for (let k = 0; k < req.inputs.length; k++) {
    const inp = req.inputs[k]!;
    const where = `inputs[${k}]`;
    const spec = sig.inputs.find((s) => s.name === inp.name);
    if (!spec) return fail(`input '${inp.name}' is not an input of model '${model.name}' (inputs: ${sig.inputs.map((s) => s.name).join(', ')})`);
    if (seen.has(inp.name)) return fail(`${where}: input '${inp.name}' is given twice`);
    seen.add(inp.name);
    if (inp.datatype !== spec.datatype) return fail(`${where}.datatype: expected ${spec.datatype}, got ${inp.datatype}`);
    const want = [1, ...spec.shape];
    if (inp.shape.length > 0 && inp.shape[0] !== 1 && sameShape(inp.shape.slice(1), spec.shape)) {
      return fail(`${where}.shape: batch dimension ${inp.shape[0]} is not supported: send one sample per request (shape [${want.join(',')}]); inss forms batches itself`);
    }
    if (!sameShape(inp.shape, want)) return fail(`${where}.shape: expected [${want.join(',')}], got [${inp.shape.join(',')}]`);
    const bytes = tensorBytes(spec.datatype, want);
    const binSize = inp.parameters?.binary_data_size;
    let data: Buffer;
    if (binSize !== undefined) {
      if (headers.inferenceHeaderLength === undefined) return fail(`${where}.parameters.binary_data_size is set but the request has no Inference-Header-Content-Length header`);
      if (typeof binSize !== 'number' || !Number.isInteger(binSize) || binSize < 0) return fail(`${where}.parameters.binary_data_size: expected a non-negative integer, got ${JSON.stringify(binSize)}`);
      if (inp.data !== undefined) return fail(`${where}: has both binary_data_size and data`);
      if (binSize !== bytes) return fail(`${where}.parameters.binary_data_size: ${binSize} bytes, but shape [${want.join(',')}] of ${spec.datatype} is ${bytes} bytes`);
      if (offset + binSize > binary.length) return fail(`${where}: binary data runs past the end of the body (needs ${offset + binSize} bytes after the header, body has ${binary.length})`);
      data = binary.subarray(offset, offset + binSize); // a view: the body belongs to this request
      offset += binSize;
    } else {
      if (inp.data === undefined) return fail(`${where}.data: missing (and no parameters.binary_data_size)`);
      const values: unknown[] = [];
      flatten(inp.data, values);
      const count = elementCount(want);
      if (values.length !== count) return fail(`${where}.data: expected ${count} values, got ${values.length}`);
      const enc = encodeValues(values, spec.datatype);
      if (!enc.ok) return fail(`${where}.data[${enc.index}]: ${enc.reason}`);
      data = enc.data;
    }
    byName.set(inp.name, { name: inp.name, datatype: spec.datatype, shape: want, data });
  }
  if (offset !== binary.length) return fail(`the binary data after the header is ${binary.length} bytes but the inputs' binary_data_size add up to ${offset}`);
  const missing = sig.inputs.filter((s) => !byName.has(s.name));
  if (missing.length > 0) return fail(`missing input${missing.length > 1 ? 's' : ''} ${missing.map((s) => `'${s.name}'`).join(', ')} of model '${model.name}'`);
  const allBinary = req.parameters?.binary_data_output === true;
  let outputs: { name: string; binary: boolean }[];
  if (req.outputs && req.outputs.length > 0) {
    outputs = [];
    for (let k = 0; k < req.outputs.length; k++) {
      const o = req.outputs[k]!;
      if (!sig.outputs.some((s) => s.name === o.name)) return fail(`outputs[${k}]: '${o.name}' is not an output of model '${model.name}' (outputs: ${sig.outputs.map((s) => s.name).join(', ')})`);
      const b = o.parameters?.binary_data;
      outputs.push({ name: o.name, binary: b === true || (b === undefined && allBinary) });
    }
  } else {
    outputs = sig.outputs.map((s) => ({ name: s.name, binary: allBinary }));
  }
  return { ok: true, request: { ...(req.id !== undefined ? { id: req.id } : {}), inputs: sig.inputs.map((s) => byName.get(s.name)!), outputs } };
}

export interface ResponseOutput {
  readonly name: string;
  readonly datatype: Datatype;
  readonly shape: readonly number[];
  readonly data: Buffer;
  readonly binary: boolean;
}

/** The infer response: JSON, or JSON header + binary outputs with Inference-Header-Content-Length. */
export function encodeInferResponse(r: { modelName: string; modelVersion?: string; id?: string; outputs: readonly ResponseOutput[] }): { body: Buffer; headers: Record<string, string> } {
  const binaries: Buffer[] = [];
  const outputs = r.outputs.map((o) => {
    if (o.binary) {
      binaries.push(o.data);
      return { name: o.name, datatype: o.datatype, shape: o.shape, parameters: { binary_data_size: o.data.length } };
    }
    return { name: o.name, datatype: o.datatype, shape: o.shape, data: decodeValues(o.data, o.datatype) };
  });
  const header = Buffer.from(
    JSON.stringify({ model_name: r.modelName, ...(r.modelVersion !== undefined ? { model_version: r.modelVersion } : {}), ...(r.id !== undefined ? { id: r.id } : {}), outputs }),
  );
  if (binaries.length === 0) return { body: header, headers: { 'content-type': 'application/json' } };
  return { body: Buffer.concat([header, ...binaries]), headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) } };
}

/** The protocol's error body. */
export function errorBody(message: string): Buffer {
  return Buffer.from(JSON.stringify({ error: message }));
}

export function serverMetadata(version: string): { name: string; version: string; extensions: string[] } {
  return { name: 'inss', version, extensions: ['binary_tensor_data'] };
}

/** Model metadata; `parameters.slo_ms` is inss's addition (the model's latency SLO). */
export function modelMetadata(model: { name: string; signature: ModelSignature; sloMs: number; versions?: string[] }): unknown {
  const io = (s: ModelSignature['inputs'][number]) => ({ name: s.name, datatype: s.datatype, shape: [-1, ...s.shape] });
  return { name: model.name, versions: model.versions ?? ['1'], platform: 'inss', inputs: model.signature.inputs.map(io), outputs: model.signature.outputs.map(io), parameters: { slo_ms: model.sloMs } };
}

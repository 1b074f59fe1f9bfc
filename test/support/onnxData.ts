// Inputs for the ONNX Runtime worker's tests and onnxruntime's own answers to them (an InferenceSession
// in the test process, on the same model file): the reference every answer of the worker is held to.
import * as ort from 'onnxruntime-node';
import { ARRAY_OF, ORT_TYPE } from '../../agent/onnxWorkerSignature.js';
import { type Datatype, type TensorRef, type TensorSpec, tensorBytes } from '../../src/protocol/tensor.js';
import { WORKER_PROTOCOL_VERSION } from '../../src/protocol/worker.js';
import type { WorkerSignature } from '../../src/repository/types.js';

/** binary16 bits of `x`, exact for the values used here (k/8, |k| < 64). */
function half(x: number): number {
  if (x === 0) return 0;
  const a = Math.abs(x);
  const e = Math.floor(Math.log2(a));
  return (x < 0 ? 0x8000 : 0) | ((e + 15) << 10) | Math.round((a / 2 ** e - 1) * 1024);
}

export function halfToFloat(h: number): number {
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  const v = e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15);
  return h & 0x8000 ? -v : v;
}

/** Seeded values of `spec`'s datatype for `count` elements, as little-endian bytes. */
function values(datatype: Datatype, count: number, seed: number): Buffer {
  const out = Buffer.alloc(tensorBytes(datatype, [count]));
  let s = seed >>> 0;
  const next = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32; // [0, 1)
  for (let i = 0; i < count; i++) {
    const u = next();
    const k = Math.floor(u * 100) - 50; // a small signed integer
    const w: Record<Datatype, () => void> = {
      BOOL: () => out.writeUInt8(u < 0.5 ? 0 : 1, i),
      UINT8: () => out.writeUInt8(k + 50, i),
      UINT16: () => out.writeUInt16LE(k + 50, 2 * i),
      UINT32: () => out.writeUInt32LE(k + 50, 4 * i),
      UINT64: () => out.writeBigUInt64LE(BigInt(k + 50), 8 * i),
      INT8: () => out.writeInt8(k, i),
      INT16: () => out.writeInt16LE(k, 2 * i),
      INT32: () => out.writeInt32LE(k, 4 * i),
      INT64: () => out.writeBigInt64LE(BigInt(k), 8 * i),
      FP16: () => out.writeUInt16LE(half(Math.round(k * 1.25) / 8), 2 * i),
      FP32: () => out.writeFloatLE(u * 4 - 2, 4 * i),
      FP64: () => out.writeDoubleLE(u * 4 - 2, 8 * i),
    };
    w[datatype]();
  }
  return out;
}

export interface TestBatch {
  readonly refs: TensorRef[];
  readonly parts: Buffer[];
  readonly payload: Buffer;
}

const dimsOf = (sig: WorkerSignature, spec: TensorSpec, size: number) =>
  sig.batchDim ? [size, ...spec.shape] : [...spec.shape];

/** Every input of `sig` for a batch of `size`, seeded; the payload is their bytes one after another. */
export function testBatch(sig: WorkerSignature, size: number, seed: number): TestBatch {
  const refs: TensorRef[] = [];
  const parts: Buffer[] = [];
  sig.inputs.forEach((spec, k) => {
    const shape = dimsOf(sig, spec, size);
    const bytes = values(
      spec.datatype,
      shape.reduce((a, b) => a * b, 1),
      seed * 31 + k,
    );
    refs.push({ name: spec.name, datatype: spec.datatype, shape, byteLength: bytes.length });
    parts.push(bytes);
  });
  return { refs, parts, payload: Buffer.concat(parts) };
}

export function batchHeader(id: string, model: string, size: number, b: TestBatch): object {
  return { v: WORKER_PROTOCOL_VERSION, type: 'batch', id, model, size, inputs: b.refs };
}

/** onnxruntime's own answer: each output of `sig` in order, its bytes. */
export async function reference(
  inference: ort.InferenceSession,
  sig: WorkerSignature,
  size: number,
  b: TestBatch,
): Promise<Buffer[]> {
  const feeds: Record<string, ort.Tensor> = {};
  sig.inputs.forEach((spec, k) => {
    const bytes = Buffer.from(b.parts[k]!); // own, aligned buffer
    const C = ARRAY_OF[spec.datatype];
    const data = new C(bytes.buffer, bytes.byteOffset, bytes.length / C.BYTES_PER_ELEMENT);
    const type = ORT_TYPE[spec.datatype] as ort.Tensor.Type;
    feeds[spec.name] = new ort.Tensor(type, data, dimsOf(sig, spec, size));
  });
  const out = await inference.run(feeds);
  return sig.outputs.map((spec) => {
    const d = out[spec.name]!.data as Uint8Array;
    return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  });
}

/**
 * How far `got` is from `want` for a tensor of `datatype`: the largest difference relative to the
 * reference's largest magnitude for floating point, 0 or 1 (equal or not) for integers and BOOL.
 */
export function difference(datatype: Datatype, got: Buffer, want: Buffer): number {
  if (got.length !== want.length) return Infinity;
  const read: ((b: Buffer, i: number) => number) | null =
    datatype === 'FP32'
      ? (b, i) => b.readFloatLE(4 * i)
      : datatype === 'FP64'
        ? (b, i) => b.readDoubleLE(8 * i)
        : datatype === 'FP16'
          ? (b, i) => halfToFloat(b.readUInt16LE(2 * i))
          : null;
  if (read === null) return got.equals(want) ? 0 : 1;
  const n = got.length / tensorBytes(datatype, [1]);
  let d = 0;
  let m = 0;
  for (let i = 0; i < n; i++) {
    d = Math.max(d, Math.abs(read(got, i) - read(want, i)));
    m = Math.max(m, Math.abs(read(want, i)));
  }
  return m === 0 ? d : d / m;
}

// Batches for measuring a model: every input of its signature filled with deterministic pseudo-random
// values of its datatype, laid out as a worker `batch` frame carries them (docs/worker-protocol.md: the
// inputs in signature order, each [size, ...shape], or exactly its shape when the model takes no batch
// dimension; little-endian; BOOL one byte an element). The values: floats uniform in [-1, 1) (FP16 in
// ±[0.25, 1)), integers in [0, 10) (small enough to be valid indices of an embedding or a class table),
// BOOL 0 or 1. Latency does not depend on them for the models inss serves; a model whose running time
// does (data-dependent control flow) is measured on these values only.
import { DATATYPE_BYTES, type Datatype, elementCount, type TensorRef } from '../../src/protocol/tensor.js';
import type { WorkerSignature } from '../../src/repository/types.js';

export interface BatchInputs {
  readonly inputs: TensorRef[];
  readonly payload: Buffer;
}

/** A 32-bit linear congruential generator: the same sequence for the same seed on every machine. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function fill(buf: Buffer, datatype: Datatype, next: () => number): void {
  const n = buf.length / DATATYPE_BYTES[datatype];
  for (let i = 0; i < n; i++) {
    const u = next();
    switch (datatype) {
      case 'FP32':
        buf.writeFloatLE(2 * u - 1, i * 4);
        break;
      case 'FP64':
        buf.writeDoubleLE(2 * u - 1, i * 8);
        break;
      case 'FP16': {
        // Sign, exponent 13 or 14 (2^-2, 2^-1), ten bits of mantissa: a finite half in ±[0.25, 1).
        const bits = Math.floor(u * 2 ** 12);
        buf.writeUInt16LE(((bits & 1) << 15) | ((13 + ((bits >> 1) & 1)) << 10) | (bits >> 2), i * 2);
        break;
      }
      case 'BOOL':
        buf.writeUInt8(u < 0.5 ? 0 : 1, i);
        break;
      default: {
        const v = Math.floor(u * 10);
        const width = DATATYPE_BYTES[datatype];
        if (width === 8) buf.writeBigInt64LE(BigInt(v), i * 8);
        else buf.writeUIntLE(v, i * width, width);
      }
    }
  }
}

/** The inputs and payload of a batch of `size` samples for `sig`; the same `seed` gives the same bytes. */
export function batchInputs(sig: WorkerSignature, size: number, seed: number): BatchInputs {
  if (!sig.batchDim && size !== 1) throw new RangeError(`a model without a batch dimension takes batch 1, not ${size}`);
  const next = lcg(seed);
  const inputs: TensorRef[] = [];
  const parts: Buffer[] = [];
  for (const spec of sig.inputs) {
    const shape = sig.batchDim ? [size, ...spec.shape] : [...spec.shape];
    const buf = Buffer.alloc(DATATYPE_BYTES[spec.datatype] * elementCount(shape));
    fill(buf, spec.datatype, next);
    inputs.push({ name: spec.name, datatype: spec.datatype, shape, byteLength: buf.length });
    parts.push(buf);
  }
  return { inputs, payload: Buffer.concat(parts) };
}

/** Bytes of one sample's tensors (the profile's inputBytes / outputBytes). */
export function sampleBytes(specs: WorkerSignature['inputs']): number {
  return specs.reduce((sum, s) => sum + DATATYPE_BYTES[s.datatype] * elementCount(s.shape), 0);
}

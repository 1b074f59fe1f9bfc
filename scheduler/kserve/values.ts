// Datatypes: JSON values <-> little-endian bytes, both ways, exact where the datatype allows.
import { DATATYPE_BYTES, type Datatype } from '../../src/protocol/tensor.js';
import { show } from './text.js';

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
  // subnormal (1024 rounds up into the smallest normal, which is the right encoding)
  if (a < 2 ** -14) return sign | roundHalfEven(a * 2 ** 24);
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
  if (e > 15) return sign | 0x7c00;
  // in [1024, 2048]; 2048 carries into the exponent, and past 15 into infinity
  const m = roundHalfEven(a * 2 ** (10 - e));
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

export type Encoded = { ok: true; data: Buffer } | { ok: false; index: number; reason: string };

/** JSON values (already flattened) -> little-endian bytes; or the row-major index and reason of the first bad value. */
export function encodeValues(values: readonly unknown[], datatype: Datatype): Encoded {
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

/**
 * The element at byte offset `o` of a numeric (non-BOOL) tensor, as a number (INT64/UINT64 beyond 2^53 lose their low
 * bits).
 */
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
export function jsonArray(data: Buffer, datatype: Datatype | 'BYTES'): string {
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

/**
 * The elements of a serialized BYTES tensor (each a 4-byte little-endian length, then its bytes); a truncated last one
 * is dropped.
 */
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

// Triton's classification extension (triton-inference-server/server docs/protocol/
// extension_classification.md): an output requested with `classification: N` is answered, instead of
// its raw tensor, as a BYTES tensor of the N highest-valued classes of each sample, each a string
// `value:index[:label]`. Pure: a tensor's bytes, N and the labels in, the BYTES tensor out. The infer
// path calls classify once per such output of an answered request (scheduler/service.ts); request
// parsing (scheduler/kserve.ts) has already refused what this refuses, so its errors are for callers
// that skip parsing.
//
// What follows Triton (src/classification.cc TopkClassifications, src/http_server.cc) exactly:
// - the shape: `[batch, N]` when the model batches (Triton's max_batch_size > 0) and the output has
//   dimensions, the batch being the output's first dimension; `[N]` otherwise;
// - the value: C's `%f` of the element (std::to_string: six decimals, round half to even on the
//   exact binary value, `nan`, `-nan`, `inf`, `-inf`) for FP32 and FP64; the decimal integer for the
//   integer types; FP16 and BOOL have no ordering in Triton and are refused with its message;
// - `:label` only where the output has a label for that index.
// Where Triton leaves the result unspecified, inss decides: equal values rank by lower index first
// (Triton's std::sort is not stable), and NaN ranks below every number (a comparison with NaN is false,
// which leaves std::sort's order undefined). N beyond a sample's element count is the caller's error
// (Triton shortens the list but still declares N in the shape).
import { DATATYPE_BYTES, type Datatype, elementCount, type ModelSignature } from '../protocol/tensor.js';

/**
 * The label files inss carries, by name, as paths inside the package. `imagenet`: the 1000 ImageNet
 * class names in the order torchvision's classifiers number their outputs (data/imagenet/README.md).
 */
export const LABEL_FILES = { imagenet: 'data/imagenet/labels.txt' } as const;
export type LabelSet = keyof typeof LABEL_FILES;

/** Classes in the ImageNet-1k label file. */
export const IMAGENET_CLASSES = 1000;

/**
 * The label set of a model's output, or null: ImageNet's for the 1000-score output of a model with an
 * image input (the torchvision classifiers the profiles describe, and the simulated worker's stand-in
 * scores of them); none for any other output.
 */
export function outputLabelSet(signature: ModelSignature, outputName: string): LabelSet | null {
  const out = signature.outputs.find((o) => o.name === outputName);
  if (!out || !signature.inputs.some((i) => i.image)) return null;
  return out.shape.length === 1 && out.shape[0] === IMAGENET_CLASSES && classifiable(out.datatype) ? 'imagenet' : null;
}

/** A tensor as the worker answered it: the client's shape (with the batch dimension), little-endian bytes. */
export interface ClassifiedInput {
  readonly datatype: Datatype;
  readonly shape: readonly number[];
  readonly data: Buffer;
}

/** The extension's answer: BYTES, each element 4-byte little-endian length then the UTF-8 string. */
export interface ClassifiedTensor {
  readonly datatype: 'BYTES';
  readonly shape: number[];
  /** The serialized BYTES tensor (binary tensor data extension layout). */
  readonly data: Buffer;
  /** The same strings, row-major (for a JSON answer). */
  readonly strings: string[];
}

export type Classified =
  { readonly ok: true; readonly tensor: ClassifiedTensor } | { readonly ok: false; readonly error: string };

/** Datatypes Triton classifies (it refuses FP16 and BOOL; BYTES is never a model output in inss). */
export function classifiable(d: Datatype): boolean {
  return d !== 'FP16' && d !== 'BOOL';
}

/**
 * C's `printf("%f", v)` (std::to_string of a float or double) under glibc: six decimals of the exact
 * binary value, ties rounded to even; `nan` / `-nan` (by the sign bit, which a JS number cannot show:
 * `negativeNaN`), `inf`, `-inf`; negative zero keeps its sign.
 */
export function formatFixed6(v: number, negativeNaN = false): string {
  if (Number.isNaN(v)) return negativeNaN ? '-nan' : 'nan';
  if (v === Infinity) return 'inf';
  if (v === -Infinity) return '-inf';
  const sign = v < 0 || Object.is(v, -0) ? '-' : '';
  const a = Math.abs(v);
  // Beyond 1e21 toFixed switches to exponent notation; such doubles are whole numbers, exact as BigInt.
  if (a >= 1e21) return `${sign}${BigInt(a).toString()}.000000`;
  // toFixed rounds the exact value, a tie to the larger magnitude; glibc rounds a tie to even. A tie is
  // an exact expansion ending in 5 at the seventh decimal (toFixed(100) is exact that far for any
  // double that can tie: one that ends there has at most seven decimals).
  const rounded = a.toFixed(6);
  const exact = a.toFixed(100);
  const dot = exact.indexOf('.');
  const after = exact.slice(dot + 1);
  if (after[6] === '5' && /^0*$/.test(after.slice(7))) {
    const truncated = exact.slice(0, dot + 7);
    if (Number(truncated[truncated.length - 1]) % 2 === 0) return `${sign}${truncated}`;
  }
  return `${sign}${rounded}`;
}

/** One element's value as Triton writes it, and a key to rank by (NaN: -Infinity, below everything). */
function reader(
  datatype: Datatype,
): ((data: Buffer, o: number) => { text: string; key: number | bigint; nan: boolean }) | null {
  switch (datatype) {
    case 'FP32':
      return (d, o) => {
        const v = d.readFloatLE(o);
        const nan = Number.isNaN(v);
        return { text: formatFixed6(v, nan && (d[o + 3]! & 0x80) !== 0), key: v, nan };
      };
    case 'FP64':
      return (d, o) => {
        const v = d.readDoubleLE(o);
        const nan = Number.isNaN(v);
        return { text: formatFixed6(v, nan && (d[o + 7]! & 0x80) !== 0), key: v, nan };
      };
    case 'UINT8':
      return (d, o) => int(d.readUInt8(o));
    case 'INT8':
      return (d, o) => int(d.readInt8(o));
    case 'UINT16':
      return (d, o) => int(d.readUInt16LE(o));
    case 'INT16':
      return (d, o) => int(d.readInt16LE(o));
    case 'UINT32':
      return (d, o) => int(d.readUInt32LE(o));
    case 'INT32':
      return (d, o) => int(d.readInt32LE(o));
    case 'INT64':
      return (d, o) => big(d.readBigInt64LE(o));
    case 'UINT64':
      return (d, o) => big(d.readBigUInt64LE(o));
    default:
      return null;
  }
}

const int = (v: number) => ({ text: String(v), key: v, nan: false });
const big = (v: bigint) => ({ text: v.toString(), key: v, nan: false });

/** Serializes strings as a BYTES tensor: each a 4-byte little-endian length, then its UTF-8 bytes. */
export function serializeBytes(strings: readonly string[]): Buffer {
  const parts: Buffer[] = [];
  for (const s of strings) {
    const b = Buffer.from(s, 'utf8');
    const len = Buffer.alloc(4);
    len.writeUInt32LE(b.length);
    parts.push(len, b);
  }
  return Buffer.concat(parts);
}

/**
 * The top `count` classes of each sample of `t` as Triton's classification extension returns them.
 * `labels[k]` names class k (null or shorter: no label for the classes beyond); `batched`: the model
 * takes a batch dimension (Triton's max_batch_size > 0; every inss model does).
 */
export function classify(
  t: ClassifiedInput,
  count: number,
  labels: readonly string[] | null,
  batched: boolean,
): Classified {
  const read = reader(t.datatype);
  if (!read)
    return { ok: false, error: `class result not available for output due to unsupported type '${t.datatype}'` };
  if (!Number.isInteger(count) || count < 1)
    return { ok: false, error: `classification: expected an integer >= 1, got ${count}` };
  const hasBatch = batched && t.shape.length > 0;
  const samples = hasBatch ? t.shape[0]! : 1;
  const perSample = elementCount(hasBatch ? t.shape.slice(1) : t.shape);
  const size = DATATYPE_BYTES[t.datatype];
  if (t.data.length !== samples * perSample * size) {
    return {
      ok: false,
      error:
        `the output is ${t.data.length} bytes, ` +
        `but shape [${t.shape.join(',')}] of ${t.datatype} is ${samples * perSample * size}`,
    };
  }
  if (count > perSample)
    return { ok: false, error: `classification: ${count} classes asked, but each sample has ${perSample}` };
  const strings: string[] = [];
  const values = new Array<ReturnType<NonNullable<typeof read>>>(perSample);
  const order = new Array<number>(perSample);
  for (let s = 0; s < samples; s++) {
    const base = s * perSample * size;
    for (let k = 0; k < perSample; k++) {
      values[k] = read(t.data, base + k * size);
      order[k] = k;
    }
    // Highest first; ties by lower index (sort is stable, indices start in order); NaN last.
    order.sort((i, j) => {
      const a = values[i]!;
      const b = values[j]!;
      if (a.nan || b.nan) return Number(a.nan) - Number(b.nan);
      return a.key > b.key ? -1 : a.key < b.key ? 1 : 0;
    });
    for (let r = 0; r < count; r++) {
      const k = order[r]!;
      const label = labels?.[k];
      strings.push(label === undefined ? `${values[k]!.text}:${k}` : `${values[k]!.text}:${k}:${label}`);
    }
  }
  return {
    ok: true,
    tensor: { datatype: 'BYTES', shape: hasBatch ? [samples, count] : [count], data: serializeBytes(strings), strings },
  };
}

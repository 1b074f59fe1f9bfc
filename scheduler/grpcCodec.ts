// The KServe v2 / Open Inference Protocol codec over gRPC (Triton's `inference.GRPCInferenceService`,
// proto/grpc_service.proto): ModelInferRequest messages in, as the request object the HTTP codec
// validates (scheduler/kserve.ts parseInferFields: one validation for both protocols, the same error
// texts); answers, errors and metadata out as messages and gRPC status codes.
//
// Pure: decoded messages in (@grpc/proto-loader with keepCase, longs as strings, bytes as Buffers,
// oneofs named), plain values out. The gRPC service (scheduler/grpc.ts) calls inferFieldsOf once per
// ModelInfer request, before parseInferFields, and inferResponseMessage once per answer. Nothing here
// throws on client input: a bad request is an `{ ok: false, error }` whose text names the field.
//
// How tensor data maps onto the HTTP request object:
// - `raw_input_contents` (what tritonclient.grpc sends): the i-th entry belongs to the i-th input that
//   carries neither `contents` nor a shared-memory region; it becomes `parameters.binary_data_size`
//   and its bytes the binary data after the JSON, exactly as Triton's binary tensor extension lays
//   them out (BYTES elements with their 4-byte length), so a single raw input is passed on uncopied;
// - typed `contents`: the field of the input's datatype (fp32_contents for FP32, int_contents for
//   INT8/16/32, ...), written as little-endian bytes here (range-checked for the narrow integers),
//   BYTES elements with their 4-byte length; FP16 has no typed field (raw only, as in Triton);
// - parameters: each InferParameter's value as the plain value it holds (int64 and uint64 as numbers
//   when they are exact, else as their decimal text, which the HTTP codec then refuses by name);
//   `binary_data`, `binary_data_output` and `binary_data_size` are the HTTP binary extension's and are
//   dropped (gRPC answers always carry raw_output_contents, as Triton's do).
//
// The messages' shapes and the status codes: scheduler/grpcMessages.ts (re-exported here).
import type { InferResponse, ModelMetadata, ServerMetadata } from './kserve.js';
import { DATATYPE_BYTES, type Datatype, elementCount, GRPC_CONTENTS_FIELD } from '../src/protocol/tensor.js';
import type { IndexEntry, ModelConfigAnswer, TritonModelStat } from './triton.js';
import type { RegionStatus } from './sharedMemory.js';
import type {
  Int64,
  InferParameterMessage,
  ParameterMap,
  TensorContentsMessage,
  ModelInferRequestMessage,
  InferOutputMessage,
  ModelInferResponseMessage,
} from './grpcMessages.js';

export {
  GrpcCode,
  grpcCodeOf,
  type Int64,
  type InferParameterMessage,
  type ParameterMap,
  type TensorContentsMessage,
  type InferInputMessage,
  type ModelInferRequestMessage,
  type InferOutputMessage,
  type ModelInferResponseMessage,
  type GrpcCodeValue,
} from './grpcMessages.js';

// ---------------------------------------------------------------------------------------------------
// Requests

/** The HTTP codec's request object built from a ModelInferRequest, and the binary data its inputs take. */
export interface InferFields {
  /** `{ id?, parameters?, inputs, outputs? }` as the HTTP JSON would be, for parseInferFields. */
  readonly json: {
    id?: string;
    parameters?: Record<string, unknown>;
    inputs: Record<string, unknown>[];
    outputs?: Record<string, unknown>[];
  };
  /** The bytes the inputs with `parameters.binary_data_size` take, in input order; undefined when none does. */
  readonly binary: Buffer | undefined;
  /**
   * What each such input's data came from (`raw_input_contents[0]`, `inputs[1].contents.fp32_contents`), by input
   * index.
   */
  readonly sources: ReadonlyMap<number, string>;
}

export type InferFieldsResult = ({ readonly ok: true } & InferFields) | { readonly ok: false; readonly error: string };

/** The parameters the HTTP binary tensor extension uses: meaningless over gRPC (answers are raw). */
const HTTP_ONLY = new Set(['binary_data', 'binary_data_output', 'binary_data_size']);

const MAX_ECHO_CHARS = 64;
const clip = (s: string): string => (s.length > MAX_ECHO_CHARS ? `${s.slice(0, MAX_ECHO_CHARS)}...` : s);

/** A 64-bit integer as a number when exact, else its decimal text (which a numeric check then refuses by name). */
function int64Value(v: Int64 | undefined): number | string {
  const n = Number(v ?? 0);
  return Number.isSafeInteger(n) ? n : String(v);
}

/** One InferParameter's value; undefined when no member of the oneof is set. */
export function parameterValue(p: InferParameterMessage): unknown {
  switch (p.parameter_choice) {
    case 'bool_param':
      return p.bool_param ?? false;
    case 'int64_param':
      return int64Value(p.int64_param);
    case 'uint64_param':
      return int64Value(p.uint64_param);
    case 'string_param':
      return p.string_param ?? '';
    case 'double_param':
      return p.double_param ?? 0;
    default:
      return undefined;
  }
}

/** A parameter map as plain values, without the HTTP-only ones; undefined when nothing is left. */
export function plainParameters(params: ParameterMap | undefined): Record<string, unknown> | undefined {
  if (!params) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(params)) {
    if (HTTP_ONLY.has(k)) continue;
    const v = parameterValue(p);
    if (v !== undefined) out[k] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

type ContentsField = keyof TensorContentsMessage;

/** The typed-contents field each datatype travels in (FP16 and BF16 have none: raw only). */
const CONTENTS_FIELD: Readonly<Record<string, ContentsField>> = GRPC_CONTENTS_FIELD;

const CONTENTS_FIELDS: readonly ContentsField[] = [
  'bool_contents',
  'int_contents',
  'int64_contents',
  'uint_contents',
  'uint64_contents',
  'fp32_contents',
  'fp64_contents',
  'bytes_contents',
];

const NARROW: Partial<Record<Datatype, readonly [number, number]>> = {
  INT8: [-0x80, 0x7f],
  INT16: [-0x8000, 0x7fff],
  UINT8: [0, 0xff],
  UINT16: [0, 0xffff],
};

/** Typed contents as the little-endian bytes of the binary extension; or the element at fault. */
function contentsBytes(
  datatype: string,
  values: readonly unknown[],
  where: string,
): { ok: true; data: Buffer } | { ok: false; error: string } {
  if (datatype === 'BYTES') {
    const elements = values as readonly Buffer[];
    const out = Buffer.allocUnsafe(elements.reduce((n, e) => n + 4 + e.length, 0));
    let o = 0;
    for (const e of elements) {
      out.writeUInt32LE(e.length, o);
      e.copy(out, o + 4);
      o += 4 + e.length;
    }
    return { ok: true, data: out };
  }
  const dt = datatype as Datatype;
  const size = DATATYPE_BYTES[dt];
  const out = Buffer.allocUnsafe(values.length * size);
  const range = NARROW[dt];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    const o = i * size;
    if (range && ((v as number) < range[0] || (v as number) > range[1])) {
      return {
        ok: false,
        error: `${where}[${i}]: ${String(v)} is out of range for ${dt} (${range[0]} to ${range[1]})`,
      };
    }
    switch (dt) {
      case 'BOOL':
        out[o] = v ? 1 : 0;
        break;
      case 'INT8':
        out.writeInt8(v as number, o);
        break;
      case 'INT16':
        out.writeInt16LE(v as number, o);
        break;
      case 'INT32':
        out.writeInt32LE(v as number, o);
        break;
      case 'INT64':
        out.writeBigInt64LE(BigInt(v as Int64), o);
        break;
      case 'UINT8':
        out.writeUInt8(v as number, o);
        break;
      case 'UINT16':
        out.writeUInt16LE(v as number, o);
        break;
      case 'UINT32':
        out.writeUInt32LE(v as number, o);
        break;
      case 'UINT64':
        out.writeBigUInt64LE(BigInt(v as Int64), o);
        break;
      case 'FP32':
        out.writeFloatLE(v as number, o);
        break;
      case 'FP64':
        out.writeDoubleLE(v as number, o);
        break;
      case 'FP16':
        break; // no typed field: refused before
    }
  }
  return { ok: true, data: out };
}

const shapeText = (shape: readonly number[]): string => `[${shape.join(',')}]`;

/**
 * A ModelInferRequest as the HTTP codec's request object and binary data (see the file comment).
 * Checked here, with gRPC's field names: raw contents and typed contents are not mixed; every input
 * has its data; raw entries are as many as the inputs that take one, each of the byte size its
 * declared shape and datatype give (BYTES excepted); typed contents are the datatype's field, with as
 * many values as the declared shape. Everything else (names, datatypes, shapes against the model) is
 * parseInferFields' to check, whose errors then name the source (rewriteError).
 */
export function inferFieldsOf(req: ModelInferRequestMessage): InferFieldsResult {
  const raw = req.raw_input_contents ?? [];
  const parts: Buffer[] = [];
  const sources = new Map<number, string>();
  let nextRaw = 0;
  const inputs: Record<string, unknown>[] = [];
  for (const [k, inp] of req.inputs.entries()) {
    const where = `inputs[${k}]`;
    const shape = inp.shape.map((d) => Number(d));
    const params = plainParameters(inp.parameters) ?? {};
    const out: Record<string, unknown> = { name: inp.name, shape, datatype: inp.datatype };
    const contents = inp.contents ?? undefined;
    const inRegion = params.shared_memory_region !== undefined;
    const typed = contents ? CONTENTS_FIELDS.find((f) => (contents[f]?.length ?? 0) > 0) : undefined;
    if (typed !== undefined && raw.length > 0) {
      return {
        ok: false,
        error:
          `${where}.contents: given with raw_input_contents (send every input's data one way: ` +
          `raw_input_contents, or contents)`,
      };
    }
    if (inRegion) {
      if (typed !== undefined)
        return { ok: false, error: `${where}: has both parameters.shared_memory_region and contents (send one)` };
    } else if (typed !== undefined) {
      const field = CONTENTS_FIELD[inp.datatype];
      const cw = `${where}.contents.${typed}`;
      if (field === undefined) {
        const why =
          inp.datatype === 'FP16' || inp.datatype === 'BF16'
            ? `${inp.datatype} has no typed contents: send it in raw_input_contents`
            : `datatype ${clip(inp.datatype)} has no typed contents`;
        return { ok: false, error: `${cw}: ${why}` };
      }
      if (typed !== field) return { ok: false, error: `${cw}: a ${inp.datatype} input takes ${field}` };
      const values = contents![typed]! as readonly unknown[];
      const want = elementCount(shape);
      if (inp.datatype !== 'BYTES' && values.length !== want)
        return { ok: false, error: `${cw}: ${values.length} values, but shape ${shapeText(shape)} has ${want}` };
      const bytes = contentsBytes(inp.datatype, values, cw);
      if (!bytes.ok) return bytes;
      parts.push(bytes.data);
      params.binary_data_size = bytes.data.length;
      sources.set(k, cw);
    } else if (nextRaw < raw.length) {
      const rw = `raw_input_contents[${nextRaw}]`;
      const data = raw[nextRaw++]!;
      const size = DATATYPE_BYTES[inp.datatype as Datatype] as number | undefined;
      if (
        size !== undefined &&
        shape.every((d) => Number.isInteger(d) && d >= 0) &&
        data.length !== size * elementCount(shape)
      ) {
        return {
          ok: false,
          error:
            `${rw}: ${data.length} bytes, but input '${clip(inp.name)}' of shape ${shapeText(shape)} and ` +
            `${inp.datatype} is ${size * elementCount(shape)} bytes`,
        };
      }
      parts.push(data);
      params.binary_data_size = data.length;
      sources.set(k, rw);
    } else {
      const also =
        raw.length > 0
          ? `: raw_input_contents has ${raw.length} entries for ${req.inputs.length} inputs (one per input, in ` +
            `input order)`
          : ' (send raw_input_contents, one entry per input in input order, or contents)';
      return { ok: false, error: `${where} ('${clip(inp.name)}'): no tensor data${also}` };
    }
    if (Object.keys(params).length > 0) out.parameters = params;
    inputs.push(out);
  }
  if (nextRaw < raw.length)
    return {
      ok: false,
      error:
        `raw_input_contents: ${raw.length} entries, but ${nextRaw} of the ${req.inputs.length} inputs take one ` +
        `(one per input, in input order)`,
    };
  const json: InferFields['json'] = { inputs };
  if (req.id) json.id = req.id;
  const params = plainParameters(req.parameters);
  if (params) json.parameters = params;
  if (req.outputs && req.outputs.length > 0) {
    json.outputs = req.outputs.map((o) => {
      const p = plainParameters(o.parameters);
      return p ? { name: o.name, parameters: p } : { name: o.name };
    });
  }
  const binary = parts.length === 0 ? undefined : parts.length === 1 ? parts[0] : Buffer.concat(parts);
  return { ok: true, json, binary, sources };
}

/**
 * An error text of the HTTP codec as a gRPC client should read it: an input's
 * `parameters.binary_data_size` (which the gRPC request never had) is named by where its data came from.
 */
export function rewriteError(error: string, sources: ReadonlyMap<number, string>): string {
  return error.replace(
    /inputs\[(\d+)\]\.parameters\.binary_data_size/g,
    (whole, k: string) => sources.get(Number(k)) ?? whole,
  );
}

// ---------------------------------------------------------------------------------------------------
// Responses

const stringParam = (v: string): InferParameterMessage => ({ parameter_choice: 'string_param', string_param: v });
const int64Param = (v: number): InferParameterMessage => ({ parameter_choice: 'int64_param', int64_param: v });

/**
 * An answer as a ModelInferResponse: every output's bytes in raw_output_contents, in output order (an
 * output written into a shared-memory region names it in its parameters and has an empty entry, so
 * the i-th entry stays the i-th output's, as tritonclient.grpc reads them).
 */
export function inferResponseMessage(r: InferResponse): ModelInferResponseMessage {
  const outputs: InferOutputMessage[] = [];
  const raw: Buffer[] = [];
  for (const o of r.outputs) {
    const parameters: Record<string, InferParameterMessage> = o.region
      ? { shared_memory_region: stringParam(o.region.name), shared_memory_byte_size: int64Param(o.data.length) }
      : {};
    outputs.push({ name: o.name, datatype: o.datatype, shape: [...o.shape], parameters });
    raw.push(o.region ? Buffer.alloc(0) : o.data);
  }
  return {
    model_name: r.modelName,
    model_version: r.modelVersion ?? '',
    id: r.id ?? '',
    outputs,
    raw_output_contents: raw,
  };
}

// ---------------------------------------------------------------------------------------------------
// Metadata, configuration, statistics, repository, shared memory: the HTTP extensions' values as messages

export function serverMetadataMessage(m: ServerMetadata): { name: string; version: string; extensions: string[] } {
  return { name: m.name, version: m.version, extensions: [...m.extensions] };
}

/** ModelMetadataResponse has no parameters: inss's `slo_ms` is in the model configuration's parameters. */
export function modelMetadataMessage(m: ModelMetadata): {
  name: string;
  versions: string[];
  platform: string;
  inputs: object[];
  outputs: object[];
} {
  const tensor = (t: ModelMetadata['inputs'][number]) => ({ name: t.name, datatype: t.datatype, shape: [...t.shape] });
  return {
    name: m.name,
    versions: [...(m.versions ?? [])],
    platform: m.platform,
    inputs: m.inputs.map(tensor),
    outputs: m.outputs.map(tensor),
  };
}

/** ModelConfigResponse: the HTTP configuration's fields are model_config.proto's (enum values by name). */
export function modelConfigMessage(c: ModelConfigAnswer): { config: ModelConfigAnswer } {
  return { config: c };
}

export function modelStatisticsMessage(stats: readonly TritonModelStat[]): { model_stats: readonly TritonModelStat[] } {
  return { model_stats: stats };
}

export function repositoryIndexMessage(entries: readonly IndexEntry[]): { models: readonly IndexEntry[] } {
  return { models: entries };
}

/** SystemSharedMemoryStatusResponse: regions by name. */
export function sharedMemoryStatusMessage(regions: readonly RegionStatus[]): { regions: Record<string, RegionStatus> } {
  return { regions: Object.fromEntries(regions.map((r) => [r.name, r])) };
}

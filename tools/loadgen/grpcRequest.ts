// What `inss loadgen --protocol grpc` sends and how it judges an answer, over the KServe v2 / Open
// Inference Protocol's gRPC service (Triton's inference.GRPCInferenceService). Pure: metadata in,
// request messages out; answers in, outcomes out. The same tensors as over HTTP (request.ts): binary
// encoding sends raw_input_contents (what tritonclient.grpc sends), json encoding typed `contents`.
//
// Metadata: ModelMetadataResponse carries no parameters, so the SLO (`slo_ms`) and the accepted input
// forms (`input_forms`) are read from the model configuration's parameters, where inss puts them too.
import {
  DATATYPE_BYTES,
  type Datatype,
  DatatypeSchema,
  elementCount,
  GRPC_CONTENTS_FIELD,
} from '../../src/protocol/tensor.js';
import { bytesElement, encodeJpeg, encodePng, type ImageForm, type Picture, uint8Chw } from './images.js';
import type { Encoding, InputTensor, Judgement } from './request.js';
import { tensorData } from './request.js';

/** A ModelInferRequest as @grpc/proto-loader serializes it. */
export interface GrpcInferRequest {
  readonly model_name: string;
  readonly inputs: readonly {
    name: string;
    datatype: string;
    shape: readonly number[];
    contents?: Record<string, readonly unknown[]>;
  }[];
  readonly raw_input_contents: readonly Buffer[];
}

/** The contents field of each datatype (FP16 has none: it goes raw whatever the encoding). */
const CONTENTS_FIELD: Partial<Record<Datatype, string>> = GRPC_CONTENTS_FIELD;

const FLOATS: ReadonlySet<Datatype> = new Set(['FP16', 'FP32', 'FP64']);

/**
 * One model's infer request (every request of the model sends it). binary: raw_input_contents, one
 * entry per input; json: typed contents with the same values (level/256 for floats, the level for
 * integers, odd levels true for BOOL), so both carry the very same tensor. An FP16 input goes raw
 * either way (the protocol has no typed field for it), and so then do all inputs (the two forms do not mix).
 */
export function grpcInferRequest(model: string, inputs: readonly InputTensor[], encoding: Encoding): GrpcInferRequest {
  const typed = encoding === 'json' && inputs.every((t) => CONTENTS_FIELD[t.datatype] !== undefined);
  if (!typed)
    return {
      model_name: model,
      inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
      raw_input_contents: inputs.map(tensorData),
    };
  return {
    model_name: model,
    inputs: inputs.map((t) => {
      const values = Array.from(t.levels, (k) =>
        t.datatype === 'BOOL' ? (k & 1) === 1 : FLOATS.has(t.datatype) ? k / 256 : k,
      );
      return {
        name: t.name,
        datatype: t.datatype,
        shape: t.shape,
        contents: { [CONTENTS_FIELD[t.datatype]!]: values },
      };
    }),
    raw_input_contents: [],
  };
}

/** An image model's request for --input uint8|jpeg|png (json encoding: UINT8 pixels as uint_contents). */
export function grpcImageRequest(
  model: string,
  inputName: string,
  form: ImageForm,
  p: Picture,
  encoding: Encoding,
): GrpcInferRequest {
  if (form === 'uint8') {
    const pixels = uint8Chw(p);
    const input = { name: inputName, datatype: 'UINT8', shape: [1, 3, p.height, p.width] };
    return encoding === 'json'
      ? {
          model_name: model,
          inputs: [{ ...input, contents: { uint_contents: Array.from(pixels) } }],
          raw_input_contents: [],
        }
      : { model_name: model, inputs: [input], raw_input_contents: [pixels] };
  }
  const image = form === 'jpeg' ? encodeJpeg(p) : encodePng(p);
  // Raw BYTES contents carry each element with its 4-byte length, as the HTTP binary extension does.
  return {
    model_name: model,
    inputs: [{ name: inputName, datatype: 'BYTES', shape: [1, 1] }],
    raw_input_contents: [bytesElement(image)],
  };
}

/** The bytes of a request message's tensors (for the run's opening line). */
export function grpcRequestBytes(r: GrpcInferRequest): number {
  const typed = r.inputs.reduce((n, i) => n + Object.values(i.contents ?? {}).reduce((m, v) => m + v.length * 4, 0), 0);
  return r.raw_input_contents.reduce((n, b) => n + b.length, typed);
}

interface MetadataMessage {
  readonly name: string;
  readonly versions?: readonly string[];
  readonly platform?: string;
  readonly inputs: readonly { name: string; datatype: string; shape: readonly (string | number)[] }[];
  readonly outputs: readonly { name: string; datatype: string; shape: readonly (string | number)[] }[];
}

interface ConfigMessage {
  readonly config?: { readonly parameters?: Readonly<Record<string, { readonly string_value?: string }>> } | null;
}

/**
 * The ModelMetadata and ModelConfig answers as the HTTP metadata object (request.ts reads it):
 * shapes as numbers, and `parameters.slo_ms` and `parameters.input_forms` from the configuration's
 * string parameters when it has them (a number, and JSON) — other servers' configurations have neither.
 */
export function grpcModelMetadata(meta: MetadataMessage, config: ConfigMessage | undefined): unknown {
  const tensor = (t: MetadataMessage['inputs'][number]) => ({
    name: t.name,
    datatype: t.datatype,
    shape: t.shape.map(Number),
  });
  const params = config?.config?.parameters ?? {};
  const parameters: Record<string, unknown> = {};
  const slo = Number(params.slo_ms?.string_value);
  if (Number.isFinite(slo) && slo > 0) parameters.slo_ms = slo;
  try {
    if (params.input_forms?.string_value)
      parameters.input_forms = JSON.parse(params.input_forms.string_value) as unknown;
  } catch {
    // not JSON: the forms are unknown (an image form is then refused by name)
  }
  return {
    name: meta.name,
    versions: meta.versions ?? [],
    platform: meta.platform ?? '',
    inputs: meta.inputs.map(tensor),
    outputs: meta.outputs.map(tensor),
    parameters,
  };
}

/** What became of one gRPC call: its response message, or its status (code and details). */
export type GrpcAnswer =
  | {
      readonly ok: true;
      readonly response: {
        readonly outputs?: readonly { name: string; datatype: string; shape: readonly (string | number)[] }[];
        readonly raw_output_contents?: readonly Buffer[];
      };
    }
  | { readonly ok: false; readonly code: number; readonly details: string };

/** gRPC status code names (grpc/doc/statuscodes.md). */
const CODE_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

/**
 * The client's fault (the HTTP 4xx of the report); the rest but DEADLINE_EXCEEDED and CANCELLED are the server's (5xx).
 */
const CLIENT_CODES = new Set([3, 5, 6, 7, 9, 11, 12, 16]);

export function grpcCodeName(code: number): string {
  return CODE_NAMES[code] ?? `code ${code}`;
}

const MAX_ERROR_CHARS = 200;
const clip = (s: string): string => {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > MAX_ERROR_CHARS ? `${one.slice(0, MAX_ERROR_CHARS - 3)}...` : one;
};

/**
 * Judges a ModelInfer answer as judgeInferAnswer judges an HTTP one. ok: at least one output, each
 * with a raw_output_contents entry of its shape's size. A status: `http-4xx` for the client's codes
 * (INVALID_ARGUMENT, NOT_FOUND, UNAUTHENTICATED, ...), `timeout` for DEADLINE_EXCEEDED, `network` for
 * CANCELLED and UNAVAILABLE without a server's text (no connection), `http-5xx` for the rest
 * (UNAVAILABLE: a task dropped or refused); the text is `gRPC <CODE>: <details>`.
 */
export function judgeGrpcAnswer(
  a: GrpcAnswer,
): Judgement | { readonly outcome: 'timeout' | 'network'; readonly error: string } {
  if (!a.ok) {
    const error = clip(`gRPC ${grpcCodeName(a.code)}: ${a.details || '(no details)'}`);
    if (a.code === 4) return { outcome: 'timeout', error };
    if (a.code === 1 || (a.code === 14 && /^(No connection established|connect|Connection dropped)/i.test(a.details)))
      return { outcome: 'network', error };
    return { outcome: CLIENT_CODES.has(a.code) ? 'http-4xx' : 'http-5xx', error };
  }
  const outputs = a.response.outputs ?? [];
  const raw = a.response.raw_output_contents ?? [];
  const bad = (error: string) => ({ outcome: 'bad-response' as const, error: clip(`bad response: ${error}`) });
  if (outputs.length === 0) return bad('no outputs');
  if (raw.length !== outputs.length) return bad(`${outputs.length} outputs but ${raw.length} raw_output_contents`);
  for (const [k, o] of outputs.entries()) {
    const dt = DatatypeSchema.safeParse(o.datatype);
    const shape = o.shape.map(Number);
    if (dt.success && raw[k]!.length !== elementCount(shape) * DATATYPE_BYTES[dt.data]) {
      return bad(
        `outputs[${k}] '${o.name}': ${raw[k]!.length} bytes do not match shape [${shape.join(',')}] of ${o.datatype}`,
      );
    }
  }
  return { outcome: 'ok' };
}

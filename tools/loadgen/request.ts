// What `inss loadgen` sends and how it judges an answer (pure: metadata in, request bytes out;
// response bytes in, an outcome out). The wire format is the KServe v2 / Open Inference Protocol
// infer request, either with JSON tensors or with Triton's binary tensor data extension:
//
//   POST /v2/models/{name}/infer
//   Content-Type: application/octet-stream
//   Inference-Header-Content-Length: H
//
//   H bytes   JSON header: {"inputs":[{"name","datatype","shape":[1,...],"parameters":{"binary_data_size":N}}],
//                           "parameters":{"binary_data_output":true}}
//   N bytes   the input tensor, little-endian, row-major (one block per input, in input order)
//
// The JSON encoding puts the values in `inputs[i].data` (a flat array, row-major) and sends
// `Content-Type: application/json` with no Inference-Header-Content-Length; outputs come back as JSON.
// Input values are k/256 for floats and k for integers with k drawn uniformly from 0..127 (BOOL: k odd),
// so they are exact in every datatype and both encodings carry the very same tensor.
import { z } from 'zod';
import { DATATYPE_BYTES, type Datatype, DatatypeSchema, elementCount } from '../../src/protocol/tensor.js';
import type { Rng } from '../../src/workload/random.js';
import type { Outcome } from './report.js';
import { binaryInferBody, withLength } from './binary.js';

export type Encoding = 'binary' | 'json';

export type Result<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

const TensorMetadataSchema = z.object({
  name: z.string().min(1),
  datatype: z.string(),
  shape: z.array(z.number().int().min(-1)),
});

/** `GET /v2/models/{name}`; unknown fields are allowed (servers add their own). */
export const ModelMetadataSchema = z.object({
  name: z.string(),
  versions: z.array(z.string()).optional(),
  platform: z.string().optional(),
  inputs: z.array(TensorMetadataSchema).min(1),
  outputs: z.array(TensorMetadataSchema),
  parameters: z.record(z.string(), z.unknown()).optional(),
});
export type ModelMetadata = z.infer<typeof ModelMetadataSchema>;

/** One input as it is sent: batch dimension 1 first. */
export interface InputSpec {
  readonly name: string;
  readonly datatype: Datatype;
  readonly shape: readonly number[];
}

/** An input with its values: `levels[i]` in 0..127 is element i (see the file comment for the value it stands for). */
export interface InputTensor extends InputSpec {
  readonly levels: Uint8Array;
}

function issues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length > 0 ? i.path.map(String).join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

/** Validates a metadata answer; the error names the field. */
export function parseModelMetadata(raw: unknown): Result<ModelMetadata> {
  const r = ModelMetadataSchema.safeParse(raw);
  return r.success ? { ok: true, value: r.data } : { ok: false, error: `invalid model metadata: ${issues(r.error)}` };
}

/** inss's `parameters.slo_ms` of a model's metadata, when it is a number > 0. */
export function metadataSloMs(meta: ModelMetadata): number | undefined {
  const v = meta.parameters?.slo_ms;
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}

/**
 * The inputs of one request: the metadata's shapes with the batch dimension (the first, -1 or 1) set
 * to 1, as inss requires. Fails for a variable non-batch dimension (loadgen cannot guess a size) and
 * for BYTES or unknown datatypes.
 */
export function requestInputs(meta: ModelMetadata): Result<InputSpec[]> {
  const out: InputSpec[] = [];
  for (const inp of meta.inputs) {
    const where = `input '${inp.name}' of model '${meta.name}'`;
    const dt = DatatypeSchema.safeParse(inp.datatype);
    if (!dt.success)
      return {
        ok: false,
        error:
          `${where}: datatype ${inp.datatype} is not supported (supported: ` +
          `${Object.keys(DATATYPE_BYTES).join(', ')})`,
      };
    const [batch, ...rest] = inp.shape;
    if (batch === undefined) return { ok: false, error: `${where}: shape [] has no batch dimension` };
    if (batch !== -1 && batch !== 1)
      return { ok: false, error: `${where}: the first dimension is the batch and must be -1 or 1, got ${batch}` };
    const variable = rest.findIndex((d) => d < 0);
    if (variable >= 0)
      return {
        ok: false,
        error:
          `${where}: dimension ${variable + 1} of shape [${inp.shape.join(',')}] is variable; loadgen ` +
          `needs fixed sizes`,
      };
    out.push({ name: inp.name, datatype: dt.data, shape: [1, ...rest] });
  }
  return { ok: true, value: out };
}

/** Random values for each input, drawn from `rng` in input order. */
export function randomInputs(specs: readonly InputSpec[], rng: Rng): InputTensor[] {
  return specs.map((s) => {
    const levels = new Uint8Array(elementCount(s.shape));
    for (let i = 0; i < levels.length; i++) levels[i] = Math.floor(rng.next() * 128);
    return { ...s, levels };
  });
}

const FLOATS: ReadonlySet<Datatype> = new Set(['FP16', 'FP32', 'FP64']);

/** The JSON value of a level in a datatype. */
function levelValue(level: number, datatype: Datatype): number | boolean {
  if (datatype === 'BOOL') return (level & 1) === 1;
  return FLOATS.has(datatype) ? level / 256 : level;
}

/** IEEE 754 half of level/256 (exact: at most 7 significant bits, exponent -8..-2). */
function halfOfLevel(level: number): number {
  if (level === 0) return 0;
  const e = 31 - Math.clz32(level); // level = 2^e * (1 + m), value = 2^(e - 8) * (1 + m)
  return ((e - 8 + 15) << 10) | ((level << (10 - e)) & 0x3ff);
}

/** Little-endian bytes of a tensor, row-major (the binary tensor data extension's layout). */
export function tensorData(t: InputTensor): Buffer {
  const size = DATATYPE_BYTES[t.datatype];
  const buf = Buffer.alloc(t.levels.length * size);
  for (let i = 0; i < t.levels.length; i++) {
    const k = t.levels[i]!;
    const o = i * size;
    switch (t.datatype) {
      case 'BOOL':
        buf[o] = k & 1;
        break;
      case 'FP16':
        buf.writeUInt16LE(halfOfLevel(k), o);
        break;
      case 'FP32':
        buf.writeFloatLE(k / 256, o);
        break;
      case 'FP64':
        buf.writeDoubleLE(k / 256, o);
        break;
      case 'UINT8':
      case 'INT8':
        buf[o] = k;
        break;
      case 'UINT16':
      case 'INT16':
        buf.writeUInt16LE(k, o);
        break;
      case 'UINT32':
      case 'INT32':
        buf.writeUInt32LE(k, o);
        break;
      case 'UINT64':
      case 'INT64':
        buf.writeBigUInt64LE(BigInt(k), o);
        break;
    }
  }
  return buf;
}

/** A request ready to send as is: the body, and the headers that go with it (content-length included). */
export interface EncodedRequest {
  readonly body: Buffer;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Encodes one infer request. Called once per model before the run: every request of that model sends
 * these bytes. Binary: outputs are asked for as binary too (`binary_data_output`), as Triton's client does.
 */
export function encodeInferRequest(inputs: readonly InputTensor[], encoding: Encoding): EncodedRequest {
  if (encoding === 'json') {
    const body = Buffer.from(
      JSON.stringify({
        inputs: inputs.map((t) => ({
          name: t.name,
          datatype: t.datatype,
          shape: t.shape,
          data: Array.from(t.levels, (k) => levelValue(k, t.datatype)),
        })),
      }),
    );
    return { body, headers: { 'content-type': 'application/json', 'content-length': String(body.length) } };
  }
  const blocks = inputs.map(tensorData);
  return withLength(
    binaryInferBody(
      {
        inputs: inputs.map((t, i) => ({
          name: t.name,
          datatype: t.datatype,
          shape: t.shape,
          parameters: { binary_data_size: blocks[i]!.length },
        })),
        parameters: { binary_data_output: true },
      },
      blocks,
    ),
  );
}

const ResponseOutputSchema = z.object({
  name: z.string(),
  datatype: z.string(),
  shape: z.array(z.number().int().nonnegative()),
  parameters: z.record(z.string(), z.unknown()).optional(),
  data: z.array(z.unknown()).optional(),
});
const InferResponseSchema = z.object({ outputs: z.array(ResponseOutputSchema).min(1) });

/** Longest error text kept per request (a server may answer with a page of HTML). */
export const MAX_ERROR_CHARS = 200;

function clip(s: string): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > MAX_ERROR_CHARS ? `${one.slice(0, MAX_ERROR_CHARS - 3)}...` : one;
}

function countLeaves(data: unknown): number {
  return Array.isArray(data) ? data.reduce((n: number, x) => n + countLeaves(x), 0) : 1;
}

/** An HTTP answer as the shell received it. */
export interface HttpAnswer {
  readonly status: number;
  /** The Inference-Header-Content-Length header, if the answer had one. */
  readonly inferenceHeaderLength?: string | undefined;
  readonly body: Buffer;
}

/** The metric of a Server-Timing header that inss sets on infer answers: its span of the task (ms). */
export const SERVER_TIMING_METRIC = 'inss';

/**
 * The `dur` (ms) of metric `name` in a Server-Timing header (W3C Server Timing: comma-separated
 * metrics, each `name;param=value;...`, a value possibly quoted); undefined when the header is absent,
 * has no such metric, or its dur is not a finite number >= 0. Repeated headers arrive joined by ', '.
 */
export function serverTimingMs(header: string | undefined, name = SERVER_TIMING_METRIC): number | undefined {
  if (header === undefined) return undefined;
  for (const metric of header.split(',')) {
    const [metricName, ...params] = metric.split(';').map((x) => x.trim());
    if (metricName !== name) continue;
    for (const p of params) {
      const eq = p.indexOf('=');
      if (eq < 0 || p.slice(0, eq).trim().toLowerCase() !== 'dur') continue;
      const v = p
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1');
      const ms = v === '' ? NaN : Number(v);
      return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
    }
    return undefined;
  }
  return undefined;
}

export type Judgement =
  | { readonly outcome: 'ok' }
  | { readonly outcome: Exclude<Outcome, 'ok' | 'timeout' | 'network'>; readonly error: string };

const bad = (error: string): Judgement => ({ outcome: 'bad-response', error: clip(`bad response: ${error}`) });

/**
 * Judges an answer to an infer request. ok: status 200 and a well-formed response with at least one
 * output whose data (JSON values, or binary_data_size bytes after the header) matches its shape.
 * 4xx/5xx: the text is `HTTP <status>: <error>` from the protocol's `{ "error": "..." }` body (or the
 * body as text). Anything else (another status, a malformed 200) is `bad-response`.
 */
export function judgeInferAnswer(a: HttpAnswer): Judgement {
  if (a.status >= 400 && a.status < 600) {
    let text = a.body.toString('utf8');
    try {
      const j = JSON.parse(text) as unknown;
      if (j !== null && typeof j === 'object' && typeof (j as { error?: unknown }).error === 'string')
        text = (j as { error: string }).error;
    } catch {
      // not JSON: keep the body as text
    }
    return {
      outcome: a.status < 500 ? 'http-4xx' : 'http-5xx',
      error: clip(`HTTP ${a.status}: ${text || '(empty body)'}`),
    };
  }
  if (a.status !== 200) return bad(`unexpected HTTP status ${a.status}`);
  let jsonBytes: Buffer = a.body;
  let binary: Buffer = Buffer.alloc(0);
  if (a.inferenceHeaderLength !== undefined) {
    const raw = a.inferenceHeaderLength.trim();
    if (!/^\d+$/.test(raw)) return bad(`Inference-Header-Content-Length '${a.inferenceHeaderLength}' is not a number`);
    const n = Number(raw);
    if (n > a.body.length)
      return bad(`Inference-Header-Content-Length ${n} is larger than the body (${a.body.length} bytes)`);
    jsonBytes = a.body.subarray(0, n);
    binary = a.body.subarray(n);
  }
  let json: unknown;
  try {
    json = JSON.parse(jsonBytes.toString('utf8'));
  } catch (e) {
    return bad(`malformed JSON: ${(e as Error).message}`);
  }
  const parsed = InferResponseSchema.safeParse(json);
  if (!parsed.success) return bad(issues(parsed.error));
  let offset = 0;
  for (const [k, o] of parsed.data.outputs.entries()) {
    const where = `outputs[${k}] '${o.name}'`;
    const count = elementCount(o.shape);
    const dt = DatatypeSchema.safeParse(o.datatype);
    const size = o.parameters?.binary_data_size;
    if (size !== undefined) {
      if (a.inferenceHeaderLength === undefined)
        return bad(`${where} has binary_data_size but the answer has no Inference-Header-Content-Length`);
      if (typeof size !== 'number' || !Number.isInteger(size) || size < 0)
        return bad(`${where}: binary_data_size ${JSON.stringify(size)} is not a byte count`);
      if (dt.success && size !== count * DATATYPE_BYTES[dt.data])
        return bad(`${where}: binary_data_size ${size} does not match shape [${o.shape.join(',')}] of ${o.datatype}`);
      offset += size;
    } else {
      if (o.data === undefined) return bad(`${where} has neither data nor binary_data_size`);
      const n = countLeaves(o.data);
      if (n !== count) return bad(`${where}: ${n} values for shape [${o.shape.join(',')}]`);
    }
  }
  if (offset !== binary.length)
    return bad(
      `the binary data after the header is ${binary.length} bytes, the outputs' binary_data_size add up to ${offset}`,
    );
  return { outcome: 'ok' };
}

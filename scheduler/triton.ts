// Triton's HTTP protocol surface beyond inference, registered on the scheduler's Fastify app with one
// call (registerTriton, from scheduler/service.ts):
// - the statistics extension: GET /v2/models/stats, /v2/models/{name}[/versions/{v}]/stats, from the
//   scheduler's own counters (scheduler/metrics.ts);
// - the model configuration extension: GET /v2/models/{name}[/versions/{v}]/config: inputs (image
//   inputs FORMAT_NCHW), outputs (with their label file), max batch, dynamic batching, and inss's SLO,
//   shares and batch sizes in force as parameters;
// - the model repository extension, read-only: POST /v2/repository/index lists the served models;
//   POST /v2/repository/models/{name}/load|unload are refused (403): the policy places models;
// - HTTP compression: request bodies with Content-Encoding gzip or deflate are decompressed before any
//   route reads them (the decompressed size is held to the body limit: a zip bomb gets 413, not the
//   memory), and inference answers (only those, as Triton: compressedRoute) are compressed when
//   Accept-Encoding asks for gzip or deflate;
// - unknownModelHook: an infer route naming a model that is not served is a 404 before its body is read.
// Formats follow Triton's protocol docs (triton-inference-server/server docs/protocol/
// extension_statistics.md, extension_model_configuration.md, extension_model_repository.md) and what
// tritonclient.http's get_inference_statistics, get_model_config, get_model_repository_index and infer
// (request/response_compression_algorithm) send and read. What maps and what does not: docs/serving.md.
import { promisify } from 'node:util';
import { deflate, gzip, gunzip, inflate } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Datatype, TensorSpec } from '../src/protocol/tensor.js';
import { LABEL_FILES, outputLabelSet } from '../src/serving/classification.js';
import { preprocessingSummary } from '../src/serving/image.js';
import type { Control, ServedModelConfig } from './control.js';
import { DEFAULT_MAX_BATCH_SIZE, inputFormsByName } from './kserve.js';
import { type Duration, MODEL_VERSION, type Metrics, type ModelStats, type WorkerView } from './metrics.js';

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);
const gzipAsync = promisify(gzip);
const deflateAsync = promisify(deflate);

// ---------------------------------------------------------------------------------------------------
// Pure builders (unit-tested in test/unit/triton.test.ts)

/** Triton's duration entry. Triton writes integers (uint64): ns are rounded. */
export interface StatDuration {
  readonly count: number;
  readonly ns: number;
}

/** `$model_stat` of Triton's statistics extension. */
export interface TritonModelStat {
  readonly name: string;
  readonly version: string;
  /** ms since the epoch. */
  readonly last_inference: number;
  readonly inference_count: number;
  readonly execution_count: number;
  readonly inference_stats: Readonly<
    Record<
      'success' | 'fail' | 'queue' | 'compute_input' | 'compute_infer' | 'compute_output' | 'cache_hit' | 'cache_miss',
      StatDuration
    >
  >;
  readonly batch_stats: readonly {
    readonly batch_size: number;
    readonly compute_input: StatDuration;
    readonly compute_infer: StatDuration;
    readonly compute_output: StatDuration;
  }[];
  readonly memory_usage: readonly never[];
}

/** Triton's ModelInput (model_config.proto), the fields inss fills. */
export interface ConfigInput {
  readonly name: string;
  readonly data_type: string;
  /** FORMAT_NCHW for an image input (3 x H x W, channel-first), FORMAT_NONE otherwise. */
  readonly format: 'FORMAT_NONE' | 'FORMAT_NCHW';
  readonly dims: number[];
  readonly is_shape_tensor: false;
  readonly allow_ragged_batch: false;
  readonly optional: false;
}

/** Triton's ModelOutput (model_config.proto): it has no format; label_filename where the output has labels. */
export interface ConfigOutput {
  readonly name: string;
  readonly data_type: string;
  readonly dims: number[];
  readonly label_filename: string;
  readonly is_shape_tensor: false;
}

/** Triton's model configuration, the fields inss fills. */
export interface TritonModelConfig {
  readonly name: string;
  readonly platform: 'inss';
  readonly backend: 'inss';
  readonly version_policy: { readonly latest: { readonly num_versions: 1 } };
  readonly max_batch_size: number;
  readonly input: ConfigInput[];
  readonly output: ConfigOutput[];
  readonly dynamic_batching: {
    readonly preferred_batch_size: number[];
    readonly max_queue_delay_microseconds: number;
    readonly preserve_ordering: false;
    readonly priority_levels: 0;
    readonly default_priority_level: 0;
  };
  readonly instance_group: {
    readonly name: string;
    readonly kind: 'KIND_GPU';
    readonly count: 1;
    readonly gpus: number[];
  }[];
  readonly parameters: Readonly<
    Record<
      'slo_ms' | 'share_pct' | 'batch' | 'timeout_ms' | 'placements' | 'input_forms',
      { readonly string_value: string }
    >
  > & {
    readonly image_preprocessing?: { readonly string_value: string };
  };
}

function duration(d: Duration): StatDuration {
  return { count: d.count, ns: Math.round(d.ns) };
}

/**
 * One `$model_stat` of Triton's statistics extension. inss's workers report one time per batch, so
 * compute_input and compute_output count the requests with 0 ns (the worker's time is all in
 * compute_infer); the cache is not used (zero counts).
 */
export function modelStatJson(name: string, s: ModelStats): TritonModelStat {
  const zero = { count: 0, ns: 0 };
  const executed = { count: s.computeInfer.count, ns: 0 };
  return {
    name,
    version: MODEL_VERSION,
    last_inference: s.lastInferenceMs,
    inference_count: s.inferenceCount,
    execution_count: s.executionCount,
    inference_stats: {
      success: duration(s.success),
      fail: duration(s.fail),
      queue: duration(s.queue),
      compute_input: executed,
      compute_infer: duration(s.computeInfer),
      compute_output: executed,
      cache_hit: zero,
      cache_miss: zero,
    },
    batch_stats: s.batches.map((b) => ({
      batch_size: b.batchSize,
      compute_input: { count: b.count, ns: 0 },
      compute_infer: { count: b.count, ns: Math.round(b.computeNs) },
      compute_output: { count: b.count, ns: 0 },
    })),
    memory_usage: [],
  };
}

/** Triton's model configuration datatype name (TYPE_FP32 style) of a KServe datatype. */
export function configDatatype(d: Datatype): string {
  return `TYPE_${d}`;
}

/** The largest batch dimension one request to the model may carry: Triton's max_batch_size. */
export function maxBatchSizeOf(model: ServedModelConfig): number {
  return model.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE;
}

/**
 * GET /v2/models/{name}/config: Triton's model configuration JSON (model_config.proto, with every int64
 * as a number, as Triton writes it), such that Triton's own clients read it: image_client.py's
 * parse_model wants max_batch_size > 0, one input of three dims without the batch dimension, its
 * format FORMAT_NCHW or FORMAT_NHWC, and one FP32 vector output.
 * - `max_batch_size`: maxBatchSizeOf (what a request's batch dimension may be; inss batches the samples
 *   of all requests itself); `dims` leave the batch dimension out (Triton's rule when it is > 0);
 * - `input`: each input in the model's own datatype, an image input (3 x H x W) FORMAT_NCHW;
 * - `output`: `label_filename` names the label file (a path inside the inss package) of an output with
 *   labels (src/serving/classification.ts outputLabelSet), empty otherwise;
 * - `dynamic_batching`: the batch sizes of the serving workers as preferred sizes, their largest
 *   batching timeout as the queue delay (inss sets both per placement; they change when the policy
 *   places the model anew);
 * - `instance_group`: one per worker of the model (the GPU it runs on);
 * - `parameters` (Triton's map of `{string_value}`) carry inss's own: `slo_ms`, and per serving worker
 *   in GPU order `share_pct`, `batch` and `timeout_ms`; `placements` (all workers, as JSON, with role
 *   and state); `input_forms` (JSON: each input's accepted datatypes and shapes, as in the model
 *   metadata: an image input also takes UINT8 pixels and JPEG/PNG BYTES); and for a model with an
 *   image input, `image_preprocessing` (JSON: what a UINT8 or encoded image goes through, src/serving/image.ts).
 */
export function modelConfigJson(model: ServedModelConfig, workers: readonly WorkerView[]): TritonModelConfig {
  const own = workers.filter((w) => w.model === model.name);
  const serving = own.filter((w) => w.serving).sort((a, b) => a.gpu - b.gpu);
  const list = (f: (w: WorkerView) => number) => ({ string_value: serving.map(f).join(',') });
  const input = (s: TensorSpec): ConfigInput => ({
    name: s.name,
    data_type: configDatatype(s.datatype),
    format: s.image ? 'FORMAT_NCHW' : 'FORMAT_NONE',
    dims: [...s.shape],
    is_shape_tensor: false,
    allow_ragged_batch: false,
    optional: false,
  });
  const output = (s: TensorSpec): ConfigOutput => {
    const labels = outputLabelSet(model.signature, s.name);
    return {
      name: s.name,
      data_type: configDatatype(s.datatype),
      dims: [...s.shape],
      label_filename: labels ? LABEL_FILES[labels] : '',
      is_shape_tensor: false,
    };
  };
  const image = model.signature.inputs.find((i) => i.image);
  return {
    name: model.name,
    platform: 'inss',
    backend: 'inss',
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: maxBatchSizeOf(model),
    input: model.signature.inputs.map(input),
    output: model.signature.outputs.map(output),
    dynamic_batching: {
      preferred_batch_size: [...new Set(serving.map((w) => w.batch))].sort((a, b) => a - b),
      max_queue_delay_microseconds: Math.round(1000 * Math.max(0, ...serving.map((w) => w.timeoutMs))),
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
    },
    instance_group: own.map((w) => ({ name: w.workerId, kind: 'KIND_GPU', count: 1, gpus: [w.gpu] })),
    parameters: {
      slo_ms: { string_value: String(model.sloMs) },
      share_pct: list((w) => w.pct),
      batch: list((w) => w.batch),
      timeout_ms: list((w) => w.timeoutMs),
      placements: {
        string_value: JSON.stringify(
          own.map((w) => ({
            worker: w.workerId,
            gpu: w.gpu,
            share_pct: w.pct,
            batch: w.batch,
            timeout_ms: w.timeoutMs,
            role: w.role,
            state: w.state,
          })),
        ),
      },
      input_forms: { string_value: JSON.stringify(inputFormsByName(model.signature)) },
      ...(image
        ? { image_preprocessing: { string_value: JSON.stringify(preprocessingSummary(image.shape[1] ?? 0)) } }
        : {}),
    },
  };
}

export interface IndexEntry {
  readonly name: string;
  readonly version: string;
  readonly state: 'READY' | 'UNAVAILABLE';
  readonly reason: string;
}

/** POST /v2/repository/index: every served model, READY when a worker takes its batches, else UNAVAILABLE and why. */
export function repositoryIndex(
  models: readonly ServedModelConfig[],
  workers: readonly WorkerView[],
  policyError: string | null,
): IndexEntry[] {
  return models.map((m) => {
    const own = workers.filter((w) => w.model === m.name);
    if (own.some((w) => w.serving)) return { name: m.name, version: MODEL_VERSION, state: 'READY', reason: '' };
    let reason: string;
    if (policyError) reason = `the policy cannot run on this cluster: ${policyError}`;
    else if (own.length === 0) reason = 'not placed on any GPU (no agent with GPUs, or the policy placed it nowhere)';
    else reason = `no worker ready yet (${own.map((w) => `${w.workerId} ${w.state}`).join(', ')})`;
    return { name: m.name, version: MODEL_VERSION, state: 'UNAVAILABLE', reason };
  });
}

/** The repository index request: empty, or a JSON object with an optional `ready` flag. */
const IndexRequest = z.object(
  { ready: z.boolean({ error: 'expected true or false' }).optional() },
  { error: 'expected a JSON object' },
);

export function parseIndexRequest(body: Buffer): { ok: true; readyOnly: boolean } | { ok: false; error: string } {
  if (body.length === 0 || body.toString('utf8').trim() === '') return { ok: true, readyOnly: false };
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch (e) {
    return { ok: false, error: `repository index request: malformed JSON: ${(e as Error).message}` };
  }
  const r = IndexRequest.safeParse(json);
  if (!r.success)
    return {
      ok: false,
      error: `repository index request: ${r.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')}`,
    };
  return { ok: true, readyOnly: r.data.ready ?? false };
}

// ---------------------------------------------------------------------------------------------------
// Compression

export type Coding = 'gzip' | 'deflate';

/** The request's Content-Encoding: identity (none), a supported coding, or an error naming it. */
export function requestCoding(
  header: string | undefined,
): { ok: true; coding: Coding | null } | { ok: false; error: string } {
  const v = (header ?? '').trim().toLowerCase();
  if (v === '' || v === 'identity') return { ok: true, coding: null };
  if (v === 'gzip' || v === 'x-gzip') return { ok: true, coding: 'gzip' };
  if (v === 'deflate') return { ok: true, coding: 'deflate' };
  return { ok: false, error: `Content-Encoding '${v.slice(0, 40)}' is not supported (gzip, deflate or identity)` };
}

/**
 * The coding to answer with for an Accept-Encoding header: gzip before deflate, skipping codings
 * with q=0; null for none (identity).
 */
export function responseCoding(header: string | undefined): Coding | null {
  if (!header) return null;
  const q = new Map<string, number>();
  for (const part of header.toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    if (!name) continue;
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const value = qp ? Number(qp.slice(2)) : 1;
    q.set(name.trim(), Number.isFinite(value) ? value : 0);
  }
  const wants = (c: string) => (q.get(c) ?? q.get('*') ?? 0) > 0;
  if (wants('gzip')) return 'gzip';
  if (wants('deflate')) return 'deflate';
  return null;
}

/**
 * Decompresses a request body, refusing to produce more than `limit` bytes (the body limit holds for
 * the decompressed body too: a few KB of gzip can expand to gigabytes).
 */
export async function decompress(
  body: Buffer,
  coding: Coding,
  limit: number,
): Promise<{ ok: true; body: Buffer } | { ok: false; status: 400 | 413; error: string }> {
  try {
    const out =
      coding === 'gzip'
        ? await gunzipAsync(body, { maxOutputLength: limit })
        : await inflateAsync(body, { maxOutputLength: limit });
    return { ok: true, body: out };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError)
      return { ok: false, status: 413, error: `request body decompresses to more than the limit of ${limit} bytes` };
    return {
      ok: false,
      status: 400,
      error: `request body is not valid ${coding} data (Content-Encoding: ${coding}): ${err.message}`,
    };
  }
}

// ---------------------------------------------------------------------------------------------------
// Routes

export interface TritonOptions {
  readonly control: Control;
  readonly metrics: Metrics;
  readonly models: readonly ServedModelConfig[];
  /** The largest body the request's route takes, compressed or not (the limit after decompression too). */
  readonly bodyLimit: (req: FastifyRequest) => number;
}

/** A model name and optional version from a URL, resolved to its index, or the 404 answer's text. */
export function resolveModel(
  models: readonly ServedModelConfig[],
  name: string,
  version: string | undefined,
): { ok: true; index: number } | { ok: false; error: string } {
  const index = models.findIndex((m) => m.name === name);
  if (index < 0)
    return { ok: false, error: `unknown model '${name}' (served: ${models.map((x) => x.name).join(', ')})` };
  if (version !== undefined && version !== MODEL_VERSION)
    return { ok: false, error: `model '${name}' has no version '${version}' (versions: ${MODEL_VERSION})` };
  return { ok: true, index };
}

type ModelParams = { name: string; version?: string };

function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).header('content-type', 'application/json').send(JSON.stringify(body));
}

/**
 * Whether answers on a route (its pattern) may be compressed. On the protocol's routes (`/v2/...`) only
 * inference answers, as Triton compresses only those: tritonclient.http.aio reads every other answer
 * as plain JSON (it turns aiohttp's decompression off and decompresses inference answers itself), so
 * a gzip'd metadata, config, statistics or index answer fails there. Routes outside the protocol
 * (`/metrics`, the dashboard) are read by Prometheus and browsers, which decode what they ask for.
 */
export function compressedRoute(pattern: string | undefined): boolean {
  if (pattern === undefined || !pattern.startsWith('/v2')) return true;
  return pattern.endsWith('/infer');
}

/**
 * An onRequest hook for the infer routes: a model (or version) that is not served is answered 404 before
 * a byte of the body is read, whatever its size (the body limit of a route is its model's, so without
 * this an unknown model's full-size body got 413). Node discards a body left unread once the answer is
 * sent, and the connection stays usable (closing it while the client still sends would reset it
 * before the client reads the 404); a body beyond `maxBodyBytes`, or chunked (no length to bound it),
 * gets `Connection: close` instead. Install before the guard's body checks (scheduler/guard.ts).
 */
export function unknownModelHook(
  models: readonly ServedModelConfig[],
  isInfer: (req: FastifyRequest) => boolean,
  maxBodyBytes: number,
) {
  return (req: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    if (!isInfer(req)) return done();
    const p = req.params as Partial<ModelParams>;
    const r = resolveModel(models, p.name ?? '', p.version);
    if (r.ok) return done();
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > maxBodyBytes || req.headers['transfer-encoding'] !== undefined)
      void reply.header('connection', 'close');
    void sendJson(reply, 404, { error: r.error });
    // answered: the chain stops here (Fastify's way for callback hooks)
  };
}

/** Registers the routes and the compression hooks. Call before the app listens. */
export function registerTriton(app: FastifyInstance, o: TritonOptions): void {
  o.metrics.setWorkerSource(() => o.control.workerViews());

  app.addHook('preHandler', async (req: FastifyRequest, reply: FastifyReply) => {
    const header = req.headers['content-encoding'];
    const coding = requestCoding(Array.isArray(header) ? header.join(',') : header);
    if (!coding.ok) return sendJson(reply, 415, { error: coding.error });
    if (coding.coding === null || !Buffer.isBuffer(req.body)) return;
    const out = await decompress(req.body, coding.coding, o.bodyLimit(req));
    if (!out.ok) return sendJson(reply, out.status, { error: out.error });
    req.body = out.body;
  });

  app.addHook('onSend', async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (!compressedRoute(req.routeOptions.url)) return payload;
    if (
      reply.hasHeader('content-encoding') ||
      !(typeof payload === 'string' || Buffer.isBuffer(payload)) ||
      payload.length === 0
    )
      return payload;
    const accept = req.headers['accept-encoding'];
    const coding = responseCoding(Array.isArray(accept) ? accept.join(',') : accept);
    reply.header('vary', 'accept-encoding');
    if (coding === null) return payload;
    reply.header('content-encoding', coding);
    reply.removeHeader('content-length');
    return coding === 'gzip' ? gzipAsync(payload) : deflateAsync(payload);
  });

  const statsOf = async (names: readonly string[]) => ({
    model_stats: await Promise.all(names.map(async (n) => modelStatJson(n, await o.metrics.modelStats(n)))),
  });
  app.get('/v2/models/stats', async (_req, reply) => sendJson(reply, 200, await statsOf(o.models.map((m) => m.name))));
  const modelStats = async (req: { params: ModelParams }, reply: FastifyReply) => {
    const r = resolveModel(o.models, req.params.name, req.params.version);
    if (!r.ok) return sendJson(reply, 404, { error: r.error });
    return sendJson(reply, 200, await statsOf([o.models[r.index]!.name]));
  };
  app.get<{ Params: ModelParams }>('/v2/models/:name/stats', modelStats);
  app.get<{ Params: ModelParams }>('/v2/models/:name/versions/:version/stats', modelStats);

  const config = (req: { params: ModelParams }, reply: FastifyReply) => {
    const r = resolveModel(o.models, req.params.name, req.params.version);
    if (!r.ok) return sendJson(reply, 404, { error: r.error });
    return sendJson(reply, 200, modelConfigJson(o.models[r.index]!, o.control.workerViews()));
  };
  app.get<{ Params: ModelParams }>('/v2/models/:name/config', config);
  app.get<{ Params: ModelParams }>('/v2/models/:name/versions/:version/config', config);

  app.post('/v2/repository/index', (req, reply) => {
    const parsed = parseIndexRequest(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));
    if (!parsed.ok) return sendJson(reply, 400, { error: parsed.error });
    const index = repositoryIndex(o.models, o.control.workerViews(), o.control.readiness().policyError);
    return sendJson(reply, 200, parsed.readyOnly ? index.filter((e) => e.state === 'READY') : index);
  });
  const refuse =
    (action: 'load' | 'unload') => (req: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply) => {
      const known = o.models.some((m) => m.name === req.params.name);
      const what = known ? `model '${req.params.name}'` : `unknown model '${req.params.name}'`;
      return sendJson(reply, 403, {
        error: `cannot ${action} ${what}: inss does not load or unload models on request; the models come from the scenario given at start and the policy places them on GPUs`,
      });
    };
  app.post<{ Params: { name: string } }>('/v2/repository/models/:name/load', refuse('load'));
  app.post<{ Params: { name: string } }>('/v2/repository/models/:name/unload', refuse('unload'));
}

// Triton's statistics, model configuration and repository index as JSON, from the scheduler's own
// counters and the control plane's workers. Pure (unit-tested in test/unit/triton.test.ts).
import { z } from 'zod';
import type { Datatype, TensorSpec } from '../../src/protocol/tensor.js';
import type { UnavailableModel } from '../../src/repository/types.js';
import { LABEL_FILES, outputLabelSet } from '../../src/serving/classification.js';
import { preprocessingSummary } from '../../src/serving/image.js';
import type { ServedModelConfig } from '../control.js';
import { DEFAULT_MAX_BATCH_SIZE, inputFormsByName } from '../kserve.js';
import { type Duration, MODEL_VERSION, type ModelStats, type WorkerView } from '../metrics.js';

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
export function modelStatJson(name: string, s: ModelStats, version: string = MODEL_VERSION): TritonModelStat {
  const zero = { count: 0, ns: 0 };
  const executed = { count: s.computeInfer.count, ns: 0 };
  return {
    name,
    version,
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

/** What GET /v2/models/{name}/config answers: the configuration as loaded, or the one inss writes. */
export type ModelConfigAnswer = TritonModelConfig | Readonly<Record<string, unknown>>;

/** The version of a model that inss serves: a repository model's (its highest allowed), else MODEL_VERSION. */
export function servedVersion(model: ServedModelConfig): string {
  return model.repository?.version ?? model.ensemble?.version ?? MODEL_VERSION;
}

/**
 * GET /v2/models/{name}/config: a repository model's configuration as loaded (Triton's JSON of its
 * config.pbtxt, defaults filled: src/repository/config.ts), else the configuration inss writes for a
 * scenario's model (modelConfigJson).
 */
export function servedModelConfig(model: ServedModelConfig, workers: readonly WorkerView[]): ModelConfigAnswer {
  const loaded = model.repository?.config ?? model.ensemble?.config;
  return loaded ?? modelConfigJson(model, workers);
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

/**
 * POST /v2/repository/index: every served model, READY when a worker takes its batches, else
 * UNAVAILABLE and why; then a repository model's versions its policy allows but inss does not serve
 * (inss serves one version of a model), and the repository's models that failed to load, UNAVAILABLE
 * with their reason.
 */
export function repositoryIndex(
  models: readonly ServedModelConfig[],
  workers: readonly WorkerView[],
  policyError: string | null,
  unavailable: readonly UnavailableModel[] = [],
): IndexEntry[] {
  const served = models.flatMap((m): IndexEntry[] => {
    const version = servedVersion(m);
    const others = (m.repository?.versions ?? m.ensemble?.versions ?? [])
      .filter((v) => v !== version)
      .map((v): IndexEntry => ({
        name: m.name,
        version: v,
        state: 'UNAVAILABLE',
        reason: `not served: inss serves one version of a model, the highest its version policy allows (${version})`,
      }));
    if (m.ensemble) {
      // A pipeline is ready when each of its step models is.
      const idle = m.ensemble.steps.find((s) => !workers.some((w) => w.model === s.model && w.serving));
      const reason = idle ? `step model '${idle.model}' is not ready` : '';
      return [{ name: m.name, version, state: idle ? 'UNAVAILABLE' : 'READY', reason }, ...others];
    }
    const own = workers.filter((w) => w.model === m.name);
    if (own.some((w) => w.serving)) return [{ name: m.name, version, state: 'READY', reason: '' }, ...others];
    let reason: string;
    if (policyError) reason = `the policy cannot run on this cluster: ${policyError}`;
    else if (own.length === 0) reason = 'not placed on any GPU (no agent with GPUs, or the policy placed it nowhere)';
    else reason = `no worker ready yet (${own.map((w) => `${w.workerId} ${w.state}`).join(', ')})`;
    return [{ name: m.name, version, state: 'UNAVAILABLE', reason }, ...others];
  });
  const failed = unavailable.map((u): IndexEntry => ({
    name: u.name,
    version: '',
    state: 'UNAVAILABLE',
    reason: `failed to load: ${u.reason}`,
  }));
  return [...served, ...failed];
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
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`);
    return { ok: false, error: `repository index request: ${issues.join('; ')}` };
  }
  return { ok: true, readyOnly: r.data.ready ?? false };
}

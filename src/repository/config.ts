// A model's config.pbtxt read against Triton's ModelConfig (model_config.proto): what inss serves it by,
// what it refuses (a field whose meaning inss cannot honour, named with its path and why), and the
// configuration as Triton's JSON. Every field and what becomes of it: docs/model-repository.md. Pure.
import { InvalidInputError } from '../profile/schema.js';
import { type Datatype, DATATYPE_BYTES, hasVariableDim, type TensorSpec, VARIABLE_DIM } from '../protocol/tensor.js';
import type { QueuePolicyConfig } from '../serving/queuePolicy.js';
import { Fields, messageJson, Problems } from './fields.js';
import { DEFAULT_MAX_VARIABLE_DIM, parametersOf } from './parameters.js';
import { parsePbtxt, type PbMessage, PbtxtError } from './pbtxt.js';
import {
  DATATYPES,
  FORMATS,
  INPUT,
  MODEL_CONFIG,
  OUTPUT,
  PASSED_THROUGH,
  QUEUE_POLICY,
  REFUSED,
  REFUSED_FLAGS,
  UNSUPPORTED_TYPES,
} from './proto.js';
import { PLATFORM_OF, type RepositoryBackend, type RepositoryModel } from './types.js';

/** A configuration's problems, one line each (`resnet/config.pbtxt: input[1].dims[0]: -1 (...)`). */
export class RepositoryConfigError extends InvalidInputError {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('; '));
  }
}

/** Which versions the model's version_policy serves (Triton's default: the latest one). */
export type VersionPolicy =
  | { readonly kind: 'latest'; readonly numVersions: number }
  | { readonly kind: 'all' }
  | { readonly kind: 'specific'; readonly versions: readonly number[] };

/** A config.pbtxt as read: everything of RepositoryModel but the version and file, which the disk decides. */
export interface ModelConfigRead {
  readonly name: string;
  readonly backend: RepositoryBackend;
  readonly maxBatchSize: number;
  readonly signature: RepositoryModel['signature'];
  readonly sloMs?: number;
  readonly costClasses?: RepositoryModel['costClasses'];
  readonly dynamicBatching?: RepositoryModel['dynamicBatching'];
  readonly queuePolicy?: QueuePolicyConfig;
  readonly versionPolicy: VersionPolicy;
  /** The model file's name in a version directory: default_model_filename, else model.onnx / model.pt. */
  readonly modelFilename: string;
  /** Files the outputs' label_filename name, relative to the model's directory. */
  readonly labelFiles: readonly string[];
  readonly config: Readonly<Record<string, unknown>>;
}

const BACKEND_OF_PLATFORM: Readonly<Record<string, RepositoryBackend>> = {
  onnxruntime_onnx: 'onnxruntime',
  pytorch_libtorch: 'pytorch',
};
const DEFAULT_FILE: Readonly<Record<RepositoryBackend, string>> = { onnxruntime: 'model.onnx', pytorch: 'model.pt' };

const VARIABLE_OUTPUT = "an output's dims are fixed: each request's rows are cut from the batch's by their size";
const VARIABLE_ONNX =
  'variable dimensions are served by the pytorch backend only: the ONNX Runtime worker takes fixed shapes';

/**
 * One input or output: its tensor spec (when valid) and its JSON as Triton writes it. A variable input
 * dimension (-1) is kept for the pytorch backend (src/serving/padding.ts pads a batch of them).
 */
export function tensor(
  f: Fields,
  kind: 'input' | 'output',
  backend: RepositoryBackend | undefined,
): { spec?: TensorSpec; json: Record<string, unknown> } {
  f.check(kind === 'input' ? 'ModelInput' : 'ModelOutput', kind === 'input' ? INPUT : OUTPUT);
  const name = f.str('name');
  if (name === undefined || name === '') f.problems.add(`${f.path}name`, `missing (every ${kind} has a name)`);
  const type = f.enumValue('data_type', DATATYPES);
  if (!f.has('data_type')) f.problems.add(`${f.path}data_type`, 'missing (a TYPE_* datatype)');
  else if (type !== undefined && type in UNSUPPORTED_TYPES)
    f.problems.add(`${f.path}data_type`, `${type} (${UNSUPPORTED_TYPES[type]})`);
  const dims = f.all('dims').map((d, i) => {
    if (d.value.kind === 'number' && d.value.integer && d.value.value === VARIABLE_DIM) {
      if (kind === 'input' && backend !== 'onnxruntime') return VARIABLE_DIM;
      f.problems.add(`${f.path}dims[${i}]`, `-1 (${kind === 'input' ? VARIABLE_ONNX : VARIABLE_OUTPUT})`);
      return undefined;
    }
    return f.int('dims', { min: 1 }, d, i);
  });
  if (dims.length === 0) f.problems.add(`${f.path}dims`, `missing (every ${kind} gives its dims)`);
  if (f.has('reshape')) f.problems.add(`${f.path}reshape`, 'reshaping a tensor is not supported');
  const flags: Record<string, boolean> = {};
  for (const flag of Object.keys(REFUSED_FLAGS)) {
    if (!(flag in (kind === 'input' ? INPUT : OUTPUT))) continue;
    flags[flag] = f.bool(flag) ?? false;
    if (flags[flag]) f.problems.add(`${f.path}${flag}`, `true (${REFUSED_FLAGS[flag]})`);
  }
  const format = kind === 'input' ? (f.enumValue('format', FORMATS) ?? 'FORMAT_NONE') : undefined;
  if (format !== undefined && format !== 'FORMAT_NONE' && dims.length !== 3)
    f.problems.add(`${f.path}format`, `${format} (an image format takes 3 dims, C/H/W; given ${dims.length})`);
  const labels = kind === 'output' ? (f.str('label_filename') ?? '') : undefined;
  const shape = dims.filter((d): d is number => d !== undefined);
  const datatype = type?.slice('TYPE_'.length);
  const json: Record<string, unknown> = {
    name: name ?? '',
    data_type: type ?? 'TYPE_INVALID',
    ...(format !== undefined ? { format } : {}),
    dims: shape,
    ...(labels !== undefined ? { label_filename: labels } : {}),
    is_shape_tensor: false,
    ...(kind === 'input' ? { allow_ragged_batch: false, optional: false } : {}),
  };
  const ok = name && datatype !== undefined && datatype in DATATYPE_BYTES && shape.length === dims.length;
  return { ...(ok && dims.length > 0 ? { spec: { name, datatype: datatype as Datatype, shape } } : {}), json };
}

/** The model's platform and backend: either or both, agreeing, one of the two inss runs. */
function backendOf(top: Fields): RepositoryBackend | undefined {
  const platform = top.str('platform');
  const backend = top.str('backend');
  const fromPlatform = platform ? BACKEND_OF_PLATFORM[platform] : undefined;
  const runs = 'inss runs onnxruntime_onnx (backend onnxruntime) and pytorch_libtorch (backend pytorch)';
  if (platform && !fromPlatform) top.problems.add('platform', `${JSON.stringify(platform)} (${runs})`);
  if (backend && !(backend in PLATFORM_OF)) top.problems.add('backend', `${JSON.stringify(backend)} (${runs})`);
  if (!platform && !backend) top.problems.add('platform', `missing, and no backend either (${runs})`);
  if (fromPlatform && backend && backend in PLATFORM_OF && backend !== fromPlatform)
    top.problems.add('backend', `${JSON.stringify(backend)} (platform ${platform} is backend ${fromPlatform})`);
  const b = fromPlatform ?? backend;
  return b !== undefined && b in PLATFORM_OF ? (b as RepositoryBackend) : undefined;
}

export function versionPolicyOf(top: Fields): { policy: VersionPolicy; json: Record<string, unknown> } {
  const latest1 = {
    policy: { kind: 'latest', numVersions: 1 } as VersionPolicy,
    json: { latest: { num_versions: 1 } },
  };
  const v = top.sub('version_policy');
  if (!v) return latest1;
  v.check('ModelVersionPolicy', { latest: 'one', all: 'one', specific: 'one' });
  const given = ['latest', 'all', 'specific'].filter((k) => v.has(k));
  if (given.length !== 1) {
    v.problems.add('version_policy', `give one of latest, all, specific (given: ${given.join(', ') || 'none'})`);
    return latest1;
  }
  if (v.has('all')) {
    v.sub('all')?.check('ModelVersionPolicy.All', {});
    return { policy: { kind: 'all' }, json: { all: {} } };
  }
  if (v.has('latest')) {
    const l = v.sub('latest');
    l?.check('ModelVersionPolicy.Latest', { num_versions: 'one' });
    const n = l?.int('num_versions', { min: 1 }) ?? 1;
    return { policy: { kind: 'latest', numVersions: n }, json: { latest: { num_versions: n } } };
  }
  const s = v.sub('specific');
  s?.check('ModelVersionPolicy.Specific', { versions: 'many' });
  const versions = (s?.ints('versions', { min: 1 }) ?? []).filter((x): x is number => x !== undefined);
  if (s && versions.length === 0 && s.all('versions').length === 0)
    s.problems.add(`${s.path}versions`, 'missing (the versions to serve)');
  return { policy: { kind: 'specific', versions }, json: { specific: { versions } } };
}

function dynamicBatchingOf(
  top: Fields,
  maxBatchSize: number,
): { dynamicBatching?: RepositoryModel['dynamicBatching']; queuePolicy?: QueuePolicyConfig; json?: object } {
  const d = top.sub('dynamic_batching');
  if (!d) return {};
  d.check('ModelDynamicBatching', {
    preferred_batch_size: 'many',
    max_queue_delay_microseconds: 'one',
    preserve_ordering: 'one',
    priority_levels: 'one',
    default_priority_level: 'one',
    default_queue_policy: 'one',
    priority_queue_policy: 'many',
  });
  const cap = maxBatchSize > 0 ? maxBatchSize : undefined;
  const preferred = d.ints('preferred_batch_size', { min: 1, ...(cap ? { max: cap } : {}) });
  if (maxBatchSize === 0 && preferred.length > 0)
    d.problems.add(`${d.path}preferred_batch_size`, 'given with max_batch_size 0 (a model without batching)');
  const delay = d.int('max_queue_delay_microseconds', { min: 0 }) ?? 0;
  const levels = d.int('priority_levels', { min: 0 }) ?? 0;
  if (levels > 1) d.problems.add(`${d.path}priority_levels`, `${levels} (request priorities are not supported)`);
  if (d.has('priority_queue_policy'))
    d.problems.add(`${d.path}priority_queue_policy`, 'request priorities are not supported');
  const q = d.sub('default_queue_policy');
  let queuePolicy: QueuePolicyConfig | undefined;
  let queueJson: Record<string, unknown> | undefined;
  if (q) {
    q.check('ModelQueuePolicy', QUEUE_POLICY);
    const action = q.enumValue('timeout_action', ['REJECT', 'DELAY'] as const) ?? 'REJECT';
    const timeoutUs = q.int('default_timeout_microseconds', { min: 0 }) ?? 0;
    const maxQueue = q.int('max_queue_size', { min: 0 }) ?? 0;
    // No timeout (0): Triton never times a request out, whatever the action; inss's nearest is to serve
    // a late task late (delay), never to drop it.
    queuePolicy = {
      timeoutAction: action === 'REJECT' && timeoutUs > 0 ? 'reject' : 'delay',
      ...(timeoutUs > 0 ? { timeoutMs: timeoutUs / 1000 } : {}),
      ...(maxQueue > 0 ? { maxQueueSize: maxQueue } : {}),
    };
    queueJson = {
      timeout_action: action,
      default_timeout_microseconds: timeoutUs,
      allow_timeout_override: q.bool('allow_timeout_override') ?? false,
      max_queue_size: maxQueue,
    };
  }
  const sizes = preferred.filter((x): x is number => x !== undefined);
  return {
    dynamicBatching: { preferredBatchSize: sizes, maxQueueDelayMicroseconds: delay },
    ...(queuePolicy ? { queuePolicy } : {}),
    json: {
      preferred_batch_size: sizes,
      max_queue_delay_microseconds: delay,
      preserve_ordering: d.bool('preserve_ordering') ?? false,
      priority_levels: levels,
      default_priority_level: d.int('default_priority_level', { min: 0 }) ?? 0,
      ...(queueJson ? { default_queue_policy: queueJson } : {}),
    },
  };
}

/**
 * The configuration's text parsed and its top-level fields checked against Triton's ModelConfig (any model's
 * first step); a syntax error throws RepositoryConfigError prefixed with `source`.
 */
export function readConfigTop(text: string, source: string): { msg: PbMessage; problems: Problems; top: Fields } {
  let msg;
  try {
    msg = parsePbtxt(text);
  } catch (e) {
    if (e instanceof PbtxtError) throw new RepositoryConfigError([`${source}:${e.message}`]);
    throw e;
  }
  const problems = new Problems();
  const top = new Fields(msg, '', problems);
  top.check('ModelConfig', MODEL_CONFIG);
  return { msg, problems, top };
}

/**
 * Reads `text`, the config.pbtxt of the model in directory `dirName`; `source` prefixes every problem
 * (e.g. `resnet/config.pbtxt`). Throws RepositoryConfigError listing every problem found.
 */
export function readModelConfig(text: string, dirName: string, source: string): ModelConfigRead {
  const { msg, problems, top } = readConfigTop(text, source);
  for (const [field, why] of Object.entries(REFUSED)) if (top.has(field)) problems.add(field, why);
  const tp = top.sub('model_transaction_policy');
  tp?.check('ModelTransactionPolicy', { decoupled: 'one' });
  if (tp?.bool('decoupled'))
    problems.add('model_transaction_policy.decoupled', 'true (decoupled models are not supported)');
  const name = top.str('name');
  if (name !== undefined && name !== dirName)
    problems.add('name', `${JSON.stringify(name)} (must be the model's directory name, ${JSON.stringify(dirName)})`);
  const backend = backendOf(top);
  const maxBatchSize = top.int('max_batch_size', { min: 0 }) ?? 0;
  const inputs = top.subs('input').map((f) => tensor(f, 'input', backend));
  const outputs = top.subs('output').map((f) => tensor(f, 'output', backend));
  if (inputs.length === 0) problems.add('input', 'missing (a model takes at least one input)');
  if (outputs.length === 0) problems.add('output', 'missing (a model gives at least one output)');
  for (const [kind, list] of [
    ['input', inputs],
    ['output', outputs],
  ] as const) {
    const names = list.map((t) => t.json.name as string);
    names.forEach((n, i) => {
      if (n !== '' && names.indexOf(n) !== i) problems.add(`${kind}[${i}].name`, `${JSON.stringify(n)} given twice`);
    });
  }
  const versions = versionPolicyOf(top);
  const params = parametersOf(top);
  const batching = dynamicBatchingOf(top, maxBatchSize);
  const maxDim = params.maxVariableDim ?? DEFAULT_MAX_VARIABLE_DIM;
  const inputSpecs = inputs.map((t) => (t.spec && hasVariableDim(t.spec.shape) ? { ...t.spec, maxDim } : t.spec!));
  const filename = top.str('default_model_filename');
  if (filename !== undefined && (filename === '' || /[/\\]/.test(filename) || filename === '..' || filename === '.'))
    problems.add('default_model_filename', `${JSON.stringify(filename)} (a file name inside the version directory)`);
  if (problems.list.length > 0 || !backend)
    throw new RepositoryConfigError(problems.list.map((p) => `${source}: ${p}`));
  const modelFilename = filename ?? DEFAULT_FILE[backend];
  const passed = messageJson({ ...msg, fields: msg.fields.filter((f) => PASSED_THROUGH.some((p) => p === f.name)) });
  const config: Record<string, unknown> = {
    name: dirName,
    platform: PLATFORM_OF[backend],
    backend,
    version_policy: versions.json,
    max_batch_size: maxBatchSize,
    input: inputs.map((t) => t.json),
    output: outputs.map((t) => t.json),
    ...(batching.json ? { dynamic_batching: batching.json } : {}),
    default_model_filename: modelFilename,
    parameters: params.json,
    ...passed,
  };
  return {
    name: dirName,
    backend,
    maxBatchSize,
    signature: { inputs: inputSpecs, outputs: outputs.map((t) => t.spec!) },
    ...(params.sloMs !== undefined ? { sloMs: params.sloMs } : {}),
    ...(params.costClasses !== undefined ? { costClasses: params.costClasses } : {}),
    ...(batching.dynamicBatching ? { dynamicBatching: batching.dynamicBatching } : {}),
    ...(batching.queuePolicy ? { queuePolicy: batching.queuePolicy } : {}),
    versionPolicy: versions.policy,
    modelFilename,
    labelFiles: outputs.map((t) => t.json.label_filename as string).filter((l) => l !== ''),
    config,
  };
}

/**
 * The versions a policy serves, ascending, from the version directories present (positive integers).
 * A `specific` version without its directory is a problem (returned), as Triton fails such a model.
 */
export function policyVersions(
  policy: VersionPolicy,
  present: readonly number[],
): { versions: number[] } | { missing: number[] } {
  const sorted = [...new Set(present)].sort((a, b) => a - b);
  if (policy.kind === 'all') return { versions: sorted };
  if (policy.kind === 'latest') return { versions: sorted.slice(Math.max(0, sorted.length - policy.numVersions)) };
  const missing = policy.versions.filter((v) => !sorted.includes(v));
  if (missing.length > 0) return { missing };
  return { versions: [...new Set(policy.versions)].sort((a, b) => a - b) };
}

/** The repository model of a read configuration, serving `version` (the highest of `versions`) from `file`. */
export function repositoryModel(
  c: ModelConfigRead,
  version: number,
  versions: readonly number[],
  file: string,
): RepositoryModel {
  return {
    name: c.name,
    backend: c.backend,
    maxBatchSize: c.maxBatchSize,
    signature: c.signature,
    ...(c.sloMs !== undefined ? { sloMs: c.sloMs } : {}),
    ...(c.costClasses !== undefined ? { costClasses: c.costClasses } : {}),
    ...(c.dynamicBatching ? { dynamicBatching: c.dynamicBatching } : {}),
    ...(c.queuePolicy ? { queuePolicy: c.queuePolicy } : {}),
    version: String(version),
    versions: versions.map(String),
    file,
    config: c.config,
  };
}

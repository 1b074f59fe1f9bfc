// A Triton ensemble's config.pbtxt (`platform: "ensemble"`, model_config.proto's ModelEnsembling) read as an
// inss pipeline (src/serving/pipeline.ts): its inputs and outputs, its max_batch_size, its end-to-end SLO (the
// `slo_ms` parameter) and its steps with their input_map and output_map, as Triton writes them. Then, once the
// repository's other models are loaded, the checks that need them (`ensembleProblems`): each step model is a
// model of the repository (not an ensemble), at the version served, batching as the ensemble does, with its
// inputs wired to tensors of their datatype and dims, in a chain. Refusals name the field
// (docs/model-repository.md, "Ensembles"). Pure.
import { type Datatype, type TensorSpec, VARIABLE_DIM } from '../protocol/tensor.js';
import { type Pipeline, pipelineWiringError } from '../serving/pipeline.js';
import { readConfigTop, RepositoryConfigError, tensor, type VersionPolicy, versionPolicyOf } from './config.js';
import { Fields, Problems } from './fields.js';
import { parametersOf } from './parameters.js';
import { parsePbtxt, PbtxtError } from './pbtxt.js';
import { MODEL_CONFIG } from './proto.js';
import type { EnsembleStep, RepositoryEnsemble, RepositoryModel } from './types.js';

/** Triton's platform string of an ensemble. */
export const ENSEMBLE_PLATFORM = 'ensemble';

/** The fields an ensemble's configuration takes; every other field of ModelConfig is refused by name. */
const ENSEMBLE_FIELDS = new Set([
  'name',
  'platform',
  'version_policy',
  'max_batch_size',
  'input',
  'output',
  'ensemble_scheduling',
  'parameters',
]);

/** inss's parameters that belong to a step model's configuration, not to an ensemble's. */
const STEP_PARAMETERS = ['cost_classes', 'max_variable_dim'];

/** An ensemble's config.pbtxt as read: everything but the version served, which the disk decides. */
export type EnsembleConfigRead = Omit<RepositoryEnsemble, 'version' | 'versions'> & {
  readonly versionPolicy: VersionPolicy;
};

/** Whether `text` is an ensemble's configuration (`platform: "ensemble"`); false when it does not parse. */
export function isEnsembleConfig(text: string): boolean {
  try {
    return new Fields(parsePbtxt(text), '', new Problems()).str('platform') === ENSEMBLE_PLATFORM;
  } catch (e) {
    if (e instanceof PbtxtError) return false;
    throw e;
  }
}

/** A map<string, string> field (`input_map { key: "x" value: "IN" }`), by key. */
function stringMap(f: Fields, field: string): Record<string, string> {
  const out: Record<string, string> = {};
  f.subs(field).forEach((entry, i) => {
    entry.check(`EnsembleStep.${field === 'input_map' ? 'Input' : 'Output'}MapEntry`, { key: 'one', value: 'one' });
    const key = entry.str('key');
    const value = entry.str('value');
    if (!key || !value) return f.problems.add(`${f.path}${field}[${i}]`, 'give both a key and a value (tensor names)');
    if (key in out) return f.problems.add(`${f.path}${field}[${JSON.stringify(key)}]`, 'given twice');
    out[key] = value;
  });
  return out;
}

function stepOf(f: Fields): EnsembleStep | undefined {
  f.check('ModelEnsembling.Step', {
    model_name: 'one',
    model_version: 'one',
    input_map: 'many',
    output_map: 'many',
    model_namespace: 'one',
  });
  const model = f.str('model_name');
  if (!model) f.problems.add(`${f.path}model_name`, 'missing (the model this step runs)');
  const version = f.int('model_version', { min: -1 }) ?? -1;
  if (version === 0) f.problems.add(`${f.path}model_version`, '0 (-1 for the version served, or a version number)');
  const namespace = f.str('model_namespace') ?? '';
  if (namespace !== '') f.problems.add(`${f.path}model_namespace`, `${JSON.stringify(namespace)} (not supported)`);
  const inputMap = stringMap(f, 'input_map');
  const outputMap = stringMap(f, 'output_map');
  if (Object.keys(outputMap).length === 0) f.problems.add(`${f.path}output_map`, 'missing (a step gives an output)');
  return model ? { model, version, inputMap, outputMap } : undefined;
}

/**
 * Reads `text`, the config.pbtxt of the ensemble in directory `dirName`; `source` prefixes every problem.
 * Throws RepositoryConfigError listing every problem found in the configuration itself.
 */
export function readEnsembleConfig(text: string, dirName: string, source: string): EnsembleConfigRead {
  const { msg, problems, top } = readConfigTop(text, source);
  for (const f of new Set(msg.fields.map((x) => x.name)))
    if (f in MODEL_CONFIG && !ENSEMBLE_FIELDS.has(f))
      problems.add(
        f,
        `not taken by an ensemble (platform "ensemble" runs its steps' models, each by its own configuration)`,
      );
  const name = top.str('name');
  if (name !== undefined && name !== dirName)
    problems.add('name', `${JSON.stringify(name)} (must be the model's directory name, ${JSON.stringify(dirName)})`);
  const maxBatchSize = top.int('max_batch_size', { min: 0 }) ?? 0;
  const inputs = top.subs('input').map((f) => tensor(f, 'input', undefined));
  const outputs = top.subs('output').map((f) => tensor(f, 'output', undefined));
  if (inputs.length === 0) problems.add('input', 'missing (an ensemble takes at least one input)');
  if (outputs.length === 0) problems.add('output', 'missing (an ensemble gives at least one output)');
  const versions = versionPolicyOf(top);
  const params = parametersOf(top);
  for (const key of STEP_PARAMETERS)
    if (key in params.json) problems.add(`parameters[${JSON.stringify(key)}]`, "a step model's, not an ensemble's");
  const sched = top.sub('ensemble_scheduling');
  sched?.check('ModelEnsembling', { step: 'many' });
  const stepFields = sched?.subs('step') ?? [];
  if (stepFields.length === 0) problems.add('ensemble_scheduling.step', 'missing (an ensemble runs at least one step)');
  const steps = stepFields.map(stepOf);
  if (problems.list.length > 0) throw new RepositoryConfigError(problems.list.map((p) => `${source}: ${p}`));
  const config: Record<string, unknown> = {
    name: dirName,
    platform: ENSEMBLE_PLATFORM,
    backend: '',
    version_policy: versions.json,
    max_batch_size: maxBatchSize,
    input: inputs.map((t) => t.json),
    output: outputs.map((t) => t.json),
    ensemble_scheduling: {
      step: steps.map((s) => ({
        model_name: s!.model,
        model_version: s!.version,
        input_map: s!.inputMap,
        output_map: s!.outputMap,
        model_namespace: '',
      })),
    },
    parameters: params.json,
  };
  return {
    name: dirName,
    maxBatchSize,
    signature: { inputs: inputs.map((t) => t.spec!), outputs: outputs.map((t) => t.spec!) },
    ...(params.sloMs !== undefined ? { sloMs: params.sloMs } : {}),
    steps: steps.map((s) => s!),
    versionPolicy: versions.policy,
    config,
  };
}

/** The pipeline an ensemble runs (its end-to-end SLO given). */
export function ensemblePipeline(e: Pick<RepositoryEnsemble, 'name' | 'steps'>, sloMs: number): Pipeline {
  return {
    name: e.name,
    sloMs,
    steps: e.steps.map((s) => ({ model: s.model, inputMap: s.inputMap, outputMap: s.outputMap })),
  };
}

/** Why a tensor of spec `have` cannot be read as `want` (datatype, then dims; -1 in `want` takes any), or undefined. */
function specMismatch(have: Pick<TensorSpec, 'datatype' | 'shape'>, want: TensorSpec): string | undefined {
  const dims = (s: readonly number[]) => `[${s.join(', ')}]`;
  if (have.datatype !== want.datatype) return `datatype ${have.datatype}, not ${want.datatype}`;
  const fits =
    have.shape.length === want.shape.length && have.shape.every((d, i) => d === want.shape[i] || want.shape[i] === -1);
  return fits
    ? undefined
    : `dims ${dims(have.shape)}, not ${dims(want.shape.map((d) => (d === VARIABLE_DIM ? -1 : d)))}`;
}

/** What the checks know of the repository's other entries. */
export interface EnsembleContext {
  /** The models loaded, by name. */
  readonly models: ReadonlyMap<string, RepositoryModel>;
  /** The names of the repository's ensembles. */
  readonly ensembles: ReadonlySet<string>;
  /** Models that failed to load, by name, with why. */
  readonly failed: ReadonlyMap<string, string>;
}

/**
 * The problems of an ensemble against the models of its repository, each `path: why` (empty when it can be
 * served): a step model that is missing, failed, or an ensemble itself (nested ensembles are not supported); a
 * model_version other than -1 or the one served; a max_batch_size the step model cannot take; input_map and
 * output_map naming tensors the step model lacks, or leaving an input unread; a step reading a tensor no earlier
 * step wrote (steps run in the order listed: a DAG Triton orders itself must be listed in an order that runs);
 * and a tensor passed on in another datatype or dims than the reader's.
 */
export function ensembleProblems(e: EnsembleConfigRead, ctx: EnsembleContext): string[] {
  const problems: string[] = [];
  const known = new Map<string, { datatype: Datatype; shape: readonly number[] }>();
  for (const s of e.signature.inputs) known.set(s.name, s);
  e.steps.forEach((s, i) => {
    const at = `ensemble_scheduling.step[${i}]`;
    const m = ctx.models.get(s.model);
    if (!m) {
      const why = ctx.ensembles.has(s.model)
        ? 'is an ensemble (nested ensembles are not supported)'
        : ctx.failed.has(s.model)
          ? `failed to load: ${ctx.failed.get(s.model)}`
          : 'is not in the repository';
      problems.push(`${at}.model_name: ${JSON.stringify(s.model)} ${why}`);
      return;
    }
    if (s.version !== -1 && String(s.version) !== m.version)
      problems.push(
        `${at}.model_version: ${s.version} (inss serves one version of '${m.name}', ${m.version}: ` +
          `give -1 or ${m.version})`,
      );
    if (e.maxBatchSize > 0 && (m.maxBatchSize === 0 || m.maxBatchSize < e.maxBatchSize))
      problems.push(
        `max_batch_size: ${e.maxBatchSize} (step ${i}, model '${m.name}', takes batches of at most ${m.maxBatchSize})`,
      );
    if (e.maxBatchSize === 0 && m.maxBatchSize > 0)
      problems.push(
        `max_batch_size: 0 (step ${i}, model '${m.name}', has a batch dimension: give the ensemble ` +
          `max_batch_size 1..${m.maxBatchSize})`,
      );
    const names = (l: readonly TensorSpec[]) => l.map((t) => t.name).join(', ');
    for (const [own, from] of Object.entries(s.inputMap)) {
      const want = m.signature.inputs.find((t) => t.name === own);
      const path = `${at}.input_map[${JSON.stringify(own)}]`;
      if (!want)
        problems.push(`${path}: model '${m.name}' has no input '${own}' (inputs: ${names(m.signature.inputs)})`);
      const have = known.get(from);
      const bad = want && have ? specMismatch(have, want) : undefined;
      if (bad) problems.push(`${path}: tensor '${from}' has ${bad} (model '${m.name}' input '${own}')`);
    }
    for (const t of m.signature.inputs)
      if (!(t.name in s.inputMap))
        problems.push(`${at}.input_map: model '${m.name}' input '${t.name}' is read from no tensor`);
    for (const [own, to] of Object.entries(s.outputMap)) {
      const spec = m.signature.outputs.find((t) => t.name === own);
      const path = `${at}.output_map[${JSON.stringify(own)}]`;
      if (!spec)
        problems.push(`${path}: model '${m.name}' has no output '${own}' (outputs: ${names(m.signature.outputs)})`);
      else if (!known.has(to)) known.set(to, spec);
    }
  });
  if (problems.length > 0) return problems;
  const wiring = pipelineWiringError(
    ensemblePipeline(e, 1),
    e.signature.inputs.map((t) => t.name),
    e.signature.outputs.map((t) => t.name),
  );
  if (wiring)
    return [
      `ensemble_scheduling.step: ${wiring} (inss runs the steps in the order listed: list each step after the ` +
        'steps whose outputs it reads)',
    ];
  for (const [i, out] of e.signature.outputs.entries()) {
    const bad = specMismatch(known.get(out.name)!, out);
    if (bad) problems.push(`output[${i}]: tensor '${out.name}' has ${bad} as its step writes it`);
  }
  return problems;
}

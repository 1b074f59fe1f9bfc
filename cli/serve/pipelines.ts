// The repository's ensembles as the scheduler serves them (docs/pipelines.md, "Serving a pipeline"): each one a
// pipeline of served models under its end-to-end SLO (its `slo_ms` parameter, else DEFAULT_REPOSITORY_SLO_MS),
// each step model served with its step's share of that SLO (the even split; the plan's split moves its tasks'
// deadline stamps, src/serving/pipelineChain.ts), and the scenario's matching `pipelines` entry, so that the
// planner sees the pipeline as the simulator does. A scenario's own pipelines (`pipelines`, over its models) are
// served the same way, as the ensemble they describe.
import type { Logger } from 'pino';
import type { ServedModelConfig } from '../../scheduler/control.js';
import { DEFAULT_MAX_BATCH_SIZE } from '../../scheduler/kserve.js';
import type { ServedPipeline } from '../../scheduler/pipelineFront.js';
import { configDatatype } from '../../scheduler/triton.js';
import { InvalidInputError } from '../../src/profile/schema.js';
import type { TensorSpec } from '../../src/protocol/tensor.js';
import { ENSEMBLE_PLATFORM, ensemblePipeline } from '../../src/repository/ensemble.js';
import { DEFAULT_REPOSITORY_SLO_MS, type RepositoryEnsemble } from '../../src/repository/types.js';
import type { Scenario } from '../../src/scenario/schema.js';
import { evenBudgets } from '../../src/serving/pipeline.js';

export interface ServedPipelines {
  /** The served models, a step model's SLO its step's budget. */
  readonly models: ServedModelConfig[];
  readonly pipelines: ServedPipeline[];
  /** The scenario's entries for them (a pipeline's rate is learned as it serves: 0 to start with). */
  readonly scenarioPipelines: Scenario['pipelines'];
}

/**
 * A scenario's pipeline over its served models as the ensemble it describes: its inputs take the spec of the
 * first step input that reads them, its outputs that of the step output that writes them, and every tensor must
 * be read as written (datatype and shape); its batch limit is the smallest of its step models'. Throws
 * InvalidInputError naming the field (`where`: the scenario).
 */
export function scenarioEnsemble(
  p: Scenario['pipelines'][number],
  index: number,
  served: readonly ServedModelConfig[],
  where: string,
): RepositoryEnsemble {
  const specs = new Map<string, TensorSpec>();
  const field = `${where}: pipelines[${index}]`;
  const models = p.steps.map((step, k) => {
    const m = served.find((x) => x.name === step.model);
    if (!m) throw new InvalidInputError(`${field}.steps[${k}].model: '${step.model}' is not served`);
    for (const t of m.signature.inputs) {
      const from = step.inputMap[t.name];
      if (from === undefined)
        throw new InvalidInputError(
          `${field}.steps[${k}].inputMap: input '${t.name}' of '${m.name}' is read from no tensor`,
        );
      const have = specs.get(from);
      // A pipeline input is taken as its tensor (an image input's other forms are the step model's own).
      if (!have) specs.set(from, { name: from, datatype: t.datatype, shape: t.shape });
      else if (have.datatype !== t.datatype || have.shape.join() !== t.shape.join())
        throw new InvalidInputError(
          `${field}.steps[${k}].inputMap.${t.name}: tensor '${from}' is ${have.datatype} [${have.shape.join(', ')}], ` +
            `input '${t.name}' of '${m.name}' is ${t.datatype} [${t.shape.join(', ')}]`,
        );
    }
    for (const [own, to] of Object.entries(step.outputMap)) {
      const t = m.signature.outputs.find((x) => x.name === own);
      if (!t) throw new InvalidInputError(`${field}.steps[${k}].outputMap.${own}: '${m.name}' has no output '${own}'`);
      specs.set(to, { name: to, datatype: t.datatype, shape: t.shape });
    }
    return m;
  });
  const spec = (kind: 'inputs' | 'outputs') => (name: string) => {
    const t = specs.get(name);
    if (!t) throw new InvalidInputError(`${field}.${kind}: '${name}' is wired to no step`);
    return t;
  };
  const signature = { inputs: p.inputs.map(spec('inputs')), outputs: p.outputs.map(spec('outputs')) };
  const maxBatchSize = Math.min(...models.map((m) => m.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE));
  const steps = p.steps.map((s) => ({ model: s.model, version: -1, inputMap: s.inputMap, outputMap: s.outputMap }));
  const tensor = (t: TensorSpec) => ({ name: t.name, data_type: configDatatype(t.datatype), dims: [...t.shape] });
  return {
    name: p.name,
    maxBatchSize,
    signature,
    sloMs: p.sloMs,
    steps,
    version: '1',
    versions: ['1'],
    config: {
      name: p.name,
      platform: ENSEMBLE_PLATFORM,
      backend: '',
      version_policy: { latest: { num_versions: 1 } },
      max_batch_size: maxBatchSize,
      input: signature.inputs.map(tensor),
      output: signature.outputs.map(tensor),
      ensemble_scheduling: {
        step: steps.map((s) => ({
          model_name: s.model,
          model_version: -1,
          input_map: s.inputMap,
          output_map: s.outputMap,
          model_namespace: '',
        })),
      },
      parameters: { slo_ms: { string_value: String(p.sloMs) } },
    },
  };
}

/**
 * The ensembles over `served` (each step model among them: the repository's loader, or scenarioEnsemble,
 * checked). `fromScenario` names those the scenario has already: they get no new `pipelines` entry.
 */
export function servedPipelines(
  ensembles: readonly RepositoryEnsemble[],
  served: readonly ServedModelConfig[],
  logger: Logger,
  fromScenario: ReadonlySet<string> = new Set(),
): ServedPipelines {
  const models = [...served];
  const pipelines: ServedPipeline[] = [];
  const scenarioPipelines: Scenario['pipelines'][number][] = [];
  for (const e of ensembles) {
    const sloMs = e.sloMs ?? DEFAULT_REPOSITORY_SLO_MS;
    const pipeline = ensemblePipeline(e, sloMs);
    const even = evenBudgets(pipeline);
    const stepModels = e.steps.map((s) => models.findIndex((m) => m.name === s.model));
    if (stepModels.some((m) => m < 0)) {
      logger.error({ model: e.name }, `model repository: ensemble '${e.name}' is not served (a step model is not)`);
      continue;
    }
    stepModels.forEach((m, k) => {
      const own = models[m]!;
      if (own.repository?.sloMs !== undefined)
        logger.warn(
          { model: own.name, ensemble: e.name, configSloMs: own.repository.sloMs, stepBudgetMs: even[k] },
          "a step model's SLO is its step's budget of the ensemble's slo_ms; its own slo_ms is not used",
        );
      models[m] = { ...own, sloMs: even[k]! };
    });
    pipelines.push({
      endpoint: { name: e.name, sloMs, signature: e.signature, maxBatchSize: e.maxBatchSize, ensemble: e },
      pipeline,
      stepModels,
    });
    if (!fromScenario.has(e.name))
      scenarioPipelines.push({
        name: e.name,
        sloMs,
        arrival: { process: 'poisson' },
        rate: { kind: 'constant', ratePerS: 0 },
        steps: pipeline.steps.map((s) => ({
          model: s.model,
          inputMap: { ...s.inputMap },
          outputMap: { ...s.outputMap },
        })),
        inputs: e.signature.inputs.map((t) => t.name),
        outputs: e.signature.outputs.map((t) => t.name),
      });
  }
  return { models, pipelines, scenarioPipelines };
}

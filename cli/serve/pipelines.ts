// The repository's ensembles as the scheduler serves them (docs/pipelines.md, "Serving a pipeline"): each one a
// pipeline of served models under its end-to-end SLO (its `slo_ms` parameter, else DEFAULT_REPOSITORY_SLO_MS),
// each step model served with its step's share of that SLO (the even split; the plan's split moves its tasks'
// deadline stamps, src/serving/pipelineChain.ts), and the scenario's matching `pipelines` entry, so that the
// planner sees the pipeline as the simulator does.
import type { Logger } from 'pino';
import type { ServedModelConfig } from '../../scheduler/control.js';
import type { ServedPipeline } from '../../scheduler/pipelineFront.js';
import { ensemblePipeline } from '../../src/repository/ensemble.js';
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

/** The ensembles of the repository over `models` (each step model among them: the repository's loader checked). */
export function servedPipelines(
  ensembles: readonly RepositoryEnsemble[],
  served: readonly ServedModelConfig[],
  logger: Logger,
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

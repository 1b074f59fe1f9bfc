// Running a pipeline request's steps one after another (src/serving/pipeline.ts) as the scheduler does
// (scheduler/pipelineFront.ts): the step budgets in force, each step task's deadline stamp, each step's inputs
// taken from the request's tensors and the earlier steps' outputs by name, and its outputs passed on. Generic in
// what a tensor is; the scheduler's carry their bytes. Pure.
import { budgetsError, evenBudgets, type Pipeline, type StepBudgets, stepStampMs } from './pipeline.js';

/**
 * The split in force: the plan's (Deployment.pipelineBudgetsMs) where it is one for this pipeline, else the
 * even split, as the simulator runs a pipeline its plan gave no budgets.
 */
export function budgetsInForce(p: Pipeline, planned: StepBudgets | undefined): StepBudgets {
  return planned !== undefined && budgetsError(p, planned) === undefined ? planned : evenBudgets(p);
}

/**
 * Step `step`'s task stamp, such that its deadline (the stamp plus the step model's served SLO, `servedSloMs`)
 * is the pipeline task's arrival plus the budgets in force up to and including this step. A step model is
 * served with its step's even budget as its SLO; where the plan splits otherwise, the stamp moves by the
 * difference. With even budgets it is `stepStampMs` itself.
 */
export function stepTaskStampMs(arrivalMs: number, budgets: StepBudgets, step: number, servedSloMs: number): number {
  return stepStampMs(arrivalMs, budgets, step) + budgets[step]! - servedSloMs;
}

/** A named tensor of a step: a step model's input or output. */
export interface Named<T> {
  readonly name: string;
  readonly tensor: T;
}

/**
 * Step `step`'s inputs, in `modelInputs` order (the step model's signature), each the pipeline tensor its
 * input map names; or why one is missing (a pipeline wired as a chain, pipelineWiringError, has them all).
 */
export function stepInputs<T>(
  p: Pipeline,
  step: number,
  modelInputs: readonly string[],
  tensors: ReadonlyMap<string, T>,
): { ok: true; inputs: Named<T>[] } | { ok: false; error: string } {
  const s = p.steps[step]!;
  const inputs: Named<T>[] = [];
  for (const name of modelInputs) {
    const from = s.inputMap[name];
    const tensor = from === undefined ? undefined : tensors.get(from);
    if (tensor === undefined)
      return {
        ok: false,
        error: `pipeline '${p.name}' step ${step} (${s.model}): input '${name}' has no tensor (${from ?? 'unmapped'})`,
      };
    inputs.push({ name, tensor });
  }
  return { ok: true, inputs };
}

/**
 * The pipeline's tensors once step `step` answered `outputs`: each mapped output under its pipeline name; an
 * output the map does not name is dropped. Returns the missing mapped output's name when the answer lacks one.
 */
export function passOutputs<T>(
  p: Pipeline,
  step: number,
  outputs: readonly Named<T>[],
  tensors: Map<string, T>,
): string | undefined {
  for (const [own, to] of Object.entries(p.steps[step]!.outputMap)) {
    const o = outputs.find((x) => x.name === own);
    if (o === undefined) return own;
    tensors.set(to, o.tensor);
  }
  return undefined;
}

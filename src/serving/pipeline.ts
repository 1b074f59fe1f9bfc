// Pipelines: served models run in sequence under one end-to-end SLO (InferLine's pipelines, Triton's
// ensembles), followed by the simulator and the scheduler alike. Pure.
//
// A pipeline names its steps in the order they run; each step is an ordinary served model with its own
// queue and workers. The plan splits the end-to-end SLO into one budget per step (`StepBudgets`, summing to
// the SLO). A step's task carries a deadline stamp: the pipeline task's arrival plus the budgets of the steps
// before it (`stepStampMs`), so its deadline under the step model's budget is the arrival plus the budgets up
// to and including its own. Time an earlier step saves is passed on to the later ones; time it overran is
// taken from them. A step model's budget in the plan is its step's budget, for every task it serves.
//
// Unlike Triton's ensembles, which may form any DAG of steps, a pipeline here is a chain: each step's inputs
// are the pipeline's inputs or outputs of steps listed before it (`pipelineWiringError`).

export interface PipelineStep {
  /** The served model this step runs. */
  readonly model: string;
  /** This step's input tensor -> the pipeline tensor it reads (a pipeline input or an earlier step's output). */
  readonly inputMap: Readonly<Record<string, string>>;
  /** This step's output tensor -> the pipeline tensor it becomes. */
  readonly outputMap: Readonly<Record<string, string>>;
}

export interface Pipeline {
  readonly name: string;
  /** End to end: from the request's arrival to the last step's answer. */
  readonly sloMs: number;
  readonly steps: readonly PipelineStep[];
}

/** Per step, in step order, its share of the pipeline's SLO (ms); they sum to the SLO. */
export type StepBudgets = readonly number[];

/** The SLO split evenly across the steps: the baseline that plans each step alone. */
export function evenBudgets(p: Pipeline): number[] {
  return p.steps.map(() => p.sloMs / p.steps.length);
}

/** Why `budgets` cannot be this pipeline's split (one per step, each positive, summing to its SLO), or undefined. */
export function budgetsError(p: Pipeline, budgets: StepBudgets): string | undefined {
  if (budgets.length !== p.steps.length)
    return `pipeline '${p.name}' has ${p.steps.length} steps but ${budgets.length} budgets`;
  const bad = budgets.findIndex((b) => !(Number.isFinite(b) && b > 0));
  if (bad >= 0) return `pipeline '${p.name}' step ${bad}: budget ${budgets[bad]} is not a positive number of ms`;
  const sum = budgets.reduce((a, b) => a + b, 0);
  if (Math.abs(sum - p.sloMs) > 1e-6 * p.sloMs)
    return `pipeline '${p.name}': budgets sum to ${sum} ms, not its SLO of ${p.sloMs} ms`;
  return undefined;
}

/**
 * The deadline stamp of step `step`'s task for a pipeline task that arrived at `arrivalMs`: its deadline is this
 * plus the step's budget, i.e. the arrival plus the budgets of every step up to and including this one.
 */
export function stepStampMs(arrivalMs: number, budgets: StepBudgets, step: number): number {
  let stamp = arrivalMs;
  for (let i = 0; i < step; i++) stamp += budgets[i]!;
  return stamp;
}

/**
 * Why the pipeline's steps cannot run as a chain, or undefined: every step input must read a pipeline input or an
 * output of a step listed before it, every pipeline output must be written by some step, and no pipeline tensor
 * may be written twice. Messages name the step and the tensor.
 */
export function pipelineWiringError(
  p: Pipeline,
  inputs: readonly string[],
  outputs: readonly string[],
): string | undefined {
  if (p.steps.length === 0) return `pipeline '${p.name}' has no steps`;
  const known = new Set(inputs);
  for (const [i, s] of p.steps.entries()) {
    for (const [own, from] of Object.entries(s.inputMap))
      if (!known.has(from))
        return (
          `pipeline '${p.name}' step ${i} (${s.model}): input '${own}' reads '${from}', ` +
          'which is neither a pipeline input nor an output of an earlier step'
        );
    for (const [own, to] of Object.entries(s.outputMap)) {
      if (known.has(to))
        return `pipeline '${p.name}' step ${i} (${s.model}): output '${own}' writes '${to}', which is already written`;
      known.add(to);
    }
  }
  const missing = outputs.find((o) => !known.has(o));
  return missing === undefined ? undefined : `pipeline '${p.name}': output '${missing}' is written by no step`;
}

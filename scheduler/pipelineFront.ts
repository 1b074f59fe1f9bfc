// Pipelines served live: a request to a repository ensemble (docs/pipelines.md, "Serving a pipeline") runs its
// steps one after another, each through the normal queue and dispatch of its step model (InferFront, as a
// request to that model), and is answered once, with the pipeline's outputs. Each step's tasks carry the deadline
// stamp of the step budgets in force (the deployment's pipelineBudgetsMs, else the even split;
// src/serving/pipelineChain.ts); a k-sample request is k tasks at every step. Tensors pass from a step's answer to
// the next step's inputs here, never to the client. A step that fails (dropped, timed out, its worker failed)
// answers the request with its error, naming the step. Each pipeline task is counted under the pipeline's name
// (end-to-end latency, within its SLO or not) beside its step models' own counts.
import type { DecisionRecord, ControlObserver, TaskOutcome } from './observer.js';
import type { ServedModelConfig, TaskErrorReason } from './control.js';
import type { InferContext, InferFront, InferOutcome } from './infer.js';
import type { InferInput, InferRequest, ResponseOutput } from './kserve.js';
import { requestBatch } from './kserve.js';
import { classifyAnswer, modelLabels } from './classes.js';
import { resolveRegions, type SharedMemoryRegistry } from './sharedMemory.js';
import type { Pipeline } from '../src/serving/pipeline.js';
import { budgetsInForce, type Named, passOutputs, stepInputs, stepTaskStampMs } from '../src/serving/pipelineChain.js';
import type { Datatype } from '../src/protocol/tensor.js';
import { tensorBytes } from '../src/protocol/tensor.js';
import type { RepositoryEnsemble } from '../src/repository/types.js';

/** A pipeline the scheduler serves: its endpoint (what requests name) and its steps' served models. */
export interface ServedPipeline {
  /** Its endpoint: the ensemble's name, signature, batch limit and SLO (`ensemble` set). */
  readonly endpoint: ServedModelConfig & { readonly ensemble: RepositoryEnsemble };
  readonly pipeline: Pipeline;
  /** Per step, the index of its model among the served models. */
  readonly stepModels: readonly number[];
}

/** A tensor between steps: the whole request's rows (k samples). */
interface Tensor {
  readonly datatype: Datatype;
  readonly shape: readonly number[];
  readonly data: Buffer;
}

const OUTCOME: Readonly<Record<TaskErrorReason, TaskOutcome>> = {
  slo: 'dropped_slo',
  'queue-full': 'dropped_queue_full',
  'not-deployed': 'not_deployed',
  'worker-failed': 'worker_failed',
  shutdown: 'shutdown',
  'bad-input': 'bad_input',
};

/** The plan's step budgets per pipeline, from the control plane's last decision (an observer of it). */
export class PlannedBudgets implements Pick<ControlObserver, 'decided'> {
  private planned: Readonly<Record<string, readonly number[]>> = {};

  decided(d: DecisionRecord): void {
    const budgets = (d.deployment as { pipelineBudgetsMs?: Record<string, readonly number[]> }).pipelineBudgetsMs;
    this.planned = budgets ?? {};
  }

  /** Pipeline `name`'s split in the deployment in force; undefined where the plan gave none. */
  of(name: string): readonly number[] | undefined {
    return this.planned[name];
  }
}

export class PipelineFront {
  /**
   * Per pipeline, the labels of each of its tensors a step writes from a labelled output: the classification
   * extension answers a pipeline output's classes as the step model that wrote it answers its own.
   */
  private readonly labels: ReadonlyMap<string, readonly string[]>[];

  constructor(
    private readonly front: Pick<InferFront, 'infer'>,
    private readonly models: readonly ServedModelConfig[],
    readonly pipelines: readonly ServedPipeline[],
    private readonly planned: Pick<PlannedBudgets, 'of'>,
    private readonly regions: SharedMemoryRegistry,
    private readonly observe: Pick<ControlObserver, 'taskFinished'>,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.labels = pipelines.map((s) => {
      const out = new Map<string, readonly string[]>();
      s.pipeline.steps.forEach((step, k) => {
        const own = modelLabels(models[s.stepModels[k]!]!.signature);
        for (const [name, to] of Object.entries(step.outputMap)) if (own.has(name)) out.set(to, own.get(name)!);
      });
      return out;
    });
  }

  /** The step budgets (ms) pipeline `p`'s next request runs under (src/serving/pipelineChain.ts budgetsInForce). */
  budgets(p: number): readonly number[] {
    const s = this.pipelines[p]!;
    return budgetsInForce(s.pipeline, this.planned.of(s.pipeline.name));
  }

  /** Serves one validated request to pipeline `p`. Resolves once answered; never rejects. */
  async infer(p: number, request: InferRequest, ctx: InferContext): Promise<InferOutcome> {
    const s = this.pipelines[p]!;
    const c = s.endpoint;
    const k = requestBatch(request);
    const outputBytes = (name: string) => {
      const o = c.signature.outputs.find((x) => x.name === name)!;
      return tensorBytes(o.datatype, request.batchDim === false ? o.shape : [k, ...o.shape]);
    };
    const shm = resolveRegions(this.regions, request, outputBytes, ctx.local);
    if (!shm.ok) return { ok: false, status: shm.status, error: shm.error };
    const resolved = shm.value;
    const arrivalMs = ctx.receivedMs ?? this.clock();
    const budgets = this.budgets(p);
    const tensors = new Map<string, Tensor>(resolved.inputs.map((i) => [i.name, i]));
    for (let step = 0; step < s.stepModels.length; step++) {
      const m = s.stepModels[step]!;
      const model = this.models[m]!;
      const inputs = stepInputs(
        s.pipeline,
        step,
        model.signature.inputs.map((t) => t.name),
        tensors,
      );
      if (!inputs.ok) return this.failed(c.name, k, arrivalMs, 500, undefined, inputs.error);
      // The first step is the request read and parsed: its way in is measured, whatever its stamp.
      const stampMs = stepTaskStampMs(arrivalMs, budgets, step, model.sloMs);
      const stamp = step === 0 && stampMs === arrivalMs ? {} : { stampMs };
      const a = await this.front.infer(m, stepRequest(request, inputs.inputs, model), {
        receivedMs: arrivalMs,
        ...stamp,
        wayIn: step === 0,
        local: true,
      });
      const where = `pipeline '${c.name}' step ${step} (model '${model.name}')`;
      if (!a.ok) return this.failed(c.name, k, arrivalMs, a.status, a.reason, `${where}: ${a.error}`);
      // A step request asks no classification: its outputs are the model's own tensors, never BYTES.
      const named = a.response.outputs.map((o): Named<Tensor> => ({ name: o.name, tensor: o as Tensor }));
      const missing = passOutputs(s.pipeline, step, named, tensors);
      if (missing !== undefined)
        return this.failed(c.name, k, arrivalMs, 500, undefined, `${where}: its answer has no output '${missing}'`);
    }
    return this.answer(p, resolved, tensors, arrivalMs, k);
  }

  private answer(
    p: number,
    request: InferRequest,
    tensors: ReadonlyMap<string, Tensor>,
    arrivalMs: number,
    k: number,
  ): InferOutcome {
    const c = this.pipelines[p]!.endpoint;
    const gathered: ResponseOutput[] = request.outputs.map((want) => {
      const t = tensors.get(want.name)!;
      const shape = [...t.shape];
      const region = want.region ? { region: want.region } : {};
      return { name: want.name, datatype: t.datatype, shape, data: t.data, binary: want.binary, ...region };
    });
    const classified = classifyAnswer(gathered, request.outputs, this.labels[p]!, request.batchDim !== false);
    if (!classified.ok) return this.failed(c.name, k, arrivalMs, 500, undefined, classified.error);
    for (const o of classified.outputs) {
      const wrote = o.region ? this.regions.write(o.region, o.data, `output '${o.name}'`) : undefined;
      if (wrote && !wrote.ok) return this.failed(c.name, k, arrivalMs, wrote.status, undefined, wrote.error);
    }
    const answeredMs = this.clock();
    const seconds = (answeredMs - arrivalMs) / 1000;
    const outcome = answeredMs - arrivalMs <= c.sloMs ? 'ok' : 'late';
    for (let i = 0; i < k; i++) this.observe.taskFinished(c.name, outcome, seconds);
    return {
      ok: true,
      response: {
        modelName: c.name,
        modelVersion: c.ensemble.version,
        ...(request.id !== undefined ? { id: request.id } : {}),
        outputs: classified.outputs,
      },
      answeredMs,
    };
  }

  private failed(
    name: string,
    k: number,
    arrivalMs: number,
    status: number,
    reason: TaskErrorReason | undefined,
    error: string,
  ): InferOutcome {
    const answeredMs = this.clock();
    const outcome = reason ? OUTCOME[reason] : 'worker_failed';
    for (let i = 0; i < k; i++) this.observe.taskFinished(name, outcome, (answeredMs - arrivalMs) / 1000);
    return { ok: false, status, ...(reason ? { reason } : {}), error, answeredMs };
  }
}

/** Step `model`'s request: its inputs (the whole request's rows, in its signature's order), all its outputs. */
function stepRequest(request: InferRequest, inputs: readonly Named<Tensor>[], model: ServedModelConfig): InferRequest {
  return {
    inputs: inputs.map(({ name, tensor }): InferInput => ({
      name,
      datatype: tensor.datatype,
      shape: [...tensor.shape],
      encoding: tensor.datatype,
      data: tensor.data,
    })),
    ...(request.batchDim === false ? { batchDim: false as const } : {}),
    outputs: model.signature.outputs.map((o) => ({ name: o.name, binary: true })),
  };
}

// A pipeline request's steps chained (src/serving/pipelineChain.ts, scheduler/pipelineFront.ts): the budgets in
// force and each step task's stamp, tensors passed by name from a step's answer to the next step's inputs, a
// k-sample request k samples at every step, the answer the last step's outputs, and a failing step answering
// with its error naming the step. The step models are a fake front that computes each answer from its request.
import { describe, expect, it } from 'vitest';
import type { ServedModelConfig } from '../../scheduler/control.js';
import type { InferContext, InferOutcome } from '../../scheduler/infer.js';
import type { InferRequest } from '../../scheduler/kserve.js';
import { PipelineFront, PlannedBudgets, type ServedPipeline } from '../../scheduler/pipelineFront.js';
import { SharedMemoryRegistry } from '../../scheduler/sharedMemory.js';
import type { TaskOutcome } from '../../scheduler/observer.js';
import type { RepositoryEnsemble } from '../../src/repository/types.js';
import type { Pipeline } from '../../src/serving/pipeline.js';
import { budgetsInForce, passOutputs, stepInputs, stepTaskStampMs } from '../../src/serving/pipelineChain.js';

const chain: Pipeline = {
  name: 'chain',
  sloMs: 300,
  steps: [
    { model: 'pre', inputMap: { x: 'IN' }, outputMap: { y: 't1' } },
    { model: 'mid', inputMap: { x: 't1' }, outputMap: { y: 't2' } },
    { model: 'post', inputMap: { a: 't2', b: 'IN' }, outputMap: { y: 'OUT' } },
  ],
};

describe('the chain rule', () => {
  it("takes the plan's budgets where they fit the pipeline, else the even split", () => {
    expect(budgetsInForce(chain, undefined)).toEqual([100, 100, 100]);
    expect(budgetsInForce(chain, [50, 150, 100])).toEqual([50, 150, 100]);
    expect(budgetsInForce(chain, [50, 150])).toEqual([100, 100, 100]);
    expect(budgetsInForce(chain, [50, 150, 90])).toEqual([100, 100, 100]);
  });

  it('stamps a step task so that its deadline under its served SLO is the cumulative budget', () => {
    // Even budgets: the stamp is stepStampMs itself.
    expect([0, 1, 2].map((k) => stepTaskStampMs(1000, [100, 100, 100], k, 100))).toEqual([1000, 1100, 1200]);
    // The plan's split: deadlines at 1050, 1200, 1300 under the served (even) SLO of 100 ms.
    const budgets = [50, 150, 100];
    expect([0, 1, 2].map((k) => stepTaskStampMs(1000, budgets, k, 100) + 100)).toEqual([1050, 1200, 1300]);
  });

  it("takes a step's inputs by name and passes its mapped outputs on", () => {
    const tensors = new Map([['IN', 'in']]);
    expect(stepInputs(chain, 0, ['x'], tensors)).toEqual({ ok: true, inputs: [{ name: 'x', tensor: 'in' }] });
    expect(stepInputs(chain, 1, ['x'], tensors)).toEqual({
      ok: false,
      error: "pipeline 'chain' step 1 (mid): input 'x' has no tensor (t1)",
    });
    expect(
      passOutputs(
        chain,
        0,
        [
          { name: 'y', tensor: 'one' },
          { name: 'extra', tensor: 'dropped' },
        ],
        tensors,
      ),
    ).toBe(undefined);
    expect([...tensors.keys()]).toEqual(['IN', 't1']);
    expect(passOutputs(chain, 1, [{ name: 'z', tensor: 'two' }], tensors)).toBe('y');
  });
});

// ---- the scheduler's pipeline front over a fake model front

const spec = (name: string, n: number) => ({ name, datatype: 'FP32' as const, shape: [n] });
const MODELS: ServedModelConfig[] = [
  { name: 'pre', sloMs: 100, signature: { inputs: [spec('x', 2)], outputs: [spec('y', 2)] } },
  { name: 'mid', sloMs: 100, signature: { inputs: [spec('x', 2)], outputs: [spec('y', 2)] } },
  { name: 'post', sloMs: 100, signature: { inputs: [spec('a', 2), spec('b', 2)], outputs: [spec('y', 2)] } },
];
const ENSEMBLE = {
  name: 'chain',
  maxBatchSize: 4,
  signature: { inputs: [spec('IN', 2)], outputs: [spec('OUT', 2)] },
  steps: chain.steps.map((s) => ({ ...s, version: -1 })),
  version: '1',
  versions: ['1'],
  config: {},
} satisfies RepositoryEnsemble;
const SERVED: ServedPipeline = {
  endpoint: { name: 'chain', sloMs: 300, signature: ENSEMBLE.signature, maxBatchSize: 4, ensemble: ENSEMBLE },
  pipeline: chain,
  stepModels: [0, 1, 2],
};

const f32 = (b: Buffer) => Array.from(new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)));
const bytes = (v: readonly number[]) => Buffer.from(Float32Array.from(v).buffer);

/** Step models that add (m + 1) * 10 to their input (post: a + b), each call recorded; `fail` fails one model. */
function fakeFront(fail?: number) {
  const calls: { m: number; request: InferRequest; ctx: InferContext }[] = [];
  const front = {
    infer: (m: number, request: InferRequest, ctx: InferContext): Promise<InferOutcome> => {
      calls.push({ m, request, ctx });
      if (m === fail)
        return Promise.resolve({ ok: false, status: 503, reason: 'slo', error: 'dropped: late', answeredMs: 5 });
      const ins = request.inputs.map((i) => f32(i.data));
      const y = m === 2 ? ins[0]!.map((v, j) => v + ins[1]![j]!) : ins[0]!.map((v) => v + (m + 1) * 10);
      const out = {
        name: 'y',
        datatype: 'FP32' as const,
        shape: request.inputs[0]!.shape,
        data: bytes(y),
        binary: true,
      };
      return Promise.resolve({
        ok: true,
        response: { modelName: MODELS[m]!.name, modelVersion: '1', outputs: [out] },
        answeredMs: 5,
      });
    },
  };
  return { front, calls };
}

function pipelineFront(fail?: number, planned = new PlannedBudgets()) {
  const { front, calls } = fakeFront(fail);
  const finished: [string, TaskOutcome][] = [];
  const observe = { taskFinished: (name: string, outcome: TaskOutcome) => void finished.push([name, outcome]) };
  const p = new PipelineFront(front, MODELS, [SERVED], planned, new SharedMemoryRegistry(), observe, () => 1010);
  return { p, calls, finished };
}

const request = (values: number[], k: number): InferRequest => ({
  id: 'r1',
  inputs: [{ name: 'IN', datatype: 'FP32', shape: [k, 2], encoding: 'FP32', data: bytes(values) }],
  outputs: [{ name: 'OUT', binary: true }],
});

describe('the pipeline front', () => {
  it("runs each step on its model with its stamp, k samples each, and answers the last step's outputs", async () => {
    const { p, calls, finished } = pipelineFront();
    const a = await p.infer(0, request([1, 2, 3, 4, 5, 6], 3), { receivedMs: 1000, local: false });
    expect(a.ok).toBe(true);
    if (!a.ok) return;
    expect(a.response).toMatchObject({ modelName: 'chain', modelVersion: '1', id: 'r1' });
    // pre adds 10, mid 20, post adds the input back: 2 x + 30.
    expect(a.response.outputs.map((o) => [o.name, o.shape])).toEqual([['OUT', [3, 2]]]);
    expect(f32(a.response.outputs[0]!.data)).toEqual([32, 34, 36, 38, 40, 42]);
    // The first step is the request itself (its way in measured): no stamp.
    expect(calls.map((c) => [c.m, c.ctx.receivedMs, c.ctx.stampMs, c.ctx.wayIn])).toEqual([
      [0, 1000, undefined, true],
      [1, 1000, 1100, false],
      [2, 1000, 1200, false],
    ]);
    expect(calls.map((c) => c.request.inputs.map((i) => [i.name, i.shape]))).toEqual([
      [['x', [3, 2]]],
      [['x', [3, 2]]],
      [
        ['a', [3, 2]],
        ['b', [3, 2]],
      ],
    ]);
    expect(calls[2]!.request.outputs).toEqual([{ name: 'y', binary: true }]);
    expect(finished).toEqual([
      ['chain', 'ok'],
      ['chain', 'ok'],
      ['chain', 'ok'],
    ]);
  });

  it('stamps under the split of the deployment in force', async () => {
    const planned = new PlannedBudgets();
    const record = { policy: 'x', ratePerS: [], decideMs: 0, nowIso: '', changed: true };
    planned.decided({ ...record, deployment: { placements: [], pipelineBudgetsMs: { chain: [50, 150, 100] } } });
    const { p, calls } = pipelineFront(undefined, planned);
    expect(p.budgets(0)).toEqual([50, 150, 100]);
    await p.infer(0, request([1, 2], 1), { receivedMs: 1000, local: false });
    expect(calls.map((c) => c.ctx.stampMs)).toEqual([950, 1100, 1200]);
    // The first step's stamp moved with the split: its request's way in is still measured there.
    expect(calls.map((c) => c.ctx.wayIn)).toEqual([true, false, false]);
    planned.decided({ ...record, deployment: { placements: [] } });
    expect(p.budgets(0)).toEqual([100, 100, 100]);
  });

  it('answers a failed step with its error, naming the step, and runs no later step', async () => {
    const { p, calls, finished } = pipelineFront(1);
    const a = await p.infer(0, request([1, 2, 3, 4], 2), { receivedMs: 1000, local: false });
    expect(a).toMatchObject({
      ok: false,
      status: 503,
      reason: 'slo',
      error: "pipeline 'chain' step 1 (model 'mid'): dropped: late",
    });
    expect(calls.map((c) => c.m)).toEqual([0, 1]);
    expect(finished).toEqual([
      ['chain', 'dropped_slo'],
      ['chain', 'dropped_slo'],
    ]);
  });
});

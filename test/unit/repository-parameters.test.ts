// A config.pbtxt with variable input dimensions and inss's own parameters (src/repository/config.ts,
// src/repository/parameters.ts): -1 dims of a pytorch model kept with their longest, refused in an ONNX
// model and in outputs; `max_variable_dim` and `cost_classes` read, and each bad value refused naming it;
// the declared cost reaching the served model as the planner takes it (cli/serve/scheduler.ts).
import { describe, expect, it } from 'vitest';
import { repositoryServed } from '../../cli/serve/scheduler.js';
import { servedCost } from '../../src/model/costDistribution.js';
import { readModelConfig, RepositoryConfigError, repositoryModel } from '../../src/repository/config.js';

const VARIABLE_ONNX =
  '-1 (variable dimensions are served by the pytorch backend only: the ONNX Runtime worker takes fixed shapes)';

function problemsOf(text: string): readonly string[] {
  try {
    readModelConfig(text, 'text', 'text/config.pbtxt');
  } catch (e) {
    expect(e).toBeInstanceOf(RepositoryConfigError);
    return (e as RepositoryConfigError).problems;
  }
  return [];
}

/** A text classifier: token ids and a mask of variable length, its cost declared. */
const TEXT = `name: "text"
backend: "pytorch"
max_batch_size: 8
input [
  { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] },
  { name: "attention_mask" data_type: TYPE_INT64 dims: [ -1 ] }
]
output [ { name: "logits" data_type: TYPE_FP32 dims: [ 4 ] } ]
parameters { key: "max_variable_dim" value: { string_value: "512" } }
parameters { key: "cost_classes" value: { string_value: "16:0.5, 64:0.25 256:0.25" } }
`;

describe('variable dimensions and inss parameters', () => {
  it('reads -1 dims with their longest (max_variable_dim) and the cost classes', () => {
    const c = readModelConfig(TEXT, 'text', 'text/config.pbtxt');
    expect(c.signature.inputs).toEqual([
      { name: 'input_ids', datatype: 'INT64', shape: [-1], maxDim: 512 },
      { name: 'attention_mask', datatype: 'INT64', shape: [-1], maxDim: 512 },
    ]);
    expect(c.signature.outputs).toEqual([{ name: 'logits', datatype: 'FP32', shape: [4] }]);
    expect(c.costClasses).toEqual([
      { relative: 16, weight: 0.5 },
      { relative: 64, weight: 0.25 },
      { relative: 256, weight: 0.25 },
    ]);
    expect((c.config['input'] as { dims: number[] }[]).map((i) => i.dims)).toEqual([[-1], [-1]]);
  });

  it('gives a -1 dim the default longest, 4096, without max_variable_dim', () => {
    const c = readModelConfig(TEXT.replace(/parameters.*\n/g, ''), 'text', 'text/config.pbtxt');
    expect(c.signature.inputs[0]!.maxDim).toBe(4096);
    expect(c.costClasses).toBeUndefined();
  });

  it('refuses -1 in an ONNX model, naming the dim', () => {
    expect(problemsOf(TEXT.replace('backend: "pytorch"', 'backend: "onnxruntime"'))).toEqual([
      `text/config.pbtxt: input[0].dims[0]: ${VARIABLE_ONNX}`,
      `text/config.pbtxt: input[1].dims[0]: ${VARIABLE_ONNX}`,
    ]);
  });

  it.each([
    ['max_variable_dim', '0', 'a positive integer'],
    ['max_variable_dim', '2.5', 'a positive integer'],
    ['cost_classes', '', 'no class'],
    ['cost_classes', '16:0.5 32', 'class 1 "32": expected relative:weight, both positive numbers'],
    ['cost_classes', '16:-1', 'class 0 "16:-1": expected relative:weight'],
  ])('refuses %s %j, naming the parameter', (key, value, why) => {
    const entry = `parameters { key: "${key}" value: { string_value: "${value}" } }`;
    const text = `${TEXT.replace(/parameters.*\n/g, '')}${entry}`;
    const problems = problemsOf(text);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(`text/config.pbtxt: parameters["${key}"].value.string_value: `);
    expect(problems[0]).toContain(why);
  });
});

describe('the declared cost, served', () => {
  const model = (text: string) => {
    const c = readModelConfig(text, 'text', 'text/config.pbtxt');
    return repositoryModel(c, 1, [1], '/models/text/1/model.pt');
  };

  it('reaches the planner as the cost a scenario declares: its distribution and the tail plan', () => {
    const served = repositoryServed(model(TEXT), { batching: 'tail', quantile: 0.99 });
    const want = servedCost(
      [
        { relative: 16, weight: 0.5 },
        { relative: 64, weight: 0.25 },
        { relative: 256, weight: 0.25 },
      ],
      'tail',
      0.99,
    );
    expect(served.cost).toEqual(want);
    expect(served.cost!.plan!.latency[8]).toBeGreaterThan(1);
  });

  it('gives a model without cost_classes no cost', () => {
    const served = repositoryServed(model(TEXT.replace(/parameters.*\n/g, '')), { batching: 'tail', quantile: 0.99 });
    expect(served.cost).toBeUndefined();
  });
});

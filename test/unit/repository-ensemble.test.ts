// An ensemble's config.pbtxt (src/repository/ensemble.ts) as Triton writes it: read into steps with their maps,
// the configuration Triton answers, and every refusal naming its field: fields an ensemble does not take, a
// step model missing, failed or itself an ensemble, a model_version not served, batching the step model cannot
// take, maps naming tensors the model lacks, steps listed out of order (a DAG), dtype and dims mismatches.
import { describe, expect, it } from 'vitest';
import { readModelConfig, RepositoryConfigError, repositoryModel } from '../../src/repository/config.js';
import {
  type EnsembleConfigRead,
  ensemblePipeline,
  ensembleProblems,
  isEnsembleConfig,
  readEnsembleConfig,
} from '../../src/repository/ensemble.js';
import type { RepositoryModel } from '../../src/repository/types.js';

// In the form of Triton's docs/user_guide/architecture.md "Ensemble Models" example.
const ENSEMBLE = `name: "chain"
platform: "ensemble"
max_batch_size: 4
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 2 ] } ]
parameters { key: "slo_ms" value: { string_value: "90" } }
ensemble_scheduling {
  step [
    {
      model_name: "pre"
      model_version: -1
      input_map { key: "x" value: "IN" }
      output_map { key: "y" value: "t1" }
    },
    {
      model_name: "mid"
      model_version: 1
      input_map { key: "x" value: "t1" }
      output_map { key: "y" value: "t2" }
    },
    {
      model_name: "post"
      model_version: -1
      input_map [ { key: "a" value: "t2" }, { key: "b" value: "IN" } ]
      output_map { key: "y" value: "OUT" }
    }
  ]
}
`;

function model(name: string, inputs: [string, number][], output: number, maxBatch = 8, type = 'TYPE_FP32') {
  const ins = inputs.map(([n, d]) => `{ name: "${n}" data_type: ${type} dims: [ ${d} ] }`).join(', ');
  const text =
    `platform: "onnxruntime_onnx"\nmax_batch_size: ${maxBatch}\ninput [ ${ins} ]\n` +
    `output [ { name: "y" data_type: ${type} dims: [ ${output} ] } ]\n`;
  return repositoryModel(readModelConfig(text, name, `${name}/config.pbtxt`), 1, [1], `/r/${name}/1/model.onnx`);
}

const MODELS: RepositoryModel[] = [
  model('pre', [['x', 4]], 6),
  model('mid', [['x', 6]], 3),
  model(
    'post',
    [
      ['a', 3],
      ['b', 4],
    ],
    2,
  ),
];

function ctx(models: RepositoryModel[] = MODELS, ensembles: string[] = [], failed: [string, string][] = []) {
  return { models: new Map(models.map((m) => [m.name, m])), ensembles: new Set(ensembles), failed: new Map(failed) };
}

function read(text: string): EnsembleConfigRead {
  return readEnsembleConfig(text, 'chain', 'chain/config.pbtxt');
}

function refusal(text: string): string {
  try {
    read(text);
  } catch (e) {
    expect(e).toBeInstanceOf(RepositoryConfigError);
    return (e as Error).message;
  }
  throw new Error('accepted');
}

describe('an ensemble configuration', () => {
  it('reads the steps, their maps, the SLO and the batch limit, and answers as Triton writes it', () => {
    expect(isEnsembleConfig(ENSEMBLE)).toBe(true);
    expect(isEnsembleConfig('platform: "onnxruntime_onnx"')).toBe(false);
    expect(isEnsembleConfig('platform: {')).toBe(false);
    const e = read(ENSEMBLE);
    expect(e.sloMs).toBe(90);
    expect(e.maxBatchSize).toBe(4);
    expect(e.signature.inputs).toEqual([{ name: 'IN', datatype: 'FP32', shape: [4] }]);
    expect(e.steps.map((s) => [s.model, s.version])).toEqual([
      ['pre', -1],
      ['mid', 1],
      ['post', -1],
    ]);
    expect(e.steps[2]!.inputMap).toEqual({ a: 't2', b: 'IN' });
    expect(e.config).toMatchObject({
      name: 'chain',
      platform: 'ensemble',
      max_batch_size: 4,
      ensemble_scheduling: {
        step: [
          { model_name: 'pre', model_version: -1, input_map: { x: 'IN' }, output_map: { y: 't1' } },
          { model_name: 'mid', model_version: 1 },
          { model_name: 'post', input_map: { a: 't2', b: 'IN' }, output_map: { y: 'OUT' } },
        ],
      },
      parameters: { slo_ms: { string_value: '90' } },
    });
    expect(ensembleProblems(e, ctx())).toEqual([]);
    expect(ensemblePipeline(e, 90).steps.map((s) => s.model)).toEqual(['pre', 'mid', 'post']);
  });

  it('refuses fields an ensemble does not take, an empty step list and a step without a model', () => {
    expect(refusal(ENSEMBLE.replace('max_batch_size: 4', 'max_batch_size: 4\ndynamic_batching { }'))).toMatch(
      /chain\/config.pbtxt: dynamic_batching: not taken by an ensemble/,
    );
    expect(refusal(ENSEMBLE.replace('max_batch_size: 4', 'max_batch_size: 4\nbackend: "onnxruntime"'))).toMatch(
      /backend: not taken by an ensemble/,
    );
    expect(refusal(ENSEMBLE.replace(/ensemble_scheduling \{[^]*$/, ''))).toMatch(/ensemble_scheduling.step: missing/);
    expect(refusal(ENSEMBLE.replace('model_name: "mid"', ''))).toMatch(
      /ensemble_scheduling.step\[1\].model_name: missing/,
    );
    expect(refusal(ENSEMBLE.replace('model_version: 1', 'model_version: 0'))).toMatch(/step\[1\].model_version: 0/);
    expect(refusal(ENSEMBLE.replace('value: "90"', 'value: "soon"'))).toMatch(/parameters\["slo_ms"\]/);
    expect(refusal(ENSEMBLE.replace('"slo_ms"', '"cost_classes"'))).toMatch(
      /parameters\["cost_classes"\]: a step model's, not an ensemble's/,
    );
    expect(refusal(ENSEMBLE.replace('key: "y" value: "t1"', 'key: "y" value: "t1" value: "t9"'))).toMatch(
      /step\[0\].output_map\[0\].value: given more than once/,
    );
  });

  it('refuses a step model that is missing, failed, or an ensemble, and a version not served', () => {
    const e = read(ENSEMBLE);
    expect(ensembleProblems(e, ctx(MODELS.slice(1)))).toEqual([
      'ensemble_scheduling.step[0].model_name: "pre" is not in the repository',
    ]);
    expect(ensembleProblems(e, ctx(MODELS.slice(1), [], [['pre', 'input[0].dims[0]: -1']]))[0]).toMatch(
      /step\[0\].model_name: "pre" failed to load: input\[0\]/,
    );
    expect(ensembleProblems(e, ctx(MODELS.slice(1), ['pre']))[0]).toMatch(/"pre" is an ensemble \(nested ensembles/);
    const v2 = read(ENSEMBLE.replace('model_version: 1', 'model_version: 2'));
    expect(ensembleProblems(v2, ctx())).toEqual([
      "ensemble_scheduling.step[1].model_version: 2 (inss serves one version of 'mid', 1: give -1 or 1)",
    ]);
  });

  it('refuses batching a step model cannot take', () => {
    const small = [model('pre', [['x', 4]], 6, 2), ...MODELS.slice(1)];
    expect(ensembleProblems(read(ENSEMBLE), ctx(small))).toEqual([
      "max_batch_size: 4 (step 0, model 'pre', takes batches of at most 2)",
    ]);
    const none = read(ENSEMBLE.replace('max_batch_size: 4', 'max_batch_size: 0'));
    expect(ensembleProblems(none, ctx())[0]).toMatch(/max_batch_size: 0 \(step 0, model 'pre', has a batch dimension/);
  });

  it('refuses maps naming tensors the step model lacks, and an input left unread', () => {
    const wrong = read(ENSEMBLE.replace('key: "a" value: "t2"', 'key: "c" value: "t2"'));
    expect(ensembleProblems(wrong, ctx())).toEqual([
      `ensemble_scheduling.step[2].input_map["c"]: model 'post' has no input 'c' (inputs: a, b)`,
      "ensemble_scheduling.step[2].input_map: model 'post' input 'a' is read from no tensor",
    ]);
    const out = read(ENSEMBLE.replace('key: "y" value: "t2"', 'key: "z" value: "t2"'));
    expect(ensembleProblems(out, ctx())[0]).toBe(
      `ensemble_scheduling.step[1].output_map["z"]: model 'mid' has no output 'z' (outputs: y)`,
    );
  });

  it('refuses steps listed in another order than they run (a DAG Triton would order itself)', () => {
    const steps = ENSEMBLE.split(/\n {4}\},?\n/);
    // pre, post, mid: post reads t2 before mid writes it.
    const reordered = read(`${steps[0]}\n    },\n${steps[2]}\n    },\n${steps[1]}\n    }\n${steps[3]}`);
    expect(reordered.steps.map((s) => s.model)).toEqual(['pre', 'post', 'mid']);
    expect(ensembleProblems(reordered, ctx())).toEqual([
      "ensemble_scheduling.step: pipeline 'chain' step 1 (post): input 'a' reads 't2', which is neither a pipeline " +
        'input nor an output of an earlier step (inss runs the steps in the order listed: list each step after the ' +
        'steps whose outputs it reads)',
    ]);
  });

  it("refuses a tensor passed on in another datatype or dims than its reader's", () => {
    const wide = [MODELS[0]!, model('mid', [['x', 5]], 3), MODELS[2]!];
    expect(ensembleProblems(read(ENSEMBLE), ctx(wide))).toEqual([
      `ensemble_scheduling.step[1].input_map["x"]: tensor 't1' has dims [6], not [5] (model 'mid' input 'x')`,
    ]);
    const ints = [MODELS[0]!, model('mid', [['x', 6]], 3, 8, 'TYPE_INT32'), MODELS[2]!];
    expect(ensembleProblems(read(ENSEMBLE), ctx(ints))[0]).toMatch(/tensor 't1' has datatype FP32, not INT32/);
    const output = read(ENSEMBLE.replace('dims: [ 2 ]', 'dims: [ 3 ]'));
    expect(ensembleProblems(output, ctx())).toEqual([
      "output[0]: tensor 'OUT' has dims [2], not [3] as its step writes it",
    ]);
  });
});

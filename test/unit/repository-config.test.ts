// config.pbtxt read against Triton's ModelConfig (src/repository/config.ts): real Triton configurations
// as their repositories ship them, every refusal naming its field, unknown fields, the name rule, the
// JSON Triton answers, and which versions a policy serves.
import { describe, expect, it } from 'vitest';
import { repositoryWorkerSignature } from '../../cli/serve/workers.js';
import {
  policyVersions,
  readModelConfig,
  RepositoryConfigError,
  repositoryModel,
} from '../../src/repository/config.js';

const VARIABLE_OUTPUT = "-1 (an output's dims are fixed: each request's rows are cut from the batch's by their size)";

// triton-inference-server/server docs/examples/model_repository/densenet_onnx/config.pbtxt, verbatim.
const DENSENET_ONNX = `name: "densenet_onnx"
platform: "onnxruntime_onnx"
max_batch_size : 1
input [
  {
    name: "data_0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
  }
]
output [
  {
    name: "fc6_1"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    reshape { shape: [ 1000, 1, 1 ] }
    label_filename: "densenet_labels.txt"
  }
]`;

// triton-inference-server/pytorch_backend model_repository/dict_model/config.pbtxt, verbatim.
const DICT_MODEL = `name: "dict_model"
platform: "pytorch_libtorch"
max_batch_size: 8

input [
  {
    name: "INPUT__0"
    data_type: TYPE_FP32
    dims: [ 10 ]
  }
]

output [
  {
    name: "logits"
    data_type: TYPE_FP32
    dims: [ 20 ]
  },
  {
    name: "embeddings"
    data_type: TYPE_FP32
    dims: [ 5 ]
  }
]
`;

// triton-inference-server/pytorch_backend examples/warmup_with_load_api/model_repository/model-v1/config.pbtxt.
const MODEL_V1 = `name: "model-v1"
backend: "pytorch"
max_batch_size: 1
input [
  {
    name: "x"
    data_type: TYPE_FP32
    dims: [ -1, 186 ]
  },
  {
    name: "mask"
    data_type: TYPE_INT64
    dims: [ -1 ]
  }
]
output [
  {
    name: "output"
    data_type: TYPE_FP32
    dims: [ -1 ]
  }
]`;

/** A configuration with every field inss reads and several it passes through. */
const FULL = `
name: "ranker"
backend: "onnxruntime"
max_batch_size: 16
version_policy: { latest: { num_versions: 2 } }
input [
  { name: "ids" data_type: TYPE_INT64 dims: [ 32 ] },
  { name: "image" data_type: TYPE_UINT8 format: FORMAT_NHWC dims: [ 64, 64, 3 ] optional: false }
]
output { name: "score" data_type: TYPE_FP16 dims: [ 4 ] label_filename: "labels.txt" }
output { name: "flag" data_type: TYPE_BOOL dims: 1 }
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 50000 max_queue_size: 64 }
}
instance_group [ { count: 2 kind: KIND_GPU gpus: [ 0 ] } ]
parameters { key: "slo_ms" value: { string_value: "40" } }
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
optimization { execution_accelerators { gpu_execution_accelerator: [ { name: "tensorrt" } ] } }
model_warmup [ { name: "w" batch_size: 1
  inputs { key: "ids" value: { data_type: TYPE_INT64 dims: [ 32 ] zero_data: true } } } ]
`;

function problemsOf(text: string, dir = 'm'): readonly string[] {
  try {
    readModelConfig(text, dir, `${dir}/config.pbtxt`);
  } catch (e) {
    expect(e).toBeInstanceOf(RepositoryConfigError);
    return (e as RepositoryConfigError).problems;
  }
  throw new Error('accepted');
}

/** A valid configuration (max_batch_size 4 unless `extra` gives it), and `extra` on its fifth line. */
const MINIMAL = (extra: string) =>
  `platform: "onnxruntime_onnx"\n${extra.includes('max_batch_size') ? '' : 'max_batch_size: 4'}\n` +
  `input { name: "x" data_type: TYPE_FP32 dims: [ 4 ] }\n` +
  `output { name: "y" data_type: TYPE_FP32 dims: [ 2 ] }\n${extra}`;

describe("Triton's own configurations", () => {
  it('serves the pytorch backend example as written', () => {
    const c = readModelConfig(DICT_MODEL, 'dict_model', 'dict_model/config.pbtxt');
    expect(c).toMatchObject({
      name: 'dict_model',
      backend: 'pytorch',
      maxBatchSize: 8,
      modelFilename: 'model.pt',
      versionPolicy: { kind: 'latest', numVersions: 1 },
      signature: {
        inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [10] }],
        outputs: [
          { name: 'logits', datatype: 'FP32', shape: [20] },
          { name: 'embeddings', datatype: 'FP32', shape: [5] },
        ],
      },
    });
    expect(c.config).toEqual({
      name: 'dict_model',
      platform: 'pytorch_libtorch',
      backend: 'pytorch',
      version_policy: { latest: { num_versions: 1 } },
      max_batch_size: 8,
      input: [
        {
          name: 'INPUT__0',
          data_type: 'TYPE_FP32',
          format: 'FORMAT_NONE',
          dims: [10],
          is_shape_tensor: false,
          allow_ragged_batch: false,
          optional: false,
        },
      ],
      output: [
        { name: 'logits', data_type: 'TYPE_FP32', dims: [20], label_filename: '', is_shape_tensor: false },
        { name: 'embeddings', data_type: 'TYPE_FP32', dims: [5], label_filename: '', is_shape_tensor: false },
      ],
      default_model_filename: 'model.pt',
      parameters: {},
    });
  });

  it("refuses densenet_onnx's output reshape, naming it, and serves it without", () => {
    expect(problemsOf(DENSENET_ONNX, 'densenet_onnx')).toEqual([
      'densenet_onnx/config.pbtxt: output[0].reshape: reshaping a tensor is not supported',
    ]);
    const c = readModelConfig(
      DENSENET_ONNX.replace('reshape { shape: [ 1000, 1, 1 ] }', ''),
      'densenet_onnx',
      'densenet_onnx/config.pbtxt',
    );
    expect(c.backend).toBe('onnxruntime');
    expect(c.labelFiles).toEqual(['densenet_labels.txt']);
    expect((c.config.input as { format: string }[])[0]!.format).toBe('FORMAT_NCHW');
  });

  it('takes variable input dimensions of a pytorch model; refuses them in an output, each named', () => {
    expect(problemsOf(MODEL_V1, 'model-v1')).toEqual([`model-v1/config.pbtxt: output[0].dims[0]: ${VARIABLE_OUTPUT}`]);
  });
});

describe('readModelConfig', () => {
  it('reads every field inss honours and passes the others through', () => {
    const c = readModelConfig(FULL, 'ranker', 'ranker/config.pbtxt');
    expect(c).toMatchObject({
      backend: 'onnxruntime',
      maxBatchSize: 16,
      sloMs: 40,
      dynamicBatching: { preferredBatchSize: [4, 8], maxQueueDelayMicroseconds: 100 },
      queuePolicy: { timeoutAction: 'reject', timeoutMs: 50, maxQueueSize: 64 },
      versionPolicy: { kind: 'latest', numVersions: 2 },
      labelFiles: ['labels.txt'],
      signature: {
        inputs: [
          { name: 'ids', datatype: 'INT64', shape: [32] },
          { name: 'image', datatype: 'UINT8', shape: [64, 64, 3] },
        ],
        outputs: [
          { name: 'score', datatype: 'FP16', shape: [4] },
          { name: 'flag', datatype: 'BOOL', shape: [1] },
        ],
      },
    });
    expect(c.config).toMatchObject({
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      version_policy: { latest: { num_versions: 2 } },
      dynamic_batching: {
        preferred_batch_size: [4, 8],
        max_queue_delay_microseconds: 100,
        preserve_ordering: false,
        priority_levels: 0,
        default_priority_level: 0,
        default_queue_policy: {
          timeout_action: 'REJECT',
          default_timeout_microseconds: 50000,
          allow_timeout_override: false,
          max_queue_size: 64,
        },
      },
      instance_group: [{ count: 2, kind: 'KIND_GPU', gpus: [0] }],
      parameters: { slo_ms: { string_value: '40' }, intra_op_thread_count: { string_value: '1' } },
      optimization: { execution_accelerators: { gpu_execution_accelerator: [{ name: 'tensorrt' }] } },
      model_warmup: [
        { name: 'w', batch_size: 1, inputs: { ids: { data_type: 'TYPE_INT64', dims: [32], zero_data: true } } },
      ],
      default_model_filename: 'model.onnx',
    });
  });

  it('defaults as Triton does: max_batch_size 0, the latest version, the backend from the platform', () => {
    const c = readModelConfig(
      'platform: "onnxruntime_onnx" input { name: "x" data_type: TYPE_INT32 dims: 3 } output { name: "y" ' +
        'data_type: TYPE_INT32 dims: 3 }',
      'plain',
      'plain/config.pbtxt',
    );
    expect(c.maxBatchSize).toBe(0);
    expect(c.config).toMatchObject({ name: 'plain', max_batch_size: 0, backend: 'onnxruntime' });
    expect(c.sloMs).toBeUndefined();
    expect(c.dynamicBatching).toBeUndefined();
  });

  it('takes default_model_filename and every version policy', () => {
    expect(readModelConfig(MINIMAL('default_model_filename: "net.onnx"'), 'm', 's').modelFilename).toBe('net.onnx');
    expect(readModelConfig(MINIMAL('version_policy { all { } }'), 'm', 's').versionPolicy).toEqual({ kind: 'all' });
    const specific = readModelConfig(MINIMAL('version_policy: { specific: { versions: [1, 3] } }'), 'm', 's');
    expect(specific.versionPolicy).toEqual({ kind: 'specific', versions: [1, 3] });
    expect(specific.config.version_policy).toEqual({ specific: { versions: [1, 3] } });
  });

  it.each([
    ['name: "other"', 'name: "other" (must be the model\'s directory name, "m")'],
    ['sequence_batching { }', 'sequence_batching: sequence batching (stateful models) is not supported'],
    ['ensemble_scheduling { }', 'ensemble_scheduling: ensemble_scheduling is read with platform "ensemble" only'],
    ['batch_input { }', 'batch_input: batch inputs, which the backend adds from the whole batch, are not supported'],
    ['model_transaction_policy { decoupled: true }', 'model_transaction_policy.decoupled: true (decoupled'],
    ['max_batch_size: -1', 'max_batch_size: -1 (line 5; expected an integer >= 0)'],
    ['dynamic_batching { preferred_batch_size: [ 2, 9 ] }', 'dynamic_batching.preferred_batch_size[1]: 9'],
    ['dynamic_batching { priority_levels: 3 }', 'dynamic_batching.priority_levels: 3 (request priorities'],
    ['parameters { key: "slo_ms" value: { string_value: "fast" } }', 'parameters["slo_ms"].value.string_value: "fast"'],
    ['version_policy { latest { num_versions: 0 } }', 'version_policy.latest.num_versions: 0'],
    ['version_policy { all { } latest { } }', 'version_policy: give one of latest, all, specific'],
    ['default_model_filename: "../x.onnx"', 'default_model_filename: "../x.onnx" (a file name inside'],
    ['colour: "blue"', 'colour: unknown field (line 5; ModelConfig has backend, batch_input'],
    ['dynamic_batching { max_delay: 1 }', 'dynamic_batching.max_delay: unknown field (line 5; ModelDynamicBatching'],
  ])('refuses %s, naming the field', (extra, problem) => {
    const problems = problemsOf(MINIMAL(extra));
    expect(problems.some((p) => p.startsWith(`m/config.pbtxt: ${problem}`))).toBe(true);
  });

  it.each([
    ['data_type: TYPE_STRING dims: [ 1 ]', 'input[0].data_type: TYPE_STRING (BYTES tensors are not supported yet)'],
    ['data_type: TYPE_BF16 dims: [ 1 ]', 'input[0].data_type: TYPE_BF16 (BF16 tensors are not supported yet)'],
    ['data_type: TYPE_FP32 dims: [ 2, 0 ]', 'input[0].dims[1]: 0 (line 3; expected an integer >= 1)'],
    ['data_type: TYPE_FP32', 'input[0].dims: missing (every input gives its dims)'],
    ['dims: [ 4 ]', 'input[0].data_type: missing (a TYPE_* datatype)'],
    ['data_type: FP32 dims: [ 4 ]', 'input[0].data_type: FP32 (line 3; expected one of TYPE_BOOL'],
    ['data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 2, 2 ] }', 'input[0].reshape: reshaping a tensor is'],
    ['data_type: TYPE_FP32 dims: [ 4 ] optional: true', 'input[0].optional: true (optional inputs are not'],
    ['data_type: TYPE_FP32 dims: [ 4 ] is_shape_tensor: true', 'input[0].is_shape_tensor: true (shape tensors'],
    ['data_type: TYPE_FP32 dims: [ 4 ] allow_ragged_batch: true', 'input[0].allow_ragged_batch: true (ragged'],
    ['data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 4 ]', 'input[0].format: FORMAT_NCHW (an image format takes 3'],
    ['data_type: TYPE_FP32 dims: [ 4 ] shape: [ 4 ]', 'input[0].shape: unknown field (line 3; ModelInput has'],
  ])('refuses the input %s, naming the field', (io, problem) => {
    const problems = problemsOf(`platform: "onnxruntime_onnx"\nmax_batch_size: 4\ninput { name: "x" ${io} }
output { name: "y" data_type: TYPE_FP32 dims: [ 2 ] }`);
    expect(problems.some((p) => p.startsWith(`m/config.pbtxt: ${problem}`))).toBe(true);
  });

  it.each([
    ['platform: "tensorrt_plan"', 'platform: "tensorrt_plan" (inss runs onnxruntime_onnx (backend onnxruntime)'],
    ['backend: "python"', 'backend: "python" (inss runs'],
    ['', 'platform: missing, and no backend either'],
    ['platform: "onnxruntime_onnx" backend: "pytorch"', 'backend: "pytorch" (platform onnxruntime_onnx is backend'],
  ])('refuses the platform/backend %j', (given, problem) => {
    const problems = problemsOf(`${given}\ninput { name: "x" data_type: TYPE_FP32 dims: 1 }
output { name: "y" data_type: TYPE_FP32 dims: 1 }`);
    expect(problems.some((p) => p.startsWith(`m/config.pbtxt: ${problem}`))).toBe(true);
  });

  it('lists every problem at once, and reports a syntax error with its line and column', () => {
    const problems = problemsOf(
      'platform: "onnxruntime_onnx"\ninput { name: "x" data_type: TYPE_STRING dims: -1 }\noutput { name: "x" }',
    );
    expect(problems).toEqual([
      'm/config.pbtxt: input[0].data_type: TYPE_STRING (BYTES tensors are not supported yet)',
      'm/config.pbtxt: input[0].dims[0]: -1 (variable dimensions are served by the pytorch backend only: the ' +
        'ONNX Runtime worker takes fixed shapes)',
      'm/config.pbtxt: output[0].data_type: missing (a TYPE_* datatype)',
      'm/config.pbtxt: output[0].dims: missing (every output gives its dims)',
    ]);
    expect(problemsOf('platform: "onnxruntime_onnx"\ninput {\n  name "x" }')).toEqual([
      "m/config.pbtxt:3:8: expected ':' or '{' after 'name', found the string \"x\"",
    ]);
  });

  it('refuses an input named twice and a singular field given twice', () => {
    const problems = problemsOf(`platform: "onnxruntime_onnx" max_batch_size: 1 max_batch_size: 2
input { name: "x" data_type: TYPE_FP32 dims: 1 } input { name: "x" data_type: TYPE_FP32 dims: 1 }
output { name: "y" data_type: TYPE_FP32 dims: 1 }`);
    expect(problems).toEqual([
      'm/config.pbtxt: max_batch_size: given more than once (line 1; it is not repeated)',
      'm/config.pbtxt: input[1].name: "x" given twice',
    ]);
  });
});

describe('policyVersions and repositoryModel', () => {
  it('picks the versions a policy serves from those present', () => {
    expect(policyVersions({ kind: 'latest', numVersions: 1 }, [1, 3, 2])).toEqual({ versions: [3] });
    expect(policyVersions({ kind: 'latest', numVersions: 2 }, [1, 3, 2])).toEqual({ versions: [2, 3] });
    expect(policyVersions({ kind: 'all' }, [2, 1])).toEqual({ versions: [1, 2] });
    expect(policyVersions({ kind: 'specific', versions: [1] }, [1, 2])).toEqual({ versions: [1] });
    expect(policyVersions({ kind: 'specific', versions: [1, 4] }, [1, 2])).toEqual({ missing: [4] });
  });

  it('builds the RepositoryModel the scheduler and agents share', () => {
    const c = readModelConfig(FULL, 'ranker', 'ranker/config.pbtxt');
    const r = repositoryModel(c, 3, [2, 3], '/repo/ranker/3/model.onnx');
    expect(r).toMatchObject({ name: 'ranker', version: '3', versions: ['2', '3'], file: '/repo/ranker/3/model.onnx' });
    expect(r.config).toBe(c.config);
  });

  it("gives a worker the model's tensors in order and whether it takes a batch dimension", () => {
    const ranker = repositoryModel(readModelConfig(FULL, 'ranker', 's'), 1, [1], '/m.onnx');
    expect(repositoryWorkerSignature(ranker)).toEqual({
      inputs: [
        { name: 'ids', datatype: 'INT64', shape: [32] },
        { name: 'image', datatype: 'UINT8', shape: [64, 64, 3] },
      ],
      outputs: [
        { name: 'score', datatype: 'FP16', shape: [4] },
        { name: 'flag', datatype: 'BOOL', shape: [1] },
      ],
      batchDim: true,
    });
    const plain = readModelConfig(MINIMAL('max_batch_size: 0'), 'm', 's');
    expect(repositoryWorkerSignature(repositoryModel(plain, 1, [1], '/m.onnx')).batchDim).toBe(false);
  });
});

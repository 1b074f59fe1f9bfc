// The messages of Triton's model_config.proto that a config.pbtxt may hold, as inss reads them: each
// message's fields (so that an unknown one is refused by name), the fields inss refuses and why, and
// those it passes through unread. What each means for inss: docs/model-repository.md. Pure data.
import type { Arity } from './fields.js';

/** ModelConfig's fields. Those inss refuses are listed too, so that they are refused with a reason. */
export const MODEL_CONFIG: Readonly<Record<string, Arity>> = {
  name: 'one',
  platform: 'one',
  backend: 'one',
  runtime: 'one',
  version_policy: 'one',
  max_batch_size: 'one',
  input: 'many',
  output: 'many',
  batch_input: 'many',
  batch_output: 'many',
  optimization: 'one',
  dynamic_batching: 'one',
  sequence_batching: 'one',
  ensemble_scheduling: 'one',
  instance_group: 'many',
  default_model_filename: 'one',
  cc_model_filenames: 'many',
  metric_tags: 'many',
  parameters: 'many',
  model_warmup: 'many',
  model_operations: 'one',
  model_transaction_policy: 'one',
  model_repository_agents: 'one',
  response_cache: 'one',
  model_metrics: 'one',
};

/** Fields inss refuses outright, and why. */
export const REFUSED: Readonly<Record<string, string>> = {
  batch_input: 'batch inputs, which the backend adds from the whole batch, are not supported',
  batch_output: 'batch outputs are not supported',
  sequence_batching: 'sequence batching (stateful models) is not supported',
  ensemble_scheduling: 'ensemble_scheduling is read with platform "ensemble" only (an ensemble runs no model file)',
  model_operations: 'custom operation libraries are not loaded',
  model_repository_agents: 'repository agents (which change the model files at load) are not run',
};

/** Fields inss reads no meaning from; they pass through to the configuration as loaded (docs/model-repository.md). */
export const PASSED_THROUGH = [
  'runtime',
  'optimization',
  'instance_group',
  'cc_model_filenames',
  'metric_tags',
  'model_warmup',
  'response_cache',
  'model_metrics',
] as const;

export const INPUT: Readonly<Record<string, Arity>> = {
  name: 'one',
  data_type: 'one',
  format: 'one',
  dims: 'many',
  reshape: 'one',
  is_shape_tensor: 'one',
  allow_ragged_batch: 'one',
  optional: 'one',
  is_non_linear_format_io: 'one',
};
export const OUTPUT: Readonly<Record<string, Arity>> = {
  name: 'one',
  data_type: 'one',
  dims: 'many',
  reshape: 'one',
  label_filename: 'one',
  is_shape_tensor: 'one',
  is_non_linear_format_io: 'one',
};
/** Input and output flags inss cannot honour when true, and why. */
export const REFUSED_FLAGS: Readonly<Record<string, string>> = {
  is_shape_tensor: 'shape tensors are not supported',
  allow_ragged_batch: 'ragged batches are not supported',
  optional: 'optional inputs are not supported: every request carries every input',
  is_non_linear_format_io: 'non-linear IO formats (TensorRT only) are not supported',
};

export const DATATYPES = [
  'TYPE_BOOL',
  'TYPE_UINT8',
  'TYPE_UINT16',
  'TYPE_UINT32',
  'TYPE_UINT64',
  'TYPE_INT8',
  'TYPE_INT16',
  'TYPE_INT32',
  'TYPE_INT64',
  'TYPE_FP16',
  'TYPE_FP32',
  'TYPE_FP64',
  'TYPE_STRING',
  'TYPE_BF16',
  'TYPE_INVALID',
] as const;
export const UNSUPPORTED_TYPES: Readonly<Record<string, string>> = {
  TYPE_STRING: 'BYTES tensors are not supported yet',
  TYPE_BF16: 'BF16 tensors are not supported yet',
  TYPE_INVALID: 'not a datatype',
};
export const FORMATS = ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW'] as const;

export const QUEUE_POLICY: Readonly<Record<string, Arity>> = {
  timeout_action: 'one',
  default_timeout_microseconds: 'one',
  allow_timeout_override: 'one',
  max_queue_size: 'one',
};

// GET /v2 and GET /v2/models/{name}: what the server and each model say of themselves.
import { inputForms, type ModelSignature, type TensorSpec } from '../../src/protocol/tensor.js';
import { PLATFORM_OF } from '../../src/repository/types.js';
import { ENSEMBLE_PLATFORM } from '../../src/repository/ensemble.js';
import type { ServedModelConfig } from '../control.js';
import { MODEL_VERSION } from '../metricsTypes.js';
import type { MetadataForm, MetadataTensor, ModelMetadata, ServerMetadata } from './types.js';

/**
 * GET /v2. Lists only the extensions inss implements: binary tensor data and classification here
 * (src/serving/classification.ts computes the classes); statistics, model
 * configuration and the model repository (index only; load and unload are refused) in
 * scheduler/triton.ts; system shared memory in scheduler/sharedMemory.ts.
 */
export function serverMetadata(version: string): ServerMetadata {
  return {
    name: 'inss',
    version,
    extensions: [
      'binary_tensor_data',
      'classification',
      'statistics',
      'model_configuration',
      'model_repository',
      'system_shared_memory',
    ],
  };
}

/**
 * Every input's accepted forms by input name, shapes with the batch dimension -1 (metadata and Triton's
 * model config); without it for a model that takes none (max_batch_size 0).
 */
export function inputFormsByName(signature: ModelSignature, batchDim = true): Record<string, MetadataForm[]> {
  const lead = batchDim ? [-1] : [];
  return Object.fromEntries(
    signature.inputs.map((s) => [
      s.name,
      inputForms(s).map((f) => ({ datatype: f.datatype, shape: [...lead, ...f.shape], content: f.content })),
    ]),
  );
}

/**
 * GET /v2/models/{name}. Shapes carry the batch dimension as -1 (a request sends 1), unless `batchDim`
 * is false (a model with max_batch_size 0: its shapes are exactly its dims, as Triton reports them). `inputs` lists
 * each input in the model's own datatype; `parameters` are inss's additions: `slo_ms` (the model's
 * latency SLO) and `input_forms` (each input's accepted datatypes and shapes).
 */
export function modelMetadata(model: {
  name: string;
  signature: ModelSignature;
  sloMs: number;
  versions?: string[];
  platform?: string;
  batchDim?: boolean;
}): ModelMetadata {
  const lead = model.batchDim === false ? [] : [-1];
  const tensor = (s: TensorSpec): MetadataTensor => ({
    name: s.name,
    datatype: s.datatype,
    shape: [...lead, ...s.shape],
  });
  return {
    name: model.name,
    ...(model.versions !== undefined ? { versions: model.versions } : {}),
    platform: model.platform ?? 'inss',
    inputs: model.signature.inputs.map(tensor),
    outputs: model.signature.outputs.map(tensor),
    parameters: { slo_ms: model.sloMs, input_forms: inputFormsByName(model.signature, model.batchDim !== false) },
  };
}

/**
 * The metadata of a served model: a repository model's platform (onnxruntime_onnx, pytorch_libtorch; `ensemble`)
 * and the one version inss serves of it; a scenario's model is platform `inss`, version 1.
 */
export function servedModelMetadata(c: ServedModelConfig): ModelMetadata {
  const r = c.repository;
  const e = c.ensemble;
  return modelMetadata({
    name: c.name,
    signature: c.signature,
    sloMs: c.sloMs,
    versions: [r?.version ?? e?.version ?? MODEL_VERSION],
    ...(r ? { platform: PLATFORM_OF[r.backend], batchDim: r.maxBatchSize > 0 } : {}),
    ...(e ? { platform: ENSEMBLE_PLATFORM, batchDim: e.maxBatchSize > 0 } : {}),
  });
}

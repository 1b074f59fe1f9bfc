// Triton's HTTP protocol surface beyond inference, registered on the scheduler's Fastify app with one
// call (registerTriton, from scheduler/service.ts):
// - the statistics extension: GET /v2/models/stats, /v2/models/{name}[/versions/{v}]/stats, from the
//   scheduler's own counters (scheduler/metrics.ts);
// - the model configuration extension: GET /v2/models/{name}[/versions/{v}]/config: a repository
//   model's configuration as loaded (docs/model-repository.md); for a scenario's model, its inputs
//   (image inputs FORMAT_NCHW), outputs (with their label file), max batch, dynamic batching, and
//   inss's SLO, shares and batch sizes in force as parameters;
// - the model repository extension, read-only: POST /v2/repository/index lists the served models and
//   the repository's models that failed to load;
//   POST /v2/repository/models/{name}/load|unload are refused (403): the policy places models;
// - HTTP compression: request bodies with Content-Encoding gzip or deflate are decompressed before any
//   route reads them (the decompressed size is held to the body limit: a zip bomb gets 413, not the
//   memory), and inference answers (only those, as Triton: compressedRoute) are compressed when
//   Accept-Encoding asks for gzip or deflate;
// - unknownModelHook: an infer route naming a model that is not served is a 404 before its body is read.
// Formats follow Triton's protocol docs (triton-inference-server/server docs/protocol/
// extension_statistics.md, extension_model_configuration.md, extension_model_repository.md) and what
// tritonclient.http's get_inference_statistics, get_model_config, get_model_repository_index and infer
// (request/response_compression_algorithm) send and read. What maps and what does not: docs/serving.md.
//
// The pieces: scheduler/triton/model.ts (the JSON of statistics, configuration and the index, pure),
// scheduler/triton/compression.ts and scheduler/triton/routes.ts. This file is their public surface.
export type {
  ConfigInput,
  ConfigOutput,
  IndexEntry,
  ModelConfigAnswer,
  StatDuration,
  TritonModelConfig,
  TritonModelStat,
} from './triton/model.js';
export {
  configDatatype,
  maxBatchSizeOf,
  modelConfigJson,
  modelStatJson,
  parseIndexRequest,
  repositoryIndex,
  servedModelConfig,
  servedVersion,
} from './triton/model.js';
export { type Coding, compressedRoute, decompress, requestCoding, responseCoding } from './triton/compression.js';
export { registerTriton, resolveModel, type TritonOptions, unknownModelHook } from './triton/routes.js';

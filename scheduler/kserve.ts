// The KServe v2 / Open Inference Protocol codec over HTTP/REST: infer request bodies in (JSON tensors,
// and Triton's binary tensor data extension), infer responses, errors and metadata out.
//
// Pure: buffers and header values in, values out. The infer route (scheduler/kserveRoutes.ts) calls
// parseInferRequest once per POST /v2/models/{name}/infer with the raw body, whatever its content
// type, and encodeInferResponse once per answer. Nothing here throws on client input: every bad
// request is an `{ ok: false, status: 400, error }` whose text names the field that is wrong. Body
// size limits are the HTTP layer's. What is supported, and the batch-dimension rule: docs/serving.md
// ("The KServe v2 protocol").
//
// References: the Open Inference Protocol REST spec (kserve/open-inference-protocol), Triton's
// binary tensor data extension (triton-inference-server/server docs/protocol/extension_binary_data.md),
// and the two clients that must work unchanged: tritonclient.http (_utils._get_inference_request,
// InferResult) and KServe's InferRequest.to_rest / InferResponse.from_bytes.
//
// The codec's pieces live in scheduler/kserve/: types.ts (the values), request.ts (framing and
// validation), inputs.ts and outputs.ts (one field each), binary.ts (the binary tensor data extension),
// regions.ts (shared-memory parameters), images.ts (encoded images), values.ts (datatypes <-> bytes),
// response.ts and metadata.ts (what goes out). This file is their public surface.
export type {
  EncodedImage,
  InferInput,
  InferParse,
  InferRequest,
  InferResponse,
  InputSample,
  MetadataForm,
  MetadataTensor,
  ModelMetadata,
  RegionRef,
  RequestedOutput,
  ResponseOutput,
  ServerMetadata,
} from './kserve/types.js';
export { inputSamples, requestBatch } from './kserve/types.js';
export { decodeValues, fromHalf, toHalf } from './kserve/values.js';
export { REGION_NAME, resolveRegionInput } from './kserve/regions.js';
export { readImageElement, readImageElements } from './kserve/images.js';
export { DEFAULT_MAX_BATCH_SIZE, type ParseModel, parseInferFields, parseInferRequest } from './kserve/request.js';
export { encodeInferResponse, errorBody } from './kserve/response.js';
export { inputFormsByName, modelMetadata, servedModelMetadata, serverMetadata } from './kserve/metadata.js';

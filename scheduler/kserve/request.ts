// Infer requests: the body's framing, then every field validated against the model's signature.
// The one validation of every protocol (HTTP here; gRPC through parseInferFields).
import type { ModelSignature } from '../../src/protocol/tensor.js';
import { type JsonBudget, scanJson } from '../limits.js';
import { BinaryCursor, splitBody } from './binary.js';
import { readInput } from './inputs.js';
import { readOutputs } from './outputs.js';
import { RequestSchema } from './schema.js';
import { clip, fieldPath } from './text.js';
import type { InferInput, InferParse } from './types.js';

const fail = (error: string): InferParse => ({ ok: false, status: 400, error });

/**
 * A model's max_batch_size unless its configuration says otherwise: the most samples one request may
 * carry. Each sample is a task of its own, so this bounds a request's size, not the batches inss
 * forms (those follow the placements, up to 64); a JSON request of 8 FP32 images is ~12-31 MB.
 */
export const DEFAULT_MAX_BATCH_SIZE = 8;

/** What the request parser knows of the model: its name, signature and how many samples a request may carry. */
export interface ParseModel {
  readonly name: string;
  readonly signature: ModelSignature;
  /** The largest batch dimension a request may have (Triton's max_batch_size); default DEFAULT_MAX_BATCH_SIZE. */
  readonly maxBatchSize?: number;
  /** The JSON's counts, checked before it is parsed (scheduler/limits.ts). */
  readonly budget?: JsonBudget;
}

/**
 * Parses and validates one infer request body against the model's signature.
 *
 * - `headers.inferenceHeaderLength` (the Inference-Header-Content-Length header) decides the framing:
 *   present, the first N bytes are the JSON header and the rest are the binary tensors of the inputs
 *   that carry `parameters.binary_data_size`, in the order those inputs appear; absent, the whole body
 *   is JSON. `headers.contentType` is not consulted (clients send application/json,
 *   application/octet-stream or nothing).
 * - Each input must be an input of the signature, given once, with the signature's datatype and shape
 *   `[k, ...spec.shape]` (k samples, 1 <= k <= the model's max_batch_size: the control plane batches
 *   each sample with others' and the answer carries k rows, in order), or exactly `spec.shape` for a
 *   model of max_batch_size 0 (no batch dimension, Triton's rule: the request is one sample, run
 *   alone), and its data as JSON (flat or nested) or binary; inputs with JSON data and binary inputs
 *   may be mixed. An image input of a one-input model also takes UINT8 pixels and encoded images.
 * - Outputs: those the request names (none named: all of the signature's), binary when the output's
 *   `parameters.binary_data` is true, or when it is absent and the request's
 *   `parameters.binary_data_output` is true.
 *
 * - `model.budget`, when given: the JSON's values, containers and depth are counted first and a
 *   request beyond it is refused without being parsed (scheduler/limits.ts).
 *
 * Never throws; the result's error names the field that is wrong.
 */
export function parseInferRequest(
  body: Buffer,
  headers: { contentType?: string | undefined; inferenceHeaderLength?: string | undefined },
  model: ParseModel,
): InferParse {
  const split = splitBody(body, headers.inferenceHeaderLength);
  if (!split.ok) return fail(split.error);
  // Counts over the model's budget are refused before JSON.parse builds anything (scheduler/limits.ts).
  const over = model.budget && scanJson(split.json, model.budget);
  if (over) return fail(over);
  let json: unknown;
  try {
    json = JSON.parse(split.json.toString('utf8'));
  } catch (e) {
    // The likely cause when a client forgets the header: binary tensors after the JSON.
    const hint =
      split.binary === undefined && body.includes('"binary_data_size"')
        ? ' (a body with binary tensor data needs the Inference-Header-Content-Length header)'
        : '';
    return fail(`malformed JSON: ${(e as Error).message}${hint}`);
  }
  return parseInferFields(json, split.binary, model);
}

/**
 * The request's fields once its JSON is parsed, validated against the model: the one validation of
 * every protocol (the HTTP body here; gRPC's ModelInferRequest, whose codec builds the same object
 * with its raw contents as `binary`). An input with `parameters.binary_data_size = n` takes the next
 * n bytes of `binary`, in input order; `binary` undefined: no input may. Every input carries the same
 * batch dimension k (1 <= k <= model.maxBatchSize). Never throws.
 */
export function parseInferFields(json: unknown, binaryBytes: Buffer | undefined, model: ParseModel): InferParse {
  const parsed = RequestSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues;
    const shown = issues.slice(0, 3).map((i) => `${fieldPath(i.path)}: ${i.message}`);
    return fail(
      `invalid inference request: ${shown.join('; ')}${issues.length > 3 ? ` (and ${issues.length - 3} more)` : ''}`,
    );
  }
  const req = parsed.data;
  const sig = model.signature;
  const binary = new BinaryCursor(binaryBytes);
  const maxBatch = model.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE;
  // UINT8 and encoded images are decoded per sample by the worker: a one-input model's only.
  const imageForms = sig.inputs.length === 1;
  const byName = new Map<string, InferInput>();
  let batch: number | undefined;
  for (let k = 0; k < req.inputs.length; k++) {
    const inp = req.inputs[k]!;
    const spec = sig.inputs.find((s) => s.name === inp.name);
    if (!spec)
      return fail(
        `input '${clip(inp.name)}' is not an input of model '${model.name}' (inputs: ` +
          `${sig.inputs.map((s) => s.name).join(', ')})`,
      );
    if (byName.has(inp.name)) return fail(`inputs[${k}].name: input '${inp.name}' is given twice`);
    const read = readInput(k, inp, spec, binary, maxBatch, imageForms);
    if (!read.ok) return fail(read.error);
    const kk = maxBatch === 0 ? 1 : read.input.shape[0]!;
    if (batch !== undefined && kk !== batch)
      return fail(
        `inputs[${k}].shape: batch dimension ${kk}, but the inputs before it have ${batch} (every input ` +
          `carries the same samples)`,
      );
    batch = kk;
    byName.set(inp.name, read.input);
  }
  const leftover = binary.leftover();
  if (leftover) return fail(leftover);
  const missing = sig.inputs.filter((s) => !byName.has(s.name));
  if (missing.length > 0) {
    const names = missing.map((s) => `'${s.name}'`).join(', ');
    return fail(`inputs: missing ${names} (model '${model.name}' takes ${sig.inputs.map((s) => s.name).join(', ')})`);
  }
  const outputs = readOutputs(req, model, maxBatch === 0 ? null : (batch ?? 1));
  if (!outputs.ok) return fail(outputs.error);
  return {
    ok: true,
    request: {
      ...(req.id !== undefined ? { id: req.id } : {}),
      inputs: sig.inputs.map((s) => byName.get(s.name)!),
      outputs: outputs.outputs,
      ...(maxBatch === 0 ? { batchDim: false as const } : {}),
    },
  };
}

// The outputs an infer request asks for, and how: JSON or binary data, a shared-memory region, or the
// top classes (Triton's classification extension).
import { elementCount, type ModelSignature, type TensorSpec, tensorBytes } from '../../src/protocol/tensor.js';
import { classifiable } from '../../src/serving/classification.js';
import { regionParameters } from './regions.js';
import type { RequestJson } from './schema.js';
import { clip, show } from './text.js';
import type { RequestedOutput } from './types.js';

/** A boolean parameter, or undefined when absent; or an error text. */
function boolParameter(
  where: string,
  name: string,
  parameters: Record<string, unknown> | undefined,
): { ok: true; value: boolean | undefined } | { ok: false; error: string } {
  const v = parameters?.[name];
  if (v === undefined || typeof v === 'boolean') return { ok: true, value: v };
  return { ok: false, error: `${where}parameters.${name}: expected true or false, got ${show(v)}` };
}

/**
 * Triton's classification extension: `parameters.classification`, the number of top classes to
 * return per sample: an integer from 1 to the output's element count per sample, of an output whose
 * datatype has an order (Triton refuses FP16 and BOOL), and not with a shared-memory region (as
 * Triton: the classes are computed from the output, not stored). Undefined when absent.
 */
function classCountParameter(
  where: string,
  parameters: Record<string, unknown> | undefined,
  spec: TensorSpec,
  inRegion: boolean,
): { ok: true; value: number | undefined } | { ok: false; error: string } {
  const v = parameters?.classification;
  if (v === undefined) return { ok: true, value: undefined };
  const field = `${where}.parameters.classification`;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
    return {
      ok: false,
      error: `${field}: expected an integer >= 1 (the number of top classes to return), got ${show(v)}`,
    };
  const classes = elementCount(spec.shape);
  if (v > classes)
    return { ok: false, error: `${field}: ${v} classes asked, but output '${spec.name}' has ${classes} a sample` };
  if (!classifiable(spec.datatype))
    return {
      ok: false,
      error:
        `${field}: output '${spec.name}' is ${spec.datatype}, which has no class order (classification takes ` +
        `integer, FP32 and FP64 outputs)`,
    };
  if (inRegion)
    return {
      ok: false,
      error:
        `${field}: cannot be set with shared_memory_region (the classes are computed from the output, not ` +
        `written to the region)`,
    };
  return { ok: true, value: v };
}

/**
 * The outputs the request asks for. `batch`: the request's batch dimension, or null for a model without
 * one (max_batch_size 0: each output is exactly its spec's shape).
 */
export function readOutputs(
  req: RequestJson,
  model: { name: string; signature: ModelSignature },
  batch: number | null,
): { ok: true; outputs: RequestedOutput[] } | { ok: false; error: string } {
  const all = boolParameter('', 'binary_data_output', req.parameters);
  if (!all.ok) return all;
  const allBinary = all.value ?? false;
  const sig = model.signature;
  if (!req.outputs || req.outputs.length === 0)
    return { ok: true, outputs: sig.outputs.map((s) => ({ name: s.name, binary: allBinary })) };
  const outputs: RequestedOutput[] = [];
  for (let k = 0; k < req.outputs.length; k++) {
    const o = req.outputs[k]!;
    const where = `outputs[${k}]`;
    if (!sig.outputs.some((s) => s.name === o.name)) {
      return {
        ok: false,
        error:
          `${where}.name: '${clip(o.name)}' is not an output of model '${model.name}' (outputs: ` +
          `${sig.outputs.map((s) => s.name).join(', ')})`,
      };
    }
    if (outputs.some((x) => x.name === o.name))
      return { ok: false, error: `${where}.name: output '${clip(o.name)}' is requested twice` };
    const shm = regionParameters(where, o.parameters);
    if (!shm.ok) return shm;
    const spec = sig.outputs.find((s) => s.name === o.name)!;
    const bytes = tensorBytes(spec.datatype, batch === null ? spec.shape : [batch, ...spec.shape]);
    if (shm.region && shm.region.byteSize < bytes)
      return {
        ok: false,
        error:
          `${where}.parameters.shared_memory_byte_size: ${shm.region.byteSize} bytes, but output '${o.name}' is ` +
          `${bytes} bytes`,
      };
    const classes = classCountParameter(where, o.parameters, spec, shm.region !== undefined);
    if (!classes.ok) return classes;
    const b = boolParameter(`${where}.`, 'binary_data', o.parameters);
    if (!b.ok) return b;
    // A per-output binary_data overrides binary_data_output; an output in shared memory carries no data.
    outputs.push({
      name: o.name,
      binary: shm.region ? false : (b.value ?? allBinary),
      ...(shm.region ? { region: shm.region } : {}),
      ...(classes.value !== undefined ? { classCount: classes.value } : {}),
    });
  }
  return { ok: true, outputs };
}

// One input of an infer request, read against its spec: the batch dimension, the form it is sent in
// (the model's tensor, UINT8 pixels or encoded images) and where its bytes are (JSON, binary data, a
// shared-memory region).
import {
  elementCount,
  fitsSpec,
  hasVariableDim,
  inputForms,
  type TensorSpec,
  tensorBytes,
} from '../../src/protocol/tensor.js';
import { type BinaryCursor, EMPTY } from './binary.js';
import { readImageElements } from './images.js';
import { regionInput } from './regions.js';
import type { RequestJson } from './schema.js';
import { clip, dims, flatten, show } from './text.js';
import type { InferInput } from './types.js';
import { encodeValues } from './values.js';

/**
 * The forms an input may be sent in, as an error text lists them: `FP32 [1,3,224,224], UINT8 [1,3,224,224] or BYTES
 * [1,1] (a JPEG or PNG)`.
 */
function formsText(spec: TensorSpec): string {
  const all = inputForms(spec).map(
    (f) => `${f.datatype} ${dims([1, ...f.shape])}${f.content === 'encoded-image' ? ' (a JPEG or PNG)' : ''}`,
  );
  return all.length === 1 ? all[0]! : `${all.slice(0, -1).join(', ')} or ${all[all.length - 1]}`;
}

/**
 * The batch dimension of an input's shape `[k, ...sample]`: k and the shape, or an error naming the
 * field. A shape of the sample alone (no batch dimension) gets a hint, as does a k beyond
 * max_batch_size. `maxBatch` 0: the model has no batch dimension (Triton's max_batch_size 0), and the
 * shape must be `sample` itself (one sample). A variable dimension of `sample` (-1) takes any length
 * from 1 to `maxDim`; the shape returned is the request's own.
 */
function batchDimension(
  where: string,
  shape: readonly number[],
  spec: Pick<TensorSpec, 'name' | 'shape' | 'maxDim'>,
  maxBatch: number,
  what: string,
): { ok: true; k: number; shape: number[] } | { ok: false; error: string } {
  const sample = spec.shape;
  const fits = (s: readonly number[]) => fitsSpec(s, spec);
  const variable = hasVariableDim(sample) ? ` (-1 in input '${spec.name}': any length from 1 to ${spec.maxDim})` : '';
  if (maxBatch === 0) {
    if (fits(shape)) return { ok: true, k: 1, shape: [...shape] };
    const hint =
      shape.length === sample.length + 1 && fits(shape.slice(1))
        ? ' (the model has no batch dimension, max_batch_size 0: leave it out)'
        : ' (the model has no batch dimension, max_batch_size 0)';
    const expected = `${dims(sample)}${what}${variable}`;
    return { ok: false, error: `${where}.shape: expected ${expected}, got ${shown(shape)}${hint}` };
  }
  const want = `[k,${sample.join(',')}] with 1 <= k <= ${maxBatch}${what}${variable}`;
  if (shape.length === sample.length + 1 && fits(shape.slice(1))) {
    const k = shape[0]!;
    if (k >= 1 && k <= maxBatch) return { ok: true, k, shape: [...shape] };
    if (k === 0)
      return {
        ok: false,
        error: `${where}.shape: batch dimension 0: a request carries at least one sample (expected ${want})`,
      };
    return {
      ok: false,
      error:
        `${where}.shape: batch dimension ${k} is larger than the model's max_batch_size ${maxBatch} (split the ` +
        `request)`,
    };
  }
  const hint = fits(shape) ? ' (the first dimension is the batch dimension: add it)' : '';
  return { ok: false, error: `${where}.shape: expected ${want}, got ${shown(shape)}${hint}` };
}

/** A client's shape in an error text, its first 16 dimensions. */
function shown(shape: readonly number[]): string {
  return `${dims(shape.slice(0, 16))}${shape.length > 16 ? '...' : ''}`;
}

/**
 * Input `k` of the request read against its spec. `imageForms`: whether an image input also takes its
 * UINT8 and encoded forms (a model with one input, batched: the worker decodes them per sample);
 * otherwise every input is sent as its own datatype.
 */
export function readInput(
  k: number,
  inp: RequestJson['inputs'][number],
  spec: TensorSpec,
  binary: BinaryCursor,
  maxBatch: number,
  imageForms = true,
): { ok: true; input: InferInput } | { ok: false; error: string } {
  const where = `inputs[${k}]`;
  const image = spec.image === true && imageForms && maxBatch > 0;
  const form = (image ? inputForms(spec) : inputForms({ ...spec, image: false })).find(
    (f) => f.datatype === inp.datatype,
  );
  if (!form) {
    const also = image ? ` (this image input takes ${formsText(spec)})` : '';
    return { ok: false, error: `${where}.datatype: expected ${spec.datatype}, got ${clip(inp.datatype)}${also}` };
  }
  if (form.content !== 'tensor') return readImageInput(where, inp, spec, form.content, binary, maxBatch);
  const batch = batchDimension(where, inp.shape, spec, maxBatch, '');
  if (!batch.ok) return batch;
  const want = batch.shape;
  const bytes = tensorBytes(spec.datatype, want);
  const shm = regionInput(where, inp, bytes);
  if (!shm.ok) return shm;
  if (shm.region)
    return {
      ok: true,
      input: {
        name: spec.name,
        datatype: spec.datatype,
        shape: want,
        encoding: spec.datatype,
        data: EMPTY,
        region: shm.region,
      },
    };
  const binSize = inp.parameters?.binary_data_size;
  if (binSize !== undefined) {
    if (typeof binSize !== 'number' || !Number.isInteger(binSize) || binSize < 0)
      return {
        ok: false,
        error: `${where}.parameters.binary_data_size: expected a non-negative integer, got ${show(binSize)}`,
      };
    if (inp.data !== undefined)
      return { ok: false, error: `${where}: has both data and parameters.binary_data_size (send one)` };
    if (binSize !== bytes)
      return {
        ok: false,
        error:
          `${where}.parameters.binary_data_size: ${binSize} bytes, but shape ${dims(want)} of ${spec.datatype} ` +
          `is ${bytes} bytes`,
      };
    const taken = binary.take(where, binSize);
    if (!taken.ok) return taken;
    return {
      ok: true,
      input: {
        name: spec.name,
        datatype: spec.datatype,
        shape: want,
        encoding: spec.datatype,
        data: taken.data,
      },
    };
  }
  if (inp.data === undefined)
    return {
      ok: false,
      error: `${where}.data: missing (send data, or parameters.binary_data_size with the binary tensor data extension)`,
    };
  const values = flatten(inp.data);
  const count = elementCount(want);
  if (values.length !== count)
    return { ok: false, error: `${where}.data: expected ${count} values, got ${values.length}` };
  const enc = encodeValues(values, spec.datatype);
  if (!enc.ok)
    return {
      ok: false,
      error: `${where}.data: element ${enc.index} (row-major) of input '${spec.name}': ${enc.reason}`,
    };
  return {
    ok: true,
    input: {
      name: spec.name,
      datatype: spec.datatype,
      shape: want,
      encoding: spec.datatype,
      data: enc.data,
    },
  };
}

/**
 * An image input sent as UINT8 pixels (the model's C x H x W shape per sample; JSON or binary data)
 * or as encoded images (BYTES, shape [k,1] or [k], one JPEG or PNG a sample, binary data only: JSON
 * strings cannot carry a JPEG's bytes). What the worker does with them: src/serving/image.ts.
 */
function readImageInput(
  where: string,
  inp: RequestJson['inputs'][number],
  spec: TensorSpec,
  content: 'uint8-image' | 'encoded-image',
  binary: BinaryCursor,
  maxBatch: number,
): { ok: true; input: InferInput } | { ok: false; error: string } {
  const what =
    content === 'uint8-image'
      ? ` for ${inp.datatype} (UINT8 pixels, channel-first)`
      : ` for ${inp.datatype} (one encoded image a sample)`;
  const sample = content === 'uint8-image' ? spec.shape : [1];
  // BYTES images: [k,1] as tritonclient sends them, or [k].
  const flat = content === 'encoded-image' && inp.shape.length === 1 ? [inp.shape[0]!, 1] : inp.shape;
  const batch = batchDimension(where, flat, { name: spec.name, shape: sample }, maxBatch, what);
  if (!batch.ok) return batch;
  const k = batch.k;
  const model = { name: spec.name, datatype: spec.datatype, shape: [k, ...spec.shape] };
  const want = [k, ...sample];
  const shm = regionInput(where, inp, content === 'uint8-image' ? elementCount(want) : null, k);
  if (!shm.ok) return shm;
  if (shm.region)
    return {
      ok: true,
      input: { ...model, encoding: content === 'uint8-image' ? 'UINT8' : 'BYTES', data: EMPTY, region: shm.region },
    };
  const binSize = inp.parameters?.binary_data_size;
  if (binSize !== undefined) {
    if (typeof binSize !== 'number' || !Number.isInteger(binSize) || binSize < 0)
      return {
        ok: false,
        error: `${where}.parameters.binary_data_size: expected a non-negative integer, got ${show(binSize)}`,
      };
    if (inp.data !== undefined)
      return { ok: false, error: `${where}: has both data and parameters.binary_data_size (send one)` };
    const bytes = elementCount(want);
    if (content === 'uint8-image' && binSize !== bytes)
      return {
        ok: false,
        error:
          `${where}.parameters.binary_data_size: ${binSize} bytes, but shape ${dims(want)} of UINT8 is ${bytes} ` +
          `bytes`,
      };
    const taken = binary.take(where, binSize);
    if (!taken.ok) return taken;
    if (content === 'uint8-image') return { ok: true, input: { ...model, encoding: 'UINT8', data: taken.data } };
    const images = readImageElements(where, spec.name, taken.data, k);
    return images.ok
      ? {
          ok: true,
          input: {
            ...model,
            encoding: images.images[0]!.encoding,
            data: images.images[0]!.data,
            images: images.images,
          },
        }
      : images;
  }
  if (content === 'encoded-image') {
    return {
      ok: false,
      error:
        `${where}: a BYTES image must be sent as binary data (parameters.binary_data_size, the binary tensor ` +
        `data extension): JSON strings cannot carry a JPEG's or PNG's bytes`,
    };
  }
  if (inp.data === undefined)
    return {
      ok: false,
      error: `${where}.data: missing (send data, or parameters.binary_data_size with the binary tensor data extension)`,
    };
  const values = flatten(inp.data);
  const count = elementCount(want);
  if (values.length !== count)
    return { ok: false, error: `${where}.data: expected ${count} values, got ${values.length}` };
  const enc = encodeValues(values, 'UINT8');
  if (!enc.ok)
    return {
      ok: false,
      error: `${where}.data: element ${enc.index} (row-major) of input '${spec.name}': ${enc.reason}`,
    };
  return { ok: true, input: { ...model, encoding: 'UINT8', data: enc.data } };
}

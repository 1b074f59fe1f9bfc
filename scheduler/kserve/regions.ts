// Triton's system shared-memory extension, codec side: an input's or output's region parameters,
// checked for form and size. Whether the region exists is the service's check (scheduler/sharedMemory.ts).
import { MAX_IMAGE_BYTES } from '../../src/serving/image.js';
import { readImageElements } from './images.js';
import type { RequestJson } from './schema.js';
import { show } from './text.js';
import type { InferInput, RegionRef } from './types.js';

/** Region names as inss accepts them (registration checks the same): no path characters, at most 128. */
export const REGION_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * The shared memory extension's parameters of an input or output: none, or a region, offset and
 * byte size (Triton's shared_memory_region, shared_memory_offset, shared_memory_byte_size). Whether
 * the region exists and holds that range is the service's check (scheduler/sharedMemory.ts).
 */
export function regionParameters(
  where: string,
  parameters: Record<string, unknown> | undefined,
): { ok: true; region: RegionRef | undefined } | { ok: false; error: string } {
  const name = parameters?.shared_memory_region;
  const size = parameters?.shared_memory_byte_size;
  const offset = parameters?.shared_memory_offset ?? 0;
  if (name === undefined) {
    const stray =
      size !== undefined
        ? 'shared_memory_byte_size'
        : parameters?.shared_memory_offset !== undefined
          ? 'shared_memory_offset'
          : undefined;
    return stray
      ? { ok: false, error: `${where}.parameters.${stray}: given without shared_memory_region` }
      : { ok: true, region: undefined };
  }
  if (typeof name !== 'string' || !REGION_NAME.test(name))
    return {
      ok: false,
      error:
        `${where}.parameters.shared_memory_region: expected a region name (letters, digits, '_', '.', '-'), got ` +
        `${show(name)}`,
    };
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 0)
    return {
      ok: false,
      error: `${where}.parameters.shared_memory_byte_size: expected a non-negative integer, got ${show(size)}`,
    };
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0)
    return {
      ok: false,
      error: `${where}.parameters.shared_memory_offset: expected a non-negative integer, got ${show(offset)}`,
    };
  return { ok: true, region: { name, offset, byteSize: size } };
}

/** An input's region, checked against its form's size; or undefined when it has none. */
export function regionInput(
  where: string,
  inp: RequestJson['inputs'][number],
  bytes: number | null,
  images = 1,
): { ok: true; region: RegionRef | undefined } | { ok: false; error: string } {
  const r = regionParameters(where, inp.parameters);
  if (!r.ok || r.region === undefined) return r;
  if (inp.data !== undefined || inp.parameters?.binary_data_size !== undefined)
    return {
      ok: false,
      error:
        `${where}: has both parameters.shared_memory_region and ` +
        `${inp.data !== undefined ? 'data' : 'parameters.binary_data_size'} (send one)`,
    };
  const size = r.region.byteSize;
  if (bytes !== null && size !== bytes)
    return {
      ok: false,
      error: `${where}.parameters.shared_memory_byte_size: ${size} bytes, but the input is ${bytes} bytes`,
    };
  if (bytes === null && (size < 4 * images || size > images * (4 + MAX_IMAGE_BYTES))) {
    const what = images === 1 ? 'one BYTES image' : `${images} BYTES images`;
    return {
      ok: false,
      error:
        `${where}.parameters.shared_memory_byte_size: ${size} bytes is not ${what} ` +
        `(each 4 bytes of length, then at most ${MAX_IMAGE_BYTES})`,
    };
  }
  return r;
}

/**
 * An input whose region the service has read (`bytes`, exactly region.byteSize): checked as its form
 * requires (an encoded image's header, as for binary data) and returned with its data. Pure.
 */
export function resolveRegionInput(
  k: number,
  input: InferInput,
  bytes: Buffer,
): { ok: true; input: InferInput } | { ok: false; error: string } {
  const { region: _region, ...rest } = input;
  if (input.encoding !== 'BYTES') return { ok: true, input: { ...rest, data: bytes } };
  const images = readImageElements(`inputs[${k}]`, input.name, bytes, input.shape[0] ?? 1);
  return images.ok
    ? {
        ok: true,
        input: { ...rest, encoding: images.images[0]!.encoding, data: images.images[0]!.data, images: images.images },
      }
    : images;
}

// Encoded images (JPEG, PNG) sent as BYTES elements: each element's framing and image header, checked
// scheduler-side before any worker decodes it (src/serving/image.ts).
import { imageHeader } from '../../src/serving/image.js';
import type { EncodedImage } from './types.js';

/**
 * One element of a BYTES tensor as the binary tensor data extension (and tritonclient's
 * serialize_byte_tensor) lays it out: a 4-byte little-endian length, then the bytes; checked as an
 * encoded image (its header: scheduler-side, cheap). The input's name is in every error.
 */
export function readImageElement(
  where: string,
  name: string,
  data: Buffer,
): { ok: true; encoding: 'JPEG' | 'PNG'; data: Buffer } | { ok: false; error: string } {
  if (data.length < 4)
    return {
      ok: false,
      error: `${where} ('${name}'): a BYTES element starts with its 4-byte length; got ${data.length} bytes`,
    };
  const n = data.readUInt32LE(0);
  if (n !== data.length - 4)
    return {
      ok: false,
      error:
        `${where} ('${name}'): the BYTES element says ${n} bytes, but ${data.length - 4} follow its length (send ` +
        `exactly one image)`,
    };
  const image = data.subarray(4);
  const head = imageHeader(image);
  if (!head.ok) return { ok: false, error: `${where} ('${name}'): ${head.reason}` };
  return { ok: true, encoding: head.format, data: image };
}

/**
 * The k elements of a BYTES tensor as the binary tensor data extension (and tritonclient's
 * serialize_byte_tensor) lays them out, each a 4-byte little-endian length then the bytes, each
 * checked as an encoded image. Pure; the elements are views of `data`.
 */
export function readImageElements(
  where: string,
  name: string,
  data: Buffer,
  k: number,
): { ok: true; images: EncodedImage[] } | { ok: false; error: string } {
  const images: EncodedImage[] = [];
  let at = 0;
  for (let i = 0; i < k; i++) {
    const el = k === 1 ? where : `${where} element ${i}`;
    if (data.length - at < 4)
      return {
        ok: false,
        error: `${el} ('${name}'): a BYTES element starts with its 4-byte length; ${data.length - at} bytes are left`,
      };
    const n = data.readUInt32LE(at);
    const end = i === k - 1 ? data.length : at + 4 + n;
    const image = readImageElement(el, name, data.subarray(at, Math.min(end, data.length)));
    if (!image.ok) return image;
    images.push({ encoding: image.encoding, data: image.data });
    at = end;
  }
  return { ok: true, images };
}

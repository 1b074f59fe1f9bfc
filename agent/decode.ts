// The simulated worker's decode step: a batch input whose samples arrive in their own
// encodings (FP32 tensors, UINT8 images, JPEG, PNG: TensorRef.samples) becomes the FP32 batch the
// model takes, with real decoders (jpeg-js, pngjs) so their cost is real, and the preprocessing rule of
// src/serving/image.ts. Called once per batch by agent/simWorker.ts, on its only thread; a 224 x 224
// JPEG takes a few milliseconds. A sample that fails to decode is reported (FailedSample) and its rows
// are left zero: that task alone gets the error; the batch goes on.
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import {
  type FailedSample,
  type SampleRef,
  type TensorRef,
  type TensorSpec,
  elementCount,
  tensorBytes,
} from '../src/protocol/tensor.js';
import { imageHeader, MAX_IMAGE_PIXELS, preprocessPixels, preprocessUint8Chw } from '../src/serving/image.js';

export interface DecodedBatch {
  /** size x the spec's elements, FP32. */
  readonly x: Float32Array;
  /** Samples whose input could not be decoded, in batch order. */
  readonly failed: FailedSample[];
}

/**
 * What is wrong with a batch input's description and its bytes (the batch is refused), or null.
 * `payload`: the bytes (or, for a batch whose samples lie in shared memory, anything with their total length).
 */
export function checkBatchInput(
  t: TensorRef,
  payload: { readonly length: number },
  size: number,
  spec: TensorSpec,
): string | null {
  if (t.name !== spec.name) return `input '${t.name}': expected '${spec.name}'`;
  if (t.datatype !== spec.datatype) return `input '${t.name}': datatype ${t.datatype}, expected ${spec.datatype}`;
  const want = [size, ...spec.shape];
  if (t.shape.length !== want.length || t.shape.some((d, i) => d !== want[i]))
    return `input '${t.name}': shape [${t.shape.join(',')}], expected [${want.join(',')}]`;
  if (payload.length !== t.byteLength)
    return `input '${t.name}': ${payload.length} payload bytes, byteLength says ${t.byteLength}`;
  if (t.samples === undefined) {
    const bytes = tensorBytes(t.datatype, t.shape);
    return t.byteLength === bytes ? null : `input '${t.name}': ${t.byteLength} bytes, expected ${bytes}`;
  }
  if (t.samples.length !== size) return `input '${t.name}': ${t.samples.length} samples for a batch of ${size}`;
  const per = elementCount(spec.shape);
  let total = 0;
  for (const [k, s] of t.samples.entries()) {
    total += s.byteLength;
    if (s.encoding !== 'FP32' && !spec.image)
      return `input '${t.name}': sample ${k} is ${s.encoding}, but the input is not an image`;
    const want = s.encoding === 'FP32' ? 4 * per : s.encoding === 'UINT8' ? per : null;
    if (want !== null && s.byteLength !== want)
      return `input '${t.name}': sample ${k} (${s.encoding}) is ${s.byteLength} bytes, expected ${want}`;
  }
  return total === t.byteLength
    ? null
    : `input '${t.name}': its samples add up to ${total} bytes, byteLength says ${t.byteLength}`;
}

/**
 * An encoded image's pixels: RGBA, 8 bits a channel. Throws (the caller reports that sample) when it does not decode.
 */
function decodeImage(encoding: 'JPEG' | 'PNG', bytes: Buffer): { pixels: Uint8Array; width: number; height: number } {
  const head = imageHeader(bytes);
  if (!head.ok) throw new Error(head.reason);
  if (head.format !== encoding) throw new Error(`sent as ${encoding}, but the bytes are a ${head.format}`);
  if (encoding === 'JPEG') {
    const img = jpeg.decode(bytes, {
      useTArray: true,
      formatAsRGBA: true,
      maxResolutionInMP: MAX_IMAGE_PIXELS / 1e6,
      maxMemoryUsageInMB: 512,
    });
    return { pixels: img.data, width: img.width, height: img.height };
  }
  const png = PNG.sync.read(bytes);
  return { pixels: png.data, width: png.width, height: png.height };
}

/**
 * The FP32 batch of a checked input (checkBatchInput returned null): FP32 samples copied, UINT8 ones
 * scaled and normalised, encoded ones decoded, resized, cropped, scaled and normalised. `payload`: the
 * samples' bytes one after another, or each sample's own (views of shared memory: src/protocol/shm.ts).
 */
export function decodeBatchInput(
  t: TensorRef,
  payload: Buffer | readonly Buffer[],
  size: number,
  spec: TensorSpec,
): DecodedBatch {
  const per = elementCount(spec.shape);
  const x = new Float32Array(size * per);
  const failed: FailedSample[] = [];
  const samples: readonly SampleRef[] =
    t.samples ?? Array.from({ length: size }, () => ({ encoding: 'FP32' as const, byteLength: 4 * per }));
  const side = spec.shape[spec.shape.length - 1]!;
  let at = 0;
  samples.forEach((s, k) => {
    const bytes = Array.isArray(payload)
      ? (payload as readonly Buffer[])[k]!
      : (payload as Buffer).subarray(at, at + s.byteLength);
    at += s.byteLength;
    const offset = k * per;
    switch (s.encoding) {
      case 'FP32':
        // A frame's payload starts at any byte offset; a Float32Array view needs 4-byte alignment, so copy bytes.
        new Uint8Array(x.buffer, offset * 4, s.byteLength).set(bytes);
        return;
      case 'UINT8':
        preprocessUint8Chw(bytes, x, offset);
        return;
      default:
        try {
          const img = decodeImage(s.encoding, bytes);
          preprocessPixels(img.pixels, img.width, img.height, 4, x, offset, side);
        } catch (e) {
          failed.push({
            index: k,
            message: `input '${t.name}': the ${s.encoding} image could not be decoded: ${(e as Error).message}`,
          });
        }
    }
  });
  return { x, failed };
}

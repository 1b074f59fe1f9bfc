// Images as clients send them: the cheap header check the scheduler runs on an encoded
// image before it becomes a task, and the one preprocessing rule both workers apply to turn a decoded
// image into the model's FP32 input. Pure: bytes in, numbers out. The PyTorch worker implements the
// same rule in native/inss_worker/preprocess.py; docs/http-api.md ("Images: what clients send") states
// it, and the worker contract suite checks the two give the same tensor.
//
// The rule, for a model input of 3 x S x S (S = 224 for the paper's models):
// 1. decode to 8-bit RGB (grey is replicated to three channels, a palette looked up, an alpha channel
//    dropped);
// 2. when the image is not S x S: resize it so that its shorter side is S, the longer
//    floor(S * long / short) (bilinear, half-pixel centres, no antialiasing: PyTorch's
//    interpolate(mode='bilinear', align_corners=False)), then crop S x S from the centre, the crop
//    starting at floor((resized - S) / 2) on each axis;
// 3. scale to [0, 1] (divide by 255) and normalise with ImageNet's mean and standard deviation per
//    channel: (x - mean) / std;
// 4. lay out channel-first (CHW), as torchvision models take it.
// A UINT8 input is an image already S x S and CHW: only step 3 applies.

/** ImageNet's per-channel mean and standard deviation (R, G, B), as torchvision's models were trained with. */
export const IMAGENET_MEAN = [0.485, 0.456, 0.406] as const;
export const IMAGENET_STD = [0.229, 0.224, 0.225] as const;

/**
 * The rule above for an image input of 3 x side x side, as the model configuration states it to
 * clients (Triton's config parameter `image_preprocessing`, scheduler/triton.ts): what a UINT8 or an
 * encoded input goes through before the model sees it. An FP32 input is taken as sent.
 */
export function preprocessingSummary(side: number): Record<string, unknown> {
  return {
    applies_to: 'UINT8 pixels and encoded (JPEG, PNG) images; an FP32 input is taken as sent',
    decode: '8-bit RGB: grey replicated to three channels, a palette looked up, an alpha channel dropped',
    resize:
      `when not ${side}x${side}: shorter side to ${side}, bilinear with half-pixel centres and no antialiasing, ` +
      `then a ${side}x${side} centre crop (UINT8 pixels are ${side}x${side} already)`,
    scale: 'x / 255',
    mean: [...IMAGENET_MEAN],
    std: [...IMAGENET_STD],
    normalise: '(x - mean) / std per channel (R, G, B)',
    layout: 'CHW (channel-first), RGB',
  };
}

/** Step 3 as one multiply-add per value, x * SCALE[c] - BIAS[c], in FP32 (native/torch_worker.py computes the same). */
const SCALE = Float32Array.from([0, 1, 2], (c) => 1 / (255 * IMAGENET_STD[c]!));
const BIAS = Float32Array.from([0, 1, 2], (c) => IMAGENET_MEAN[c]! / IMAGENET_STD[c]!);

/** Largest encoded image accepted (bytes): a 4096 x 4096 photo at high JPEG quality is ~8 MB. */
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;
/** Largest side and area an image header may declare: beyond, decoding would cost far more memory than serving it. */
export const MAX_IMAGE_SIDE = 8192;
export const MAX_IMAGE_PIXELS = 4096 * 4096;

export type ImageFormat = 'JPEG' | 'PNG';

export type ImageHeader =
  | { readonly ok: true; readonly format: ImageFormat; readonly width: number; readonly height: number }
  /** Not an image inss decodes, or one whose header is broken or declares an absurd size; `reason` says which. */
  | { readonly ok: false; readonly reason: string };

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function hexStart(b: Uint8Array): string {
  return Array.from(b.subarray(0, 8), (x) => x.toString(16).padStart(2, '0')).join(' ');
}

function sized(format: ImageFormat, width: number, height: number): ImageHeader {
  if (width < 1 || height < 1) return { ok: false, reason: `the ${format} header says ${width} x ${height} pixels` };
  if (width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE || width * height > MAX_IMAGE_PIXELS) {
    return {
      ok: false,
      reason:
        `the ${format} header says ${width} x ${height} pixels, ` +
        `over the limit (sides up to ${MAX_IMAGE_SIDE}, at most ${MAX_IMAGE_PIXELS} pixels)`,
    };
  }
  return { ok: true, format, width, height };
}

/**
 * PNG: the signature, then IHDR (width, height, bit depth, colour type, interlace). 8 bits a channel,
 * any colour type (torchvision 0.14's decode_png reads no other depth).
 */
function pngHeader(b: Uint8Array): ImageHeader {
  if (b.length < 33) return { ok: false, reason: `a PNG of ${b.length} bytes is shorter than its header (33 bytes)` };
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const type = String.fromCharCode(b[12]!, b[13]!, b[14]!, b[15]!);
  if (view.getUint32(8) !== 13 || type !== 'IHDR')
    return { ok: false, reason: 'the PNG does not start with its IHDR chunk' };
  const depth = b[24]!;
  const colour = b[25]!;
  if (![0, 2, 3, 4, 6].includes(colour))
    return { ok: false, reason: `the PNG header says colour type ${colour} (valid: 0, 2, 3, 4, 6)` };
  if (depth !== 8) return { ok: false, reason: `the PNG has ${depth}-bit samples (inss decodes 8-bit PNG)` };
  if (b[28]! > 1) return { ok: false, reason: `the PNG header says interlace method ${b[28]} (valid: 0, 1)` };
  return sized('PNG', view.getUint32(16), view.getUint32(20));
}

/**
 * Start-of-frame markers inss decodes: baseline, extended and progressive Huffman (both workers' decoders read these).
 */
const SOF_DECODED = new Set([0xc0, 0xc1, 0xc2]);
/** Every other start-of-frame marker (lossless, arithmetic coding, hierarchical). */
const SOF_OTHER = new Set([0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

/** JPEG: SOI, then the markers up to the first start of frame (its height, width, components). */
function jpegHeader(b: Uint8Array): ImageHeader {
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) return { ok: false, reason: `the JPEG has no marker at byte ${i}` };
    while (b[i] === 0xff && i < b.length) i++; // fill bytes
    const marker = b[i]!;
    i++;
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue; // no length
    if (marker === 0xd9 || marker === 0xda)
      return { ok: false, reason: 'the JPEG has no frame header (SOF) before its image data' };
    if (i + 2 > b.length) break;
    const length = (b[i]! << 8) | b[i + 1]!;
    if (length < 2) return { ok: false, reason: `the JPEG has a segment of length ${length} at byte ${i}` };
    if (SOF_OTHER.has(marker))
      return {
        ok: false,
        reason:
          `the JPEG is coded with SOF marker 0x${marker.toString(16)} ` +
          '(inss decodes baseline and progressive JPEG: 0xc0-0xc2)',
      };
    if (SOF_DECODED.has(marker)) {
      if (i + 8 > b.length) break;
      const precision = b[i + 2]!;
      const height = (b[i + 3]! << 8) | b[i + 4]!;
      const width = (b[i + 5]! << 8) | b[i + 6]!;
      const components = b[i + 7]!;
      if (precision !== 8) return { ok: false, reason: `the JPEG has ${precision}-bit samples (inss decodes 8-bit)` };
      if (components !== 1 && components !== 3)
        return {
          ok: false,
          reason: `the JPEG has ${components} colour components (inss decodes 1, grey, or 3, colour)`,
        };
      return sized('JPEG', width, height);
    }
    i += length;
  }
  return { ok: false, reason: `the JPEG ends (${b.length} bytes) before its frame header` };
}

/**
 * What an encoded image's first bytes say: JPEG or PNG and its size, or why it is refused (not a
 * JPEG or PNG, a broken header, a kind of JPEG the workers do not decode, an absurd size). Reads the
 * header only (a few hundred bytes at most for a JPEG with metadata, and it skips segments without
 * reading them): the image may still fail to decode in the worker, which then answers that task alone.
 */
export function imageHeader(b: Uint8Array): ImageHeader {
  if (b.length > MAX_IMAGE_BYTES)
    return { ok: false, reason: `the image is ${b.length} bytes, over the limit of ${MAX_IMAGE_BYTES}` };
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return jpegHeader(b);
  if (b.length >= 8 && PNG_SIGNATURE.every((x, k) => b[k] === x)) return pngHeader(b);
  return { ok: false, reason: `not a JPEG or PNG image (it starts with ${b.length === 0 ? 'nothing' : hexStart(b)})` };
}

/** The resize and crop of step 2 for one axis: the resized length and where the crop starts in it. */
export function resizedAxis(length: number, other: number, side: number): { resized: number; start: number } {
  const resized = length <= other ? side : Math.floor((side * length) / other);
  return { resized, start: Math.floor((resized - side) / 2) };
}

/**
 * For each output index along one axis: the two source indices and the weight of the second (PyTorch's bilinear,
 * align_corners=False).
 */
function axisTaps(
  inLength: number,
  resized: number,
  start: number,
  side: number,
): { i0: Int32Array; i1: Int32Array; w1: Float32Array } {
  const i0 = new Int32Array(side);
  const i1 = new Int32Array(side);
  const w1 = new Float32Array(side);
  const scale = inLength / resized;
  for (let k = 0; k < side; k++) {
    const src = Math.max(0, scale * (k + start + 0.5) - 0.5);
    const lo = Math.min(Math.floor(src), inLength - 1);
    i0[k] = lo;
    i1[k] = lo < inLength - 1 ? lo + 1 : lo;
    w1[k] = src - lo;
  }
  return { i0, i1, w1 };
}

/**
 * Steps 2 to 4 for one decoded image: `pixels` holds `height` x `width` pixels of `stride` bytes each,
 * R, G, B first (stride 4 for RGBA, whose alpha is ignored). Writes 3 x side x side FP32 values into
 * `out` from `offset`. O(side^2).
 */
export function preprocessPixels(
  pixels: Uint8Array,
  width: number,
  height: number,
  stride: number,
  out: Float32Array,
  offset: number,
  side: number,
): void {
  const plane = side * side;
  const scale = SCALE;
  const bias = BIAS;
  if (width === side && height === side) {
    for (let p = 0; p < plane; p++) {
      for (let c = 0; c < 3; c++) out[offset + c * plane + p] = pixels[p * stride + c]! * scale[c]! - bias[c]!;
    }
    return;
  }
  const ys = resizedAxis(height, width, side);
  const xs = resizedAxis(width, height, side);
  const ty = axisTaps(height, ys.resized, ys.start, side);
  const tx = axisTaps(width, xs.resized, xs.start, side);
  const row = width * stride;
  for (let y = 0; y < side; y++) {
    const r0 = ty.i0[y]! * row;
    const r1 = ty.i1[y]! * row;
    const wy = ty.w1[y]!;
    for (let x = 0; x < side; x++) {
      const c0 = tx.i0[x]! * stride;
      const c1 = tx.i1[x]! * stride;
      const wx = tx.w1[x]!;
      for (let c = 0; c < 3; c++) {
        const top = pixels[r0 + c0 + c]! * (1 - wx) + pixels[r0 + c1 + c]! * wx;
        const bottom = pixels[r1 + c0 + c]! * (1 - wx) + pixels[r1 + c1 + c]! * wx;
        out[offset + c * plane + y * side + x] = (top * (1 - wy) + bottom * wy) * scale[c]! - bias[c]!;
      }
    }
  }
}

/** Step 3 for a UINT8 input (already 3 x side x side, CHW): its values from `u8` into `out` from `offset`. */
export function preprocessUint8Chw(u8: Uint8Array, out: Float32Array, offset: number): void {
  const plane = u8.length / 3;
  for (let c = 0; c < 3; c++) {
    const scale = SCALE[c]!;
    const bias = BIAS[c]!;
    for (let p = c * plane, end = (c + 1) * plane; p < end; p++) out[offset + p] = u8[p]! * scale - bias;
  }
}

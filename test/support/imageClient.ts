// The steps of Triton's image_client.py (triton-inference-server/client, src/python/examples) that a
// client of either protocol takes, for the tests that play it against inss: parse_model's checks of
// the model's metadata and configuration, the INCEPTION preprocessing of JPEG files into an NCHW FP32
// batch, and the postprocessing of a classification answer.
import jpeg from 'jpeg-js';
import { labelFile } from '../../scheduler/classes.js';
import { formatFixed6 } from '../../src/serving/classification.js';

/** The ImageNet labels inss carries (data/imagenet/labels.txt). */
export const IMAGENET = labelFile('imagenet');

/** What parse_model reads, whichever protocol it came over (gRPC's int64 shapes as numbers). */
export interface ModelView {
  readonly inputs: readonly { name: string; datatype: string; shape: readonly number[] }[];
  readonly outputs: readonly { name: string; datatype: string; shape: readonly number[] }[];
  readonly maxBatchSize: number;
  readonly inputFormats: readonly string[];
}

/** image_client.py's parse_model: the input's name, C, H, W and format, or the exception it raises. */
export function parseModel(m: ModelView): {
  inputName: string;
  outputName: string;
  c: number;
  h: number;
  w: number;
  format: string;
} {
  if (m.inputs.length !== 1) throw new Error(`expecting 1 input, got ${m.inputs.length}`);
  if (m.outputs.length !== 1) throw new Error(`expecting 1 output, got ${m.outputs.length}`);
  if (m.inputFormats.length !== 1)
    throw new Error(`expecting 1 input in model configuration, got ${m.inputFormats.length}`);
  const input = m.inputs[0]!;
  const output = m.outputs[0]!;
  if (output.datatype !== 'FP32')
    throw new Error(`expecting output datatype to be FP32, model '${output.name}' output type is ${output.datatype}`);
  // Output is expected to be a vector; with a batch dimension, the first is -1.
  const outDims = m.maxBatchSize > 0 ? output.shape.slice(1) : output.shape;
  if (outDims.filter((d) => d > 1).length !== 1)
    throw new Error(`expecting model output to be a vector, got shape [${output.shape.join(',')}]`);
  const expected = m.maxBatchSize > 0 ? 4 : 3;
  if (input.shape.length !== expected)
    throw new Error(
      `expecting input to have ${expected} dimensions, model '${input.name}' input has ${input.shape.length}`,
    );
  const format = m.inputFormats[0]!;
  if (format !== 'FORMAT_NCHW' && format !== 'FORMAT_NHWC')
    throw new Error(`unexpected input format ${format}, expecting FORMAT_NCHW or FORMAT_NHWC`);
  const dims = m.maxBatchSize > 0 ? input.shape.slice(1) : input.shape;
  const [c, h, w] = format === 'FORMAT_NHWC' ? [dims[2]!, dims[0]!, dims[1]!] : [dims[0]!, dims[1]!, dims[2]!];
  return { inputName: input.name, outputName: output.name, c, h, w, format };
}

/** PIL's Image.resize((w, h), BILINEAR) in spirit: bilinear with half-pixel centres, RGB in, RGB out. */
function resizeRgb(rgb: Uint8Array, width: number, height: number, w: number, h: number): Float32Array {
  const out = new Float32Array(w * h * 3);
  for (let y = 0; y < h; y++) {
    const sy = Math.min(height - 1, Math.max(0, ((y + 0.5) * height) / h - 0.5));
    const y0 = Math.floor(sy);
    const y1 = Math.min(height - 1, y0 + 1);
    for (let x = 0; x < w; x++) {
      const sx = Math.min(width - 1, Math.max(0, ((x + 0.5) * width) / w - 0.5));
      const x0 = Math.floor(sx);
      const x1 = Math.min(width - 1, x0 + 1);
      for (let c = 0; c < 3; c++) {
        const at = (yy: number, xx: number) => rgb[(yy * width + xx) * 3 + c]!;
        const top = at(y0, x0) + (at(y0, x1) - at(y0, x0)) * (sx - x0);
        const bottom = at(y1, x0) + (at(y1, x1) - at(y1, x0)) * (sx - x0);
        out[(y * w + x) * 3 + c] = Math.round(top + (bottom - top) * (sy - y0));
      }
    }
  }
  return out;
}

/**
 * image_client.py's preprocess with `-s INCEPTION` for each JPEG file (decoded, resized, scaled to
 * [-1, 1], transposed to CHW for FORMAT_NCHW), stacked into one batch: each sample, and the batch.
 */
export function inceptionBatch(
  files: readonly Uint8Array[],
  c: number,
  h: number,
  w: number,
): { samples: Float32Array[]; batch: Float32Array } {
  const samples = files.map((file) => {
    const img = jpeg.decode(file, { useTArray: true, formatAsRGBA: false });
    const resized = resizeRgb(img.data, img.width, img.height, w, h);
    const chw = new Float32Array(c * h * w);
    for (let i = 0; i < h * w; i++) for (let k = 0; k < c; k++) chw[k * h * w + i] = resized[i * 3 + k]! / 127.5 - 1;
    return chw;
  });
  const batch = new Float32Array(samples.length * c * h * w);
  samples.forEach((s, i) => batch.set(s, i * c * h * w));
  return { samples, batch };
}

/** A JPEG file of an RGBA picture (jpeg-js's encoder, quality 90). */
export function jpegFile(p: { rgba: Uint8Array; width: number; height: number }): Uint8Array {
  return jpeg.encode({ data: p.rgba, width: p.width, height: p.height }, 90).data;
}

/** The classification extension's top n of some scores, as Triton writes them. */
export function topClasses(scores: Float32Array, n: number): string[] {
  const order = Array.from(scores.keys()).sort((a, b) => scores[b]! - scores[a]! || a - b);
  return order.slice(0, n).map((k) => `${formatFixed6(scores[k]!)}:${k}:${IMAGENET[k]}`);
}

/** tritonclient's deserialize_bytes_tensor: 4-byte little-endian lengths, each followed by that many bytes. */
export function bytesTensor(b: Buffer): string[] {
  const out: string[] = [];
  for (let o = 0; o < b.length; o += 4 + b.readUInt32LE(o))
    out.push(b.subarray(o + 4, o + 4 + b.readUInt32LE(o)).toString('utf8'));
  return out;
}

// Images for `inss loadgen --input uint8|jpeg|png` and the tests: a seeded synthetic picture
// (smooth colour gradients, discs and a little noise, so that JPEG and PNG compress it roughly as they
// do a photo rather than a flat fill) made in memory and encoded with the same libraries the simulated
// worker decodes with (jpeg-js, pngjs). Nothing is downloaded or read from disk. Pure.
//
// Request layouts (the binary tensor data extension):
//   UINT8: {"name":"input","datatype":"UINT8","shape":[1,3,H,W],"parameters":{"binary_data_size":3HW}}
//          then the pixels channel-first (R plane, G plane, B plane), as torchvision.io.read_image gives;
//   JPEG/PNG: {"name":"input","datatype":"BYTES","shape":[1,1],"parameters":{"binary_data_size":4+N}}
//          then the image as one BYTES element: its length N (4 bytes, little-endian), then its N bytes
//          (what tritonclient's serialize_byte_tensor writes).
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { Rng } from '../../src/workload/random.js';
import { binaryInferBody, withLength } from './binary.js';

/** An RGBA picture, 8 bits a channel, row-major (alpha is 255). */
export interface Picture {
  readonly width: number;
  readonly height: number;
  readonly rgba: Buffer;
}

/** A deterministic picture of `width` x `height` from `seed`. */
export function syntheticPicture(width: number, height: number, seed: number): Picture {
  const rng = new Rng(seed);
  const base = [rng.next() * 255, rng.next() * 255, rng.next() * 255];
  const slope = [rng.next() - 0.5, rng.next() - 0.5, rng.next() - 0.5];
  const discs = Array.from({ length: 6 }, () => ({
    x: rng.next() * width,
    y: rng.next() * height,
    r: (0.05 + rng.next() * 0.25) * Math.min(width, height),
    c: [rng.next() * 255, rng.next() * 255, rng.next() * 255],
  }));
  const rgba = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 4;
      let c = base.map((b, k) => b + slope[k]! * (x + y) * (255 / (width + height)) * 2);
      for (const d of discs) if ((x - d.x) ** 2 + (y - d.y) ** 2 < d.r * d.r) c = d.c;
      for (let k = 0; k < 3; k++) rgba[o + k] = Math.max(0, Math.min(255, Math.round(c[k]! + (rng.next() - 0.5) * 12)));
      rgba[o + 3] = 255;
    }
  }
  return { width, height, rgba };
}

export function encodeJpeg(p: Picture, quality = 90): Buffer {
  return jpeg.encode({ data: p.rgba, width: p.width, height: p.height }, quality).data;
}

/** An 8-bit RGB PNG (colour type 2). */
export function encodePng(p: Picture): Buffer {
  const png = new PNG({ width: p.width, height: p.height });
  p.rgba.copy(png.data);
  return PNG.sync.write(png, { colorType: 2, inputColorType: 6, inputHasAlpha: true });
}

/** The picture's pixels as UINT8 channel-first (3 x H x W), the layout inss's UINT8 image inputs take. */
export function uint8Chw(p: Picture): Buffer {
  const plane = p.width * p.height;
  const out = Buffer.alloc(3 * plane);
  for (let i = 0; i < plane; i++) for (let c = 0; c < 3; c++) out[c * plane + i] = p.rgba[i * 4 + c]!;
  return out;
}

/** One BYTES element as the binary tensor data extension lays it out: a 4-byte little-endian length, then the bytes. */
export function bytesElement(data: Uint8Array): Buffer {
  const out = Buffer.alloc(4 + data.length);
  out.writeUInt32LE(data.length, 0);
  out.set(data, 4);
  return out;
}

/** The image forms loadgen sends (`--input`). */
export type ImageForm = 'uint8' | 'jpeg' | 'png';

/** The KServe datatype an image form is sent as. */
export function formDatatype(form: ImageForm): 'UINT8' | 'BYTES' {
  return form === 'uint8' ? 'UINT8' : 'BYTES';
}

/**
 * Whether a model's metadata says its input takes this form: inss lists the forms under
 * `parameters.input_forms[input]` (scheduler/kserve.ts); a server that lists none takes none.
 */
export function metadataTakes(
  parameters: Record<string, unknown> | undefined,
  inputName: string,
  form: ImageForm,
): boolean {
  const forms = (parameters?.input_forms as Record<string, unknown> | undefined)?.[inputName];
  return (
    Array.isArray(forms) && forms.some((f) => (f as { datatype?: unknown } | null)?.datatype === formDatatype(form))
  );
}

/** UINT8 pixels as a JSON request (`--encoding json --input uint8`); outputs come back as JSON. */
export function uint8JsonRequest(inputName: string, p: Picture): { body: Buffer; headers: Record<string, string> } {
  const body = Buffer.from(
    JSON.stringify({
      inputs: [{ name: inputName, datatype: 'UINT8', shape: [1, 3, p.height, p.width], data: Array.from(uint8Chw(p)) }],
    }),
  );
  return { body, headers: { 'content-type': 'application/json', 'content-length': String(body.length) } };
}

/**
 * A binary infer request for one input of an image model: the picture as UINT8 pixels (it must be the
 * model's size) or as a JPEG or PNG. Outputs are asked for as binary data, as Triton's client does.
 */
export function imageRequest(
  inputName: string,
  form: ImageForm,
  p: Picture,
): { body: Buffer; headers: Record<string, string> } {
  const block = form === 'uint8' ? uint8Chw(p) : bytesElement(form === 'jpeg' ? encodeJpeg(p) : encodePng(p));
  const input =
    form === 'uint8'
      ? { name: inputName, datatype: 'UINT8', shape: [1, 3, p.height, p.width] }
      : { name: inputName, datatype: 'BYTES', shape: [1, 1] };
  return withLength(
    binaryInferBody(
      {
        inputs: [{ ...input, parameters: { binary_data_size: block.length } }],
        parameters: { binary_data_output: true },
      },
      [block],
    ),
  );
}

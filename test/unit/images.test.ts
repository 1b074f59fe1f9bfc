// Over 400 lines because it follows one image through each stage that reads it (header check,
// preprocessing, the simulated worker's decode, the KServe codec) with one set of encoded fixtures.
// Images as clients send them: the scheduler's header check (src/serving/image.ts), the
// preprocessing rule both workers apply, the simulated worker's decode step (agent/decode.ts), and
// the KServe codec's UINT8 and BYTES (JPEG/PNG) inputs (scheduler/kserve.ts).
import { describe, expect, it } from 'vitest';
import { checkBatchInput, decodeBatchInput } from '../../agent/decode.js';
import { type InferParse, inputSamples, modelMetadata, parseInferRequest } from '../../scheduler/kserve.js';
import { modelConfigJson } from '../../scheduler/triton.js';
import { modelSignature, type TensorRef } from '../../src/protocol/tensor.js';
import {
  IMAGENET_MEAN,
  IMAGENET_STD,
  imageHeader,
  MAX_IMAGE_BYTES,
  preprocessPixels,
  preprocessUint8Chw,
  resizedAxis,
} from '../../src/serving/image.js';
import {
  bytesElement,
  encodeJpeg,
  encodePng,
  imageRequest,
  syntheticPicture,
  uint8Chw,
} from '../../tools/loadgen/images.js';

const IMAGE = modelSignature(4 * 3 * 224 * 224, 4000);
const SPEC = IMAGE.inputs[0]!;
const N = 3 * 224 * 224;
const MODEL = { name: 'resnet50', signature: IMAGE };

/** The largest difference between two tensors (a failing toEqual on 150,528 values would take minutes to diff). */
function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** The normalised value of an 8-bit level in channel c. */
const norm = (level: number, c: number) => (level / 255 - IMAGENET_MEAN[c]!) / IMAGENET_STD[c]!;

/** A PNG with its IHDR's width and height replaced (the CRC is not checked by the header check). */
function pngSaying(width: number, height: number): Buffer {
  const png = encodePng(syntheticPicture(8, 8, 1));
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  return png;
}

describe('imageHeader', () => {
  it('reads the format and size of JPEG and PNG images', () => {
    const p = syntheticPicture(300, 200, 3);
    expect(imageHeader(encodeJpeg(p))).toEqual({ ok: true, format: 'JPEG', width: 300, height: 200 });
    expect(imageHeader(encodePng(p))).toEqual({ ok: true, format: 'PNG', width: 300, height: 200 });
  });

  it.each([
    ['nothing', () => Buffer.alloc(0), /not a JPEG or PNG image \(it starts with nothing\)/],
    [
      'an FP32 tensor',
      () => Buffer.from(new Float32Array([0.5, 0.25, 1, 2]).buffer),
      /not a JPEG or PNG image \(it starts with 00 00 00 3f/,
    ],
    ['a GIF', () => Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1'), /not a JPEG or PNG/],
    [
      'a PNG cut inside its header',
      () => encodePng(syntheticPicture(8, 8, 1)).subarray(0, 20),
      /shorter than its header/,
    ],
    ['a PNG of 0 x 5', () => pngSaying(0, 5), /says 0 x 5 pixels/],
    ['a PNG of 100000 x 100000', () => pngSaying(100_000, 100_000), /100000 x 100000 pixels, over the limit/],
    ['a PNG of 8000 x 8000 (each side allowed, the area not)', () => pngSaying(8000, 8000), /over the limit/],
    [
      'a JPEG cut before its frame header',
      () => encodeJpeg(syntheticPicture(8, 8, 1)).subarray(0, 30),
      /ends \(30 bytes\) before its frame header|no marker/,
    ],
    [
      'an image over the byte limit',
      () => Buffer.concat([encodePng(syntheticPicture(8, 8, 1)), Buffer.alloc(MAX_IMAGE_BYTES)]),
      /over the limit of/,
    ],
  ])('refuses %s, saying why', (_name, bytes, why) => {
    const h = imageHeader(bytes());
    expect(h.ok).toBe(false);
    if (!h.ok) expect(h.reason).toMatch(why);
  });

  it('refuses a 16-bit PNG and a lossless JPEG (the workers do not decode them)', () => {
    const png = encodePng(syntheticPicture(8, 8, 1));
    png[24] = 16;
    expect(imageHeader(png)).toMatchObject({ ok: false, reason: expect.stringMatching(/16-bit/) as unknown });
    const jpg = Buffer.from(encodeJpeg(syntheticPicture(8, 8, 1)));
    const sof = jpg.indexOf(Buffer.from([0xff, 0xc0]));
    jpg[sof + 1] = 0xc3;
    expect(imageHeader(jpg)).toMatchObject({ ok: false, reason: expect.stringMatching(/SOF marker 0xc3/) as unknown });
  });
});

describe('the preprocessing rule', () => {
  it('resizes the shorter side to the model side and crops the centre, starting at floor((resized - side) / 2)', () => {
    expect(resizedAxis(200, 300, 224)).toEqual({ resized: 224, start: 0 });
    expect(resizedAxis(300, 200, 224)).toEqual({ resized: 336, start: 56 });
    expect(resizedAxis(225, 224, 224)).toEqual({ resized: 225, start: 0 });
  });

  it('a 224 x 224 image: scale and normalise each channel, channel-first', () => {
    const p = syntheticPicture(224, 224, 5);
    const out = new Float32Array(N);
    preprocessPixels(p.rgba, 224, 224, 4, out, 0, 224);
    for (const [y, x] of [
      [0, 0],
      [17, 200],
      [223, 223],
    ] as const) {
      for (let c = 0; c < 3; c++)
        expect(out[c * 224 * 224 + y * 224 + x]).toBeCloseTo(norm(p.rgba[(y * 224 + x) * 4 + c]!, c), 5);
    }
    // UINT8 CHW input: the same values.
    const u8 = new Float32Array(N);
    preprocessUint8Chw(uint8Chw(p), u8, 0);
    expect(maxDiff(u8, out)).toBe(0);
  });

  it('crops without interpolating when only the longer side is larger (4 x 2 -> 2 x 2 takes columns 1 and 2)', () => {
    const rgb = Uint8Array.from([
      0, 0, 0, 10, 10, 10, 20, 20, 20, 30, 30, 30, 40, 40, 40, 50, 50, 50, 60, 60, 60, 70, 70, 70,
    ]);
    const out = new Float32Array(12);
    preprocessPixels(rgb, 4, 2, 3, out, 0, 2);
    expect(
      maxDiff(
        out.subarray(0, 4),
        [10, 20, 50, 60].map((v) => norm(v, 0)),
      ),
    ).toBeLessThan(1e-5);
  });

  it('averages pixel pairs when halving (bilinear, half-pixel centres)', () => {
    // 4 x 4 grey ramp by column: 0, 40, 80, 120 -> 2 x 2: (0+40)/2, (80+120)/2 on each row.
    const grey = new Uint8Array(16 * 3);
    for (let i = 0; i < 16; i++) grey.fill(40 * (i % 4), i * 3, i * 3 + 3);
    const out = new Float32Array(12);
    preprocessPixels(grey, 4, 4, 3, out, 0, 2);
    expect(out[0]).toBeCloseTo(norm(20, 0), 5);
    expect(out[1]).toBeCloseTo(norm(100, 0), 5);
    expect(out[2]).toBeCloseTo(norm(20, 0), 5);
  });
});

describe('the simulated worker decode step', () => {
  const pic = syntheticPicture(224, 224, 9);
  const wide = syntheticPicture(320, 240, 10);
  const fp32 = (() => {
    const x = new Float32Array(N);
    preprocessPixels(pic.rgba, 224, 224, 4, x, 0, 224);
    return Buffer.from(x.buffer);
  })();
  const samples = [
    { encoding: 'FP32' as const, bytes: fp32 },
    { encoding: 'UINT8' as const, bytes: uint8Chw(pic) },
    { encoding: 'PNG' as const, bytes: encodePng(pic) },
    { encoding: 'JPEG' as const, bytes: encodeJpeg(pic, 95) },
    { encoding: 'PNG' as const, bytes: encodePng(wide) },
  ];
  const ref = (
    s: readonly { encoding: 'FP32' | 'UINT8' | 'JPEG' | 'PNG'; bytes: Buffer }[],
  ): { t: TensorRef; payload: Buffer } => {
    const payload = Buffer.concat(s.map((x) => x.bytes));
    return {
      t: {
        name: 'input',
        datatype: 'FP32',
        shape: [s.length, 3, 224, 224],
        byteLength: payload.length,
        samples: s.map((x) => ({ encoding: x.encoding, byteLength: x.bytes.length })),
      },
      payload,
    };
  };

  it(
    'turns FP32, UINT8, PNG and JPEG samples of one picture into the same tensor (JPEG within its ' +
      'loss), and resizes others',
    () => {
      const { t, payload } = ref(samples);
      expect(checkBatchInput(t, payload, 5, SPEC)).toBeNull();
      const { x, failed } = decodeBatchInput(t, payload, 5, SPEC);
      expect(failed).toEqual([]);
      const row = (k: number) => x.subarray(k * N, (k + 1) * N);
      const want = new Float32Array(fp32.buffer, fp32.byteOffset, N);
      expect(maxDiff(row(0), want)).toBe(0);
      expect(maxDiff(row(1), want)).toBe(0);
      expect(maxDiff(row(2), want)).toBe(0);
      const jpegErr = maxDiff(row(3), want);
      expect(jpegErr).toBeGreaterThan(0);
      expect(jpegErr).toBeLessThan(1); // a few levels of 255, over std ~0.22
      const resized = new Float32Array(N);
      preprocessPixels(wide.rgba, 320, 240, 4, resized, 0, 224);
      expect(maxDiff(row(4), resized)).toBe(0);
    },
  );

  it('reports a sample that fails to decode (that sample only) and decodes the others', () => {
    const broken = Buffer.from(encodePng(pic));
    broken.fill(0x55, 40, 200); // inside the image data: the header still reads
    expect(imageHeader(broken).ok).toBe(true);
    const { t, payload } = ref([samples[1]!, { encoding: 'PNG', bytes: broken }, samples[2]!]);
    const { x, failed } = decodeBatchInput(t, payload, 3, SPEC);
    expect(failed).toEqual([
      { index: 1, message: expect.stringMatching(/^input 'input': the PNG image could not be decoded: /) as unknown },
    ]);
    expect(maxDiff(x.subarray(2 * N, 3 * N), new Float32Array(fp32.buffer, fp32.byteOffset, N))).toBe(0);
  });

  it('reports bytes that are not the encoding they are sent as', () => {
    const { t, payload } = ref([{ encoding: 'JPEG', bytes: encodePng(pic) }]);
    expect(decodeBatchInput(t, payload, 1, SPEC).failed[0]?.message).toMatch(/sent as JPEG, but the bytes are a PNG/);
  });

  it.each([
    [
      'a sample count that is not the batch size',
      (t: TensorRef) => ({ ...t, samples: t.samples!.slice(1) }),
      /samples for a batch of/,
    ],
    [
      'a UINT8 sample of the wrong size',
      (t: TensorRef) => ({
        ...t,
        samples: t.samples!.map((s, k) =>
          k === 1 ? { ...s, byteLength: s.byteLength - 1 } : k === 2 ? { ...s, byteLength: s.byteLength + 1 } : s,
        ),
      }),
      /sample 1 \(UINT8\) is 150527 bytes, expected 150528/,
    ],
    [
      'samples that do not add up to byteLength',
      (t: TensorRef) => ({ ...t, byteLength: t.byteLength + 1 }),
      /byteLength/,
    ],
  ])('refuses a batch with %s', (_name, change, why) => {
    const { t, payload } = ref(samples);
    const bad = change(t);
    expect(
      checkBatchInput(bad, bad.byteLength === payload.length ? payload : Buffer.alloc(bad.byteLength), 5, SPEC),
    ).toMatch(why);
  });
});

describe('the KServe codec: UINT8 and BYTES image inputs', () => {
  const pic = syntheticPicture(224, 224, 2);
  const asRequest = (r: { body: Buffer; headers: Record<string, string> }): InferParse =>
    parseInferRequest(r.body, { inferenceHeaderLength: r.headers['inference-header-content-length'] }, MODEL);
  const header = (input: object) => Buffer.from(JSON.stringify({ inputs: [input] }));
  const binaryBody = (input: object, block: Buffer) => {
    const h = header(input);
    return parseInferRequest(Buffer.concat([h, block]), { inferenceHeaderLength: String(h.length) }, MODEL);
  };

  it('accepts UINT8 pixels as binary data and as JSON, and JPEG and PNG as one BYTES element', () => {
    const u8 = asRequest(imageRequest('input', 'uint8', pic));
    expect(u8).toMatchObject({
      ok: true,
      request: { inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], encoding: 'UINT8' }] },
    });
    if (u8.ok) expect(u8.request.inputs[0]!.data.equals(uint8Chw(pic))).toBe(true);
    const json = parseInferRequest(
      Buffer.from(
        JSON.stringify({
          inputs: [{ name: 'input', datatype: 'UINT8', shape: [1, 3, 224, 224], data: Array.from(uint8Chw(pic)) }],
        }),
      ),
      {},
      MODEL,
    );
    expect(json.ok && json.request.inputs[0]!.data.equals(uint8Chw(pic))).toBe(true);
    for (const form of ['jpeg', 'png'] as const) {
      const r = asRequest(imageRequest('input', form, pic));
      expect(r).toMatchObject({ ok: true, request: { inputs: [{ encoding: form.toUpperCase() }] } });
      if (r.ok) expect(r.request.inputs[0]!.data.equals(form === 'jpeg' ? encodeJpeg(pic) : encodePng(pic))).toBe(true);
    }
  });

  it(
    'accepts a batch of k images: UINT8 pixels [k,3,224,224], and k JPEG/PNG elements as BYTES [k,1] ' +
      'or [k], each sample its own',
    () => {
      const other = syntheticPicture(224, 224, 5);
      const px = Buffer.concat([uint8Chw(pic), uint8Chw(other)]);
      const u8 = binaryBody(
        { name: 'input', datatype: 'UINT8', shape: [2, 3, 224, 224], parameters: { binary_data_size: px.length } },
        px,
      );
      expect(u8).toMatchObject({ ok: true, request: { inputs: [{ shape: [2, 3, 224, 224], encoding: 'UINT8' }] } });
      if (u8.ok)
        expect(inputSamples(u8.request.inputs[0]!).map((x) => x.data.equals(uint8Chw(pic)))).toEqual([true, false]);
      const elements = Buffer.concat([
        bytesElement(encodeJpeg(pic)),
        bytesElement(encodePng(other)),
        bytesElement(encodeJpeg(other)),
      ]);
      for (const shape of [[3, 1], [3]]) {
        const r = binaryBody(
          { name: 'input', datatype: 'BYTES', shape, parameters: { binary_data_size: elements.length } },
          elements,
        );
        expect(r).toMatchObject({ ok: true, request: { inputs: [{ shape: [3, 3, 224, 224] }] } });
        if (!r.ok) continue;
        const got = inputSamples(r.request.inputs[0]!);
        expect(got.map((x) => x.encoding)).toEqual(['JPEG', 'PNG', 'JPEG']);
        expect(got[1]!.data.equals(encodePng(other))).toBe(true);
        expect(got[2]!.data.equals(encodeJpeg(other))).toBe(true);
      }
      // Fewer elements than the batch dimension says: the missing one is named.
      const short = binaryBody(
        { name: 'input', datatype: 'BYTES', shape: [4, 1], parameters: { binary_data_size: elements.length } },
        elements,
      );
      expect(short).toMatchObject({
        ok: false,
        error: expect.stringMatching(
          /inputs\[0\] element 3 \('input'\): a BYTES element starts with its 4-byte length; 0 bytes are left/,
        ) as unknown,
      });
    },
  );

  it.each([
    [
      'a BYTES input that is not an image',
      { name: 'input', datatype: 'BYTES', shape: [1, 1], parameters: { binary_data_size: 16 } },
      () => bytesElement(Buffer.from('not an image')),
      /^inputs\[0\] \('input'\): not a JPEG or PNG image/,
    ],
    [
      'a PNG whose header says an absurd size',
      {
        name: 'input',
        datatype: 'BYTES',
        shape: [1, 1],
        parameters: { binary_data_size: 4 + pngSaying(60_000, 60_000).length },
      },
      () => bytesElement(pngSaying(60_000, 60_000)),
      /^inputs\[0\] \('input'\): the PNG header says 60000 x 60000 pixels, over the limit/,
    ],
    [
      'a BYTES element whose length is not its size',
      { name: 'input', datatype: 'BYTES', shape: [1, 1], parameters: { binary_data_size: 14 } },
      () => Buffer.concat([bytesElement(Buffer.from('abcdef')), Buffer.alloc(4)]),
      /says 6 bytes, but 10 follow its length/,
    ],
    [
      'two images in one element run',
      { name: 'input', datatype: 'BYTES', shape: [1, 2], parameters: { binary_data_size: 8 } },
      () => Buffer.alloc(8),
      /inputs\[0\]\.shape: expected \[k,1\] with 1 <= k <= 8 for BYTES/,
    ],
    [
      'UINT8 of the wrong size',
      { name: 'input', datatype: 'UINT8', shape: [1, 3, 224, 224], parameters: { binary_data_size: 100 } },
      () => Buffer.alloc(100),
      /binary_data_size: 100 bytes, but shape \[1,3,224,224\] of UINT8 is 150528 bytes/,
    ],
    [
      'UINT8 in HWC layout',
      { name: 'input', datatype: 'UINT8', shape: [1, 224, 224, 3], parameters: { binary_data_size: N } },
      () => Buffer.alloc(N),
      /shape: expected \[k,3,224,224\] with 1 <= k <= 8 for UINT8 \(UINT8 pixels, channel-first\)/,
    ],
  ])('refuses %s with a 400 naming the input', (_name, input, block, why) => {
    const r = binaryBody(input, block());
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.status).toBe(400);
      expect(r.error).toMatch(why);
    }
  });

  it(
    'refuses a BYTES image sent as JSON (strings cannot carry it), and a datatype no form has, ' + 'listing the forms',
    () => {
      const j = parseInferRequest(
        Buffer.from(JSON.stringify({ inputs: [{ name: 'input', datatype: 'BYTES', shape: [1, 1], data: ['abc'] }] })),
        {},
        MODEL,
      );
      expect(j).toMatchObject({
        ok: false,
        error: expect.stringMatching(/inputs\[0\]: a BYTES image must be sent as binary data/) as unknown,
      });
      const d = parseInferRequest(
        Buffer.from(
          JSON.stringify({ inputs: [{ name: 'input', datatype: 'INT8', shape: [1, 3, 224, 224], data: [] }] }),
        ),
        {},
        MODEL,
      );
      expect(d).toMatchObject({
        ok: false,
        error:
          'inputs[0].datatype: expected FP32, got INT8 (this image input takes FP32 [1,3,224,224], UINT8 ' +
          '[1,3,224,224] or BYTES [1,1] (a JPEG or PNG))',
      });
      // A model without an image input takes its own datatype only.
      const vector = { name: 'v', signature: modelSignature(400, 40) };
      expect(
        parseInferRequest(
          Buffer.from(JSON.stringify({ inputs: [{ name: 'input', datatype: 'UINT8', shape: [1, 100], data: [] }] })),
          {},
          vector,
        ),
      ).toMatchObject({ ok: false, error: 'inputs[0].datatype: expected FP32, got UINT8' });
    },
  );

  it("lists the forms in the model metadata and in Triton's model config", () => {
    const forms = [
      { datatype: 'FP32', shape: [-1, 3, 224, 224], content: 'tensor' },
      { datatype: 'UINT8', shape: [-1, 3, 224, 224], content: 'uint8-image' },
      { datatype: 'BYTES', shape: [-1, 1], content: 'encoded-image' },
    ];
    expect(modelMetadata({ name: 'resnet50', signature: IMAGE, sloMs: 80 }).parameters.input_forms).toEqual({
      input: forms,
    });
    expect(
      JSON.parse(
        modelConfigJson({ name: 'resnet50', sloMs: 80, signature: IMAGE }, []).parameters.input_forms.string_value,
      ),
    ).toEqual({ input: forms });
  });
});

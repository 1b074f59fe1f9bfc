// Limits on client input (scheduler/limits.ts): a model's budget admits the largest legitimate request
// in every form a client writes it, and the byte scan refuses what no legitimate request holds
// (deep nesting, too many values or containers) before JSON.parse sees it.
import { describe, expect, it } from 'vitest';
import { parseInferRequest } from '../../scheduler/kserve.js';
import { bodyTimeoutMs, requestBudget, scanJson, shownPath } from '../../scheduler/limits.js';
import { modelSignature } from '../../src/protocol/tensor.js';
import { MAX_IMAGE_BYTES } from '../../src/serving/image.js';

const IMAGE = modelSignature(4 * 3 * 224 * 224, 4000);
const N = 3 * 224 * 224;
const budget = requestBudget(IMAGE, 2);

/** The data as Python's json.dumps writes float64 values (the longest form): `, ` separators, 17 digits. */
function pythonStyle(data: unknown): Buffer {
  return Buffer.from(
    JSON.stringify({ inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', data }] }).replace(
      /,/g,
      ', ',
    ),
  );
}

/** Nested [1][3][224][224] of long values. */
function nestedImage(value: number): unknown {
  return [Array.from({ length: 3 }, () => Array.from({ length: 224 }, () => Array.from({ length: 224 }, () => value)))];
}

describe('requestBudget', () => {
  it(
    'admits the largest legitimate JSON request (Python-style separators, long float64 text, nested) under ' +
      'factor 1',
    () => {
      const body = pythonStyle(nestedImage(-1.2345678901234567e-30));
      const one = requestBudget(IMAGE, 1);
      expect(body.length).toBeLessThanOrEqual(one.largestBytes);
      expect(scanJson(body, one.json)).toBeUndefined();
      const r = parseInferRequest(body, {}, { name: 'm', signature: IMAGE, budget: one.json });
      expect(r.ok).toBe(true);
    },
  );

  it('scales with the factor and with the signature', () => {
    const VECTOR = modelSignature(4 * 50_000, 4000); // not an image: JSON is its largest form
    const b1 = requestBudget(VECTOR, 1);
    const b3 = requestBudget(VECTOR, 3);
    expect(b3.bodyLimitBytes).toBe(Math.ceil(b1.largestBytes * 3));
    expect(b3.json.maxValues).toBeGreaterThan(b1.json.maxValues * 2.9);
    const small = requestBudget(modelSignature(400, 40), 2);
    expect(small.bodyLimitBytes).toBeLessThan(budget.bodyLimitBytes / 100);
    // Binary tensor data of the image is far below the limit.
    expect(budget.bodyLimitBytes).toBeGreaterThan(4 * N * 2);
  });
});

describe('requestBudget of an image input', () => {
  it('admits the largest encoded image as binary data, and UINT8 pixels as JSON', () => {
    const one = requestBudget(IMAGE, 1);
    const header = Buffer.from(
      JSON.stringify({
        inputs: [
          { name: 'input', shape: [1, 1], datatype: 'BYTES', parameters: { binary_data_size: 4 + MAX_IMAGE_BYTES } },
        ],
      }),
    );
    expect(header.length + 4 + MAX_IMAGE_BYTES).toBeLessThanOrEqual(one.bodyLimitBytes);
    const pixels = Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'UINT8', data: new Array<number>(N).fill(255) }],
      }).replace(/,/g, ', '),
    );
    expect(pixels.length).toBeLessThanOrEqual(one.bodyLimitBytes);
    expect(scanJson(pixels, one.json)).toBeUndefined();
    // A model without an image input is not given room for one.
    expect(requestBudget(modelSignature(400, 40), 2).bodyLimitBytes).toBeLessThan(MAX_IMAGE_BYTES / 100);
  });
});

describe('scanJson', () => {
  it('refuses nesting deeper than the inputs can be, however the body continues', () => {
    const deep = Buffer.from(`{"inputs":[{"data":${'['.repeat(1_000_000)}`);
    expect(scanJson(deep, budget.json)).toMatch(/nested deeper than \d+ levels/);
    expect(parseInferRequest(deep, {}, { name: 'm', signature: IMAGE, budget: budget.json })).toMatchObject({
      ok: false,
      status: 400,
      error: expect.stringMatching(/nested deeper/) as unknown,
    });
  });

  it('refuses more values than the inputs hold (a flat array of zeros)', () => {
    const zeros = Buffer.from(`{"inputs":[{"name":"input","data":[${'0,'.repeat(budget.json.maxValues)}0]}]}`);
    expect(scanJson(zeros, budget.json)).toMatch(/more than \d+ values/);
  });

  it('refuses more containers than the inputs hold, at a legal depth', () => {
    const many = Buffer.from(`[${'[],'.repeat(budget.json.maxContainers)}[]]`);
    expect(scanJson(many, budget.json)).toMatch(/more than \d+ arrays and objects/);
  });

  it('does not count brackets, braces or commas inside strings, escaped quotes included', () => {
    const tight = { maxValues: 3, maxContainers: 2, maxDepth: 2 };
    expect(scanJson(Buffer.from('{"id":"[[[[,,,,{{{{\\"[[[,,,","a":[1,2]}'), tight)).toBeUndefined();
    expect(scanJson(Buffer.from('{"id":"x\\\\","a":[[1]]}'), tight)).toMatch(/nested deeper than 2/);
  });
});

describe('timeouts and echoed paths', () => {
  it('gives a body a base time plus its size at the minimum rate', () => {
    expect(bodyTimeoutMs(0, { bodyTimeoutBaseMs: 10_000, minBodyBytesPerS: 1000 })).toBe(10_000);
    expect(bodyTimeoutMs(5000, { bodyTimeoutBaseMs: 10_000, minBodyBytesPerS: 1000 })).toBe(15_000);
  });

  it('shows a path without its query and at most 64 characters', () => {
    expect(shownPath('/v2/models/x/infer?token=secret')).toBe('/v2/models/x/infer');
    expect(shownPath(`/${'a'.repeat(10_000)}`)).toBe(`/${'a'.repeat(63)}...`);
  });
});

// Fixtures of the KServe v2 codec's unit tests (test/unit/kserve-*.test.ts): two small models, their
// inputs as JSON and as binary data, and parse/accepted/rejected around parseInferRequest.
import { expect } from 'vitest';
import { type InferParse, type InferRequest, parseInferRequest } from '../../scheduler/kserve.js';
import type { ModelSignature } from '../../src/protocol/tensor.js';

export type Model = { name: string; signature: ModelSignature; maxBatchSize?: number };
export type Headers = { contentType?: string; inferenceHeaderLength?: string };

/** Two inputs of different datatypes and two outputs: enough to tell order, mixing and per-output choices apart. */
export const TWO: Model = {
  name: 'two',
  signature: {
    inputs: [
      { name: 'a', datatype: 'FP32', shape: [2, 3] },
      { name: 'b', datatype: 'INT64', shape: [2] },
    ],
    outputs: [
      { name: 'y', datatype: 'FP32', shape: [2] },
      { name: 'z', datatype: 'BOOL', shape: [3] },
    ],
  },
};
export const RESNET: Model = {
  name: 'resnet50',
  signature: {
    inputs: [{ name: 'input', datatype: 'FP32', shape: [3, 224, 224] }],
    outputs: [{ name: 'output', datatype: 'FP32', shape: [1000] }],
  },
};

export const A = [1, 2, 3, 4, 5, 6];
export const B = [7, -8];
export const f32 = (xs: readonly number[]) => Buffer.from(Float32Array.from(xs).buffer);
export const i64 = (xs: readonly number[]) => Buffer.from(BigInt64Array.from(xs, (x) => BigInt(x)).buffer);
export const A_BYTES = f32(A);
export const B_BYTES = i64(B);

export const json = (x: unknown) => Buffer.from(JSON.stringify(x));

/** A binary-extension body: JSON header, then the blocks; and the header that says where the JSON ends. */
export function binary(header: unknown, ...blocks: Buffer[]): { body: Buffer; headers: Headers } {
  const h = json(header);
  return { body: Buffer.concat([h, ...blocks]), headers: { inferenceHeaderLength: String(h.length) } };
}

export const inA = (extra: object = {}) => ({ name: 'a', shape: [1, 2, 3], datatype: 'FP32', data: A, ...extra });
export const inB = (extra: object = {}) => ({ name: 'b', shape: [1, 2], datatype: 'INT64', data: B, ...extra });
export const binA = (size = 24) => ({
  name: 'a',
  shape: [1, 2, 3],
  datatype: 'FP32',
  parameters: { binary_data_size: size },
});
export const binB = (size = 16) => ({
  name: 'b',
  shape: [1, 2],
  datatype: 'INT64',
  parameters: { binary_data_size: size },
});

export function parse(body: Buffer, headers: Headers = {}, model: Model = TWO): InferParse {
  return parseInferRequest(body, headers, model);
}

export function accepted(r: InferParse): InferRequest {
  if (!r.ok) throw new Error(`expected the request to be accepted, got: ${r.error}`);
  return r.request;
}

export function rejected(r: InferParse): string {
  if (r.ok) throw new Error('expected the request to be rejected');
  expect(r.status).toBe(400);
  return r.error;
}

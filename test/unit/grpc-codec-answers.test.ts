// The gRPC codec (scheduler/grpcCodec.ts), answers and the wire: ModelInferResponse messages, HTTP statuses
// as gRPC codes, shared-memory status, messages serialized with proto/grpc_service.proto decoded as the codec
// expects, and one validation for both protocols (inferFieldsOf, then parseInferFields).
import { describe, expect, it } from 'vitest';
import {
  GrpcCode,
  grpcCodeOf,
  inferFieldsOf,
  inferResponseMessage,
  type ModelInferRequestMessage,
  rewriteError,
  sharedMemoryStatusMessage,
} from '../../scheduler/grpcCodec.js';
import { inferenceService } from '../../scheduler/grpcProto.js';
import { parseInferFields } from '../../scheduler/kserve.js';

import { f32, okOf, request } from '../support/grpcCodec.js';

describe('rewriteError', () => {
  it("names an input's data by its gRPC source instead of binary_data_size", () => {
    const sources = new Map([[1, 'raw_input_contents[0]']]);
    expect(
      rewriteError('inputs[1].parameters.binary_data_size: 8 bytes, but shape [1,3] of FP32 is 12 bytes', sources),
    ).toBe('raw_input_contents[0]: 8 bytes, but shape [1,3] of FP32 is 12 bytes');
    expect(rewriteError('inputs[0].shape: expected [1,3], got [1,2]', sources)).toBe(
      'inputs[0].shape: expected [1,3], got [1,2]',
    );
  });
});

describe('inferResponseMessage', () => {
  it('puts each output in raw_output_contents in output order; one in a region names it and has an empty entry', () => {
    const y = f32([1, 2]);
    const m = inferResponseMessage({
      modelName: 'm',
      modelVersion: '1',
      id: 'q',
      outputs: [
        { name: 'y', datatype: 'FP32', shape: [1, 2], data: y, binary: false },
        {
          name: 'z',
          datatype: 'FP32',
          shape: [1, 2],
          data: f32([3, 4]),
          binary: true,
          region: { name: 'out', offset: 0, byteSize: 8 },
        },
      ],
    });
    expect(m.model_name).toBe('m');
    expect(m.model_version).toBe('1');
    expect(m.id).toBe('q');
    expect(m.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([
      ['y', 'FP32', [1, 2]],
      ['z', 'FP32', [1, 2]],
    ]);
    expect(m.outputs[1]!.parameters).toEqual({
      shared_memory_region: { parameter_choice: 'string_param', string_param: 'out' },
      shared_memory_byte_size: { parameter_choice: 'int64_param', int64_param: 8 },
    });
    expect(m.raw_output_contents).toEqual([y, Buffer.alloc(0)]);
  });

  it('answers without an id with an empty one (proto3 has no absent string)', () => {
    expect(inferResponseMessage({ modelName: 'm', outputs: [] }).id).toBe('');
  });
});

describe('grpcCodeOf', () => {
  it.each([
    [400, GrpcCode.INVALID_ARGUMENT],
    [401, GrpcCode.UNAUTHENTICATED],
    [403, GrpcCode.PERMISSION_DENIED],
    [404, GrpcCode.NOT_FOUND],
    [409, GrpcCode.ALREADY_EXISTS],
    [413, GrpcCode.RESOURCE_EXHAUSTED],
    [503, GrpcCode.UNAVAILABLE],
    [500, GrpcCode.INTERNAL],
    [422, GrpcCode.FAILED_PRECONDITION],
  ])('HTTP %i -> gRPC %i', (status, code) => {
    expect(grpcCodeOf(status)).toBe(code);
  });
});

describe('shared-memory status', () => {
  it('lists regions by name', () => {
    expect(sharedMemoryStatusMessage([{ name: 'r', key: '/k', offset: 0, byte_size: 8 }])).toEqual({
      regions: { r: { name: 'r', key: '/k', offset: 0, byte_size: 8 } },
    });
  });
});

describe('the wire (proto/grpc_service.proto)', () => {
  const infer = inferenceService().service.ModelInfer!;

  it("decodes a client's ModelInferRequest as the codec reads it", () => {
    const raw = f32([1, 2, 3]);
    const bytes = infer.requestSerialize({
      model_name: 'm',
      id: 'x',
      inputs: [
        {
          name: 'a',
          datatype: 'FP32',
          shape: [1, 3],
          parameters: { flag: { bool_param: true }, big: { int64_param: '9007199254740993' } },
        },
      ],
      outputs: [{ name: 'y', parameters: { classification: { int64_param: 2 } } }],
      raw_input_contents: [raw],
    });
    const decoded = infer.requestDeserialize(bytes) as ModelInferRequestMessage;
    const r = okOf(inferFieldsOf(decoded));
    expect(r.json).toEqual({
      id: 'x',
      inputs: [
        {
          name: 'a',
          datatype: 'FP32',
          shape: [1, 3],
          parameters: { flag: true, big: '9007199254740993', binary_data_size: 12 },
        },
      ],
      outputs: [{ name: 'y', parameters: { classification: 2 } }],
    });
    expect(Buffer.isBuffer(r.binary)).toBe(true);
    expect(r.binary).toEqual(raw);
  });

  it('encodes the ModelInferResponse a client decodes (shapes as int64, raw bytes intact)', () => {
    const y = f32([1.5, -2]);
    const msg = inferResponseMessage({
      modelName: 'm',
      modelVersion: '1',
      outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 2], data: y, binary: false }],
    });
    const back = infer.responseDeserialize(infer.responseSerialize(msg)) as {
      outputs: { shape: string[] }[];
      raw_output_contents: Buffer[];
    };
    expect(back.outputs[0]!.shape).toEqual(['1', '2']);
    expect(back.raw_output_contents[0]).toEqual(y);
  });
});

describe('one validation for both protocols (inferFieldsOf, then parseInferFields)', () => {
  const MODEL = {
    name: 'm',
    signature: {
      inputs: [{ name: 'a', datatype: 'FP32' as const, shape: [3] }],
      outputs: [{ name: 'y', datatype: 'FP32' as const, shape: [2] }],
    },
  };
  const parse = (req: Partial<ModelInferRequestMessage>) => {
    const f = okOf(inferFieldsOf(request(req)));
    const r = parseInferFields(f.json, f.binary, MODEL);
    return r.ok ? r : { ...r, error: rewriteError(r.error, f.sources) };
  };
  const httpError = (json: unknown, binary?: Buffer) => {
    const r = parseInferFields(json, binary, MODEL);
    return r.ok ? undefined : r.error;
  };

  it('a raw request parses to the same request as the binary HTTP body with the same tensor', () => {
    const g = parse({ id: 'q' });
    const h = parseInferFields(
      { id: 'q', inputs: [{ name: 'a', datatype: 'FP32', shape: [1, 3], parameters: { binary_data_size: 12 } }] },
      f32([1, 2, 3]),
      MODEL,
    );
    expect(g).toEqual(h);
    expect(g.ok && g.request.inputs[0]!.data).toEqual(f32([1, 2, 3]));
  });

  it.each([
    [
      'an unknown input',
      { inputs: [{ name: 'b', datatype: 'FP32', shape: [1, 3] }] },
      { inputs: [{ name: 'b', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }] },
    ],
    [
      'a wrong datatype',
      { inputs: [{ name: 'a', datatype: 'INT32', shape: [1, 3] }] },
      { inputs: [{ name: 'a', datatype: 'INT32', shape: [1, 3], data: [1, 2, 3] }] },
    ],
    [
      'a wrong shape',
      { inputs: [{ name: 'a', datatype: 'FP32', shape: [3, 1] }] },
      { inputs: [{ name: 'a', datatype: 'FP32', shape: [3, 1], data: [1, 2, 3] }] },
    ],
    [
      'an unknown output',
      { outputs: [{ name: 'z' }] },
      { inputs: [{ name: 'a', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }], outputs: [{ name: 'z' }] },
    ],
  ])('%s: the error text of the HTTP codec', (_what, grpcReq, httpJson) => {
    const g = parse(grpcReq);
    expect(g.ok).toBe(false);
    expect(!g.ok && g.error).toBe(httpError(httpJson));
  });
});

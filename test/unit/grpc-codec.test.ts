// The gRPC codec (scheduler/grpcCodec.ts), requests: ModelInferRequest messages as the HTTP codec's request
// object (raw and typed contents, parameters, outputs), and every refusal with the field it names. Answers and
// the wire: grpc-codec-answers.test.ts.
import { describe, expect, it } from 'vitest';
import {
  inferFieldsOf,
  type ModelInferRequestMessage,
  parameterValue,
  plainParameters,
} from '../../scheduler/grpcCodec.js';

import { f32, okOf, request } from '../support/grpcCodec.js';

describe('inferFieldsOf: raw_input_contents', () => {
  it('one raw input becomes binary_data_size and the binary data, the very buffer (no copy)', () => {
    const raw = f32([1, 2, 3]);
    const r = okOf(inferFieldsOf(request({ raw_input_contents: [raw] })));
    expect(r.json).toEqual({
      inputs: [{ name: 'a', datatype: 'FP32', shape: [1, 3], parameters: { binary_data_size: 12 } }],
    });
    expect(r.binary).toBe(raw);
    expect(r.sources.get(0)).toBe('raw_input_contents[0]');
  });

  it('several raw inputs are laid one after another in input order', () => {
    const a = f32([1, 2]);
    const b = Buffer.from([7, 8, 9]);
    const r = okOf(
      inferFieldsOf(
        request({
          inputs: [
            { name: 'a', datatype: 'FP32', shape: [1, 2] },
            { name: 'b', datatype: 'UINT8', shape: [1, 3] },
          ],
          raw_input_contents: [a, b],
        }),
      ),
    );
    expect(r.binary).toEqual(Buffer.concat([a, b]));
    expect(r.json.inputs.map((i) => (i.parameters as { binary_data_size: number }).binary_data_size)).toEqual([8, 3]);
  });

  it('an input in a shared-memory region takes no raw entry; the next input takes the first', () => {
    const region = {
      shared_memory_region: { parameter_choice: 'string_param' as const, string_param: 'r' },
      shared_memory_byte_size: { parameter_choice: 'int64_param' as const, int64_param: '12' },
    };
    const b = f32([5]);
    const r = okOf(
      inferFieldsOf(
        request({
          inputs: [
            { name: 'a', datatype: 'FP32', shape: [1, 3], parameters: region },
            { name: 'b', datatype: 'FP32', shape: [1, 1] },
          ],
          raw_input_contents: [b],
        }),
      ),
    );
    expect(r.json.inputs[0]).toEqual({
      name: 'a',
      datatype: 'FP32',
      shape: [1, 3],
      parameters: { shared_memory_region: 'r', shared_memory_byte_size: 12 },
    });
    expect(r.json.inputs[1]!.parameters).toEqual({ binary_data_size: 4 });
    expect(r.sources.get(1)).toBe('raw_input_contents[0]');
    expect(r.binary).toBe(b);
  });

  it('BYTES raw contents (4-byte length, then the element) pass as they are', () => {
    const el = Buffer.concat([Buffer.from([3, 0, 0, 0]), Buffer.from('abc')]);
    const r = okOf(
      inferFieldsOf(request({ inputs: [{ name: 'a', datatype: 'BYTES', shape: [1, 1] }], raw_input_contents: [el] })),
    );
    expect(r.binary).toBe(el);
  });
});

describe('inferFieldsOf: typed contents', () => {
  const cases: { datatype: string; contents: Record<string, unknown[]>; bytes: Buffer }[] = [
    { datatype: 'FP32', contents: { fp32_contents: [0.5, -2] }, bytes: f32([0.5, -2]) },
    { datatype: 'FP64', contents: { fp64_contents: [0.1, 3] }, bytes: Buffer.from(Float64Array.from([0.1, 3]).buffer) },
    {
      datatype: 'INT8',
      contents: { int_contents: [-128, 127] },
      bytes: Buffer.from(Int8Array.from([-128, 127]).buffer),
    },
    {
      datatype: 'INT16',
      contents: { int_contents: [-300, 300] },
      bytes: Buffer.from(Int16Array.from([-300, 300]).buffer),
    },
    {
      datatype: 'INT32',
      contents: { int_contents: [-70000, 70000] },
      bytes: Buffer.from(Int32Array.from([-70000, 70000]).buffer),
    },
    {
      datatype: 'INT64',
      contents: { int64_contents: ['-9007199254740993', '5'] },
      bytes: Buffer.from(BigInt64Array.from([-9007199254740993n, 5n]).buffer),
    },
    { datatype: 'UINT8', contents: { uint_contents: [0, 255] }, bytes: Buffer.from([0, 255]) },
    {
      datatype: 'UINT16',
      contents: { uint_contents: [1, 65535] },
      bytes: Buffer.from(Uint16Array.from([1, 65535]).buffer),
    },
    {
      datatype: 'UINT32',
      contents: { uint_contents: [1, 4294967295] },
      bytes: Buffer.from(Uint32Array.from([1, 4294967295]).buffer),
    },
    {
      datatype: 'UINT64',
      contents: { uint64_contents: ['18446744073709551615', '0'] },
      bytes: Buffer.from(BigUint64Array.from([18446744073709551615n, 0n]).buffer),
    },
    { datatype: 'BOOL', contents: { bool_contents: [true, false] }, bytes: Buffer.from([1, 0]) },
  ];
  it.each(cases)('$datatype: its contents field as little-endian bytes, exactly', ({ datatype, contents, bytes }) => {
    const r = okOf(
      inferFieldsOf(
        request({ inputs: [{ name: 'a', datatype, shape: ['1', '2'], contents }], raw_input_contents: [] }),
      ),
    );
    expect(r.binary).toEqual(bytes);
    expect(r.json.inputs[0]!.parameters).toEqual({ binary_data_size: bytes.length });
    expect(r.sources.get(0)).toBe(`inputs[0].contents.${Object.keys(contents)[0]}`);
  });

  it('BYTES elements get their 4-byte length, as raw BYTES contents carry them', () => {
    const r = okOf(
      inferFieldsOf(
        request({
          inputs: [
            { name: 'a', datatype: 'BYTES', shape: ['1', '1'], contents: { bytes_contents: [Buffer.from('png!')] } },
          ],
          raw_input_contents: [],
        }),
      ),
    );
    expect(r.binary).toEqual(Buffer.concat([Buffer.from([4, 0, 0, 0]), Buffer.from('png!')]));
  });
});

describe('inferFieldsOf: refusals name the field', () => {
  const two = (a: object, b: object) => [
    { name: 'a', datatype: 'FP32', shape: [1, 2], ...a },
    { name: 'b', datatype: 'FP32', shape: [1, 2], ...b },
  ];
  const cases: { what: string; req: Partial<ModelInferRequestMessage>; error: string }[] = [
    {
      what: 'contents beside raw_input_contents',
      req: { inputs: two({ contents: { fp32_contents: [1, 2] } }, {}), raw_input_contents: [f32([1, 2])] },
      error:
        "inputs[0].contents: given with raw_input_contents (send every input's data one way: " +
        'raw_input_contents, or contents)',
    },
    {
      what: "another datatype's field",
      req: {
        inputs: [{ name: 'a', datatype: 'FP32', shape: [1, 2], contents: { int_contents: [1, 2] } }],
        raw_input_contents: [],
      },
      error: 'inputs[0].contents.int_contents: a FP32 input takes fp32_contents',
    },
    {
      what: 'FP16 as typed contents',
      req: {
        inputs: [{ name: 'a', datatype: 'FP16', shape: [1, 2], contents: { fp32_contents: [1, 2] } }],
        raw_input_contents: [],
      },
      error: 'inputs[0].contents.fp32_contents: FP16 has no typed contents: send it in raw_input_contents',
    },
    {
      what: 'too few values',
      req: {
        inputs: [{ name: 'a', datatype: 'FP32', shape: [1, 3], contents: { fp32_contents: [1, 2] } }],
        raw_input_contents: [],
      },
      error: 'inputs[0].contents.fp32_contents: 2 values, but shape [1,3] has 3',
    },
    {
      what: 'a narrow integer out of range',
      req: {
        inputs: [{ name: 'a', datatype: 'UINT8', shape: [1, 2], contents: { uint_contents: [1, 256] } }],
        raw_input_contents: [],
      },
      error: 'inputs[0].contents.uint_contents[1]: 256 is out of range for UINT8 (0 to 255)',
    },
    {
      what: 'raw bytes of the wrong size',
      req: { raw_input_contents: [f32([1, 2])] },
      error: "raw_input_contents[0]: 8 bytes, but input 'a' of shape [1,3] and FP32 is 12 bytes",
    },
    {
      what: 'an input without data',
      req: { inputs: two({}, {}), raw_input_contents: [f32([1, 2])] },
      error:
        "inputs[1] ('b'): no tensor data: raw_input_contents has 1 entries for 2 inputs (one per input, in " +
        'input order)',
    },
    {
      what: 'no data at all',
      req: { raw_input_contents: [] },
      error:
        "inputs[0] ('a'): no tensor data (send raw_input_contents, one entry per input in input order, or contents)",
    },
    {
      what: 'more raw entries than inputs',
      req: { raw_input_contents: [f32([1, 2, 3]), f32([1])] },
      error: 'raw_input_contents: 2 entries, but 1 of the 1 inputs take one (one per input, in input order)',
    },
    {
      what: 'a region and contents',
      req: {
        inputs: [
          {
            name: 'a',
            datatype: 'FP32',
            shape: [1, 1],
            parameters: { shared_memory_region: { parameter_choice: 'string_param', string_param: 'r' } },
            contents: { fp32_contents: [1] },
          },
        ],
        raw_input_contents: [],
      },
      error: 'inputs[0]: has both parameters.shared_memory_region and contents (send one)',
    },
  ];
  it.each(cases)('$what', ({ req, error }) => {
    expect(inferFieldsOf(request(req))).toEqual({ ok: false, error });
  });
});

describe('inferFieldsOf: id, parameters and outputs', () => {
  it('maps every InferParameter kind to its plain value and drops the HTTP binary extension', () => {
    expect(
      plainParameters({
        b: { parameter_choice: 'bool_param', bool_param: true },
        i: { parameter_choice: 'int64_param', int64_param: '-5' },
        u: { parameter_choice: 'uint64_param', uint64_param: '7' },
        s: { parameter_choice: 'string_param', string_param: 'x' },
        d: { parameter_choice: 'double_param', double_param: 0.25 },
        big: { parameter_choice: 'int64_param', int64_param: '9007199254740993' },
        none: {},
        binary_data_output: { parameter_choice: 'bool_param', bool_param: true },
      }),
    ).toEqual({ b: true, i: -5, u: 7, s: 'x', d: 0.25, big: '9007199254740993' });
    expect(parameterValue({})).toBeUndefined();
    expect(plainParameters({ binary_data: { parameter_choice: 'bool_param', bool_param: false } })).toBeUndefined();
  });

  it('carries the id, request parameters and requested outputs with theirs (classification as a number)', () => {
    const r = okOf(
      inferFieldsOf(
        request({
          id: 'req-7',
          parameters: { priority: { parameter_choice: 'int64_param', int64_param: '1' } },
          outputs: [
            {
              name: 'y',
              parameters: {
                classification: { parameter_choice: 'int64_param', int64_param: '3' },
                binary_data: { parameter_choice: 'bool_param', bool_param: true },
              },
            },
            { name: 'z', parameters: {} },
          ],
        }),
      ),
    );
    expect(r.json.id).toBe('req-7');
    expect(r.json.parameters).toEqual({ priority: 1 });
    expect(r.json.outputs).toEqual([{ name: 'y', parameters: { classification: 3 } }, { name: 'z' }]);
  });

  it('an empty id and no outputs leave them out (all outputs, as over HTTP)', () => {
    const r = okOf(inferFieldsOf(request({ id: '', outputs: [] })));
    expect(r.json).not.toHaveProperty('id');
    expect(r.json).not.toHaveProperty('outputs');
  });
});

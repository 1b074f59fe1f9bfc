// `inss loadgen --protocol grpc`'s pure part (tools/loadgen/grpcRequest.ts): the request message in
// both encodings carries the same tensor as over HTTP, metadata and configuration answers read as the
// HTTP metadata, and each kind of answer is judged as the report counts it.
import { describe, expect, it } from 'vitest';
import { inferFieldsOf } from '../../scheduler/grpcCodec.js';
import { syntheticPicture, uint8Chw } from '../../tools/loadgen/images.js';
import {
  grpcImageRequest,
  grpcInferRequest,
  grpcModelMetadata,
  judgeGrpcAnswer,
} from '../../tools/loadgen/grpcRequest.js';
import { type InputTensor, parseModelMetadata, tensorData } from '../../tools/loadgen/request.js';

const tensor = (datatype: InputTensor['datatype']): InputTensor => ({
  name: 'x',
  datatype,
  shape: [1, 4],
  levels: Uint8Array.from([0, 1, 64, 127]),
});

describe('grpcInferRequest', () => {
  it.each(['FP32', 'FP64', 'INT8', 'INT32', 'INT64', 'UINT8', 'UINT64', 'BOOL'] as const)(
    '%s: raw and typed contents are the same bytes on the server',
    (datatype) => {
      const t = tensor(datatype);
      const raw = grpcInferRequest('m', [t], 'binary');
      expect(raw.raw_input_contents).toEqual([tensorData(t)]);
      const typed = grpcInferRequest('m', [t], 'json');
      expect(typed.raw_input_contents).toEqual([]);
      // What the server's codec makes of the typed form: the raw bytes.
      const fields = inferFieldsOf({
        ...typed,
        inputs: typed.inputs.map((i) => ({ ...i, contents: i.contents ?? null })),
      });
      expect(fields.ok && fields.binary).toEqual(tensorData(t));
    },
  );

  it('an FP16 input has no typed field: the request goes raw', () => {
    expect(grpcInferRequest('m', [tensor('FP16')], 'json').raw_input_contents).toHaveLength(1);
  });

  it('images: UINT8 pixels raw or as uint_contents, a JPEG as one raw BYTES element with its length', () => {
    const p = syntheticPicture(8, 8, 1);
    expect(grpcImageRequest('m', 'input', 'uint8', p, 'binary').raw_input_contents).toEqual([uint8Chw(p)]);
    expect(grpcImageRequest('m', 'input', 'uint8', p, 'json').inputs[0]!.contents).toEqual({
      uint_contents: Array.from(uint8Chw(p)),
    });
    const jpeg = grpcImageRequest('m', 'input', 'jpeg', p, 'binary');
    expect(jpeg.inputs[0]).toEqual({ name: 'input', datatype: 'BYTES', shape: [1, 1] });
    expect(jpeg.raw_input_contents[0]!.readUInt32LE(0)).toBe(jpeg.raw_input_contents[0]!.length - 4);
  });
});

describe('grpcModelMetadata', () => {
  const meta = {
    name: 'm',
    versions: ['1'],
    platform: 'inss',
    inputs: [{ name: 'input', datatype: 'FP32', shape: ['-1', '3'] }],
    outputs: [{ name: 'output', datatype: 'FP32', shape: ['-1', '10'] }],
  };

  it("reads the SLO and input forms from the configuration's parameters", () => {
    const forms = { input: [{ datatype: 'FP32', shape: [-1, 3], content: 'tensor' }] };
    const m = parseModelMetadata(
      grpcModelMetadata(meta, {
        config: {
          parameters: { slo_ms: { string_value: '80' }, input_forms: { string_value: JSON.stringify(forms) } },
        },
      }),
    );
    expect(m.ok && m.value).toMatchObject({
      name: 'm',
      inputs: [{ shape: [-1, 3] }],
      parameters: { slo_ms: 80, input_forms: forms },
    });
  });

  it('a server without a configuration (or one without them) gives no SLO', () => {
    const m = parseModelMetadata(grpcModelMetadata(meta, undefined));
    expect(m.ok && m.value.parameters).toEqual({});
  });
});

describe('judgeGrpcAnswer', () => {
  const out = { name: 'y', datatype: 'FP32', shape: ['1', '2'] };
  it.each([
    [
      'a well-formed answer',
      { ok: true as const, response: { outputs: [out], raw_output_contents: [Buffer.alloc(8)] } },
      { outcome: 'ok' },
    ],
    [
      'raw bytes of the wrong size',
      { ok: true as const, response: { outputs: [out], raw_output_contents: [Buffer.alloc(4)] } },
      { outcome: 'bad-response', error: "bad response: outputs[0] 'y': 4 bytes do not match shape [1,2] of FP32" },
    ],
    [
      'no outputs',
      { ok: true as const, response: { outputs: [], raw_output_contents: [] } },
      { outcome: 'bad-response', error: 'bad response: no outputs' },
    ],
    [
      'a bad request',
      { ok: false as const, code: 3, details: 'inputs[0].shape: expected [1,2]' },
      { outcome: 'http-4xx', error: 'gRPC INVALID_ARGUMENT: inputs[0].shape: expected [1,2]' },
    ],
    [
      'a task dropped',
      { ok: false as const, code: 14, details: 'dropped: cannot meet its SLO' },
      { outcome: 'http-5xx', error: 'gRPC UNAVAILABLE: dropped: cannot meet its SLO' },
    ],
    [
      'no connection',
      { ok: false as const, code: 14, details: 'No connection established. Last error: connect ECONNREFUSED' },
      { outcome: 'network', error: 'gRPC UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED' },
    ],
    [
      'the deadline',
      { ok: false as const, code: 4, details: 'Deadline exceeded' },
      { outcome: 'timeout', error: 'gRPC DEADLINE_EXCEEDED: Deadline exceeded' },
    ],
    [
      'a missing token',
      { ok: false as const, code: 16, details: 'this route needs a token' },
      { outcome: 'http-4xx', error: 'gRPC UNAUTHENTICATED: this route needs a token' },
    ],
  ])('%s', (_what, answer, judged) => {
    expect(judgeGrpcAnswer(answer)).toEqual(judged);
  });
});

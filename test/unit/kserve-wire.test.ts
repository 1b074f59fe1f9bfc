// The KServe v2 codec (scheduler/kserve.ts) on the wire: encoded answers, the bytes tritonclient.http
// and KServe's client send and read, error and metadata bodies, and shared-memory parameters.
import { describe, expect, it } from 'vitest';
import {
  encodeInferResponse,
  errorBody,
  fromHalf,
  modelMetadata,
  parseInferRequest,
  resolveRegionInput,
  serverMetadata,
} from '../../scheduler/kserve.js';
import { TWO, RESNET, f32, i64, A_BYTES, B_BYTES, json, inA, inB, parse, accepted } from '../support/kserve.js';

describe('encodeInferResponse', () => {
  const Y = f32([0.5, -1]);
  const Z = Buffer.from([1, 0, 1]);

  it('all JSON: application/json, no header length, model_version and id only when given', () => {
    const r = encodeInferResponse({
      modelName: 'two',
      outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 2], data: Y, binary: false }],
    });
    expect(r.headers).toEqual({ 'content-type': 'application/json' });
    expect(JSON.parse(r.body.toString())).toEqual({
      model_name: 'two',
      outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 2], data: [0.5, -1] }],
    });
  });

  it('binary outputs after the JSON, in output order, with the header length', () => {
    const r = encodeInferResponse({
      modelName: 'two',
      modelVersion: '1',
      id: 'req-7',
      outputs: [
        { name: 'z', datatype: 'BOOL', shape: [1, 3], data: Z, binary: true },
        { name: 'y', datatype: 'FP32', shape: [1, 2], data: Y, binary: true },
      ],
    });
    expect(r.headers['content-type']).toBe('application/octet-stream');
    const n = Number(r.headers['inference-header-content-length']);
    expect(JSON.parse(r.body.subarray(0, n).toString())).toEqual({
      model_name: 'two',
      model_version: '1',
      id: 'req-7',
      outputs: [
        { name: 'z', datatype: 'BOOL', shape: [1, 3], parameters: { binary_data_size: 3 } },
        { name: 'y', datatype: 'FP32', shape: [1, 2], parameters: { binary_data_size: 8 } },
      ],
    });
    expect(r.body.subarray(n).equals(Buffer.concat([Z, Y]))).toBe(true);
  });

  it('the header length counts bytes, not characters', () => {
    const r = encodeInferResponse({
      modelName: 'modèle-ü',
      id: '日本',
      outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 2], data: Y, binary: true }],
    });
    const n = Number(r.headers['inference-header-content-length']);
    expect(n).toBe(r.body.length - 8);
    expect((JSON.parse(r.body.subarray(0, n).toString()) as { id: string }).id).toBe('日本');
  });
});

describe('the clients as they are', () => {
  /**
   * tritonclient.http InferenceServerClient.infer(model, inputs, outputs=..., request_id='42') with
   * InferInput('input', [1,3,224,224], 'FP32').set_data_from_numpy(x) (binary_data=True by default) and
   * InferRequestedOutput('output') (binary_data=True by default): _get_inference_request builds the
   * dict in this key order, python-rapidjson dumps it without spaces, json_size = len(request_json),
   * the body is the JSON then x.tobytes(), and the header is Inference-Header-Content-Length: json_size.
   */
  it('tritonclient.http: binary input, binary output requested, request id', () => {
    const x = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => (i % 251) / 251);
    const requestJson =
      '{"id":"42","inputs":[{"name":"input","shape":[1,3,224,224],"datatype":"FP32",' +
      '"parameters":{"binary_data_size":602112}}],"outputs":[{"name":"output",' +
      '"parameters":{"binary_data":true}}]}';
    const body = Buffer.concat([Buffer.from(requestJson), Buffer.from(x.buffer)]);
    const req = accepted(
      parseInferRequest(body, { contentType: undefined, inferenceHeaderLength: String(requestJson.length) }, RESNET),
    );
    expect(req.id).toBe('42');
    expect(req.inputs[0]!.shape).toEqual([1, 3, 224, 224]);
    expect(req.inputs[0]!.data.equals(Buffer.from(x.buffer))).toBe(true);
    expect(req.outputs).toEqual([{ name: 'output', binary: true }]);
  });

  /**
   * tritonclient.http with no outputs named: it adds parameters.binary_data_output = true; one input sent with
   * binary_data=False.
   */
  it('tritonclient.http: mixed binary and JSON inputs, no outputs named', () => {
    const requestJson =
      '{"inputs":[{"name":"a","shape":[1,2,3],"datatype":"FP32","parameters":{"binary_data_size":24}},' +
      '{"name":"b","shape":[1,2],"datatype":"INT64","data":[7,-8]}],' +
      '"parameters":{"binary_data_output":true}}';
    const body = Buffer.concat([Buffer.from(requestJson), A_BYTES]);
    const req = accepted(parseInferRequest(body, { inferenceHeaderLength: String(requestJson.length) }, TWO));
    expect(req.inputs[0]!.data.equals(A_BYTES)).toBe(true);
    expect(req.inputs[1]!.data.equals(B_BYTES)).toBe(true);
    expect(req.outputs).toEqual([
      { name: 'y', binary: true },
      { name: 'z', binary: true },
    ]);
  });

  /** KServe's InferRequest.to_rest(): always an id (a uuid), the model_name, orjson without spaces. */
  it("KServe's REST client: binary input with id and model_name", () => {
    const x = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => i / 7);
    const requestJson =
      '{"id":"5b0a3c8e-7d0e-4b8e-9f55-0c2b1a6f9e21","model_name":"resnet50","inputs":[{"name":"input",' +
      '"shape":[1,3,224,224],"datatype":"FP32","parameters":{"binary_data_size":602112}}]}';
    const body = Buffer.concat([Buffer.from(requestJson), Buffer.from(x.buffer)]);
    const req = accepted(
      parseInferRequest(
        body,
        { contentType: 'application/json', inferenceHeaderLength: String(requestJson.length) },
        RESNET,
      ),
    );
    expect(req.id).toBe('5b0a3c8e-7d0e-4b8e-9f55-0c2b1a6f9e21');
    expect(req.inputs[0]!.data.equals(Buffer.from(x.buffer))).toBe(true);
    expect(req.outputs).toEqual([{ name: 'output', binary: false }]);
  });

  /**
   * tritonclient.http InferResult: header_length = int(response "Inference-Header-Content-Length");
   * result = json.loads(body[:header_length]); buffer = body[header_length:]; each output with
   * parameters.binary_data_size takes the next that many bytes of buffer, in output order;
   * as_numpy(name) = np.frombuffer(slice, dtype) for those, np.array(output["data"], dtype) for the
   * others, then .reshape(output["shape"]).
   */
  function tritonAsNumpy(
    body: Buffer,
    headers: Record<string, string>,
    name: string,
  ): { shape: number[]; bytes?: Buffer; data?: unknown[] } {
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    const headerLength = lower['inference-header-content-length'];
    const n = headerLength === undefined ? body.length : Number.parseInt(headerLength, 10);
    const result = JSON.parse(body.subarray(0, n).toString('utf8')) as {
      outputs: {
        name: string;
        datatype: string;
        shape: number[];
        parameters?: { binary_data_size?: number };
        data?: unknown[];
      }[];
    };
    const buffer = body.subarray(n);
    const start = new Map<string, number>();
    let index = 0;
    for (const o of result.outputs) {
      const size = o.parameters?.binary_data_size;
      if (size !== undefined) {
        start.set(o.name, index);
        index += size;
      }
    }
    const o = result.outputs.find((x) => x.name === name)!;
    const size = o.parameters?.binary_data_size;
    const from = start.get(name) ?? 0;
    if (size !== undefined) return { shape: o.shape, bytes: buffer.subarray(from, from + size) };
    return { shape: o.shape, data: o.data! };
  }

  it('tritonclient.http decodes a response with binary and JSON outputs', () => {
    const fp16 = Buffer.from(Uint16Array.from([0x3c00, 0xc000]).buffer);
    const y = f32([0.25, -4]);
    const r = encodeInferResponse({
      modelName: 'm',
      modelVersion: '1',
      id: '42',
      outputs: [
        { name: 'h', datatype: 'FP16', shape: [1, 2], data: fp16, binary: true },
        { name: 'z', datatype: 'BOOL', shape: [1, 3], data: Buffer.from([0, 1, 1]), binary: false },
        { name: 'y', datatype: 'FP32', shape: [1, 2], data: y, binary: true },
        { name: 'i', datatype: 'INT64', shape: [1, 2], data: i64([7, -8]), binary: false },
      ],
    });
    const h = tritonAsNumpy(r.body, r.headers, 'h');
    expect(h.shape).toEqual([1, 2]);
    expect(h.bytes!.equals(fp16)).toBe(true);
    expect(tritonAsNumpy(r.body, r.headers, 'y').bytes!.equals(y)).toBe(true);
    expect(tritonAsNumpy(r.body, r.headers, 'z')).toEqual({ shape: [1, 3], data: [false, true, true] });
    expect(tritonAsNumpy(r.body, r.headers, 'i')).toEqual({ shape: [1, 2], data: [7, -8] });
  });

  it('tritonclient.http decodes an all-JSON response (no header length)', () => {
    const r = encodeInferResponse({
      modelName: 'm',
      outputs: [
        {
          name: 'h',
          datatype: 'FP16',
          shape: [1, 2],
          data: Buffer.from(Uint16Array.from([0x3555, 0x7bff]).buffer),
          binary: false,
        },
      ],
    });
    expect(r.headers['inference-header-content-length']).toBeUndefined();
    expect(tritonAsNumpy(r.body, r.headers, 'h')).toEqual({ shape: [1, 2], data: [fromHalf(0x3555), 65504] });
  });
});

describe('errors and metadata', () => {
  it('errorBody is the protocol error object', () => {
    expect(JSON.parse(errorBody('inputs[0].shape: expected [1,2], got "x"').toString())).toEqual({
      error: 'inputs[0].shape: expected [1,2], got "x"',
    });
  });

  it('server metadata lists only the extensions inss implements', () => {
    // Triton's extension names (its server metadata spells system_shared_memory with underscores).
    expect(serverMetadata('0.1.0')).toEqual({
      name: 'inss',
      version: '0.1.0',
      extensions: [
        'binary_tensor_data',
        'classification',
        'statistics',
        'model_configuration',
        'model_repository',
        'system_shared_memory',
      ],
    });
  });

  it('model metadata: batch dimension -1, slo_ms under parameters, versions when given', () => {
    expect(modelMetadata({ name: 'resnet50', signature: RESNET.signature, sloMs: 80, versions: ['1'] })).toEqual({
      name: 'resnet50',
      versions: ['1'],
      platform: 'inss',
      inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 3, 224, 224] }],
      outputs: [{ name: 'output', datatype: 'FP32', shape: [-1, 1000] }],
      parameters: {
        slo_ms: 80,
        input_forms: { input: [{ datatype: 'FP32', shape: [-1, 3, 224, 224], content: 'tensor' }] },
      },
    });
    expect(modelMetadata({ name: 'two', signature: TWO.signature, sloMs: 25 })).not.toHaveProperty('versions');
  });
});

describe("shared memory parameters (Triton's system shared-memory extension)", () => {
  it(
    'an input and an output by region: the input waits for its bytes, the output is answered by name, without ' +
      'data',
    () => {
      const req = accepted(
        parse(
          json({
            inputs: [
              inA({
                data: undefined,
                parameters: { shared_memory_region: 'in', shared_memory_byte_size: 24, shared_memory_offset: 8 },
              }),
              inB(),
            ],
            outputs: [{ name: 'y', parameters: { shared_memory_region: 'out', shared_memory_byte_size: 64 } }],
          }),
        ),
      );
      expect(req.inputs[0]).toMatchObject({
        name: 'a',
        region: { name: 'in', offset: 8, byteSize: 24 },
        encoding: 'FP32',
      });
      expect(req.inputs[0]!.data.length).toBe(0);
      expect(req.outputs).toEqual([{ name: 'y', binary: false, region: { name: 'out', offset: 0, byteSize: 64 } }]);
      const r = resolveRegionInput(0, req.inputs[0]!, A_BYTES);
      expect(r.ok && r.input.data.equals(A_BYTES) && r.input.region === undefined).toBe(true);
      const body = encodeInferResponse({
        modelName: 'two',
        outputs: [
          {
            name: 'y',
            datatype: 'FP32',
            shape: [1, 2],
            data: Buffer.alloc(8),
            binary: false,
            region: { name: 'out', offset: 0, byteSize: 64 },
          },
        ],
      });
      expect(JSON.parse(body.body.toString())).toEqual({
        model_name: 'two',
        outputs: [
          {
            name: 'y',
            datatype: 'FP32',
            shape: [1, 2],
            parameters: { shared_memory_region: 'out', shared_memory_byte_size: 8 },
          },
        ],
      });
    },
  );
});

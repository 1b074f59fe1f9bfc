// Triton's binary tensor extension on the client side: the JSON header, then each input's bytes, with
// the header's length in `Inference-Header-Content-Length`. One builder for the load generator, the
// benchmarks and the tests. Pure.

export interface BinaryRequest {
  readonly body: Buffer;
  readonly headers: Record<string, string>;
}

/** An infer request body of `header` (JSON) followed by `blocks`, and its headers. */
export function binaryInferBody(header: unknown, blocks: readonly Buffer[]): BinaryRequest {
  const head = Buffer.from(JSON.stringify(header));
  const body = Buffer.concat([head, ...blocks]);
  return {
    body,
    headers: {
      'content-type': 'application/octet-stream',
      'inference-header-content-length': String(head.length),
      'content-length': String(body.length),
    },
  };
}

/** One FP32 image (3x224x224 by default) as input `input`, its output `output` asked for in binary. */
export function fp32ImageRequest(values: Float32Array, shape = [1, 3, 224, 224]): BinaryRequest {
  return binaryInferBody(
    {
      inputs: [{ name: 'input', shape, datatype: 'FP32', parameters: { binary_data_size: values.byteLength } }],
      outputs: [{ name: 'output', parameters: { binary_data: true } }],
    },
    [Buffer.from(values.buffer, values.byteOffset, values.byteLength)],
  );
}

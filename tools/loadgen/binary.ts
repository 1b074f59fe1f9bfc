// Triton's binary tensor extension on the client side: the JSON header, then each input's bytes, with
// the header's length in `Inference-Header-Content-Length`. One builder for the load generator, the
// benchmarks and the tests. Pure.

export interface BinaryRequest {
  readonly body: Buffer;
  readonly headers: Record<string, string>;
}

/**
 * An infer request body of `header` (JSON) followed by `blocks`, and its headers. No Content-Length:
 * the HTTP client sets it from the body it sends (a test may send a body cut short).
 */
export function binaryInferBody(header: unknown, blocks: readonly Buffer[]): BinaryRequest {
  const head = Buffer.from(JSON.stringify(header));
  return {
    body: Buffer.concat([head, ...blocks]),
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(head.length) },
  };
}

/** The same with its Content-Length, for a client that sends the body as it is. */
export function withLength(r: BinaryRequest): BinaryRequest {
  return { body: r.body, headers: { ...r.headers, 'content-length': String(r.body.length) } };
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

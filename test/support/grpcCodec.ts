// Builders for the gRPC codec's tests: a ModelInferRequest message and the accepted result.
import type { InferFieldsResult, ModelInferRequestMessage } from '../../scheduler/grpcCodec.js';

export const f32 = (xs: readonly number[]) => Buffer.from(Float32Array.from(xs).buffer);

/** One FP32 input `a` of shape [1,3] in raw_input_contents, with `over` laid on top. */
export function request(over: Partial<ModelInferRequestMessage> = {}): ModelInferRequestMessage {
  return {
    model_name: 'm',
    inputs: [{ name: 'a', datatype: 'FP32', shape: ['1', '3'] }],
    raw_input_contents: [f32([1, 2, 3])],
    ...over,
  };
}

/** The accepted result, or the test fails with the codec's error. */
export function okOf(r: InferFieldsResult): Extract<InferFieldsResult, { ok: true }> {
  if (!r.ok) throw new Error(r.error);
  return r;
}

// The messages of Triton's `inference.GRPCInferenceService` as @grpc/proto-loader decodes them
// (keepCase, longs: String, bytes: Buffer, defaults, oneofs), the fields inss reads and writes, and the
// gRPC status codes inss answers with. Types and one pure mapping; the codec is scheduler/grpcCodec.ts.

/** A 64-bit integer field: a decimal string as decoded, a number or string when written. */
export type Int64 = string | number;

export interface InferParameterMessage {
  /** Which member of the oneof is set (proto-loader's `oneofs: true`). */
  readonly parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'double_param' | 'uint64_param';
  readonly bool_param?: boolean;
  readonly int64_param?: Int64;
  readonly string_param?: string;
  readonly double_param?: number;
  readonly uint64_param?: Int64;
}

export type ParameterMap = Readonly<Record<string, InferParameterMessage>>;

export interface TensorContentsMessage {
  readonly bool_contents?: readonly boolean[];
  readonly int_contents?: readonly number[];
  readonly int64_contents?: readonly Int64[];
  readonly uint_contents?: readonly number[];
  readonly uint64_contents?: readonly Int64[];
  readonly fp32_contents?: readonly number[];
  readonly fp64_contents?: readonly number[];
  readonly bytes_contents?: readonly Buffer[];
}

export interface InferInputMessage {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly Int64[];
  readonly parameters?: ParameterMap;
  readonly contents?: TensorContentsMessage | null;
}

export interface ModelInferRequestMessage {
  readonly model_name: string;
  readonly model_version?: string;
  readonly id?: string;
  readonly parameters?: ParameterMap;
  readonly inputs: readonly InferInputMessage[];
  readonly outputs?: readonly { readonly name: string; readonly parameters?: ParameterMap }[];
  readonly raw_input_contents?: readonly Buffer[];
}

export interface InferOutputMessage {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly parameters: ParameterMap;
}

export interface ModelInferResponseMessage {
  readonly model_name: string;
  readonly model_version: string;
  readonly id: string;
  readonly outputs: readonly InferOutputMessage[];
  readonly raw_output_contents: readonly Buffer[];
}

// ---------------------------------------------------------------------------------------------------
// Status codes

/** The gRPC status codes inss answers with (grpc/doc/statuscodes.md; the numbers are the protocol's). */
export const GrpcCode = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcCodeValue = (typeof GrpcCode)[keyof typeof GrpcCode];

/**
 * The gRPC code of an HTTP status the shared code answers with, as Triton maps its errors: a bad
 * request is INVALID_ARGUMENT, an unknown model or version NOT_FOUND, a task dropped, refused for a
 * full queue or not ready UNAVAILABLE (a client may retry), a request over the size limit
 * RESOURCE_EXHAUSTED (what gRPC itself answers to a message over max_receive_message_length).
 */
export function grpcCodeOf(httpStatus: number): GrpcCodeValue {
  switch (httpStatus) {
    case 400:
    case 415:
      return GrpcCode.INVALID_ARGUMENT;
    case 401:
      return GrpcCode.UNAUTHENTICATED;
    case 403:
      return GrpcCode.PERMISSION_DENIED;
    case 404:
      return GrpcCode.NOT_FOUND;
    case 409:
      return GrpcCode.ALREADY_EXISTS;
    case 413:
    case 429:
      return GrpcCode.RESOURCE_EXHAUSTED;
    case 501:
      return GrpcCode.UNIMPLEMENTED;
    case 502:
    case 503:
    case 504:
      return GrpcCode.UNAVAILABLE;
    default:
      return httpStatus >= 400 && httpStatus < 500 ? GrpcCode.FAILED_PRECONDITION : GrpcCode.INTERNAL;
  }
}

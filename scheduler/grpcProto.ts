// Loads the gRPC service definition shipped in proto/ (Triton's grpc_service.proto and the part of its
// model_config.proto that inss fills): the gRPC server (scheduler/grpc.ts), `inss loadgen --protocol
// grpc` and the tests build their clients and service from this one file. Read once per call, at start.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/**
 * How messages are decoded (scheduler/grpcCodec.ts reads them so): field names as in the .proto;
 * int64 and uint64 as decimal strings (a number would lose bits past 2^53; shapes and counts are
 * converted where read); enums by name; bytes as Buffers (raw tensor contents are views of the
 * received message, not copies); absent fields as their defaults; oneofs name their set member.
 */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: true,
  oneofs: true,
};

/** proto/ of the package: beside scheduler/ in the source tree, two levels up from dist/scheduler/. */
export function protoDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const dir = [join(here, '..', 'proto'), join(here, '..', '..', 'proto')].find((d) =>
    existsSync(join(d, 'grpc_service.proto')),
  );
  if (!dir)
    throw new Error(`the gRPC service definition (proto/grpc_service.proto) is missing from the package near ${here}`);
  return dir;
}

/** The `inference.GRPCInferenceService` client constructor and its service definition. */
export function inferenceService(): grpc.ServiceClientConstructor {
  const definition = protoLoader.loadSync('grpc_service.proto', { ...LOADER_OPTIONS, includeDirs: [protoDir()] });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    inference: { GRPCInferenceService: grpc.ServiceClientConstructor };
  };
  return pkg.inference.GRPCInferenceService;
}

// The scheduler's gRPC endpoint: Triton's `inference.GRPCInferenceService` (proto/grpc_service.proto,
// the KServe v2 / Open Inference Protocol over gRPC), beside the HTTP one, on its own port
// (`--grpc-port`, 8001 by default as Triton's). It serves what the HTTP routes serve, through the same
// code: requests are validated by the HTTP codec (scheduler/kserve.ts parseInferFields, after
// scheduler/grpcCodec.ts turns the message into its request object), run by the same InferFront
// (scheduler/infer.ts: shared-memory regions, the control plane, outputs), and read the same registry
// of system shared-memory regions (a region registered over HTTP serves a gRPC request, as in Triton).
// Tokens, TLS and size limits are the HTTP endpoint's. What each RPC does, and the status codes:
// docs/grpc.md.
//
// Raw tensors take the path of a binary HTTP body: where a worker on this host maps the scheduler's
// shared-memory region, they are copied once into a slot of it (the HTTP body is read into one), so the
// worker reads them in place; the slot is freed once the request is answered. Elsewhere the task
// carries a view of the received message.
//
// The RPCs themselves: scheduler/grpcHandlers.ts. The one effect here is the gRPC server (@grpc/grpc-js).
// Built once by SchedulerService.start after the HTTP port is bound; closed by SchedulerService.close
// (calls in flight are answered first, for at most CLOSE_GRACE_MS).
import * as grpc from '@grpc/grpc-js';
import { type AccessOptions, refusal } from './auth.js';
import { inferenceService } from './grpcProto.js';
import { handlers, type HandlerOptions } from './grpcHandlers.js';

export { peerAddress } from './grpcHandlers.js';

export interface GrpcOptions extends HandlerOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Serve over TLS with this certificate and key (PEM), as the HTTP endpoint does. */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
  readonly access: AccessOptions;
}

/** How long close() waits for calls in flight before it cuts them. */
const CLOSE_GRACE_MS = 5_000;

/** The RPCs anyone may call, as the HTTP health routes (probes carry no credentials). */
const HEALTH_METHODS = new Set(['ServerLive', 'ServerReady']);

export class GrpcService {
  private constructor(
    private readonly server: grpc.Server,
    /** host:port clients dial (loopback when bound to every address). */
    readonly address: string,
  ) {}

  static async start(o: GrpcOptions): Promise<GrpcService> {
    // grpc-js's own lines (it writes errors to stderr by default) go to the log at debug level: what
    // matters reaches a caller as a call's status or as start()'s error.
    grpc.setLogger({
      error: (...args: unknown[]) => o.logger.debug({ grpcJs: args.map(String).join(' ') }, 'grpc-js'),
    });
    const service = inferenceService().service;
    // Tokens are checked on the call's metadata, before its message is read (as the HTTP endpoint
    // refuses a request without one before reading its body).
    const authorize: grpc.ServerInterceptor = (method, call) =>
      new grpc.ServerInterceptingCall(call, {
        start: (next) =>
          next({
            onReceiveMetadata: (metadata, mdNext) => {
              const name = method.path.slice(method.path.lastIndexOf('/') + 1);
              const header = metadata.get('authorization')[0];
              const why = refusal(
                o.access,
                HEALTH_METHODS.has(name) ? '/v2/health/live' : '/v2/models',
                typeof header === 'string' ? header : undefined,
              );
              if (why === undefined) return mdNext(metadata);
              call.sendStatus({
                code: grpc.status.UNAUTHENTICATED,
                details: why.replace('Authorization: Bearer <token>', "metadata 'authorization: Bearer <token>'"),
              });
            },
          }),
      });
    const server = new grpc.Server({
      interceptors: [authorize],
      'grpc.max_receive_message_length': Math.max(64 * 1024, ...o.bodyLimits),
      'grpc.max_concurrent_streams': 1024,
    });
    server.addService(service, handlers(o));
    const creds = o.tls
      ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: o.tls.cert, private_key: o.tls.key }], false)
      : grpc.ServerCredentials.createInsecure();
    const host = o.host.includes(':') ? `[${o.host}]` : o.host;
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${host}:${o.port}`, creds, (err, p) => {
        if (!err) return resolve(p);
        server.forceShutdown();
        reject(new Error(`grpc port ${o.port}: ${err.message}`));
      }),
    );
    const local = host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host;
    return new GrpcService(server, `${local}:${port}`);
  }

  get port(): number {
    return Number(this.address.slice(this.address.lastIndexOf(':') + 1));
  }

  /** Stops taking calls; answers those in flight (for at most CLOSE_GRACE_MS, then cuts them). */
  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      const cut = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, CLOSE_GRACE_MS);
      this.server.tryShutdown(() => {
        clearTimeout(cut);
        resolve();
      });
    });
  }
}

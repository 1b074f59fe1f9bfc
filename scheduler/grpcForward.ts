// A front door's gRPC forward (docs/front-doors.md): a ModelInfer request for a model this door holds no worker of
// goes to the gRPC endpoint of a door that holds one (scheduler/doorRoute.ts picks it, as for HTTP), as the
// decoded message re-sent by a client of the same service definition, with the caller's metadata (its token) and
// FORWARDED_HEADER, so it is never forwarded again. One client per peer, kept while the process runs.
import * as grpc from '@grpc/grpc-js';
import type { DoorRoutes } from './doorRoute.js';
import { FORWARDED_HEADER } from './doorRoute.js';
import type { ModelInferRequestMessage, ModelInferResponseMessage } from './grpcMessages.js';
import { inferenceService } from './grpcProto.js';

/** Sends the message to the peer; rejects with the peer's status (or UNAVAILABLE naming it). */
export type GrpcForward = (msg: ModelInferRequestMessage) => Promise<ModelInferResponseMessage>;

type InferClient = grpc.Client & {
  ModelInfer(
    msg: ModelInferRequestMessage,
    md: grpc.Metadata,
    cb: (e: grpc.ServiceError | null, r?: ModelInferResponseMessage) => void,
  ): void;
};

export class GrpcForwarder {
  private readonly clients = new Map<string, InferClient>();
  private ctor: grpc.ServiceClientConstructor | null = null;

  /** `tls`: the peers serve TLS (as this door does), `ca` the certificate(s) to trust beside the system's. */
  constructor(
    private readonly routes: DoorRoutes,
    private readonly tls: boolean,
    private readonly ca?: Buffer,
  ) {}

  /** The forward of model `name`'s request with the caller's metadata, or null: served here. */
  forward(name: string, md: grpc.Metadata): GrpcForward | null {
    if (md.get(FORWARDED_HEADER).length > 0) return null;
    const peer = this.routes.grpcTarget(name);
    if (peer === null) return null;
    const client = this.client(peer);
    const out = md.clone();
    out.set(FORWARDED_HEADER, '1');
    return (msg) =>
      new Promise((resolve, reject) =>
        client.ModelInfer(msg, out, (e, r) => {
          if (!e) return resolve(r!);
          const code = e.code === grpc.status.UNAVAILABLE || e.code === undefined ? grpc.status.UNAVAILABLE : e.code;
          reject(Object.assign(new Error(e.details), { code, peer }));
        }),
      );
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  private client(peer: string): InferClient {
    let c = this.clients.get(peer);
    if (!c) {
      this.ctor ??= inferenceService();
      const creds = this.tls ? grpc.credentials.createSsl(this.ca ?? null) : grpc.credentials.createInsecure();
      c = new this.ctor(peer, creds) as unknown as InferClient;
      this.clients.set(peer, c);
    }
    return c;
  }
}

// The RPCs of the gRPC endpoint (scheduler/grpc.ts), one handler each, over the code the HTTP routes
// use: the gRPC codec (scheduler/grpcCodec.ts) turns a message into the HTTP codec's request object,
// InferFront (scheduler/infer.ts) runs it, and Triton's builders (scheduler/triton.ts) answer the
// extensions. Built once per GrpcService.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { UnavailableModel } from '../src/repository/types.js';
import type { Control, ServedModelConfig } from './control.js';
import {
  GrpcCode,
  type GrpcCodeValue,
  grpcCodeOf,
  inferFieldsOf,
  inferResponseMessage,
  type ModelInferRequestMessage,
  type ModelInferResponseMessage,
  modelConfigMessage,
  modelMetadataMessage,
  modelStatisticsMessage,
  repositoryIndexMessage,
  rewriteError,
  serverMetadataMessage,
  sharedMemoryStatusMessage,
} from './grpcCodec.js';
import type { GrpcForward } from './grpcForward.js';
import type { InferFront } from './infer.js';
import { parseInferFields, servedModelMetadata, serverMetadata } from './kserve.js';
import type { Metrics } from './metrics.js';
import { isLocalPeer, type SharedMemoryRegistry } from './sharedMemory.js';
import { cudaSharedMemoryAnswer } from './sharedMemoryRoutes.js';
import { modelStatJson, repositoryIndex, resolveModel, servedModelConfig } from './triton.js';

/** What the handlers serve: the models, and the parts of the service each RPC reads or runs. */
export interface HandlerOptions {
  readonly models: readonly ServedModelConfig[];
  /** Repository models that failed to load (scheduler/triton/routes.ts resolveModel, repositoryIndex). */
  readonly unavailable?: readonly UnavailableModel[];
  /**
   * Each model's largest request, in bytes (the HTTP body limit): a message over the largest is refused by gRPC itself.
   */
  readonly bodyLimits: readonly number[];
  readonly control: Pick<Control, 'readiness' | 'modelReady' | 'workerViews'>;
  readonly metrics: Pick<Metrics, 'modelStats' | 'badRequests'>;
  readonly regions: SharedMemoryRegistry;
  readonly front: Pick<InferFront, 'infer' | 'answerSent'>;
  /**
   * Slots of the scheduler's shared-memory region (shmRegion.ts), while a worker on this host maps it:
   * `take` returns null when none is free or no worker would read it in place.
   */
  readonly slots?: { take(bytes: number): Buffer | null; release(slot: Buffer): void };
  readonly version: string;
  readonly logger: Logger;
  /** A front door's forward of a model's request to the door holding its workers (grpcForward.ts); null: here. */
  readonly forward?: (model: string, md: grpc.Metadata) => GrpcForward | null;
}

/** An RPC's result: a message, or a status code and its text. */
type Answer<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly code: GrpcCodeValue; readonly error: string };

const fail = (code: GrpcCodeValue, error: string): { ok: false; code: GrpcCodeValue; error: string } => ({
  ok: false,
  code,
  error,
});

/** The address part of a peer as grpc-js names it (`127.0.0.1:5000`, `[::1]:5000`, `ipv4:...`). */
export function peerAddress(peer: string): string | undefined {
  const p = peer.replace(/^ipv[46]:/, '');
  const v6 = /^\[([^\]]+)\](?::\d+)?$/.exec(p);
  if (v6) return v6[1];
  const v4 = /^([^:]+)(?::\d+)?$/.exec(p);
  return v4?.[1];
}

type Unary = grpc.ServerUnaryCall<Record<string, unknown>, unknown>;

/** Wraps an RPC's answer function as a grpc-js unary handler. */
function unary<T>(
  log: Logger,
  run: (req: Record<string, unknown>, call: Unary) => Answer<T> | Promise<Answer<T>>,
): grpc.handleUnaryCall<Record<string, unknown>, unknown> {
  return (call, callback) => {
    Promise.resolve()
      .then(() => run(call.request, call))
      .then(
        (a) => (a.ok ? callback(null, a.value) : callback({ code: a.code, details: a.error })),
        (err: unknown) => {
          log.error({ err, method: call.getPath() }, 'gRPC handler failed');
          callback({ code: grpc.status.INTERNAL, details: `internal error: ${(err as Error).message}` });
        },
      );
  };
}

export function handlers(o: HandlerOptions): grpc.UntypedServiceImplementation {
  const log = o.logger;
  const str = (v: unknown): string => (typeof v === 'string' ? v : '');
  const version = (v: unknown): string | undefined => (str(v) === '' ? undefined : str(v));
  const model = (req: Record<string, unknown>): Answer<number> => {
    const r = resolveModel(o.models, str(req.name), version(req.version), o.unavailable);
    return r.ok ? { ok: true, value: r.index } : fail(GrpcCode.NOT_FOUND, r.error);
  };
  const local = (call: { getPeer(): string }) => isLocalPeer(peerAddress(call.getPeer()));
  const NOT_LOCAL =
    "the shared memory extension is only for clients on the scheduler's host (this call came from another address)";
  // The HTTP routes' answers (a Triton built without GPU support), as statuses.
  const cuda = (action: 'status' | 'register' | 'unregister', name: string): Answer<object> => {
    const a = cudaSharedMemoryAnswer(action, name === '' ? undefined : name);
    if (a.status !== 200) return fail(grpcCodeOf(a.status), (a.body as { error: string }).error);
    return ok(action === 'status' ? { regions: {} } : {});
  };
  const ok = <T>(value: T): Answer<T> => ({ ok: true, value });

  /** `infer`, or for a model a front door holds no worker of, its forward to the door that holds one. */
  const inferAt =
    (md: grpc.Metadata) =>
    (msg: ModelInferRequestMessage, isLocal: boolean, receivedMs: number): ReturnType<typeof infer> => {
      const forward = o.forward?.(msg.model_name, md);
      if (!forward) return infer(msg, isLocal, receivedMs);
      return forward(msg).then(
        (response) => ok({ response, answeredMs: performance.now() }),
        (e: Error & { code: GrpcCodeValue; peer: string }) =>
          fail(e.code, `the front door holding this model (${e.peer}) answered: ${e.message}`),
      );
    };

  /**
   * One ModelInfer request, from its message to its answer. `receivedMs`: when its message was read
   * (the task's deadline counts from then). Resolves once the task is answered.
   */
  const infer = async (
    msg: ModelInferRequestMessage,
    isLocal: boolean,
    receivedMs: number,
  ): Promise<Answer<{ response: ModelInferResponseMessage; answeredMs: number }>> => {
    const r = resolveModel(o.models, msg.model_name, version(msg.model_version));
    if (!r.ok) return fail(GrpcCode.NOT_FOUND, r.error);
    const m = r.index;
    const c = o.models[m]!;
    const bad = (error: string) => {
      o.metrics.badRequests.inc({ model: c.name, status: '400' });
      return fail(GrpcCode.INVALID_ARGUMENT, error);
    };
    const fields = inferFieldsOf(msg);
    if (!fields.ok) return bad(fields.error);
    if ((fields.binary?.length ?? 0) > o.bodyLimits[m]!) {
      o.metrics.badRequests.inc({ model: c.name, status: '413' });
      return fail(
        GrpcCode.RESOURCE_EXHAUSTED,
        `the request's tensors are ${fields.binary!.length} bytes, over model '${c.name}''s limit of ` +
          `${o.bodyLimits[m]!}`,
      );
    }
    const slot = fields.binary && fields.binary.length > 0 ? (o.slots?.take(fields.binary.length) ?? null) : null;
    if (slot) fields.binary!.copy(slot);
    const parsed = parseInferFields(fields.json, slot ?? fields.binary, {
      name: c.name,
      signature: c.signature,
      ...(c.maxBatchSize !== undefined ? { maxBatchSize: c.maxBatchSize } : {}),
    });
    if (!parsed.ok) {
      if (slot) o.slots!.release(slot);
      return bad(rewriteError(parsed.error, fields.sources));
    }
    // Freed once answered: with a result, the worker read every byte; with an error, a worker still
    // reading a batch of it computes an answer nobody takes (as for an HTTP body's slot, bodyReader.ts).
    const out = await o.front
      .infer(m, parsed.request, { receivedMs, local: isLocal })
      .finally(() => slot && o.slots!.release(slot));
    if (!out.ok) {
      // Refused before any task ran (its shared-memory regions): a bad request, as over HTTP.
      if (out.answeredMs === undefined) o.metrics.badRequests.inc({ model: c.name, status: String(out.status) });
      return fail(grpcCodeOf(out.status), out.error);
    }
    return ok({ response: inferResponseMessage(out.response), answeredMs: out.answeredMs });
  };

  return {
    ServerLive: unary(log, () => ok({ live: true })),
    ServerReady: unary(log, () => ok({ ready: o.control.readiness().ready })),
    // As Triton: an unknown model is not ready (no error).
    ModelReady: unary(log, (req) => {
      const m = model(req);
      return ok({ ready: m.ok && o.control.modelReady(m.value) });
    }),
    ServerMetadata: unary(log, () => ok(serverMetadataMessage(serverMetadata(o.version)))),
    ModelMetadata: unary(log, (req) => {
      const m = model(req);
      if (!m.ok) return m;
      return ok(modelMetadataMessage(servedModelMetadata(o.models[m.value]!)));
    }),
    ModelConfig: unary(log, (req) => {
      const m = model(req);
      return m.ok ? ok(modelConfigMessage(servedModelConfig(o.models[m.value]!, o.control.workerViews()))) : m;
    }),
    ModelStatistics: unary(log, async (req) => {
      let names = o.models.map((x) => x.name);
      if (str(req.name) !== '') {
        const m = model(req);
        if (!m.ok) return m;
        names = [o.models[m.value]!.name];
      }
      return ok(
        modelStatisticsMessage(
          await Promise.all(names.map(async (n) => modelStatJson(n, await o.metrics.modelStats(n)))),
        ),
      );
    }),
    RepositoryIndex: unary(log, (req) => {
      const index = repositoryIndex(
        o.models,
        o.control.workerViews(),
        o.control.readiness().policyError,
        o.unavailable,
      );
      return ok(repositoryIndexMessage(req.ready === true ? index.filter((e) => e.state === 'READY') : index));
    }),
    RepositoryModelLoad: unary(log, (req) =>
      fail(GrpcCode.UNIMPLEMENTED, loadRefusal('load', str(req.model_name), o.models)),
    ),
    RepositoryModelUnload: unary(log, (req) =>
      fail(GrpcCode.UNIMPLEMENTED, loadRefusal('unload', str(req.model_name), o.models)),
    ),
    SystemSharedMemoryStatus: unary(log, (req, call) => {
      if (!local(call)) return fail(GrpcCode.PERMISSION_DENIED, NOT_LOCAL);
      const s = o.regions.status(version(req.name));
      return s.ok ? ok(sharedMemoryStatusMessage(s.value)) : fail(grpcCodeOf(s.status), s.error);
    }),
    SystemSharedMemoryRegister: unary(log, (req, call) => {
      if (!local(call)) return fail(GrpcCode.PERMISSION_DENIED, NOT_LOCAL);
      const offset = Number(req.offset ?? 0);
      const byteSize = Number(req.byte_size ?? 0);
      if (byteSize <= 0) return fail(GrpcCode.INVALID_ARGUMENT, 'register request: byte_size: expected > 0');
      const r = o.regions.register(str(req.name), str(req.key), offset, byteSize);
      return r.ok ? ok({}) : fail(grpcCodeOf(r.status), r.error);
    }),
    SystemSharedMemoryUnregister: unary(log, (req, call) => {
      if (!local(call)) return fail(GrpcCode.PERMISSION_DENIED, NOT_LOCAL);
      o.regions.unregister(version(req.name));
      return ok({});
    }),
    // As a Triton built without GPU support: no region is ever registered.
    CudaSharedMemoryStatus: unary(log, (req) => cuda('status', str(req.name))),
    CudaSharedMemoryRegister: unary(log, (req) => cuda('register', str(req.name))),
    CudaSharedMemoryUnregister: unary(log, (req) => cuda('unregister', str(req.name))),
    TraceSetting: unary(log, () =>
      fail(
        GrpcCode.UNIMPLEMENTED,
        'trace settings are not supported by inss (its spans: the Server-Timing of HTTP answers, /metrics and ' +
          '/v2/inss/cluster)',
      ),
    ),
    LogSettings: unary(log, () =>
      fail(GrpcCode.UNIMPLEMENTED, 'log settings are not supported by inss (the log level is --log-level at start)'),
    ),

    ModelInfer: (
      call: grpc.ServerUnaryCall<ModelInferRequestMessage, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) => {
      const receivedMs = performance.now();
      inferAt(call.metadata)(call.request, local(call), receivedMs).then(
        (a) => {
          if (!a.ok) return callback({ code: a.code, details: a.error });
          // The scheduler's own span of the task (as the HTTP answer's Server-Timing).
          const trailer = new grpc.Metadata();
          trailer.set('server-timing', `inss;dur=${(a.value.answeredMs - receivedMs).toFixed(3)}`);
          callback(null, a.value.response, trailer);
          // The answer's way out: until grpc-js has serialized it and handed it to the HTTP/2 stream.
          o.front.answerSent(performance.now() - a.value.answeredMs);
        },
        (err: unknown) => {
          log.error({ err }, 'gRPC ModelInfer failed');
          callback({ code: grpc.status.INTERNAL, details: `internal error: ${(err as Error).message}` });
        },
      );
    },

    // Each request on the stream is answered on it as soon as its task is (not in request order: the
    // answer carries the request's id); an error is an answer with error_message, the stream goes on.
    ModelStreamInfer: (call: grpc.ServerDuplexStream<ModelInferRequestMessage, unknown>) => {
      const isLocal = local(call);
      let pending = 0;
      let ended = false;
      const finish = () => {
        if (ended && pending === 0 && !call.cancelled) call.end();
      };
      call.on('data', (msg: ModelInferRequestMessage) => {
        const receivedMs = performance.now();
        pending++;
        inferAt(call.metadata)(msg, isLocal, receivedMs)
          .then(
            (a) => {
              if (call.cancelled) return;
              if (a.ok) {
                call.write({ error_message: '', infer_response: a.value.response });
                o.front.answerSent(performance.now() - a.value.answeredMs);
              } else {
                call.write({
                  error_message: a.error,
                  infer_response: {
                    model_name: msg.model_name,
                    model_version: msg.model_version ?? '',
                    id: msg.id ?? '',
                  },
                });
              }
            },
            (err: unknown) => {
              log.error({ err }, 'gRPC ModelStreamInfer failed');
              if (!call.cancelled)
                call.write({
                  error_message: `internal error: ${(err as Error).message}`,
                  infer_response: { id: msg.id ?? '' },
                });
            },
          )
          .finally(() => {
            pending--;
            finish();
          });
      });
      call.on('end', () => {
        ended = true;
        finish();
      });
      call.on('error', () => undefined); // a client gone: its answers are dropped (call.cancelled)
    },
  };
}

function loadRefusal(action: 'load' | 'unload', name: string, models: readonly ServedModelConfig[]): string {
  const what = models.some((m) => m.name === name) ? `model '${name}'` : `unknown model '${name.slice(0, 64)}'`;
  return (
    `cannot ${action} ${what}: inss does not load or unload models on request; the models come from the scenario ` +
    `given at start and the policy places them on GPUs`
  );
}

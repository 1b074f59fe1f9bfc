// The KServe v2 / Open Inference Protocol routes over HTTP: health, server and model metadata, model
// readiness and inference. Registered once by SchedulerService.start, after the intake hooks
// (scheduler/intake.ts) and the guard. The codec is scheduler/kserve.ts; what a validated request runs
// through (shared-memory regions, the control plane, outputs) is scheduler/infer.ts.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BodyReader } from './bodyReader.js';
import type { Control, ServedModelConfig } from './control.js';
import { bodyTooLarge } from './guard.js';
import type { InferFront } from './infer.js';
import type { UnavailableModel } from '../src/repository/types.js';
import { encodeInferResponse, type ParseModel, servedModelMetadata, serverMetadata } from './kserve.js';
import type { Metrics } from './metrics.js';
import type { ParsePool } from './parsePool.js';
import { isLocalPeer } from './sharedMemory.js';
import { resolveModel } from './triton.js';

export interface KserveRouteOptions {
  readonly models: readonly ServedModelConfig[];
  /** Repository models that failed to load: not served, not ready (scheduler/triton/routes.ts resolveModel). */
  readonly unavailable: readonly UnavailableModel[];
  /** inss's version, as GET /v2 reports it. */
  readonly version: string;
  readonly control: Pick<Control, 'readiness' | 'modelReady'>;
  readonly metrics: Pick<Metrics, 'badRequests'>;
  readonly front: Pick<InferFront, 'infer' | 'answerSent'>;
  readonly parser: Pick<ParsePool, 'parse'>;
  readonly bodies: Pick<BodyReader, 'taskStarted' | 'taskEnded' | 'giveBack'>;
  /** By model index: the largest body its infer route takes (413 beyond, for a chunked body too). */
  readonly bodyLimits: readonly number[];
  /** By model index: what the codec checks its requests against (signature, max batch, JSON budget). */
  readonly parseModels: readonly ParseModel[];
  /** When the request arrived (scheduler/intake.ts trackArrivals). */
  readonly receivedMs: (req: FastifyRequest) => number | undefined;
  /** The parse queue's bytes held for the request (scheduler/intake.ts admitParses). */
  readonly takeReservation: (req: FastifyRequest) => number;
}

type ModelParams = { name: string; version?: string };

const json = (reply: FastifyReply, status: number, body: unknown) =>
  reply.code(status).header('content-type', 'application/json').send(JSON.stringify(body));

/** Registers the routes. Call before the app listens. */
export function registerKserve(app: FastifyInstance, o: KserveRouteOptions): void {
  const modelOr404 = (name: string, version: string | undefined, reply: FastifyReply): number | null => {
    const r = resolveModel(o.models, name, version, o.unavailable);
    if (!r.ok) void json(reply, 404, { error: r.error });
    return r.ok ? r.index : null;
  };

  app.get('/v2/health/live', (_req, reply) => json(reply, 200, { live: true }));
  app.get('/v2/health/ready', (_req, reply) => {
    const r = o.control.readiness();
    return json(reply, r.ready ? 200 : 503, {
      ready: r.ready,
      ...(r.ready ? {} : { notReady: r.notReady, policyError: r.policyError }),
    });
  });
  app.get('/v2', (_req, reply) => json(reply, 200, serverMetadata(o.version)));
  const metadataRoute = (req: { params: ModelParams }, reply: FastifyReply) => {
    const m = modelOr404(req.params.name, req.params.version, reply);
    if (m === null) return reply;
    return json(reply, 200, servedModelMetadata(o.models[m]!));
  };
  app.get<{ Params: ModelParams }>('/v2/models/:name', metadataRoute);
  app.get<{ Params: ModelParams }>('/v2/models/:name/versions/:version', metadataRoute);
  const readyRoute = (req: { params: ModelParams }, reply: FastifyReply) => {
    // A repository model that failed to load is known, and not ready (as Triton answers it).
    const failed = o.unavailable.find((u) => u.name === req.params.name);
    if (failed) return json(reply, 503, { name: failed.name, ready: false, reason: failed.reason });
    const m = modelOr404(req.params.name, req.params.version, reply);
    if (m === null) return reply;
    const ready = o.control.modelReady(m);
    return json(reply, ready ? 200 : 503, { name: req.params.name, ready });
  };
  app.get<{ Params: ModelParams }>('/v2/models/:name/ready', readyRoute);
  app.get<{ Params: ModelParams }>('/v2/models/:name/versions/:version/ready', readyRoute);

  const inferRoute = async (req: FastifyRequest<{ Params: ModelParams }>, reply: FastifyReply) => {
    const m = modelOr404(req.params.name, req.params.version, reply);
    if (m === null) return reply;
    const c = o.models[m]!;
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    // A chunked body (no Content-Length) is only measured once read.
    if (body.length > o.bodyLimits[m]!) return json(reply, 413, { error: bodyTooLarge(o.bodyLimits[m]!) });
    const header = req.headers['inference-header-content-length'];
    const parsed = await o.parser.parse(
      body,
      {
        contentType: typeof req.headers['content-type'] === 'string' ? req.headers['content-type'] : undefined,
        inferenceHeaderLength: typeof header === 'string' ? header : undefined,
      },
      o.parseModels[m]!,
      o.takeReservation(req),
    );
    if (!parsed.ok) {
      o.metrics.badRequests.inc({ model: c.name, status: String(parsed.status) });
      return json(reply, parsed.status, { error: parsed.error });
    }
    const received = o.receivedMs(req);
    o.bodies.taskStarted(body);
    const a = await o.front.infer(m, parsed.request, {
      ...(received !== undefined ? { receivedMs: received } : {}),
      local: isLocalPeer(req.socket.remoteAddress),
    });
    o.bodies.taskEnded(body);
    if (!a.ok && a.answeredMs === undefined) {
      // Refused before any task ran (its shared-memory regions).
      o.metrics.badRequests.inc({ model: c.name, status: String(a.status) });
      return json(reply, a.status, { error: a.error });
    }
    // The answer's way out: until its response is handed to the kernel (the dispatch rule budgets it).
    const answeredMs = a.answeredMs!;
    reply.raw.once('finish', () => o.front.answerSent(performance.now() - answeredMs));
    // The scheduler's own span of the task, request arrival -> answered (W3C Server-Timing): a
    // client's latency less it (less the way out) is the client's own leg (docs/serving.md).
    if (received !== undefined) void reply.header('server-timing', `inss;dur=${(answeredMs - received).toFixed(3)}`);
    if (!a.ok) return json(reply, a.status, { error: a.error, ...(a.reason ? { reason: a.reason } : {}) });
    const r = encodeInferResponse(a.response);
    void reply.code(200).headers(r.headers).send(r.body);
    // Answered with a result: the worker read every byte of the batch, nothing reads the body now.
    o.bodies.giveBack(body);
    return reply;
  };
  app.post<{ Params: ModelParams }>('/v2/models/:name/infer', inferRoute);
  app.post<{ Params: ModelParams }>('/v2/models/:name/versions/:version/infer', inferRoute);
}

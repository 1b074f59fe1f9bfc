// The scheduler service (`inss scheduler`, and half of `inss up`): one HTTP port that serves the task
// endpoint (KServe v2 / Open Inference Protocol, scheduler/kserve.ts), /metrics, the inss cluster
// view, and the agents' WebSocket hub (/agents). It wires the control plane to them. Binds 127.0.0.1
// unless told otherwise.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import type { ClusterInfo, Policy } from '../src/policy/types.js';
import type { Profile } from '../src/profile/schema.js';
import { Control, type ControlSettings, type ServedModelConfig } from './control.js';
import { registerDashboard } from './dashboard.js';
import { AGENT_PATH, AgentHub } from './hub.js';
import { type AccessOptions, OPEN_ACCESS, refusal } from './auth.js';
import { bodyTooLarge, guard, guardedServerOptions } from './guard.js';
import { DEFAULT_MAX_BATCH_SIZE, encodeInferResponse, modelMetadata, serverMetadata } from './kserve.js';
import { InferFront } from './infer.js';
import { DEFAULT_LIMITS, type InputLimits, requestBudget } from './limits.js';
import { ParsePool } from './parsePool.js';
import { Metrics } from './metrics.js';
import type { Store } from './store.js';
import { registerTriton, resolveModel, unknownModelHook } from './triton.js';
import { BodyReader } from './bodyReader.js';
import { ShmRegion } from './shmRegion.js';
import { DirectLinks } from './workerLink.js';
import { isLocalPeer, registerSharedMemoryRoutes, SharedMemoryRegistry } from './sharedMemory.js';
import { GrpcService } from './grpc.js';

export interface SchedulerOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** The shared agent token (any agent id); null: only per-agent tokens (agentTokens). */
  readonly token: string | null;
  /** Agent id -> its own token: with it only that id may register (scheduler/auth.ts). */
  readonly agentTokens?: ReadonlyMap<string, string>;
  /** Who may use which routes (default: all open). */
  readonly access?: AccessOptions;
  /** Serve HTTPS (and wss:// for agents) with this certificate and key (PEM). */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
  readonly models: readonly ServedModelConfig[];
  readonly profiles: ReadonlyMap<string, Profile>;
  readonly policyName: string;
  readonly createPolicy: (cluster: ClusterInfo) => Policy;
  readonly logger: Logger;
  readonly store?: Store;
  readonly version: string;
  /** Largest request body accepted for every model (413 beyond). Default: each model's, from its signature (scheduler/limits.ts). */
  readonly bodyLimitBytes?: number;
  /** Limits on client input (scheduler/limits.ts DEFAULT_LIMITS for what is not given). */
  readonly limits?: Partial<InputLimits>;
  readonly settings?: Partial<ControlSettings>;
  readonly initialRatePerS?: Readonly<Record<string, number>>;
  /** MB of shared memory for request bodies and batches to workers on this host (`inss up --shm-mb`); 0 or absent: none. */
  readonly shmMb?: number;
  /** Serve the gRPC endpoint (scheduler/grpc.ts) on this port of `host` (0: a free one); absent: none. */
  readonly grpcPort?: number;
}

/** The body limit of routes that take no body. */
const NO_BODY_LIMIT = 64 * 1024;

export class SchedulerService {
  private constructor(
    readonly app: FastifyInstance,
    readonly control: Control,
    private readonly hub: AgentHub,
    private readonly parser: ParsePool,
    private readonly direct: DirectLinks,
    readonly metrics: Metrics,
    readonly url: string,
    private readonly grpc: GrpcService | null = null,
  ) {}

  /** host:port of the gRPC endpoint; null when it is off. */
  get grpcAddress(): string | null {
    return this.grpc?.address ?? null;
  }

  /** ws:// (wss:// with TLS) address agents connect to. */
  get agentUrl(): string {
    return `${this.url.replace(/^http/, 'ws')}${AGENT_PATH}`;
  }

  static async start(opts: SchedulerOptions): Promise<SchedulerService> {
    const metrics = new Metrics();
    const limits: InputLimits = { ...DEFAULT_LIMITS, ...opts.limits };
    // Each model's body limit and JSON budget, from its signature (issue 15).
    const maxBatchSizes = opts.models.map((m) => m.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE);
    const budgets = opts.models.map((m, i) => requestBudget(m.signature, limits.bodyLimitFactor, maxBatchSizes[i]));
    const bodyLimits = budgets.map((b) => opts.bodyLimitBytes ?? b.bodyLimitBytes);
    const guardOptions = {
      limits,
      maxBodyBytes: Math.max(NO_BODY_LIMIT, ...bodyLimits),
      tls: opts.tls !== undefined,
      log: opts.logger.child({ part: 'http' }),
    };
    const server = guardedServerOptions(guardOptions);
    // With TLS, Fastify makes an https.Server from these options (it takes the http ones too); typed as
    // the plain server's app, which has the same routes and hooks.
    const https = opts.tls ? { https: { ...server.http, cert: opts.tls.cert, key: opts.tls.key } } : {};
    // The cast keeps the app typed FastifyInstance<..., FastifyBaseLogger> (pino's Logger type differs in generics only).
    const app = Fastify({
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
      loggerInstance: opts.logger as FastifyBaseLogger,
      logController: new LogController({ disableRequestLogging: true }),
      keepAliveTimeout: 30_000,
      ...server,
      ...https,
    }) as unknown as FastifyInstance;
    // When each request reached the scheduler (its headers read): its task's deadline counts from then,
    // and the time to the task is the request's way in (docs/serving.md, "The path in the twin").
    const receivedMs = new WeakMap<object, number>();
    app.addHook('onRequest', (req, _reply, done) => {
      receivedMs.set(req.raw, performance.now());
      done();
    });
    // Tokens first: a request without one is refused before its body is read (issue 15).
    const access = opts.access ?? OPEN_ACCESS;
    app.addHook('onRequest', (req, reply, done) => {
      // By the route matched (its pattern), not the raw URL: `/v2/%69nss/cluster` routes to /v2/inss/cluster.
      const why = refusal(access, req.routeOptions.url ?? req.url.split('?')[0] ?? '', req.headers.authorization);
      if (why === undefined) return done();
      void reply
        .code(401)
        .header('www-authenticate', 'Bearer')
        .header('connection', 'close')
        .header('content-type', 'application/json')
        .send(JSON.stringify({ error: why }));
    });
    const parser = new ParsePool(limits.parseThreads, limits.maxParseQueueBytes, opts.logger.child({ part: 'parse' }));
    // Large binary request bodies go into slots of a shared-memory region, whose descriptors reach
    // workers on this host that map it (shmRegion.ts; docs/serving.md); none: the old way.
    const opened = ShmRegion.open(opts.shmMb ?? 0);
    const region = opened instanceof ShmRegion ? opened : null;
    // Said once the port is bound (a start that fails says only why it failed).
    const sayShm = () =>
      region
        ? opts.logger.info({ path: region.path, bytes: region.bytes }, 'shared-memory region for request bodies')
        : opts.logger.info(
            { why: (opened as { why: string }).why },
            'the shared-memory data path is off; batches carry their bytes',
          );
    if (region) {
      metrics.setShmSource(() => region.inUse);
      // Unlinked when the service closes (a worker that mapped it keeps its mapping).
      app.addHook('onClose', (_app, done) => {
        region.close();
        done();
      });
    }
    // Batches go straight to the workers whose agents report a data socket (docs/serving.md).
    const direct = new DirectLinks(opts.logger.child({ part: 'direct' }), {
      region,
      sent: (shm, inline) => metrics.directSamples(shm, inline),
    });
    const hub = new AgentHub(opts.token, opts.logger.child({ part: 'hub' }), opts.agentTokens);
    const control = new Control({
      models: opts.models,
      profiles: opts.profiles,
      policyName: opts.policyName,
      createPolicy: opts.createPolicy,
      link: hub,
      direct,
      clock: () => performance.now(),
      logger: opts.logger.child({ part: 'control' }),
      observers: opts.store ? [metrics, opts.store] : [metrics],
      ...(opts.store ? { storedPlacements: () => opts.store!.placements() } : {}),
      ...(opts.settings ? { settings: opts.settings } : {}),
      ...(opts.initialRatePerS ? { initialRatePerS: opts.initialRatePerS } : {}),
    });

    // Bodies are parsed by the KServe codec, whatever their content type (JSON, binary extension, none);
    // large ones are read into recycled buffers (scheduler/bodyReader.ts).
    app.removeAllContentTypeParsers();
    const bodies = new BodyReader(64, 64 << 20, region, () => direct.mapsRegion);
    // A body's slot is freed once its exchange ended and its task was answered (bodyReader.ts).
    if (region)
      app.addHook('onRequest', (req, reply, done) => {
        bodies.watch(req.raw, reply.raw);
        done();
      });
    app.addContentTypeParser('*', bodies.parse);
    // A body is read only up to the limit of the model its route names (other routes take none).
    const bodyLimitOf = (name: string | undefined): number => {
      const m = name === undefined ? -1 : control.modelIndex(name);
      return m < 0 ? NO_BODY_LIMIT : bodyLimits[m]!;
    };
    const isInfer = (req: FastifyRequest) => req.routeOptions.url?.endsWith('/infer') === true;
    const routeBodyLimit = (req: FastifyRequest) =>
      bodyLimitOf(isInfer(req) ? (req.params as { name?: string }).name : undefined);
    // An infer route naming a model or version not served: 404 before its body is read (scheduler/triton.ts).
    app.addHook('onRequest', unknownModelHook(opts.models, isInfer, guardOptions.maxBodyBytes));
    guard(app, guardOptions, routeBodyLimit);
    // A large JSON body is admitted only while the parse queue has room for it, before it is read:
    // past that, reading it would only delay the requests already admitted (issue 15).
    const reserved = new WeakMap<object, number>();
    app.addHook('onRequest', (req, reply, done) => {
      const length = Number(req.headers['content-length'] ?? 0);
      if (
        !isInfer(req) ||
        reply.sent ||
        !parser.offThread(length, {
          inferenceHeaderLength: req.headers['inference-header-content-length'] as string | undefined,
        })
      )
        return done();
      const busy = parser.reserve(length);
      if (busy) {
        // No `Connection: close` (as the guard's 503): the client reads the answer, Node discards the body.
        void reply
          .code(503)
          .header('content-type', 'application/json')
          .send(JSON.stringify({ error: busy }));
        return; // answered
      }
      reserved.set(req.raw, length);
      // Released when parsing starts (takeReservation), or when the exchange ends without it: refused,
      // timed out (the guard's raw 408) or aborted.
      reply.raw.once('close', () => parser.release(takeReservation(req)));
      done();
    });
    const takeReservation = (req: FastifyRequest): number => {
      const n = reserved.get(req.raw) ?? 0;
      reserved.delete(req.raw);
      return n;
    };

    const json = (reply: FastifyReply, status: number, body: unknown) =>
      reply.code(status).header('content-type', 'application/json').send(JSON.stringify(body));
    const modelOr404 = (name: string, version: string | undefined, reply: FastifyReply): number | null => {
      const r = resolveModel(opts.models, name, version);
      if (!r.ok) void json(reply, 404, { error: r.error });
      return r.ok ? r.index : null;
    };
    registerTriton(app, { control, metrics, models: opts.models, bodyLimit: routeBodyLimit });
    const regions = new SharedMemoryRegistry();
    registerSharedMemoryRoutes(app, regions);
    // What every protocol does with a validated request (scheduler/infer.ts).
    const front = new InferFront(control, opts.models, regions);
    app.addHook('onClose', (_app, done) => {
      regions.close();
      done();
    });

    app.get('/v2/health/live', (_req, reply) => json(reply, 200, { live: true }));
    app.get('/v2/health/ready', (_req, reply) => {
      const r = control.readiness();
      return json(reply, r.ready ? 200 : 503, {
        ready: r.ready,
        ...(r.ready ? {} : { notReady: r.notReady, policyError: r.policyError }),
      });
    });
    app.get('/v2', (_req, reply) => json(reply, 200, serverMetadata(opts.version)));
    type ModelParams = { name: string; version?: string };
    const metadataRoute = (req: { params: ModelParams }, reply: FastifyReply) => {
      const m = modelOr404(req.params.name, req.params.version, reply);
      if (m === null) return reply;
      const c = opts.models[m]!;
      return json(reply, 200, modelMetadata({ name: c.name, signature: c.signature, sloMs: c.sloMs, versions: ['1'] }));
    };
    app.get<{ Params: ModelParams }>('/v2/models/:name', metadataRoute);
    app.get<{ Params: ModelParams }>('/v2/models/:name/versions/:version', metadataRoute);
    const readyRoute = (req: { params: ModelParams }, reply: FastifyReply) => {
      const m = modelOr404(req.params.name, req.params.version, reply);
      if (m === null) return reply;
      const ready = control.modelReady(m);
      return json(reply, ready ? 200 : 503, { name: req.params.name, ready });
    };
    app.get<{ Params: ModelParams }>('/v2/models/:name/ready', readyRoute);
    app.get<{ Params: ModelParams }>('/v2/models/:name/versions/:version/ready', readyRoute);

    const inferRoute = async (req: FastifyRequest<{ Params: ModelParams }>, reply: FastifyReply) => {
      const m = modelOr404(req.params.name, req.params.version, reply);
      if (m === null) return reply;
      const c = opts.models[m]!;
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      if (body.length > bodyLimits[m]!) return json(reply, 413, { error: bodyTooLarge(bodyLimits[m]!) }); // a chunked body (no Content-Length)
      const header = req.headers['inference-header-content-length'];
      const parsed = await parser.parse(
        body,
        {
          contentType: typeof req.headers['content-type'] === 'string' ? req.headers['content-type'] : undefined,
          inferenceHeaderLength: typeof header === 'string' ? header : undefined,
        },
        { name: c.name, signature: c.signature, maxBatchSize: maxBatchSizes[m]!, budget: budgets[m]!.json },
        takeReservation(req),
      );
      if (!parsed.ok) {
        metrics.badRequests.inc({ model: c.name, status: String(parsed.status) });
        return json(reply, parsed.status, { error: parsed.error });
      }
      const received = receivedMs.get(req.raw);
      bodies.taskStarted(body);
      const a = await front.infer(m, parsed.request, {
        ...(received !== undefined ? { receivedMs: received } : {}),
        local: isLocalPeer(req.socket.remoteAddress),
      });
      bodies.taskEnded(body);
      if (!a.ok && a.answeredMs === undefined) {
        // Refused before any task ran (its shared-memory regions).
        metrics.badRequests.inc({ model: c.name, status: String(a.status) });
        return json(reply, a.status, { error: a.error });
      }
      // The answer's way out: until its response is handed to the kernel (the dispatch rule budgets it).
      const answeredMs = a.answeredMs!;
      reply.raw.once('finish', () => front.answerSent(performance.now() - answeredMs));
      // The scheduler's own span of the task, request arrival -> answered (W3C Server-Timing): a
      // client's latency less it (less the way out) is the client's own leg (docs/serving.md).
      if (received !== undefined) void reply.header('server-timing', `inss;dur=${(answeredMs - received).toFixed(3)}`);
      if (!a.ok) return json(reply, a.status, { error: a.error, ...(a.reason ? { reason: a.reason } : {}) });
      const r = encodeInferResponse(a.response);
      void reply.code(200).headers(r.headers).send(r.body);
      // Answered with a result: the worker read every byte of the batch, nothing reads the body now.
      bodies.giveBack(body);
      return reply;
    };
    app.post<{ Params: ModelParams }>('/v2/models/:name/infer', inferRoute);
    app.post<{ Params: ModelParams }>('/v2/models/:name/versions/:version/infer', inferRoute);

    app.get('/metrics', async (_req, reply) =>
      reply
        .code(200)
        .header('content-type', metrics.registry.contentType)
        .send(await metrics.registry.metrics()),
    );
    // The scheduler's event-loop delay since it started (a timer or a socket's data waits that long
    // for the loop on a busy machine; docs/serving.md, "Where the live system loses what the twin keeps").
    const loopDelay = monitorEventLoopDelay({ resolution: 1 });
    loopDelay.enable();
    app.addHook('onClose', (_app, done) => {
      loopDelay.disable();
      done();
    });
    const delayMs = (ns: number) => Number((ns / 1e6).toFixed(3));
    app.get('/v2/inss/cluster', (_req, reply) =>
      json(reply, 200, {
        ...(control.snapshot() as object),
        eventLoopDelayMs: {
          p50: delayMs(loopDelay.percentile(50)),
          p99: delayMs(loopDelay.percentile(99)),
          max: delayMs(loopDelay.max),
        },
      }),
    );
    app.get('/v2/inss/decisions', (_req, reply) => json(reply, 200, opts.store?.decisions(100) ?? []));
    registerDashboard(app, { control, metrics, epochMs: opts.settings?.epochMs });

    hub.attach(app.server, control);
    try {
      await app.listen({ host: opts.host, port: opts.port });
    } catch (e) {
      await parser.close(); // its threads would keep the process alive
      await direct.stop();
      region?.close();
      throw e;
    }
    // ---- The gRPC endpoint (scheduler/grpc.ts): the same models, front, regions, tokens and TLS on
    // its own port; a port it cannot bind fails the start as a busy HTTP port does.
    let grpc: GrpcService | null = null;
    if (opts.grpcPort !== undefined) {
      try {
        const slots = region
          ? {
              take: (n: number) => (direct.mapsRegion ? region.take(n) : null),
              release: (b: Buffer) => region.release(b),
            }
          : undefined;
        grpc = await GrpcService.start({
          host: opts.host,
          port: opts.grpcPort,
          ...(opts.tls ? { tls: opts.tls } : {}),
          access,
          models: opts.models,
          bodyLimits,
          control,
          metrics,
          regions,
          front,
          ...(slots ? { slots } : {}),
          version: opts.version,
          logger: opts.logger.child({ part: 'grpc' }),
        });
      } catch (e) {
        hub.close();
        await app.close();
        await parser.close();
        await direct.stop();
        throw e;
      }
    }
    // ----
    sayShm();
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : opts.port;
    const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
    control.start();
    opts.store?.recordPolicy({
      name: opts.policyName,
      source: null,
      data: undefined,
      nowIso: new Date().toISOString(),
    });
    const local = host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host;
    return new SchedulerService(
      app,
      control,
      hub,
      parser,
      direct,
      metrics,
      `${opts.tls ? 'https' : 'http'}://${local}:${port}`,
      grpc,
    );
  }

  /** Answers every waiting task (shutdown errors), closes the agents' connections and the port. */
  async close(): Promise<void> {
    this.control.stop();
    await this.grpc?.close();
    this.hub.close();
    await this.app.close();
    await this.parser.close();
    await this.direct.stop();
  }
}

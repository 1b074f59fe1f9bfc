// The scheduler service (`inss scheduler`, and half of `inss up`): one HTTP port that serves the task
// endpoint (KServe v2 / Open Inference Protocol: scheduler/kserveRoutes.ts, codec scheduler/kserve.ts),
// Triton's extensions (scheduler/triton.ts, scheduler/sharedMemory.ts), /metrics and the inss cluster
// view (scheduler/inssRoutes.ts), and the agents' WebSocket hub (/agents); and, when asked, the gRPC
// endpoint on its own port (scheduler/grpc.ts). It wires the control plane to them. Binds 127.0.0.1
// unless told otherwise.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { ClusterInfo, Policy } from '../src/policy/types.js';
import type { Profile } from '../src/profile/schema.js';
import type { UnavailableModel } from '../src/repository/types.js';
import { Control, type ControlSettings, type ServedModelConfig } from './control.js';
import { AGENT_PATH, AgentHub } from './hub.js';
import { type AccessOptions, OPEN_ACCESS } from './auth.js';
import { guard, guardedServerOptions } from './guard.js';
import { DEFAULT_MAX_BATCH_SIZE } from './kserve.js';
import { InferFront } from './infer.js';
import { admitParses, createApp, requireTokens, trackArrivals } from './intake.js';
import { registerInss } from './inssRoutes.js';
import { registerKserve } from './kserveRoutes.js';
import { DEFAULT_LIMITS, type InputLimits, requestBudget } from './limits.js';
import { ParsePool } from './parsePool.js';
import { Metrics } from './metrics.js';
import type { Store } from './store.js';
import { registerTriton, unknownModelHook } from './triton.js';
import { BodyReader } from './bodyReader.js';
import { ShmRegion } from './shmRegion.js';
import { DirectLinks } from './workerLink.js';
import { SharedMemoryRegistry } from './sharedMemory.js';
import { registerSharedMemoryRoutes } from './sharedMemoryRoutes.js';
import { type GrpcOptions, GrpcService } from './grpc.js';
import { PipelineFront, PlannedBudgets, type ServedPipeline } from './pipelineFront.js';
import { DoorDesk } from './doorDesk.js';
import { DoorRoutes, forwardHook } from './doorRoute.js';
import { DoorLink, type DoorLinkOptions, LoadReport } from './frontDoor.js';
import { GrpcForwarder } from './grpcForward.js';

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
  /** Pipelines (repository ensembles) of those models, served after them (scheduler/pipelineFront.ts). */
  readonly pipelines?: readonly ServedPipeline[];
  /** Models of the repository that failed to load (docs/model-repository.md): listed UNAVAILABLE, not served. */
  readonly unavailableModels?: readonly UnavailableModel[];
  readonly profiles: ReadonlyMap<string, Profile>;
  readonly policyName: string;
  readonly createPolicy: (cluster: ClusterInfo) => Policy;
  readonly logger: Logger;
  readonly store?: Store;
  readonly version: string;
  /**
   * Largest request body accepted for every model (413 beyond). Default: each model's, from its signature
   * (scheduler/limits.ts).
   */
  readonly bodyLimitBytes?: number;
  /** Limits on client input (scheduler/limits.ts DEFAULT_LIMITS for what is not given). */
  readonly limits?: Partial<InputLimits>;
  readonly settings?: Partial<ControlSettings>;
  readonly initialRatePerS?: Readonly<Record<string, number>>;
  /**
   * MB of shared memory for request bodies and batches to workers on this host (`inss up --shm-mb`); 0 or absent: none.
   */
  readonly shmMb?: number;
  /** Serve the gRPC endpoint (scheduler/grpc.ts) on this port of `host` (0: a free one); absent: none. */
  readonly grpcPort?: number;
  /** The agent link's heartbeat (src/protocol/heartbeat.ts; default DEFAULT_HEARTBEAT_MS). */
  readonly heartbeatMs?: number;
  /** An agent disconnected this long has its models re-placed (ControlOptions.agentLostMs); absent: never. */
  readonly agentLostMs?: number;
  /**
   * Serve as a front door of the scheduler this link reaches (`inss frontdoor`, scheduler/frontDoor.ts): no agents'
   * hub and no policy; its workers from the scheduler's tables. Absent: the scheduler (door 0, with the doors' hub).
   */
  readonly frontDoor?: Omit<DoorLinkOptions, 'log'>;
  /** The base URL peer doors forward requests to (default: this process's URL). */
  readonly advertiseUrl?: string;
}

/** A front door sends batches only over its own data links to the workers, never through an agent. */
const NO_AGENT_LINK = { send: () => false };

/** The body limit of routes that take no body. */
const NO_BODY_LIMIT = 64 * 1024;

export class SchedulerService {
  private constructor(
    readonly app: FastifyInstance,
    readonly control: Control,
    private readonly hub: AgentHub | null,
    private readonly doors: { close(): void } | null,
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

  /**
   * Builds the service and binds its ports: the HTTP app (intake hooks, the guard, then the routes of
   * each protocol), the agents' hub on the same server, and the gRPC endpoint when asked. A port it
   * cannot bind fails the start, with what it opened closed again.
   */
  static async start(opts: SchedulerOptions): Promise<SchedulerService> {
    const metrics = new Metrics();
    const limits: InputLimits = { ...DEFAULT_LIMITS, ...opts.limits };
    // What requests name: the models, then the pipelines (endpoints of the protocols, not of the control plane).
    const pipelines = opts.pipelines ?? [];
    const endpoints = [...opts.models, ...pipelines.map((p) => p.endpoint)];
    // Each endpoint's body limit and JSON budget, from its signature.
    const maxBatchSizes = endpoints.map((m) => m.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE);
    const budgets = endpoints.map((m, i) => requestBudget(m.signature, limits.bodyLimitFactor, maxBatchSizes[i]));
    const bodyLimits = budgets.map((b) => opts.bodyLimitBytes ?? b.bodyLimitBytes);
    const guardOptions = {
      limits,
      maxBodyBytes: Math.max(NO_BODY_LIMIT, ...bodyLimits),
      tls: opts.tls !== undefined,
      log: opts.logger.child({ part: 'http' }),
    };
    const app = createApp(opts.logger, guardedServerOptions(guardOptions), opts.tls);
    const receivedMs = trackArrivals(app);
    const access = opts.access ?? OPEN_ACCESS;
    requireTokens(app, access);
    const parser = new ParsePool(limits.parseThreads, limits.maxParseQueueBytes, opts.logger.child({ part: 'parse' }));
    // Large binary request bodies go into slots of a shared-memory region, whose descriptors reach
    // workers on this host that map it (shmRegion.ts; docs/serving.md); without one, batches carry their bytes.
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
    const door = opts.frontDoor;
    const hub = door
      ? null
      : new AgentHub(opts.token, opts.logger.child({ part: 'hub' }), opts.agentTokens, opts.heartbeatMs);
    // Front doors (docs/front-doors.md): where requests for models held elsewhere go, and this door's GPUs.
    const routes = new DoorRoutes(opts.models.map((m) => m.name));
    const report = door ? new LoadReport() : null;
    const forwarder = new GrpcForwarder(routes, opts.tls !== undefined, door?.ca);
    const desk = door
      ? null
      : new DoorDesk(
          opts.token,
          opts.agentTokens ?? new Map(),
          opts.logger.child({ part: 'doors' }),
          opts.heartbeatMs,
          (t) => routes.update(0, t.doors, t.workers),
        );
    const regions = new SharedMemoryRegistry();
    const planned = new PlannedBudgets();
    const control = new Control({
      models: opts.models,
      profiles: opts.profiles,
      policyName: opts.policyName,
      createPolicy: opts.createPolicy,
      link: hub ?? NO_AGENT_LINK,
      direct,
      holds: desk ? (w) => desk.doorOf(w.agentId, w.localGpu) === 0 : (w) => w.data !== null,
      clock: () => performance.now(),
      logger: opts.logger.child({ part: 'control' }),
      observers: [metrics, ...(opts.store ? [opts.store] : []), planned, ...(report ? [report] : [])],
      ...(opts.store ? { storedPlacements: () => opts.store!.placements() } : {}),
      ...(opts.settings ? { settings: opts.settings } : {}),
      ...(opts.initialRatePerS ? { initialRatePerS: opts.initialRatePerS } : {}),
      // A front door re-places nothing: its agents and workers are its table's.
      ...(opts.agentLostMs !== undefined && !door ? { agentLostMs: opts.agentLostMs } : {}),
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
      const m = name === undefined ? -1 : endpoints.findIndex((e) => e.name === name);
      return m < 0 ? NO_BODY_LIMIT : bodyLimits[m]!;
    };
    const isInfer = (req: FastifyRequest) => req.routeOptions.url?.endsWith('/infer') === true;
    const routeBodyLimit = (req: FastifyRequest) =>
      bodyLimitOf(isInfer(req) ? (req.params as { name?: string }).name : undefined);
    // An infer route naming a model or version not served: 404 before its body is read (scheduler/triton.ts).
    app.addHook('onRequest', unknownModelHook(endpoints, isInfer, guardOptions.maxBodyBytes));
    app.addHook('onRequest', forwardHook(routes, isInfer, opts.logger.child({ part: 'forward' }), door?.ca));
    guard(app, guardOptions, routeBodyLimit);
    const takeReservation = admitParses(app, parser, isInfer);

    registerTriton(app, {
      control,
      metrics,
      models: endpoints,
      unavailable: opts.unavailableModels ?? [],
      bodyLimit: routeBodyLimit,
    });
    registerSharedMemoryRoutes(app, regions);
    // What every protocol does with a validated request (scheduler/infer.ts), to a model or to a pipeline.
    const models = new InferFront(control, opts.models, regions);
    const pipes = new PipelineFront(models, opts.models, pipelines, planned, regions, metrics);
    const { front, ready } = endpointFront(control, models, pipes, (name) => routes.elsewhere(name));
    app.addHook('onClose', (_app, done) => {
      regions.close();
      done();
    });
    registerKserve(app, {
      models: endpoints,
      unavailable: opts.unavailableModels ?? [],
      version: opts.version,
      control: ready,
      metrics,
      front,
      parser,
      bodies,
      bodyLimits,
      parseModels: endpoints.map((c, m) => ({
        name: c.name,
        signature: c.signature,
        maxBatchSize: maxBatchSizes[m]!,
        budget: budgets[m]!.json,
      })),
      receivedMs,
      takeReservation,
    });
    registerInss(app, { control, metrics, store: opts.store, epochMs: opts.settings?.epochMs });

    if (hub && desk) hub.attach(app.server, control, [desk.hub]);
    try {
      await app.listen({ host: opts.host, port: opts.port });
    } catch (e) {
      await parser.close(); // its threads would keep the process alive
      await direct.stop();
      region?.close();
      throw e;
    }
    let grpc: GrpcService | null = null;
    if (opts.grpcPort !== undefined) {
      try {
        grpc = await startGrpc(
          opts,
          opts.grpcPort,
          { access, bodyLimits, control: ready, metrics, regions, front, forward: (m, md) => forwarder.forward(m, md) },
          endpoints,
          region,
          direct,
        );
      } catch (e) {
        hub?.close();
        await app.close();
        await parser.close();
        await direct.stop();
        throw e;
      }
    }
    sayShm();
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : opts.port;
    const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
    const local = host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host;
    const url = `${opts.tls ? 'https' : 'http'}://${local}:${port}`;
    const self = opts.advertiseUrl ?? url;
    // Where peer doors forward gRPC requests: the advertised host, this process's gRPC port.
    const selfGrpc = grpc ? `${new URL(self).hostname}:${grpc.port}` : undefined;
    const link =
      door &&
      new DoorLink({ ...door, log: opts.logger.child({ part: 'door' }) }, control, routes, report!, self, selfGrpc);
    if (link) link.start();
    else desk!.start(control, self, selfGrpc);
    const doors = link || desk!;
    control.start();
    opts.store?.recordPolicy({
      name: opts.policyName,
      source: null,
      data: undefined,
      nowIso: new Date().toISOString(),
    });
    const close = () => {
      doors.close();
      forwarder.close();
    };
    return new SchedulerService(app, control, hub, { close }, parser, direct, metrics, url, grpc);
  }

  /** Answers every waiting task (shutdown errors), closes the agents' connections and the port. */
  async close(): Promise<void> {
    this.control.stop();
    await this.grpc?.close();
    this.doors?.close();
    this.hub?.close();
    await this.app.close();
    await this.parser.close();
    await this.direct.stop();
  }
}

/**
 * The gRPC endpoint (scheduler/grpc.ts): the same models, front, regions, tokens and TLS as the HTTP
 * one, on its own port. Raw tensors go into slots of the shared-memory region while a worker on this
 * host maps it. Rejects when the port cannot be bound.
 */
function startGrpc(
  opts: SchedulerOptions,
  port: number,
  shared: Pick<GrpcOptions, 'access' | 'bodyLimits' | 'control' | 'metrics' | 'regions' | 'front' | 'forward'>,
  models: readonly ServedModelConfig[],
  region: ShmRegion | null,
  direct: DirectLinks,
): Promise<GrpcService> {
  const slots = region
    ? {
        take: (n: number) => (direct.mapsRegion ? region.take(n) : null),
        release: (b: Buffer) => region.release(b),
      }
    : undefined;
  return GrpcService.start({
    host: opts.host,
    port,
    ...(opts.tls ? { tls: opts.tls } : {}),
    ...shared,
    models,
    unavailable: opts.unavailableModels ?? [],
    ...(slots ? { slots } : {}),
    version: opts.version,
    logger: opts.logger.child({ part: 'grpc' }),
  });
}

/**
 * The protocols' view of the endpoints, models then pipelines: a request to endpoint `m` runs on the model
 * front or the pipeline front, and a pipeline is ready when each of its step models is.
 */
function endpointFront(control: Control, models: InferFront, pipes: PipelineFront, elsewhere: (n: string) => boolean) {
  const n = control.models.length;
  // A model no worker here serves is ready where another front door serves it (requests go there).
  const served = (m: number) => control.modelReady(m) || elsewhere(control.models[m]!.name);
  const modelReady = (m: number): boolean =>
    m < n ? served(m) : pipes.pipelines[m - n]!.stepModels.every((s) => served(s));
  const front: Pick<InferFront, 'infer' | 'answerSent'> = {
    infer: (m, request, ctx) => (m < n ? models.infer(m, request, ctx) : pipes.infer(m - n, request, ctx)),
    answerSent: (wayOutMs) => models.answerSent(wayOutMs),
  };
  const ready: Pick<Control, 'readiness' | 'modelReady' | 'workerViews'> = {
    readiness: () => {
      const r = control.readiness();
      const notReady = r.notReady.filter((name) => !elsewhere(name));
      return { ...r, ready: notReady.length === 0, notReady };
    },
    modelReady,
    workerViews: () => control.workerViews(),
  };
  return { front, ready };
}

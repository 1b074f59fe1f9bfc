// The scheduler service (`inss scheduler`, and half of `inss up`): one HTTP port that serves the task
// endpoint (KServe v2 / Open Inference Protocol, scheduler/kserve.ts), /metrics, the inss cluster
// view, and the agents' WebSocket hub (/agents). It wires the control plane to them. Binds 127.0.0.1
// unless told otherwise.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { ClusterInfo, Policy } from '../src/policy/types.js';
import type { Profile } from '../src/profile/schema.js';
import { Control, type ControlSettings, type ServedModelConfig, type TaskAnswer } from './control.js';
import { registerDashboard } from './dashboard.js';
import { AGENT_PATH, AgentHub } from './hub.js';
import { encodeInferResponse, errorBody, modelMetadata, parseInferRequest, serverMetadata } from './kserve.js';
import { Metrics } from './metrics.js';
import type { Store } from './store.js';
import { registerTriton, resolveModel } from './triton.js';

export interface SchedulerOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly token: string;
  readonly models: readonly ServedModelConfig[];
  readonly profiles: ReadonlyMap<string, Profile>;
  readonly policyName: string;
  readonly createPolicy: (cluster: ClusterInfo) => Policy;
  readonly logger: Logger;
  readonly store?: Store;
  readonly version: string;
  /** Largest request body accepted (413 beyond). Default 64 MiB. */
  readonly bodyLimitBytes?: number;
  readonly settings?: Partial<ControlSettings>;
  readonly initialRatePerS?: Readonly<Record<string, number>>;
}

/** HTTP status of each reason a task ends with an error. */
const ERROR_STATUS: Record<Extract<TaskAnswer, { ok: false }>['reason'], number> = {
  slo: 503,
  'not-deployed': 503,
  'worker-failed': 503,
  shutdown: 503,
};

export class SchedulerService {
  private constructor(
    readonly app: FastifyInstance,
    readonly control: Control,
    private readonly hub: AgentHub,
    readonly metrics: Metrics,
    readonly url: string,
  ) {}

  /** ws:// address agents connect to. */
  get agentUrl(): string {
    return `${this.url.replace(/^http/, 'ws')}${AGENT_PATH}`;
  }

  static async start(opts: SchedulerOptions): Promise<SchedulerService> {
    const metrics = new Metrics();
    const bodyLimit = opts.bodyLimitBytes ?? 64 * 1024 * 1024;
    // The cast keeps the app typed FastifyInstance<..., FastifyBaseLogger> (pino's Logger type differs in generics only).
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    const app = Fastify({ loggerInstance: opts.logger as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }), bodyLimit, keepAliveTimeout: 30_000 });
    const hub = new AgentHub(opts.token, opts.logger.child({ part: 'hub' }));
    const control = new Control({
      models: opts.models,
      profiles: opts.profiles,
      policyName: opts.policyName,
      createPolicy: opts.createPolicy,
      link: hub,
      clock: () => performance.now(),
      logger: opts.logger.child({ part: 'control' }),
      metrics,
      ...(opts.store ? { store: opts.store } : {}),
      ...(opts.settings ? { settings: opts.settings } : {}),
      ...(opts.initialRatePerS ? { initialRatePerS: opts.initialRatePerS } : {}),
    });
    hub.bind(control);

    // Bodies are parsed by the KServe codec, whatever their content type (JSON, binary extension, none).
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_req, body, done) => done(null, body));
    app.setErrorHandler((err: { statusCode?: number; message: string }, _req, reply) => {
      const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
      const message = status === 413 ? `request body is larger than the limit of ${bodyLimit} bytes` : err.message;
      void reply.code(status).header('content-type', 'application/json').send(errorBody(message));
    });
    app.setNotFoundHandler((req, reply) => {
      void reply.code(404).header('content-type', 'application/json').send(errorBody(`no route ${req.method} ${req.url}`));
    });

    const json = (reply: FastifyReply, status: number, body: unknown) => reply.code(status).header('content-type', 'application/json').send(JSON.stringify(body));
    const modelOr404 = (name: string, version: string | undefined, reply: FastifyReply): number | null => {
      const r = resolveModel(opts.models, name, version);
      if (!r.ok) void json(reply, 404, { error: r.error });
      return r.ok ? r.index : null;
    };
    registerTriton(app, { control, metrics, models: opts.models, bodyLimit });

    app.get('/v2/health/live', (_req, reply) => json(reply, 200, { live: true }));
    app.get('/v2/health/ready', (_req, reply) => {
      const r = control.readiness();
      return json(reply, r.ready ? 200 : 503, { ready: r.ready, ...(r.ready ? {} : { notReady: r.notReady, policyError: r.policyError }) });
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

    const inferRoute = (req: { params: ModelParams; body: unknown; headers: Record<string, string | string[] | undefined> }, reply: FastifyReply) => {
      const m = modelOr404(req.params.name, req.params.version, reply);
      if (m === null) return reply;
      const c = opts.models[m]!;
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const header = req.headers['inference-header-content-length'];
      const parsed = parseInferRequest(
        body,
        { contentType: typeof req.headers['content-type'] === 'string' ? req.headers['content-type'] : undefined, inferenceHeaderLength: typeof header === 'string' ? header : undefined },
        { name: c.name, signature: c.signature },
      );
      if (!parsed.ok) {
        metrics.badRequests.inc({ model: c.name, status: String(parsed.status) });
        return json(reply, parsed.status, { error: parsed.error });
      }
      const request = parsed.request;
      const input = request.inputs[0]!;
      // The answer comes later: returning the reply tells Fastify to wait for its send (and for the
      // onSend hooks, which may be asynchronous: response compression, scheduler/triton.ts).
      control.submit(m, { name: input.name, datatype: input.datatype, shape: input.shape, data: input.data }, (a) => {
        if (!a.ok) {
          void json(reply, ERROR_STATUS[a.reason], { error: a.error, reason: a.reason });
          return;
        }
        // In the order the request named them (all of the signature's when it named none).
        const byName = new Map(a.outputs.map((o) => [o.name, o]));
        const outputs = request.outputs.flatMap((w) => {
          const o = byName.get(w.name);
          return o ? [{ ...o, binary: w.binary }] : [];
        });
        const r = encodeInferResponse({ modelName: c.name, modelVersion: '1', ...(request.id !== undefined ? { id: request.id } : {}), outputs });
        void reply.code(200).headers(r.headers).send(r.body);
      });
      return reply;
    };
    app.post<{ Params: ModelParams }>('/v2/models/:name/infer', inferRoute);
    app.post<{ Params: ModelParams }>('/v2/models/:name/versions/:version/infer', inferRoute);

    app.get('/metrics', async (_req, reply) => reply.code(200).header('content-type', metrics.registry.contentType).send(await metrics.registry.metrics()));
    app.get('/v2/inss/cluster', (_req, reply) => json(reply, 200, control.snapshot()));
    app.get('/v2/inss/decisions', (_req, reply) => json(reply, 200, opts.store?.decisions(100) ?? []));
    registerDashboard(app, { control, metrics, epochMs: opts.settings?.epochMs });

    hub.attach(app.server);
    await app.listen({ host: opts.host, port: opts.port });
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : opts.port;
    const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
    control.start();
    opts.store?.recordPolicy({ name: opts.policyName, source: null, data: undefined, nowIso: new Date().toISOString() });
    return new SchedulerService(app, control, hub, metrics, `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`);
  }

  /** Answers every waiting task (shutdown errors), closes the agents' connections and the port. */
  async close(): Promise<void> {
    this.control.stop();
    this.hub.close();
    await this.app.close();
  }
}

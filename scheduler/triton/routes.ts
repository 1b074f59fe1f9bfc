// Triton's routes beyond inference, and its compression hooks, on the scheduler's Fastify app.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Control, ServedModelConfig } from '../control.js';
import type { UnavailableModel } from '../../src/repository/types.js';
import type { Metrics } from '../metrics.js';
import { compressedRoute, decompress, deflateAsync, gzipAsync, requestCoding, responseCoding } from './compression.js';
import { modelStatJson, parseIndexRequest, repositoryIndex, servedModelConfig, servedVersion } from './model.js';

export interface TritonOptions {
  readonly control: Control;
  readonly metrics: Metrics;
  readonly models: readonly ServedModelConfig[];
  /** Repository models that failed to load (the index lists them). */
  readonly unavailable: readonly UnavailableModel[];
  /** The largest body the request's route takes, compressed or not (the limit after decompression too). */
  readonly bodyLimit: (req: FastifyRequest) => number;
}

/**
 * A model name and optional version from a URL, resolved to its index, or the 404 answer's text: an
 * unknown model, a repository model that failed to load (with why), a version not served (inss serves
 * one version of a model: a repository model's highest allowed one, else '1').
 */
export function resolveModel(
  models: readonly ServedModelConfig[],
  name: string,
  version: string | undefined,
  unavailable: readonly UnavailableModel[] = [],
): { ok: true; index: number } | { ok: false; error: string } {
  const index = models.findIndex((m) => m.name === name);
  if (index < 0) {
    const failed = unavailable.find((u) => u.name === name);
    if (failed) return { ok: false, error: `model '${name}' is unavailable: it failed to load: ${failed.reason}` };
    return { ok: false, error: `unknown model '${name}' (served: ${models.map((x) => x.name).join(', ')})` };
  }
  const model = models[index]!;
  const served = servedVersion(model);
  if (version === undefined || version === served) return { ok: true, index };
  if ((model.repository ?? model.ensemble)?.versions.includes(version))
    return {
      ok: false,
      error:
        `model '${name}' version '${version}' is not served: inss serves one version of a model, the highest ` +
        `its version policy allows ('${served}')`,
    };
  return { ok: false, error: `model '${name}' has no version '${version}' (versions: ${served})` };
}

type ModelParams = { name: string; version?: string };

function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).header('content-type', 'application/json').send(JSON.stringify(body));
}

/**
 * An onRequest hook for the infer routes: a model (or version) that is not served is answered 404 before
 * a byte of the body is read, whatever its size (the body limit of a route is its model's, so without
 * this an unknown model's full-size body got 413). Node discards a body left unread once the answer is
 * sent, and the connection stays usable (closing it while the client still sends would reset it
 * before the client reads the 404); a body beyond `maxBodyBytes`, or chunked (no length to bound it),
 * gets `Connection: close` instead. Install before the guard's body checks (scheduler/guard.ts).
 */
export function unknownModelHook(
  models: readonly ServedModelConfig[],
  isInfer: (req: FastifyRequest) => boolean,
  maxBodyBytes: number,
) {
  return (req: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    if (!isInfer(req)) return done();
    const p = req.params as Partial<ModelParams>;
    const r = resolveModel(models, p.name ?? '', p.version);
    if (r.ok) return done();
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > maxBodyBytes || req.headers['transfer-encoding'] !== undefined)
      void reply.header('connection', 'close');
    void sendJson(reply, 404, { error: r.error });
    // answered: the chain stops here (Fastify's way for callback hooks)
  };
}

/** Registers the routes and the compression hooks. Call before the app listens. */
export function registerTriton(app: FastifyInstance, o: TritonOptions): void {
  o.metrics.setWorkerSource(() => o.control.workerViews());

  app.addHook('preHandler', async (req: FastifyRequest, reply: FastifyReply) => {
    const header = req.headers['content-encoding'];
    const coding = requestCoding(Array.isArray(header) ? header.join(',') : header);
    if (!coding.ok) return sendJson(reply, 415, { error: coding.error });
    if (coding.coding === null || !Buffer.isBuffer(req.body)) return;
    const out = await decompress(req.body, coding.coding, o.bodyLimit(req));
    if (!out.ok) return sendJson(reply, out.status, { error: out.error });
    req.body = out.body;
  });

  app.addHook('onSend', async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (!compressedRoute(req.routeOptions.url)) return payload;
    if (
      reply.hasHeader('content-encoding') ||
      !(typeof payload === 'string' || Buffer.isBuffer(payload)) ||
      payload.length === 0
    )
      return payload;
    const accept = req.headers['accept-encoding'];
    const coding = responseCoding(Array.isArray(accept) ? accept.join(',') : accept);
    reply.header('vary', 'accept-encoding');
    if (coding === null) return payload;
    reply.header('content-encoding', coding);
    reply.removeHeader('content-length');
    return coding === 'gzip' ? gzipAsync(payload) : deflateAsync(payload);
  });

  const statsOf = async (models: readonly ServedModelConfig[]) => ({
    model_stats: await Promise.all(
      models.map(async (m) => modelStatJson(m.name, await o.metrics.modelStats(m.name), servedVersion(m))),
    ),
  });
  app.get('/v2/models/stats', async (_req, reply) => sendJson(reply, 200, await statsOf(o.models)));
  const modelStats = async (req: { params: ModelParams }, reply: FastifyReply) => {
    const r = resolveModel(o.models, req.params.name, req.params.version, o.unavailable);
    if (!r.ok) return sendJson(reply, 404, { error: r.error });
    return sendJson(reply, 200, await statsOf([o.models[r.index]!]));
  };
  app.get<{ Params: ModelParams }>('/v2/models/:name/stats', modelStats);
  app.get<{ Params: ModelParams }>('/v2/models/:name/versions/:version/stats', modelStats);

  const config = (req: { params: ModelParams }, reply: FastifyReply) => {
    const r = resolveModel(o.models, req.params.name, req.params.version, o.unavailable);
    if (!r.ok) return sendJson(reply, 404, { error: r.error });
    return sendJson(reply, 200, servedModelConfig(o.models[r.index]!, o.control.workerViews()));
  };
  app.get<{ Params: ModelParams }>('/v2/models/:name/config', config);
  app.get<{ Params: ModelParams }>('/v2/models/:name/versions/:version/config', config);

  app.post('/v2/repository/index', (req, reply) => {
    const parsed = parseIndexRequest(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));
    if (!parsed.ok) return sendJson(reply, 400, { error: parsed.error });
    const index = repositoryIndex(o.models, o.control.workerViews(), o.control.readiness().policyError, o.unavailable);
    return sendJson(reply, 200, parsed.readyOnly ? index.filter((e) => e.state === 'READY') : index);
  });
  const refuse =
    (action: 'load' | 'unload') => (req: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply) => {
      const known = o.models.some((m) => m.name === req.params.name);
      const what = known ? `model '${req.params.name}'` : `unknown model '${req.params.name}'`;
      return sendJson(reply, 403, {
        error:
          `cannot ${action} ${what}: inss does not load or unload models on request; the models come from the ` +
          `scenario and the model repository given at start, and the policy places them on GPUs`,
      });
    };
  app.post<{ Params: { name: string } }>('/v2/repository/models/:name/load', refuse('load'));
  app.post<{ Params: { name: string } }>('/v2/repository/models/:name/unload', refuse('unload'));
}

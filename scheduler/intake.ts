// What every HTTP request meets before its route: the Fastify app itself (the guard's server options,
// TLS), the time it arrived, the token check, and, for a large JSON infer body, a place in the parse
// queue reserved before the body is read. Called once each by SchedulerService.start, in this order;
// Fastify runs onRequest hooks in the order they were added.
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import { type AccessOptions, refusal } from './auth.js';
import type { guardedServerOptions } from './guard.js';
import type { ParsePool } from './parsePool.js';

/** The Fastify app on the guard's server options, over HTTPS when `tls` is given. */
export function createApp(
  logger: Logger,
  server: ReturnType<typeof guardedServerOptions>,
  tls: { readonly cert: Buffer; readonly key: Buffer } | undefined,
): FastifyInstance {
  // With TLS, Fastify makes an https.Server from these options (it takes the http ones too); typed as
  // the plain server's app, which has the same routes and hooks.
  const https = tls ? { https: { ...server.http, cert: tls.cert, key: tls.key } } : {};
  // Typed FastifyInstance<..., FastifyBaseLogger> by the return type (pino's Logger type differs in
  // generics only).
  return Fastify({
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    loggerInstance: logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    keepAliveTimeout: 30_000,
    ...server,
    ...https,
  });
}

/**
 * Notes when each request reached the scheduler (its headers read): its task's deadline counts from
 * then, and the time to the task is the request's way in (docs/serving.md, "The path in the twin").
 * Returns the reader of that time, in performance.now() ms; undefined for a request it never saw.
 */
export function trackArrivals(app: FastifyInstance): (req: FastifyRequest) => number | undefined {
  const receivedMs = new WeakMap<object, number>();
  app.addHook('onRequest', (req, _reply, done) => {
    receivedMs.set(req.raw, performance.now());
    done();
  });
  return (req) => receivedMs.get(req.raw);
}

/** Tokens first: a request without the one its route needs is refused 401 before its body is read. */
export function requireTokens(app: FastifyInstance, access: AccessOptions): void {
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
}

/**
 * A large JSON infer body is admitted only while the parse queue has room for it, before it is read:
 * past that, reading it would only delay the requests already admitted. Returns `takeReservation`,
 * which the infer route calls once as parsing starts: the bytes held for the request (0 when none),
 * handed on to ParsePool.parse, which releases them.
 */
export function admitParses(
  app: FastifyInstance,
  parser: Pick<ParsePool, 'offThread' | 'reserve' | 'release'>,
  isInfer: (req: FastifyRequest) => boolean,
): (req: FastifyRequest) => number {
  const reserved = new WeakMap<object, number>();
  const takeReservation = (req: FastifyRequest): number => {
    const n = reserved.get(req.raw) ?? 0;
    reserved.delete(req.raw);
    return n;
  };
  app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
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
  return takeReservation;
}

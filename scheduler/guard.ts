// The HTTP layer's defences against hostile or broken clients, for the scheduler
// service's Fastify app:
// - connections: at most maxConnections open, and maxConnectionsPerClient from one address; beyond,
//   a 503 (plain HTTP) or a closed connection (TLS, before its handshake);
// - bodies: a per-request limit (the model's, from its signature: scheduler/limits.ts) checked on
//   Content-Length before a byte is read, a cap on the bytes of all bodies being read at once (503
//   beyond: a declared length before the body is read, a chunked body as its bytes arrive), and a
//   deadline scaled to the size (408 beyond);
// - headers: a deadline (408), Node's 16 KiB size limit (431);
// - every refusal, Fastify's and Node's own included, as the protocol's `{"error": ...}` JSON, with
//   the client's URL clipped (never echoed whole); a known path with a wrong method gets 405 and Allow.
import type { ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import { Transform } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import { errorBody } from './kserve.js';
import { bodyTimeoutMs, type InputLimits, shownPath } from './limits.js';

/** A raw HTTP/1.1 answer with a JSON error body, for sockets Fastify has not (or no longer) got a reply for. */
function rawAnswer(status: number, statusText: string, message: string): string {
  const body = errorBody(message).toString();
  return (
    `HTTP/1.1 ${status} ${statusText}\r\nContent-Type: application/json\r\nContent-Length: ` +
    `${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/** Node's parse errors (clientError) as the protocol's errors: 400, 408, 413, 414, 431. */
function clientErrorAnswer(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return rawAnswer(408, 'Request Timeout', 'the request did not arrive in time');
    case 'HPE_HEADER_OVERFLOW':
      return rawAnswer(431, 'Request Header Fields Too Large', 'request headers are larger than 16 KiB');
    case 'HPE_URI_TOO_LONG':
      return rawAnswer(414, 'URI Too Long', 'request URL is too long');
    default:
      return rawAnswer(400, 'Bad Request', `malformed HTTP request (${err.code ?? 'parse error'})`);
  }
}

export interface GuardOptions {
  readonly limits: InputLimits;
  /** The largest body any route accepts (Fastify's own limit, for bodies without Content-Length). */
  readonly maxBodyBytes: number;
  readonly tls: boolean;
  readonly log: Logger;
}

/** The Fastify constructor options of the guard: limits, timeouts and the JSON form of Node's and Fastify's errors. */
export function guardedServerOptions(o: GuardOptions): {
  bodyLimit: number;
  requestTimeout: number;
  http: ServerOptions;
  clientErrorHandler: (err: NodeJS.ErrnoException, socket: Socket) => void;
  frameworkErrors: NonNullable<FastifyServerOptions['frameworkErrors']>;
} {
  return {
    bodyLimit: o.maxBodyBytes,
    // Node's own deadline for a whole request: the slowest a body of the largest size may be.
    requestTimeout: bodyTimeoutMs(o.maxBodyBytes, o.limits) + o.limits.headersTimeoutMs,
    http: { headersTimeout: o.limits.headersTimeoutMs, connectionsCheckingInterval: 1000 },
    clientErrorHandler: (err: NodeJS.ErrnoException, socket: Socket) => {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      if (socket.writable) socket.write(clientErrorAnswer(err));
      socket.destroy();
    },
    frameworkErrors: (err, _req, r) => {
      const status = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : 400;
      void (r as FastifyReply)
        .code(status)
        .header('content-type', 'application/json')
        .send(errorBody(status === 414 ? 'a path segment of the request URL is too long' : 'malformed request URL'));
    },
  };
}

/** Counts connections per client address and in total; refuses those beyond the caps. */
function capConnections(app: FastifyInstance, o: GuardOptions): void {
  const perClient = new Map<string, number>();
  let total = 0;
  app.server.on('connection', (socket: Socket) => {
    const who = socket.remoteAddress ?? 'unknown';
    const mine = perClient.get(who) ?? 0;
    const why =
      total >= o.limits.maxConnections
        ? `too many connections (${o.limits.maxConnections} open); retry later`
        : mine >= o.limits.maxConnectionsPerClient
          ? `too many connections from ${who} (${o.limits.maxConnectionsPerClient} open); reuse connections ` +
            `(keep-alive) or retry later`
          : undefined;
    if (why) {
      o.log.warn({ remote: who, total, fromClient: mine }, 'connection refused: over the connection cap');
      // Over TLS the client cannot read a plain answer before its handshake: it only sees the close.
      if (!o.tls && socket.writable) socket.end(rawAnswer(503, 'Service Unavailable', why));
      else socket.destroy();
      setTimeout(() => socket.destroy(), 2000).unref();
      return;
    }
    total++;
    perClient.set(who, mine + 1);
    socket.once('close', () => {
      total--;
      const n = (perClient.get(who) ?? 1) - 1;
      if (n <= 0) perClient.delete(who);
      else perClient.set(who, n);
    });
  });
}

/**
 * Installs the guard on the app (before its routes are added, so that the route table for 405 sees
 * them all): connection caps, the per-request body limit (`bodyLimitFor`, undefined: the app's) and
 * body deadline, and the JSON 404/405 and error handlers.
 */
export function guard(
  app: FastifyInstance,
  o: GuardOptions,
  bodyLimitFor: (req: FastifyRequest) => number | undefined,
): void {
  capConnections(app, o);

  // Every route, to answer a known path with a wrong method 405 and its Allow header.
  const routes: { methods: string[]; pattern: RegExp }[] = [];
  app.addHook('onRoute', (r) => {
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    const source = r.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]\w*/g, '[^/]+');
    routes.push({ methods, pattern: new RegExp(`^${source}$`) });
  });

  // Bytes of bodies being read, held until the exchange ends: a declared length from the headers, a
  // chunked body's bytes as they arrive (preParsing below).
  let bodyBytesInFlight = 0;
  const chunked = new WeakSet<object>();
  const deadlines = new WeakMap<object, NodeJS.Timeout>();
  const clearDeadline = (req: FastifyRequest) => {
    clearTimeout(deadlines.get(req.raw));
    deadlines.delete(req.raw);
  };
  app.addHook('onRequest', (req, reply, done) => {
    const length = Number(req.headers['content-length'] ?? 0);
    const hasBody = length > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody) return done();
    const limit = bodyLimitFor(req) ?? o.maxBodyBytes;
    if (length > limit) {
      // Refused before a byte of the body is read; the connection closes (the client is still sending).
      void reply
        .code(413)
        .header('connection', 'close')
        .header('content-type', 'application/json')
        .send(errorBody(bodyTooLarge(limit)));
      return; // answered: the chain stops here (Fastify's way for callback hooks)
    }
    if (bodyBytesInFlight + length > o.limits.maxBodyBytesInFlight) {
      // Not `Connection: close`: closing while the client still sends its body resets the connection
      // before the client reads the 503 (seen as EPIPE); Node discards the unread body (within its
      // Content-Length, under the limit above) and the connection stays usable.
      void reply
        .code(503)
        .header('content-type', 'application/json')
        .send(errorBody(serverBusy(bodyBytesInFlight, o.limits.maxBodyBytesInFlight)));
      return; // answered
    }
    bodyBytesInFlight += length;
    reply.raw.once('close', () => (bodyBytesInFlight -= length));
    if (length === 0) chunked.add(req.raw);
    const ms = bodyTimeoutMs(length > 0 ? length : limit, o.limits);
    deadlines.set(
      req.raw,
      setTimeout(() => {
        if (reply.raw.headersSent) return;
        o.log.warn({ remote: req.ip, ms }, 'request body too slow: answered 408 and closed');
        req.raw.socket.end(rawAnswer(408, 'Request Timeout', `the request body did not arrive within ${ms} ms`));
        setTimeout(() => req.raw.socket.destroy(), 1000).unref();
      }, ms),
    );
    done();
  });
  // A chunked body (no Content-Length) counts its bytes as they arrive: the one over the cap ends
  // with 503 (through the error handler) and its bytes so far are released with the exchange.
  app.addHook('preParsing', (req, reply, payload, done) => {
    if (!chunked.has(req.raw)) return done(null, payload);
    let held = 0;
    reply.raw.once('close', () => (bodyBytesInFlight -= held));
    const counted = new Transform({
      transform(chunk: Buffer, _enc, next) {
        if (bodyBytesInFlight + chunk.length > o.limits.maxBodyBytesInFlight) {
          reply.header('connection', 'close');
          next(
            Object.assign(new Error(serverBusy(bodyBytesInFlight, o.limits.maxBodyBytesInFlight)), { statusCode: 503 }),
          );
          return;
        }
        bodyBytesInFlight += chunk.length;
        held += chunk.length;
        next(null, chunk);
      },
    });
    payload.on('error', (e) => counted.destroy(e));
    done(null, payload.pipe(counted));
  });
  app.addHook('preHandler', (req, _reply, done) => {
    clearDeadline(req);
    done();
  });
  app.addHook('onResponse', (req, _reply, done) => {
    clearDeadline(req);
    done();
  });
  app.addHook('onRequestAbort', (req, done) => {
    clearDeadline(req);
    done();
  });

  app.setNotFoundHandler((req, reply: FastifyReply) => {
    const path = req.url.split('?')[0] ?? '';
    const allow = [...new Set(routes.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods))];
    if (allow.length > 0) {
      void reply
        .code(405)
        .header('allow', allow.join(', '))
        .header('content-type', 'application/json')
        .send(errorBody(`method ${req.method} is not allowed on ${shownPath(req.url)} (allowed: ${allow.join(', ')})`));
      return;
    }
    void reply
      .code(404)
      .header('content-type', 'application/json')
      .send(errorBody(`no route ${req.method} ${shownPath(req.url)}`));
  });
  app.setErrorHandler((err: { statusCode?: number; message: string }, req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
    const message =
      status === 413
        ? bodyTooLarge(bodyLimitFor(req) ?? o.maxBodyBytes)
        : status === 500
          ? 'internal error'
          : err.message;
    if (status === 500) o.log.error({ err: err.message, url: shownPath(req.url) }, 'request failed');
    void reply.code(status).header('content-type', 'application/json').send(errorBody(message));
  });
}

function serverBusy(inFlight: number, cap: number): string {
  return `server busy: ${inFlight} bytes of request bodies are being received (limit ${cap}); retry`;
}

export function bodyTooLarge(limit: number): string {
  return `request body is larger than the limit of ${limit} bytes`;
}

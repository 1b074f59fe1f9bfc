// Where a front door sends a request for a model it holds no worker of (docs/front-doors.md): to a door that holds
// one, by the share of the model's serving workers each door holds (src/serving/frontDoors.ts `DoorRouter`, the
// twin's rule without waiting counts), as an HTTP forward of the request's bytes: the infer route's request is
// streamed to the peer door as it came (headers, the client's token included) before its body is read here, and
// the peer's answer streamed back. A forwarded request carries FORWARDED_HEADER and is never forwarded again. A
// peer that cannot be reached answers the client 502 naming it. Used by the scheduler (door 0) and every
// `inss frontdoor`, each from its own copy of the table.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { DoorWorker } from '../src/protocol/door.js';
import { DoorRouter } from '../src/serving/frontDoors.js';

export const FORWARDED_HEADER = 'x-inss-forwarded';

export class DoorRoutes {
  private router: DoorRouter | null = null;
  private readonly urls = new Map<number, string>();
  private readonly grpcs = new Map<number, string>();
  /** Models with a worker (starting or serving) at this door: their requests are served here. */
  private here = new Set<number>();
  private self = 0;
  private readonly index: Map<string, number>;

  constructor(models: readonly string[]) {
    this.index = new Map(models.map((m, i) => [m, i]));
  }

  /** A new table: this door's index, the doors alive (index, base URL), every worker with its GPU's door. */
  update(
    self: number,
    doors: readonly { index: number; url: string; grpc?: string | undefined }[],
    workers: readonly DoorWorker[],
  ): void {
    this.self = self;
    this.urls.clear();
    this.grpcs.clear();
    for (const d of doors) this.urls.set(d.index, d.url);
    for (const d of doors) if (d.grpc) this.grpcs.set(d.index, d.grpc);
    const serving = workers.filter(
      (w) => w.wanted && w.state === 'ready' && w.role !== 'shadow' && this.urls.has(w.door) && this.index.has(w.model),
    );
    const n = Math.max(self, ...doors.map((d) => d.index)) + 1;
    this.router = new DoorRouter(n, this.index.size);
    this.router.setWorkers(
      serving.length,
      (i) => serving[i]!.door,
      (i) => this.index.get(serving[i]!.model)!,
    );
    this.here = new Set(workers.filter((w) => w.door === self && w.wanted).map((w) => this.index.get(w.model) ?? -1));
  }

  /** Another door alive holds a serving worker of model `name`. */
  elsewhere(name: string): boolean {
    const m = this.index.get(name);
    const r = this.router;
    return m !== undefined && r !== null && [...this.urls.keys()].some((d) => d !== this.self && r.holds(d, m));
  }

  /** The base URL of the door to forward model `name`'s HTTP request to; null: served here. */
  target(name: string): string | null {
    const d = this.pick(name);
    return d === null ? null : (this.urls.get(d) ?? null);
  }

  /** The gRPC address (host:port) of the door to forward model `name`'s gRPC request to; null: served here. */
  grpcTarget(name: string): string | null {
    const d = this.pick(name);
    return d === null ? null : (this.grpcs.get(d) ?? null);
  }

  /** The door model `name`'s next request goes to when not here; null: served here. */
  private pick(name: string): number | null {
    const m = this.index.get(name);
    const r = this.router;
    if (m === undefined || r === null || this.here.has(m)) return null;
    if (![...this.urls.keys()].some((d) => r.holds(d, m))) return null;
    const d = r.next(m);
    return d === this.self ? null : d;
  }
}

/**
 * Forwards infer requests for models `routes` sends elsewhere (see the file head). `isInfer` tells the infer
 * routes; `ca`: the certificate to trust for an https:// peer besides the system's.
 */
export function forwardHook(
  routes: DoorRoutes,
  isInfer: (req: FastifyRequest) => boolean,
  log: Logger,
  ca?: Buffer,
): (req: FastifyRequest, reply: FastifyReply, done: () => void) => void {
  return (req, reply, done) => {
    if (!isInfer(req) || req.headers[FORWARDED_HEADER] !== undefined) return done();
    const base = routes.target((req.params as { name?: string }).name ?? '');
    if (base === null) return done();
    void reply.hijack();
    const url = new URL(req.url, base);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const out = send(url, {
      method: req.method,
      headers: { ...req.headers, host: url.host, [FORWARDED_HEADER]: '1' },
      ...(ca ? { ca } : {}),
    });
    out.on('response', (res) => {
      reply.raw.writeHead(res.statusCode ?? 502, res.headers);
      res.pipe(reply.raw);
    });
    out.on('error', (e) => {
      log.warn({ peer: base, err: e.message }, 'forward to a front door failed');
      if (reply.raw.headersSent) return void reply.raw.destroy();
      const body = JSON.stringify({ error: `the front door holding this model (${base}) failed: ${e.message}` });
      reply.raw.writeHead(502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      reply.raw.end(body);
    });
    req.raw.pipe(out);
  };
}

// inss's own HTTP routes beside the protocol's: GET /metrics (Prometheus, scheduler/metrics.ts), the
// cluster view GET /v2/inss/cluster (with the event loop's delay), the policy's recent decisions
// GET /v2/inss/decisions, and the dashboard (scheduler/dashboard.ts). Registered once by
// SchedulerService.start.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Control } from './control.js';
import { registerDashboard } from './dashboard.js';
import type { Metrics } from './metrics.js';
import type { Store } from './store.js';

export interface InssRouteOptions {
  readonly control: Control;
  readonly metrics: Metrics;
  /** Where the decisions are recorded; absent: GET /v2/inss/decisions lists none. */
  readonly store?: Store | undefined;
  /** The control plane's epoch, for the dashboard's refresh. */
  readonly epochMs?: number | undefined;
}

const json = (reply: FastifyReply, status: number, body: unknown) =>
  reply.code(status).header('content-type', 'application/json').send(JSON.stringify(body));

/** Registers the routes, and the event-loop delay monitor the cluster view reads (off once the app closes). */
export function registerInss(app: FastifyInstance, o: InssRouteOptions): void {
  app.get('/metrics', async (_req, reply) =>
    reply
      .code(200)
      .header('content-type', o.metrics.registry.contentType)
      .send(await o.metrics.registry.metrics()),
  );
  // The scheduler's event-loop delay since it started (a timer or a socket's data waits that long
  // for the loop on a busy machine; docs/results.md, "The live system against its twin").
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  app.addHook('onClose', (_app, done) => {
    loopDelay.disable();
    done();
  });
  const delayMs = (ns: number) => Number((ns / 1e6).toFixed(3));
  app.get('/v2/inss/cluster', (_req, reply) =>
    json(reply, 200, {
      ...(o.control.snapshot() as object),
      eventLoopDelayMs: {
        p50: delayMs(loopDelay.percentile(50)),
        p99: delayMs(loopDelay.percentile(99)),
        max: delayMs(loopDelay.max),
      },
    }),
  );
  app.get('/v2/inss/decisions', (_req, reply) => json(reply, 200, o.store?.decisions(100) ?? []));
  registerDashboard(app, { control: o.control, metrics: o.metrics, epochMs: o.epochMs });
}

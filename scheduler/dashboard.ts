// The operator's dashboard (docs/dashboard.md): the page at /dashboard with its assets, and the JSON
// it polls at /v2/inss/dashboard (under /v2/inss/ like the other introspection routes, so the same
// guard applies). Once per epoch a sampler reads what the control plane already publishes -- its
// cluster snapshot and its Prometheus metrics -- into bounded series and a timeline
// (scheduler/timeseries.ts). The page's charting library is uPlot, served from the installed npm
// package: nothing is fetched from the network.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Control } from './control.js';
import type { Metrics } from './metrics.js';
import {
  type DashboardEvent,
  type ModelReading,
  ModelTimeSeries,
  type PlacementView,
  planEvent,
  Ring,
  workerEvents,
} from './timeseries.js';

export const DASHBOARD_PATH = '/dashboard';
export const DASHBOARD_DATA_PATH = '/v2/inss/dashboard';

/** How much the dashboard keeps: samples per model series (one per epoch) and timeline events. */
export interface DashboardLimits {
  readonly samples: number;
  readonly events: number;
}

const DEFAULT_LIMITS: DashboardLimits = { samples: 300, events: 500 };

// The part of Control.snapshot() the dashboard reads. Parsed, not cast: a change there fails here by name.
const SnapshotSchema = z.object({
  policy: z.string(),
  policyError: z.string().nullable(),
  agents: z.array(
    z.object({
      agentId: z.string(),
      connected: z.boolean(),
      hostname: z.string(),
      workerKind: z.string(),
      gpus: z.array(
        z.object({
          index: z.number(),
          name: z.string(),
          memMb: z.number(),
          profile: z.string().nullable(),
          simulated: z.boolean(),
        }),
      ),
    }),
  ),
  gpus: z.array(
    z.object({
      index: z.number(),
      agentId: z.string(),
      local: z.number(),
      profile: z.string().optional(),
      mode: z.string(),
    }),
  ),
  workers: z.array(
    z.object({
      workerId: z.string(),
      agentId: z.string(),
      gpu: z.number(),
      model: z.string(),
      pct: z.number(),
      batch: z.number(),
      role: z.string(),
      state: z.string(),
      pid: z.number().nullable(),
      busy: z.boolean(),
    }),
  ),
  queued: z.record(z.string(), z.number()),
  deployment: z.object({
    placements: z.array(z.object({ model: z.number(), gpu: z.number(), pct: z.number(), batch: z.number() })),
  }),
});
type Snapshot = z.infer<typeof SnapshotSchema>;

const QuerySchema = z
  .object({ since: z.coerce.number({ error: 'since: expected a number (ms since the epoch)' }).finite().optional() })
  .strict();

/** The page and its assets, read once at start: the page's own files and uPlot from its npm package. */
function loadAssets(): Map<string, { type: string; body: Buffer }> {
  const here = dirname(fileURLToPath(import.meta.url));
  // scheduler/ in the source tree, dist/scheduler/ in the package: dashboard/ sits at the package root.
  const dir = [join(here, '..', 'dashboard'), join(here, '..', '..', 'dashboard')].find((d) =>
    existsSync(join(d, 'index.html')),
  );
  if (!dir) throw new Error(`the dashboard's files (dashboard/index.html) are missing from the package near ${here}`);
  const require = createRequire(import.meta.url);
  const uplot = dirname(require.resolve('uplot/dist/uPlot.iife.min.js'));
  const files: [string, string, string][] = [
    ['', join(dir, 'index.html'), 'text/html; charset=utf-8'],
    ['/app.js', join(dir, 'app.js'), 'text/javascript; charset=utf-8'],
    ['/style.css', join(dir, 'style.css'), 'text/css; charset=utf-8'],
    ['/vendor/uPlot.iife.min.js', join(uplot, 'uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
    ['/vendor/uPlot.min.css', join(uplot, 'uPlot.min.css'), 'text/css; charset=utf-8'],
  ];
  return new Map(files.map(([path, file, type]) => [`${DASHBOARD_PATH}${path}`, { type, body: readFileSync(file) }]));
}

/** Reads the control plane once per epoch and answers the page's polls. */
export class DashboardState {
  readonly series: ModelTimeSeries;
  private readonly events: Ring<DashboardEvent>;
  private last: Snapshot | null = null;
  private lastReading = new Map<
    string,
    { gpuMemPredictedMb?: number; gpuMemMeasuredMb?: number; gpuUtilPct?: number }
  >();
  private swaps = 0;
  private decisions = 0;

  constructor(
    private readonly control: Control,
    private readonly metrics: Metrics,
    readonly epochMs: number,
    limits: DashboardLimits = DEFAULT_LIMITS,
  ) {
    const bounds = (this.metrics.latency as unknown as { upperBounds: number[] }).upperBounds;
    this.series = new ModelTimeSeries(
      control.models.map((m) => m.name),
      [...bounds, Infinity],
      limits.samples,
    );
    this.events = new Ring(limits.events);
  }

  /** One sample: the snapshot's changes become events; the metrics become one point per model. */
  async sample(nowMs: number): Promise<void> {
    const snap = SnapshotSchema.parse(this.control.snapshot());
    const [requests, latency, rate, memory, util, swaps, decisions] = await Promise.all([
      this.metrics.requests.get(),
      this.metrics.latency.get(),
      this.metrics.arrivalRate.get(),
      this.metrics.gpuMemory.get(),
      this.metrics.gpuUtil.get(),
      this.metrics.swaps.get(),
      this.metrics.decisions.get(),
    ]);
    this.swaps = swaps.values[0]?.value ?? 0;
    this.decisions = decisions.values[0]?.value ?? 0;
    const bounds = this.series.latencyBoundsS;
    const readings: ModelReading[] = this.control.models.map((m) => {
      let within = 0;
      let finished = 0;
      for (const v of requests.values) {
        if (v.labels.model !== m.name) continue;
        const outcome = String(v.labels.outcome);
        if (outcome === 'ok') within += v.value;
        if (
          outcome === 'ok' ||
          outcome === 'late' ||
          outcome === 'dropped_slo' ||
          outcome === 'dropped_queue_full' ||
          outcome === 'worker_failed'
        )
          finished += v.value;
      }
      const buckets = bounds.map(() => 0);
      for (const v of latency.values) {
        if (v.labels.model !== m.name || v.metricName !== 'inss_task_latency_seconds_bucket') continue;
        const raw = (v.labels as Record<string, string | number | undefined>).le;
        const le = raw === '+Inf' ? Infinity : Number(raw);
        const i = bounds.indexOf(le);
        if (i >= 0) buckets[i] = v.value;
      }
      const r = rate.values.find((v) => v.labels.model === m.name)?.value ?? 0;
      return { ratePerS: r, queued: snap.queued[m.name] ?? 0, withinSlo: within, finished, latencyBuckets: buckets };
    });
    this.series.record(nowMs, readings);
    const perGpu = new Map<string, { gpuMemPredictedMb?: number; gpuMemMeasuredMb?: number; gpuUtilPct?: number }>();
    const at = (g: string) => perGpu.get(g) ?? perGpu.set(g, {}).get(g)!;
    for (const v of memory.values)
      at(String(v.labels.gpu))[v.labels.source === 'measured' ? 'gpuMemMeasuredMb' : 'gpuMemPredictedMb'] = v.value;
    for (const v of util.values) at(String(v.labels.gpu)).gpuUtilPct = v.value;
    this.lastReading = perGpu;

    const prev = this.last;
    this.last = snap;
    if (!prev) return;
    const events: DashboardEvent[] = [];
    for (const a of snap.agents) {
      const was = prev.agents.find((x) => x.agentId === a.agentId);
      if (!was || was.connected !== a.connected)
        events.push({
          t: nowMs,
          kind: 'agent',
          agentId: a.agentId,
          connected: a.connected,
          text: `agent ${a.agentId} (${a.hostname}) ${a.connected ? 'connected' : 'disconnected'}`,
        });
    }
    const plan = planEvent(nowMs, this.placements(prev), this.placements(snap));
    if (plan) events.push(plan);
    events.push(...workerEvents(nowMs, prev.workers, snap.workers));
    for (const e of events) this.events.push(e);
  }

  private placements(s: Snapshot): PlacementView[] {
    return s.deployment.placements.map((p) => ({
      model: this.control.models[p.model]?.name ?? `#${p.model}`,
      gpu: p.gpu,
      pct: p.pct,
      batch: p.batch,
    }));
  }

  /** GET /v2/inss/dashboard: the cluster now, the series after `sinceMs`, the timeline (newest first). */
  view(nowMs: number, sinceMs?: number): unknown {
    const snap = this.last;
    const models = this.control.models;
    const series = this.series.view(sinceMs);
    return {
      now: nowMs,
      epochMs: this.epochMs,
      policy: snap?.policy ?? null,
      policyError: snap?.policyError ?? null,
      totals: { swaps: this.swaps, decisions: this.decisions },
      agents: (snap?.agents ?? []).map((a) => ({
        agentId: a.agentId,
        hostname: a.hostname,
        connected: a.connected,
        workerKind: a.workerKind,
        gpus: a.gpus.length,
      })),
      gpus: (snap?.gpus ?? []).map((g) => {
        const agentGpu = snap?.agents.find((a) => a.agentId === g.agentId)?.gpus.find((x) => x.index === g.local);
        const r = this.lastReading.get(String(g.index)) ?? {};
        return {
          index: g.index,
          agentId: g.agentId,
          local: g.local,
          name: agentGpu?.name ?? null,
          profile: g.profile ?? null,
          mode: g.mode,
          memTotalMb: agentGpu?.memMb ?? null,
          memPredictedMb: r.gpuMemPredictedMb ?? null,
          memMeasuredMb: r.gpuMemMeasuredMb ?? null,
          utilPct: r.gpuUtilPct ?? null,
          workers: (snap?.workers ?? [])
            .filter((w) => w.gpu === g.index)
            .map((w) => ({
              workerId: w.workerId,
              model: w.model,
              pct: w.pct,
              batch: w.batch,
              role: w.role,
              state: w.state,
            })),
        };
      }),
      workers: snap?.workers ?? [],
      models: models.map((m) => ({ name: m.name, sloMs: m.sloMs, latest: this.series.latest(m.name) })),
      series,
      events: this.events.toArray().reverse(),
    };
  }
}

/**
 * Serves the page and its JSON, and samples the control plane every epoch until the app closes.
 * One call from the scheduler service.
 */
export function registerDashboard(
  app: FastifyInstance,
  parts: { control: Control; metrics: Metrics; epochMs?: number | undefined; limits?: DashboardLimits },
): DashboardState {
  const assets = loadAssets();
  const state = new DashboardState(parts.control, parts.metrics, parts.epochMs ?? 1000, parts.limits);
  const log = app.log.child({ part: 'dashboard' });
  let failing = false;
  const timer = setInterval(() => {
    state.sample(Date.now()).then(
      () => (failing = false),
      (e: unknown) => {
        if (!failing) log.error({ err: (e as Error).message }, 'dashboard sample failed');
        failing = true;
      },
    );
  }, state.epochMs);
  timer.unref();
  app.addHook('onClose', (_app, done) => {
    clearInterval(timer);
    done();
  });
  app.get(DASHBOARD_PATH, (_req, reply) => reply.redirect(`${DASHBOARD_PATH}/`));
  app.get(`${DASHBOARD_PATH}/*`, (req, reply) => {
    const path = req.url.split('?')[0]!.replace(/\/$/, '');
    const a = assets.get(path);
    if (!a)
      return reply
        .code(404)
        .header('content-type', 'application/json')
        .send(JSON.stringify({ error: `no dashboard file ${path}` }));
    return reply.code(200).header('content-type', a.type).header('cache-control', 'no-cache').send(a.body);
  });
  app.get(DASHBOARD_DATA_PATH, (req, reply) => {
    const q = QuerySchema.safeParse(req.query ?? {});
    if (!q.success) {
      const msg = q.error.issues
        .map((i) =>
          i.code === 'unrecognized_keys' ? `unknown query parameter ${i.keys.join(', ')} (known: since)` : i.message,
        )
        .join('; ');
      return reply
        .code(400)
        .header('content-type', 'application/json')
        .send(JSON.stringify({ error: msg }));
    }
    return reply
      .code(200)
      .header('content-type', 'application/json')
      .send(JSON.stringify(state.view(Date.now(), q.data.since)));
  });
  return state;
}

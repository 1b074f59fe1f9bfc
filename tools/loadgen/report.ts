// The report of `inss loadgen` (pure): from one record per request, per model and in total, what was
// sent, what came back, how fast, and how much of it within the SLO. Rendered as an aligned text table
// and as a JSON object (LoadgenReportSchema, `inss-loadgen/1`). docs/loadgen.md explains each column.
//
// Rates are per second of the send window (`durationS`), not of the wall time until the last answer:
// the offered load is what the schedule sent over that window, and a server that keeps up answers at
// that rate. Latency is that of ok answers only (an error's latency says little about the service).
// Percentiles are exact, nearest-rank on the sorted values: the p-th percentile of n values is the
// value at 1-based rank ceil(p/100 * n), always one of the observed latencies.
import { z } from 'zod';
import type { ArrivalSpec } from './schedule.js';

export const OUTCOMES = ['ok', 'http-4xx', 'http-5xx', 'timeout', 'network', 'bad-response'] as const;
/**
 * What became of a request. ok: 200 with well-formed outputs; http-4xx / http-5xx: the server answered
 * with that status (inss answers 503 when it drops a task that cannot meet its SLO, or the model is not
 * deployed, or its worker failed); timeout: no whole answer within --timeout; network: the connection
 * failed (refused, reset, closed early); bad-response: any other status, or a malformed 200.
 */
export type Outcome = (typeof OUTCOMES)[number];
export type ErrorKind = Exclude<Outcome, 'ok'>;
export const ERROR_KINDS: readonly ErrorKind[] = OUTCOMES.filter((o): o is ErrorKind => o !== 'ok');

/** One request as the shell saw it. Times are ms since the run started. */
export interface RequestRecord {
  readonly model: string;
  /** When the schedule said to send it; the send lag is sentAtMs - scheduledAtMs. */
  readonly scheduledAtMs?: number;
  readonly sentAtMs: number;
  /** From the send to the end of the answer (or to the error). */
  readonly latencyMs: number;
  /**
   * The server's own span of the request, from its Server-Timing header (inss: arrival -> answered), when it sent one.
   */
  readonly serverMs?: number;
  readonly outcome: Outcome;
  readonly status?: number;
  readonly error?: string;
}

/** How many of the most common error texts are kept per model and in total. */
export const TOP_ERRORS = 3;

const count = z.number().int().nonnegative();
const rate = z.number().nonnegative();
const msOrNull = z.number().nonnegative().nullable();

export const LatencySummarySchema = z
  .object({ p50Ms: msOrNull, p99Ms: msOrNull, meanMs: msOrNull, maxMs: msOrNull })
  .strict();
export type LatencySummary = z.infer<typeof LatencySummarySchema>;

export const LoadStatsSchema = z
  .object({
    /** The model's SLO; null in the total (each model is judged against its own). */
    sloMs: z.number().positive().nullable(),
    /** The rate asked for (--model name=rate). */
    targetRatePerS: rate,
    /** sent / durationS: what the seeded schedule actually offered. */
    offeredPerS: rate,
    sent: count,
    ok: count,
    okWithinSlo: count,
    errors: z
      .object({ 'http-4xx': count, 'http-5xx': count, timeout: count, network: count, 'bad-response': count })
      .strict(),
    /** ok / durationS. */
    throughputPerS: rate,
    /** okWithinSlo / durationS. */
    goodputPerS: rate,
    /** 100 * okWithinSlo / sent; null when nothing was sent. */
    sloAttainmentPct: z.number().min(0).max(100).nullable(),
    /** Of ok answers; nulls when there were none. */
    latency: LatencySummarySchema,
    /**
     * Of ok answers whose server sent its span in a Server-Timing header (inss does, metric `inss`):
     * how many, and the mean of (latency - that span), the part of the latency outside the server's
     * view (the client's HTTP stack, the kernel both ways, the server's wait before it read the request
     * and its answer's way out); null when none did.
     */
    serverTimed: count,
    outsideServerMeanMs: msOrNull,
    /** The most common error texts (decimals shown as N, see errorKey), most frequent first (ties: alphabetical). */
    topErrors: z.array(z.object({ error: z.string(), count: count.min(1) }).strict()).max(TOP_ERRORS),
  })
  .strict();
export type LoadStats = z.infer<typeof LoadStatsSchema>;

export const LoadgenSettingsSchema = z
  .object({
    url: z.string(),
    /** http: KServe v2 over HTTP/REST; grpc: its gRPC service. */
    protocol: z.enum(['http', 'grpc']).default('http'),
    durationS: z.number().positive(),
    arrival: z.discriminatedUnion('kind', [
      z.object({ kind: z.literal('poisson') }).strict(),
      z.object({ kind: z.literal('gamma'), cv: z.number().positive() }).strict(),
    ]),
    seed: z.number().int().nonnegative(),
    encoding: z.enum(['binary', 'json']),
    /** What each request's input is: the model's own tensor (fp32), or an image as UINT8 pixels, a JPEG or a PNG. */
    input: z.enum(['fp32', 'uint8', 'jpeg', 'png']).default('fp32'),
    timeoutMs: z.number().positive(),
    connections: z.number().int().positive(),
    /** --trace: model -> the file its arrival instants were replayed from (absent: every model drawn). */
    traces: z.record(z.string(), z.string()).optional(),
  })
  .strict();
export type LoadgenSettings = z.infer<typeof LoadgenSettingsSchema>;

/** The JSON report (`inss loadgen --json`, `--out`). */
export const LoadgenReportSchema = z
  .object({
    schema: z.literal('inss-loadgen/1'),
    settings: LoadgenSettingsSchema,
    percentile: z.literal('nearest-rank'),
    models: z.array(LoadStatsSchema.extend({ model: z.string() }).strict()),
    total: LoadStatsSchema,
    /** How far sends fell behind the schedule (the client's own lag); null without scheduled times. */
    sendLagMs: z.object({ p99Ms: z.number(), maxMs: z.number() }).strict().nullable(),
  })
  .strict();
export type LoadgenReport = z.infer<typeof LoadgenReportSchema>;

// A compile-time check that the schema's arrival is the schedule's.
const _arrivalMatches: ArrivalSpec extends LoadgenSettings['arrival'] ? true : never = true;
void _arrivalMatches;

/** Exact nearest-rank percentile of ascending `sorted` (p in (0, 100]); null when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number | null {
  const n = sorted.length;
  if (n === 0) return null;
  const rank = Math.min(n, Math.max(1, Math.ceil((p / 100) * n)));
  return sorted[rank - 1]!;
}

function latencySummary(latenciesMs: readonly number[]): LatencySummary {
  const sorted = Float64Array.from(latenciesMs).sort();
  const n = sorted.length;
  return {
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    meanMs: n === 0 ? null : sorted.reduce((a, b) => a + b, 0) / n,
    maxMs: n === 0 ? null : sorted[n - 1]!,
  };
}

/**
 * The text an error is counted under: decimals become `N`, so that inss's "dropped: ... (predicted
 * batch time 93.2 ms ...)" answers count as one error, while integers (status codes, SLOs) and dotted
 * numbers with more parts (addresses, versions) stay.
 */
export function errorKey(text: string): string {
  return text.replace(/(?<![\d.])\d+\.\d+(?![\d.])/g, 'N');
}

function topErrors(records: readonly RequestRecord[]): { error: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const r of records) {
    if (r.outcome === 'ok') continue;
    const key = errorKey(r.error ?? (r.status !== undefined ? `HTTP ${r.status}` : r.outcome));
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, TOP_ERRORS)
    .map(([error, c]) => ({ error, count: c }));
}

function stats(
  records: readonly RequestRecord[],
  sloMsOf: (model: string) => number,
  targetRatePerS: number,
  sloMs: number | null,
  durationS: number,
): LoadStats {
  const errors = { 'http-4xx': 0, 'http-5xx': 0, timeout: 0, network: 0, 'bad-response': 0 };
  const okLatencies: number[] = [];
  let okWithinSlo = 0;
  let serverTimed = 0;
  let outsideSumMs = 0;
  for (const r of records) {
    if (r.outcome === 'ok') {
      okLatencies.push(r.latencyMs);
      if (r.serverMs !== undefined) {
        serverTimed++;
        outsideSumMs += Math.max(0, r.latencyMs - r.serverMs);
      }
      if (r.latencyMs <= sloMsOf(r.model)) okWithinSlo++;
    } else {
      errors[r.outcome]++;
    }
  }
  const sent = records.length;
  return {
    sloMs,
    targetRatePerS,
    offeredPerS: sent / durationS,
    sent,
    ok: okLatencies.length,
    okWithinSlo,
    errors,
    throughputPerS: okLatencies.length / durationS,
    goodputPerS: okWithinSlo / durationS,
    sloAttainmentPct: sent === 0 ? null : (100 * okWithinSlo) / sent,
    latency: latencySummary(okLatencies),
    serverTimed,
    outsideServerMeanMs: serverTimed === 0 ? null : outsideSumMs / serverTimed,
    topErrors: topErrors(records),
  };
}

export interface ReportModel {
  readonly name: string;
  readonly ratePerS: number;
  /** An ok answer is within the SLO when latencyMs <= sloMs. */
  readonly sloMs: number;
}

/**
 * Builds the report. Every record must name one of `models` (a record of another model is a bug:
 * RangeError). Models are reported in the order given, then the total over all records.
 */
export function buildReport(
  settings: LoadgenSettings,
  models: readonly ReportModel[],
  records: readonly RequestRecord[],
): LoadgenReport {
  const byName = new Map(models.map((m) => [m.name, m]));
  const groups = new Map<string, RequestRecord[]>(models.map((m) => [m.name, []]));
  for (const r of records) {
    const g = groups.get(r.model);
    if (!g) throw new RangeError(`record of model '${r.model}', which is not in the report's models`);
    g.push(r);
  }
  const sloMsOf = (name: string) => byName.get(name)!.sloMs;
  const lags = records.filter((r) => r.scheduledAtMs !== undefined).map((r) => r.sentAtMs - r.scheduledAtMs!);
  const sortedLags = Float64Array.from(lags).sort();
  return {
    schema: 'inss-loadgen/1',
    settings,
    percentile: 'nearest-rank',
    models: models.map((m) => ({
      model: m.name,
      ...stats(groups.get(m.name)!, sloMsOf, m.ratePerS, m.sloMs, settings.durationS),
    })),
    total: stats(
      records,
      sloMsOf,
      models.reduce((a, m) => a + m.ratePerS, 0),
      null,
      settings.durationS,
    ),
    sendLagMs:
      sortedLags.length === 0
        ? null
        : { p99Ms: percentile(sortedLags, 99)!, maxMs: sortedLags[sortedLags.length - 1]! },
  };
}

/** The table's columns, in order; the first is left-aligned, the others right-aligned. */
export const TABLE_COLUMNS = [
  'model',
  'slo ms',
  'rate/s',
  'sent',
  'ok',
  '4xx',
  '5xx',
  'timeout',
  'net',
  'bad',
  'thr/s',
  'goodput/s',
  'SLO att%',
  'p50 ms',
  'p99 ms',
  'mean ms',
  'max ms',
] as const;

const fixed = (x: number | null, digits: number): string => (x === null ? '-' : x.toFixed(digits));

function row(name: string, s: LoadStats): string[] {
  return [
    name,
    s.sloMs === null ? '-' : String(s.sloMs),
    s.targetRatePerS.toFixed(1),
    String(s.sent),
    String(s.ok),
    String(s.errors['http-4xx']),
    String(s.errors['http-5xx']),
    String(s.errors.timeout),
    String(s.errors.network),
    String(s.errors['bad-response']),
    s.throughputPerS.toFixed(1),
    s.goodputPerS.toFixed(1),
    fixed(s.sloAttainmentPct, 2),
    fixed(s.latency.p50Ms, 1),
    fixed(s.latency.p99Ms, 1),
    fixed(s.latency.meanMs, 1),
    fixed(s.latency.maxMs, 1),
  ];
}

/**
 * The report as text: a header line, the aligned table (one row per model, then `total`), and the
 * most common error texts per model. Every table line has the same width.
 */
export function formatReport(report: LoadgenReport): string {
  const s = report.settings;
  const arrival = s.arrival.kind === 'gamma' ? `gamma (CV ${s.arrival.cv})` : 'poisson';
  const head = [...TABLE_COLUMNS];
  const rows = [...report.models.map((m) => row(m.model, m)), row('total', report.total)];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const out = [
    `${s.url}${s.protocol === 'grpc' ? ' (gRPC)' : ''}: ${s.durationS} s, ${arrival} arrivals${
      s.traces
        ? ` (replayed: ${Object.entries(s.traces)
            .map(([m, f]) => `${m} from ${f}`)
            .join(', ')})`
        : ''
    }, seed ${s.seed}, ${s.encoding} encoding${s.input !== 'fp32' ? ` of ${s.input} images` : ''}`,
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
  ];
  if (report.sendLagMs)
    out.push(
      `send lag behind the schedule: p99 ${report.sendLagMs.p99Ms.toFixed(1)} ms, max ` +
        `${report.sendLagMs.maxMs.toFixed(1)} ms`,
    );
  const withErrors = report.models.filter((m) => m.topErrors.length > 0);
  if (withErrors.length > 0) {
    out.push('most common errors:');
    for (const m of withErrors) for (const e of m.topErrors) out.push(`  ${m.model}: ${e.count} x ${e.error}`);
  }
  return out.join('\n');
}

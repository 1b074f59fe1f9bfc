// `inss loadgen`'s pure parts: the open-loop send schedule and the report. No I/O, no clock.
import { rateFunction, RenewalStream } from '../workload/arrivals.js';
import { mixSeed, Rng } from '../workload/random.js';

export interface SendPlan {
  readonly atMs: number;
  readonly model: string;
}

/** Arrival times per model over `durationS` (Poisson, or Gamma with `cv`), merged in time order; seeded. */
export function sendSchedule(ratePerS: Readonly<Record<string, number>>, durationS: number, cv: number, seed: number): SendPlan[] {
  const out: SendPlan[] = [];
  Object.entries(ratePerS).forEach(([model, r], i) => {
    if (r <= 0) return;
    const s = new RenewalStream(rateFunction({ kind: 'constant', ratePerS: r }), new Rng(mixSeed(seed, i, 0x6c67)), cv);
    for (let t = s.next(); t < durationS * 1000; t = s.next()) out.push({ atMs: t, model });
  });
  return out.sort((a, b) => a.atMs - b.atMs);
}

export type Outcome = 'ok' | 'http-4xx' | 'http-5xx' | 'network';

export interface RequestRecord {
  readonly model: string;
  readonly sentAtMs: number;
  readonly latencyMs: number;
  readonly outcome: Outcome;
  readonly status?: number;
  readonly error?: string;
}

export interface ModelReport {
  readonly model: string;
  readonly sloMs: number;
  readonly sent: number;
  readonly ok: number;
  readonly errors: Readonly<Record<Exclude<Outcome, 'ok'>, number>>;
  /** The most frequent error texts, with counts. */
  readonly topErrors: readonly { error: string; count: number }[];
  readonly throughputPerS: number;
  /** Answers within the SLO per second. */
  readonly goodputPerS: number;
  /** Answers within the SLO over requests sent, percent. */
  readonly sloAttainmentPct: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly mean: number; readonly max: number };
}

export interface LoadReport {
  readonly durationS: number;
  readonly models: readonly ModelReport[];
  readonly total: ModelReport;
}

/** Nearest-rank percentile of sorted values (p in (0, 100]); NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function summarise(model: string, sloMs: number, rs: readonly RequestRecord[], durationS: number, sloOf: (m: string) => number): ModelReport {
  const ok = rs.filter((r) => r.outcome === 'ok');
  const lat = ok.map((r) => r.latencyMs).sort((a, b) => a - b);
  const good = ok.filter((r) => r.latencyMs <= sloOf(r.model)).length;
  const errors = { 'http-4xx': 0, 'http-5xx': 0, network: 0 };
  const texts = new Map<string, number>();
  for (const r of rs) {
    if (r.outcome === 'ok') continue;
    errors[r.outcome]++;
    const t = r.error ?? `HTTP ${r.status ?? '?'}`;
    texts.set(t, (texts.get(t) ?? 0) + 1);
  }
  return {
    model,
    sloMs,
    sent: rs.length,
    ok: ok.length,
    errors,
    topErrors: [...texts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([error, count]) => ({ error, count })),
    throughputPerS: ok.length / durationS,
    goodputPerS: good / durationS,
    sloAttainmentPct: rs.length > 0 ? (100 * good) / rs.length : NaN,
    latencyMs: { p50: percentile(lat, 50), p99: percentile(lat, 99), mean: lat.length > 0 ? lat.reduce((a, b) => a + b, 0) / lat.length : NaN, max: lat.length > 0 ? lat[lat.length - 1]! : NaN },
  };
}

export function buildReport(records: readonly RequestRecord[], sloMs: Readonly<Record<string, number>>, durationS: number): LoadReport {
  const sloOf = (m: string) => sloMs[m] ?? Infinity;
  const models = Object.keys(sloMs).map((m) => summarise(m, sloMs[m]!, records.filter((r) => r.model === m), durationS, sloOf));
  return { durationS, models, total: summarise('total', NaN, records, durationS, sloOf) };
}

/** The report as an aligned text table. */
export function formatReport(r: LoadReport): string {
  const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');
  const head = ['model', 'slo ms', 'sent', 'ok', '4xx', '5xx', 'net', 'thr/s', 'good/s', 'SLO %', 'p50 ms', 'p99 ms'];
  const rows = [...r.models, r.total].map((m) => [m.model, f(m.sloMs, 0), String(m.sent), String(m.ok), String(m.errors['http-4xx']), String(m.errors['http-5xx']), String(m.errors.network), f(m.throughputPerS), f(m.goodputPerS), f(m.sloAttainmentPct, 2), f(m.latencyMs.p50, 2), f(m.latencyMs.p99, 2)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const errs = [...r.models].flatMap((m) => m.topErrors.map((e) => `  ${m.model}: ${e.count} x ${e.error}`));
  return [line(head), ...rows.map(line), ...(errs.length > 0 ? ['errors:', ...errs] : [])].join('\n');
}

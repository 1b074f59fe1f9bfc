// `inss loadgen`'s report: nearest-rank percentiles, goodput, attainment, the table, the JSON schema.
import { describe, expect, it } from 'vitest';
import {
  buildReport,
  errorKey,
  formatReport,
  type LoadgenSettings,
  LoadgenReportSchema,
  percentile,
  type RequestRecord,
  TABLE_COLUMNS,
} from '../../tools/loadgen/report.js';
import { serverTimingMs } from '../../tools/loadgen/request.js';

const settings: LoadgenSettings = {
  url: 'http://127.0.0.1:8000',
  protocol: 'http',
  durationS: 10,
  arrival: { kind: 'poisson' },
  seed: 1,
  encoding: 'binary',
  input: 'fp32',
  timeoutMs: 30_000,
  connections: 256,
};

function ok(model: string, latencyMs: number): RequestRecord {
  return { model, sentAtMs: 0, latencyMs, outcome: 'ok', status: 200 };
}

describe('report', () => {
  it('percentiles are nearest-rank: always an observed value', () => {
    const ten = Float64Array.from({ length: 10 }, (_, i) => i + 1);
    expect(percentile(ten, 50)).toBe(5);
    expect(percentile(ten, 99)).toBe(10);
    expect(percentile(ten, 10)).toBe(1);
    expect(percentile(ten, 11)).toBe(2);
    const hundred = Float64Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNull();
  });

  // Model a (SLO 100 ms): ok at 10, 20, ..., 100 ms and one at 150 ms (late), two 503s, one network
  // failure. Model b (SLO 20 ms): ok at 15 and 25 ms.
  const records: RequestRecord[] = [
    ...Array.from({ length: 10 }, (_, i) => ok('a', 10 * (i + 1))),
    ok('a', 150),
    {
      model: 'a',
      sentAtMs: 1,
      latencyMs: 3,
      outcome: 'http-5xx',
      status: 503,
      error: 'HTTP 503: dropped: predicted batch time 93.2 ms',
    },
    {
      model: 'a',
      sentAtMs: 2,
      latencyMs: 3,
      outcome: 'http-5xx',
      status: 503,
      error: 'HTTP 503: dropped: predicted batch time 101.7 ms',
    },
    { model: 'a', sentAtMs: 3, latencyMs: 1, outcome: 'network', error: 'connect ECONNREFUSED 127.0.0.1:8000' },
    ok('b', 15),
    ok('b', 25),
  ];
  const report = buildReport(
    settings,
    [
      { name: 'a', ratePerS: 1.5, sloMs: 100 },
      { name: 'b', ratePerS: 0.5, sloMs: 20 },
    ],
    records,
  );

  it('counts, rates, goodput and SLO attainment per model', () => {
    const a = report.models[0]!;
    expect(a).toMatchObject({ model: 'a', sloMs: 100, targetRatePerS: 1.5, sent: 14, ok: 11, okWithinSlo: 10 });
    expect(a.errors).toEqual({ 'http-4xx': 0, 'http-5xx': 2, timeout: 0, network: 1, 'bad-response': 0 });
    expect(a.offeredPerS).toBeCloseTo(1.4);
    expect(a.throughputPerS).toBeCloseTo(1.1);
    expect(a.goodputPerS).toBeCloseTo(1.0);
    expect(a.sloAttainmentPct).toBeCloseTo((100 * 10) / 14);
    expect(a.latency).toEqual({ p50Ms: 60, p99Ms: 150, meanMs: (550 + 150) / 11, maxMs: 150 });
  });

  it("the part outside the server's span: of ok answers that carried one, clamped at 0", () => {
    const r = buildReport(
      settings,
      [{ name: 'a', ratePerS: 1, sloMs: 100 }],
      [
        { ...ok('a', 10), serverMs: 7 },
        { ...ok('a', 20), serverMs: 14 },
        { ...ok('a', 5), serverMs: 6 }, // a clock-rounding overshoot counts as 0, not -1
        ok('a', 30), // no Server-Timing: not counted
        { model: 'a', sentAtMs: 1, latencyMs: 3, outcome: 'http-5xx', status: 503, error: 'HTTP 503: x', serverMs: 1 },
      ],
    );
    expect(r.models[0]!.serverTimed).toBe(3);
    expect(r.models[0]!.outsideServerMeanMs).toBeCloseTo((3 + 6 + 0) / 3);
    expect(report.models[0]!.serverTimed).toBe(0);
    expect(report.models[0]!.outsideServerMeanMs).toBeNull();
    expect(LoadgenReportSchema.safeParse(r).success).toBe(true);
  });

  it('reads the dur of the inss metric of a Server-Timing header, and nothing else', () => {
    expect(serverTimingMs('inss;dur=12.5')).toBe(12.5);
    expect(serverTimingMs('cache;desc="hit", inss;desc=x;dur="3.25"')).toBe(3.25);
    expect(serverTimingMs('db;dur=4, inss ; DUR = 0')).toBe(0);
    expect(serverTimingMs(undefined)).toBeUndefined();
    expect(serverTimingMs('db;dur=4')).toBeUndefined();
    expect(serverTimingMs('inss')).toBeUndefined();
    expect(serverTimingMs('inss;dur=-1')).toBeUndefined();
    expect(serverTimingMs('inss;dur=abc')).toBeUndefined();
    expect(serverTimingMs('inss;dur=')).toBeUndefined();
    expect(serverTimingMs('inssx;dur=1')).toBeUndefined();
  });

  it('counts error texts that differ only in decimals as one', () => {
    expect(errorKey('predicted 93.2 ms, waited 12.25 ms, SLO 80 ms')).toBe('predicted N ms, waited N ms, SLO 80 ms');
    expect(report.models[0]!.topErrors).toEqual([
      { error: 'HTTP 503: dropped: predicted batch time N ms', count: 2 },
      { error: 'connect ECONNREFUSED 127.0.0.1:8000', count: 1 },
    ]);
  });

  it('the total judges each answer against its own model SLO', () => {
    const b = report.models[1]!;
    expect(b).toMatchObject({ sent: 2, ok: 2, okWithinSlo: 1, sloAttainmentPct: 50 });
    expect(report.total).toMatchObject({ sloMs: null, targetRatePerS: 2, sent: 16, ok: 13, okWithinSlo: 11 });
    expect(report.total.goodputPerS).toBeCloseTo(1.1);
    expect(report.total.latency.maxMs).toBe(150);
  });

  it('a model with nothing sent has nulls, not NaN, and the JSON passes its schema', () => {
    const r = buildReport(settings, [{ name: 'idle', ratePerS: 1, sloMs: 50 }], []);
    expect(r.models[0]!.sloAttainmentPct).toBeNull();
    expect(r.models[0]!.latency).toEqual({ p50Ms: null, p99Ms: null, meanMs: null, maxMs: null });
    expect(r.sendLagMs).toBeNull();
    for (const x of [r, report]) expect(LoadgenReportSchema.parse(JSON.parse(JSON.stringify(x)))).toEqual(x);
  });

  it('reports the send lag behind the schedule', () => {
    const r = buildReport(
      settings,
      [{ name: 'a', ratePerS: 1, sloMs: 50 }],
      [
        { ...ok('a', 1), scheduledAtMs: 10, sentAtMs: 10.5 },
        { ...ok('a', 1), scheduledAtMs: 20, sentAtMs: 23 },
      ],
    );
    expect(r.sendLagMs).toEqual({ p99Ms: 3, maxMs: 3 });
  });

  it('rejects a record of a model it was not told about', () => {
    expect(() => buildReport(settings, [{ name: 'a', ratePerS: 1, sloMs: 50 }], [ok('zzz', 1)])).toThrow(RangeError);
  });

  it('the table is aligned: every column ends at the same place on every line', () => {
    const lines = formatReport(report).split('\n');
    const dashes = lines.findIndex((l) => /^-+( +-+)+$/.test(l));
    expect(dashes).toBe(2);
    const table = lines.slice(1, dashes + 4); // header, dashes, a, b, total
    expect(new Set(table.map((l) => l.length)).size).toBe(1);
    const spans = [...lines[dashes]!.matchAll(/-+/g)].map((m) => [m.index, m.index + m[0].length] as const);
    expect(spans.length).toBe(TABLE_COLUMNS.length);
    const cells = (l: string) => spans.map(([s, e]) => l.slice(s, e));
    expect(cells(table[0]!).map((c) => c.trim())).toEqual([...TABLE_COLUMNS]);
    for (const l of table) {
      const c = cells(l);
      expect(c[0]!.startsWith(' ')).toBe(false); // the model column is left-aligned
      for (const x of c.slice(1)) expect(x.endsWith(' ')).toBe(false); // the others right-aligned
    }
    expect(cells(table[2]!).map((c) => c.trim())).toEqual([
      'a',
      '100',
      '1.5',
      '14',
      '11',
      '0',
      '2',
      '0',
      '1',
      '0',
      '1.1',
      '1.0',
      '71.43',
      '60.0',
      '150.0',
      '63.6',
      '150.0',
    ]);
    expect(cells(table[4]!)[0]!.trim()).toBe('total');
    expect(lines).toContain('  a: 2 x HTTP 503: dropped: predicted batch time N ms');
  });
});

/** A stream that keeps what is written to it. */

// `inss loadgen`'s pure parts and its flags: the send schedule (rates, seeds, Gamma CV), the request
// encodings (checked with the scheduler's own codec), how answers are judged, the report (nearest-rank
// percentiles, goodput, attainment, the table, the JSON schema) and flag validation (exit status 2).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { describe, expect, it, vi } from 'vitest';
import { type LoadgenOptions, registerLoadgen } from '../../cli/loadgen.js';
import { main } from '../../cli/main.js';
import { fromHalf, parseInferRequest } from '../../scheduler/kserve.js';
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
import {
  encodeInferRequest,
  type InputTensor,
  judgeInferAnswer,
  type ModelMetadata,
  metadataSloMs,
  parseModelMetadata,
  randomInputs,
  requestInputs,
  serverTimingMs,
} from '../../tools/loadgen/request.js';
import {
  type ModelLoad,
  type ScheduleSettings,
  SendSchedule,
  sendSchedule,
  traceLoad,
} from '../../tools/loadgen/schedule.js';
import type { ModelSignature } from '../../src/protocol/tensor.js';
import { Rng } from '../../src/workload/random.js';
import { TextSink } from '../support/loadgen.js';

function gapsCv(times: readonly number[]): number {
  const gaps = times.slice(1).map((t, i) => t - times[i]!);
  const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
  return Math.sqrt(gaps.reduce((a, b) => a + (b - mean) ** 2, 0) / gaps.length) / mean;
}

describe('send schedule', () => {
  const models: ModelLoad[] = [
    { name: 'resnet50', ratePerS: 200 },
    { name: 'vgg16', ratePerS: 50 },
  ];
  const poisson = (seed: number, durationS = 10): ScheduleSettings => ({
    durationS,
    arrival: { kind: 'poisson' },
    seed,
  });

  it('offers each model its rate over a long window (within 4 standard deviations)', () => {
    const sends = sendSchedule(models, poisson(1, 1000));
    for (const [i, m] of models.entries()) {
      const n = sends.filter((s) => s.model === i).length;
      const expected = m.ratePerS * 1000;
      expect(Math.abs(n - expected)).toBeLessThan(4 * Math.sqrt(expected));
    }
  });

  it('is in time order, inside the window, and ends', () => {
    const s = new SendSchedule(models, poisson(3, 5));
    let last = 0;
    let n = 0;
    for (let x = s.next(); x !== undefined; x = s.next()) {
      expect(x.atMs).toBeGreaterThanOrEqual(last);
      expect(x.atMs).toBeLessThan(5000);
      expect([0, 1]).toContain(x.model);
      last = x.atMs;
      n++;
    }
    expect(n).toBeGreaterThan(1000);
    expect(s.next()).toBeUndefined();
  });

  it('the same seed gives the same schedule; another seed another one', () => {
    expect(sendSchedule(models, poisson(7))).toEqual(sendSchedule(models, poisson(7)));
    expect(sendSchedule(models, poisson(7))).not.toEqual(sendSchedule(models, poisson(8)));
  });

  it("a model's send times depend on its name, not on the other --model flags", () => {
    const alone = sendSchedule([models[1]!], poisson(5)).map((s) => s.atMs);
    const withOthers = sendSchedule([models[0]!, models[1]!], poisson(5))
      .filter((s) => s.model === 1)
      .map((s) => s.atMs);
    expect(withOthers).toEqual(alone);
  });

  it.each([1, 0.5, 2, 4])('Gamma arrivals with CV %f have that CV and the rate', (cv) => {
    const times = sendSchedule([{ name: 'm', ratePerS: 100 }], {
      durationS: 1000,
      arrival: { kind: 'gamma', cv },
      seed: 11,
    }).map((s) => s.atMs);
    expect(times.length / 1000 / 100).toBeGreaterThan(0.95);
    expect(times.length / 1000 / 100).toBeLessThan(1.05);
    expect(gapsCv(times) / cv).toBeGreaterThan(0.93);
    expect(gapsCv(times) / cv).toBeLessThan(1.07);
  });

  it('Poisson arrivals have CV 1', () => {
    const times = sendSchedule([{ name: 'm', ratePerS: 100 }], poisson(2, 1000)).map((s) => s.atMs);
    expect(gapsCv(times)).toBeGreaterThan(0.95);
    expect(gapsCv(times)).toBeLessThan(1.05);
  });

  it('rejects settings the CLI must have refused', () => {
    expect(() => new SendSchedule([], poisson(1))).toThrow(RangeError);
    expect(() => new SendSchedule([{ name: 'm', ratePerS: 0 }], poisson(1))).toThrow(/rate of model 'm'/);
    expect(() => new SendSchedule(models, poisson(1, 0))).toThrow(/durationS/);
    expect(() => new SendSchedule(models, { durationS: 1, arrival: { kind: 'gamma', cv: 0 }, seed: 1 })).toThrow(/cv/);
    expect(() => new SendSchedule([{ name: 't', ratePerS: 1, arrivalsMs: [5, -1] }], poisson(1))).toThrow(
      /trace of model 't'.*got -1/,
    );
    expect(() => new SendSchedule([{ name: 't', ratePerS: 1, arrivalsMs: [NaN] }], poisson(1))).toThrow(
      /trace of model 't'/,
    );
  });

  it(
    'a trace is replayed at exactly its instants, in order, merged with drawn models; instants past the window ' +
      'are not sent',
    () => {
      const trace = traceLoad('replayed', [0.5, 0.0125, 1.75, 0.0125, 3.2], 2);
      expect(trace.ratePerS).toBe(2); // 4 arrivals in the 2 s window
      const sends = sendSchedule([models[0]!, trace], poisson(4, 2));
      expect(sends.filter((s) => s.model === 1).map((s) => s.atMs)).toEqual([12.5, 12.5, 500, 1750]);
      // The drawn model is the same with or without the trace beside it.
      expect(sends.filter((s) => s.model === 0).map((s) => s.atMs)).toEqual(
        sendSchedule([models[0]!], poisson(4, 2)).map((s) => s.atMs),
      );
      expect(sends.map((s) => s.atMs)).toEqual([...sends.map((s) => s.atMs)].sort((a, b) => a - b));
      expect(traceLoad('late', [2, 3], 2).ratePerS).toBe(0);
    },
  );
});

const resnetMeta: ModelMetadata = {
  name: 'resnet50',
  versions: ['1'],
  platform: 'inss',
  inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 3, 224, 224] }],
  outputs: [{ name: 'output', datatype: 'FP32', shape: [-1, 1000] }],
  parameters: { slo_ms: 80 },
};

/** The signature the scheduler's codec checks against (shapes without the batch dimension). */
function signatureOf(meta: ModelMetadata): ModelSignature {
  const spec = (t: { name: string; datatype: string; shape: number[] }) => ({
    name: t.name,
    datatype: t.datatype as 'FP32',
    shape: t.shape.slice(1),
  });
  return { inputs: meta.inputs.map(spec), outputs: meta.outputs.map(spec) };
}

function inputsOf(meta: ModelMetadata, seed = 1): InputTensor[] {
  const specs = requestInputs(meta);
  if (!specs.ok) throw new Error(specs.error);
  return randomInputs(specs.value, new Rng(seed));
}

describe('requests', () => {
  it('reads the metadata: batch dimension 1, the SLO from parameters.slo_ms', () => {
    const parsed = parseModelMetadata(JSON.parse(JSON.stringify(resnetMeta)));
    expect(parsed.ok).toBe(true);
    expect(requestInputs(resnetMeta)).toEqual({
      ok: true,
      value: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224] }],
    });
    expect(metadataSloMs(resnetMeta)).toBe(80);
    expect(metadataSloMs({ ...resnetMeta, parameters: {} })).toBeUndefined();
    expect(metadataSloMs({ ...resnetMeta, parameters: { slo_ms: 'fast' } })).toBeUndefined();
  });

  it.each([
    [{ name: 'x', datatype: 'FP32', shape: [-1, -1, 3] }, /dimension 1 .* is variable/],
    [{ name: 'x', datatype: 'FP32', shape: [8, 3] }, /batch and must be -1 or 1, got 8/],
    [{ name: 'x', datatype: 'BYTES', shape: [-1, 3] }, /datatype BYTES is not supported/],
    [{ name: 'x', datatype: 'FP32', shape: [] }, /no batch dimension/],
  ])('refuses an input it cannot fill: %j', (input, message) => {
    const r = requestInputs({ ...resnetMeta, inputs: [input] });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(message);
  });

  it('says which metadata field is wrong', () => {
    const r = parseModelMetadata({ name: 'm', inputs: [{ name: 'x', datatype: 'FP32', shape: 'big' }], outputs: [] });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toContain('inputs.0.shape');
  });

  it('binary: the header length, binary_data_size and body add up, and the scheduler codec accepts it', () => {
    const req = encodeInferRequest(inputsOf(resnetMeta), 'binary');
    const h = Number(req.headers['inference-header-content-length']);
    const header = JSON.parse(req.body.subarray(0, h).toString('utf8')) as {
      inputs: { shape: number[]; parameters: { binary_data_size: number } }[];
      parameters: { binary_data_output: boolean };
    };
    expect(header.inputs[0]!.shape).toEqual([1, 3, 224, 224]);
    expect(header.inputs[0]!.parameters.binary_data_size).toBe(602_112);
    expect(header.parameters.binary_data_output).toBe(true);
    expect(req.body.length).toBe(h + 602_112);
    expect(req.headers['content-length']).toBe(String(req.body.length));
    const parsed = parseInferRequest(
      req.body,
      { inferenceHeaderLength: req.headers['inference-header-content-length'] },
      { name: 'resnet50', signature: signatureOf(resnetMeta) },
    );
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(parsed.request.outputs).toEqual([{ name: 'output', binary: true }]);
  });

  it('JSON and binary carry the same tensor in every datatype (several inputs)', () => {
    const datatypes = [
      'BOOL',
      'UINT8',
      'UINT16',
      'UINT32',
      'UINT64',
      'INT8',
      'INT16',
      'INT32',
      'INT64',
      'FP16',
      'FP32',
      'FP64',
    ];
    const meta: ModelMetadata = {
      name: 'all',
      inputs: datatypes.map((d) => ({ name: d.toLowerCase(), datatype: d, shape: [-1, 2, 5] })),
      outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 3] }],
    };
    const inputs = inputsOf(meta, 9);
    const sig = signatureOf(meta);
    const bin = encodeInferRequest(inputs, 'binary');
    const json = encodeInferRequest(inputs, 'json');
    expect(json.headers['inference-header-content-length']).toBeUndefined();
    expect(json.headers['content-type']).toBe('application/json');
    const a = parseInferRequest(
      bin.body,
      { inferenceHeaderLength: bin.headers['inference-header-content-length'] },
      { name: 'all', signature: sig },
    );
    const b = parseInferRequest(json.body, {}, { name: 'all', signature: sig });
    expect(a.ok && b.ok).toBe(true);
    if (!a.ok || !b.ok) return;
    for (let i = 0; i < datatypes.length; i++)
      expect(a.request.inputs[i]!.data.equals(b.request.inputs[i]!.data)).toBe(true);
    // Floats are k/256 with k in 0..127: exact in FP16 too.
    const fp16 = a.request.inputs[datatypes.indexOf('FP16')]!.data;
    const fp32 = a.request.inputs[datatypes.indexOf('FP32')]!.data;
    for (let k = 0; k < 10; k++) {
      expect(fromHalf(fp16.readUInt16LE(2 * k)) * 256).toBe(Math.round(fromHalf(fp16.readUInt16LE(2 * k)) * 256));
      expect(fp32.readFloatLE(4 * k)).toBeLessThan(0.5);
    }
  });

  it('the input depends on the seed only', () => {
    expect(
      encodeInferRequest(inputsOf(resnetMeta, 3), 'binary').body.equals(
        encodeInferRequest(inputsOf(resnetMeta, 3), 'binary').body,
      ),
    ).toBe(true);
    expect(
      encodeInferRequest(inputsOf(resnetMeta, 3), 'binary').body.equals(
        encodeInferRequest(inputsOf(resnetMeta, 4), 'binary').body,
      ),
    ).toBe(false);
  });
});

describe('judging answers', () => {
  const jsonBody = (o: unknown) => Buffer.from(JSON.stringify(o));
  const out = { name: 'output', datatype: 'FP32', shape: [1, 3] };

  it('ok: a JSON answer with outputs whose data fits the shape', () => {
    expect(
      judgeInferAnswer({ status: 200, body: jsonBody({ model_name: 'm', outputs: [{ ...out, data: [0, 1, 2] }] }) }),
    ).toEqual({ outcome: 'ok' });
  });

  it('ok: a binary answer whose sizes add up', () => {
    const header = jsonBody({ outputs: [{ ...out, parameters: { binary_data_size: 12 } }] });
    expect(
      judgeInferAnswer({
        status: 200,
        inferenceHeaderLength: String(header.length),
        body: Buffer.concat([header, Buffer.alloc(12)]),
      }),
    ).toEqual({ outcome: 'ok' });
  });

  it.each([
    ['no outputs', { status: 200, body: jsonBody({ outputs: [] }) }, /outputs/],
    [
      'too few values',
      { status: 200, body: jsonBody({ outputs: [{ ...out, data: [0] }] }) },
      /1 values for shape \[1,3\]/,
    ],
    ['not JSON', { status: 200, body: Buffer.from('<html>') }, /malformed JSON/],
    [
      'binary without the header',
      { status: 200, body: jsonBody({ outputs: [{ ...out, parameters: { binary_data_size: 12 } }] }) },
      /no Inference-Header-Content-Length/,
    ],
    ['short binary data', { status: 200, inferenceHeaderLength: '60', body: Buffer.alloc(10) }, /larger than the body/],
    ['another status', { status: 204, body: Buffer.alloc(0) }, /unexpected HTTP status 204/],
  ])('bad-response: %s', (_what, answer, message) => {
    const j = judgeInferAnswer(answer);
    expect(j.outcome).toBe('bad-response');
    if (j.outcome !== 'ok') expect(j.error).toMatch(message);
  });

  it("4xx and 5xx carry the protocol's error text", () => {
    expect(
      judgeInferAnswer({ status: 503, body: jsonBody({ error: 'dropped: the task cannot meet its 80 ms SLO' }) }),
    ).toEqual({ outcome: 'http-5xx', error: 'HTTP 503: dropped: the task cannot meet its 80 ms SLO' });
    expect(judgeInferAnswer({ status: 400, body: Buffer.from('plain text\nerror') })).toEqual({
      outcome: 'http-4xx',
      error: 'HTTP 400: plain text error',
    });
    const long = judgeInferAnswer({ status: 500, body: Buffer.from('x'.repeat(1000)) });
    if (long.outcome !== 'ok') expect(long.error.length).toBe(200);
  });
});

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

async function parseFlags(args: string[]): Promise<{ opts?: LoadgenOptions; code?: number; stderr: string }> {
  const stderr = new TextSink();
  let opts: LoadgenOptions | undefined;
  const program = new Command('inss').exitOverride();
  registerLoadgen(program, {
    stdout: new TextSink(),
    stderr,
    setExitCode: () => undefined,
    run: (o) => {
      opts = o;
      return Promise.resolve(0);
    },
  });
  try {
    await program.parseAsync(['node', 'inss', 'loadgen', ...args]);
    return { ...(opts ? { opts } : {}), stderr: stderr.text };
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    return { code: err.exitCode, stderr: stderr.text };
  }
}

describe('flags', () => {
  const base = ['--url', 'http://127.0.0.1:8000/', '--model', 'resnet50=100'];

  it('has the documented defaults', async () => {
    const r = await parseFlags(base);
    expect(r.opts).toEqual({
      url: 'http://127.0.0.1:8000',
      protocol: 'http',
      models: [{ name: 'resnet50', ratePerS: 100 }],
      traces: new Map(),
      durationS: 10,
      arrival: { kind: 'poisson' },
      seed: 1,
      encoding: 'binary',
      input: 'fp32',
      sloMs: new Map(),
      timeoutMs: 30_000,
      json: false,
      out: undefined,
      connections: 256,
    });
  });

  it('--protocol grpc: the gRPC service, on 4 HTTP/2 channels unless --connections says', async () => {
    expect((await parseFlags([...base, '--protocol', 'grpc'])).opts).toMatchObject({
      protocol: 'grpc',
      connections: 4,
    });
    expect((await parseFlags([...base, '--protocol', 'grpc', '--connections', '2'])).opts).toMatchObject({
      protocol: 'grpc',
      connections: 2,
    });
    expect((await parseFlags([...base, '--protocol', 'soap'])).code).toBe(2);
  });

  it('takes every flag', async () => {
    const r = await parseFlags([
      ...base,
      '--model',
      'vgg16=12.5',
      '--duration',
      '2.5',
      '--arrival',
      'gamma',
      '--cv',
      '2',
      '--seed',
      '42',
      '--encoding',
      'json',
      '--slo',
      'vgg16=120',
      '--timeout',
      '5000',
      '--json',
      '--out',
      'r.json',
      '--connections',
      '8',
    ]);
    expect(r.opts).toMatchObject({
      models: [
        { name: 'resnet50', ratePerS: 100 },
        { name: 'vgg16', ratePerS: 12.5 },
      ],
      durationS: 2.5,
      arrival: { kind: 'gamma', cv: 2 },
      seed: 42,
      encoding: 'json',
      sloMs: new Map([['vgg16', 120]]),
      timeoutMs: 5000,
      json: true,
      out: 'r.json',
      connections: 8,
    });
  });

  it(
    'reads the bearer token from --token-file or INSS_CLIENT_TOKEN ' + '(never needed on argv), and the CA from --ca',
    async () => {
      const d = mkdtempSync(join(tmpdir(), 'inss-loadgen-flags-'));
      try {
        writeFileSync(join(d, 't'), 'tok-0123456789abcdef\n');
        writeFileSync(join(d, 'bad'), 'two words\n');
        writeFileSync(join(d, 'ca.pem'), 'PEM');
        const https = ['--url', 'https://h:1', '--model', 'a=1'];
        expect(
          (await parseFlags([...https, '--token-file', join(d, 't'), '--ca', join(d, 'ca.pem')])).opts,
        ).toMatchObject({ token: 'tok-0123456789abcdef', ca: Buffer.from('PEM') });
        expect((await parseFlags([...https, '--token-file', join(d, 'bad')])).stderr).toMatch(
          /--token-file .*bad: expected one token/,
        );
        vi.stubEnv('INSS_CLIENT_TOKEN', 'env-tok-0123456789');
        expect((await parseFlags(https)).opts?.token).toBe('env-tok-0123456789');
        const both = await parseFlags([...https, '--token-file', join(d, 't')]);
        expect(both.code).toBe(2);
        expect(both.stderr).toMatch(/--token-file and INSS_CLIENT_TOKEN: give one/);
      } finally {
        vi.unstubAllEnvs();
        rmSync(d, { recursive: true, force: true });
      }
    },
  );

  it('--trace: a model replayed from a trace file (the scenario trace format), beside drawn models', async () => {
    const d = mkdtempSync(join(tmpdir(), 'inss-loadgen-trace-'));
    try {
      writeFileSync(join(d, 'vgg.txt'), '# vgg16 arrivals\n0.25\n\n0.1 # first\n1.5\n12\n');
      const r = await parseFlags([
        ...base,
        '--trace',
        `vgg16=${join(d, 'vgg.txt')}`,
        '--duration',
        '2',
        '--slo',
        'vgg16=150',
      ]);
      expect(r.stderr).toBe('');
      expect(r.opts?.models).toEqual([
        { name: 'resnet50', ratePerS: 100 },
        { name: 'vgg16', ratePerS: 1.5, arrivalsMs: [250, 100, 1500, 12000] },
      ]);
      expect(r.opts?.traces).toEqual(new Map([['vgg16', join(d, 'vgg.txt')]]));
      // A trace alone is enough.
      expect(
        (await parseFlags(['--url', 'http://h:1', '--trace', `vgg16=${join(d, 'vgg.txt')}`])).opts?.models.map(
          (m) => m.name,
        ),
      ).toEqual(['vgg16']);
      writeFileSync(join(d, 'bad.txt'), '0.1\nsoon\n');
      writeFileSync(join(d, 'late.txt'), '30\n');
      const refused: [string[], RegExp][] = [
        [
          ['--trace', `vgg16=${join(d, 'bad.txt')}`],
          /--trace vgg16=.*bad\.txt: .*bad\.txt:2: not a non-negative number of seconds: 'soon'/,
        ],
        [
          ['--trace', `vgg16=${join(d, 'late.txt')}`],
          new RegExp(
            String.raw`--trace vgg16=.*late\.txt: no arrival before the end of the send window ` +
              String.raw`\(--duration 10 s; the trace has 1 arrival\)`,
          ),
        ],
        [['--trace', 'vgg16=/nonexistent/t.txt'], /--trace vgg16=\/nonexistent\/t\.txt: cannot read: ENOENT/],
        [
          ['--trace', `resnet50=${join(d, 'vgg.txt')}`],
          /--trace resnet50=\.\.\.: model 'resnet50' is also given by --model/,
        ],
        [['--trace', 'vgg16'], /--trace.*not <name>=<file>/],
        [
          ['--trace', `vgg16=${join(d, 'vgg.txt')}`, '--trace', `vgg16=${join(d, 'vgg.txt')}`],
          /--trace.*'vgg16' is given twice/,
        ],
      ];
      for (const [args, message] of refused) {
        const x = await parseFlags([...base, ...args]);
        expect(x.code).toBe(2);
        expect(x.stderr).toMatch(message);
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it.each([
    [['--model', 'resnet50=100'], /--url/],
    [['--url', 'http://h:1'], /give at least one --model <name=ratePerS> or --trace <name=file>/],
    [['--url', 'localhost:8000', '--model', 'a=1'], /--url.*only http:\/\/ and https:\/\//],
    [[...base, '--ca', 'cert.pem'], /--ca: only for an https:\/\/ --url/],
    [
      ['--url', 'https://h:1', '--model', 'a=1', '--ca', '/nonexistent/cert.pem'],
      /--ca \/nonexistent\/cert\.pem: cannot read: ENOENT/,
    ],
    [[...base, '--token-file', '/nonexistent/t'], /--token-file \/nonexistent\/t: cannot read: ENOENT/],
    [['--url', 'not a url', '--model', 'a=1'], /--url.*is not a URL/],
    [['--url', 'http://h:1?x=1', '--model', 'a=1'], /--url.*without a query/],
    [[...base.slice(0, 2), '--model', 'resnet50'], /--model.*not <name>=<ratePerS>/],
    [[...base.slice(0, 2), '--model', 'resnet50=0'], /--model.*ratePerS must be a number > 0/],
    [[...base.slice(0, 2), '--model', '=5'], /--model.*not <name>=<ratePerS>/],
    [[...base, '--model', 'resnet50=3'], /--model.*'resnet50' is given twice/],
    [[...base, '--duration', '0'], /--duration.*must be a number > 0/],
    [[...base, '--duration', 'ten'], /--duration.*must be a number > 0/],
    [[...base, '--arrival', 'uniform'], /--arrival.*poisson, gamma/],
    [[...base, '--arrival', 'gamma'], /--cv <x> is required with --arrival gamma/],
    [[...base, '--cv', '2'], /--cv is only for --arrival gamma/],
    [[...base, '--arrival', 'gamma', '--cv', '-1'], /--cv.*must be a number > 0/],
    [[...base, '--seed', '-1'], /--seed.*0\.\.4294967295/],
    [[...base, '--seed', '1.5'], /--seed/],
    [[...base, '--encoding', 'xml'], /--encoding.*binary, json/],
    [[...base, '--slo', 'vgg16=80'], /--slo vgg16=...: 'vgg16' is not one of the --model models/],
    [[...base, '--slo', 'resnet50=fast'], /--slo.*ms must be a number > 0/],
    [[...base, '--timeout', '0'], /--timeout.*integer >= 1/],
    [[...base, '--connections', '0'], /--connections.*integer >= 1/],
    [[...base, '--connections', ''], /--connections.*integer >= 1/],
  ])('%j is refused with exit status 2, naming the flag', async (args, message) => {
    const r = await parseFlags(args);
    expect(r.code).toBe(2);
    expect(r.opts).toBeUndefined();
    expect(r.stderr).toMatch(message);
  });

  it('inss main returns 2 for a bad loadgen flag', async () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(await main(['node', 'inss', 'loadgen', '--url', 'http://127.0.0.1:1', '--model', 'resnet50=0'])).toBe(2);
      expect(write.mock.calls.map((c) => String(c[0])).join('')).toContain('--model');
    } finally {
      write.mockRestore();
    }
  });
});

// `inss loadgen` against a real node:http server on a real socket: a small stand-in for the scheduler
// that implements GET /v2/models/{name} and POST /v2/models/{name}/infer, checks every request with
// the scheduler's own KServe codec (and the binary extension's header length and sizes by hand), and
// answers after a few ms. One model always fails with 503, one never answers in time.
// - every scheduled request is sent, reaches the server, and is counted once in the report;
// - both encodings arrive well-formed and carry the same input tensor;
// - the table, the progress lines and --out; an unreachable server, an unknown model, a missing SLO.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoadgenReportSchema, type LoadgenReport } from '../../tools/loadgen/report.js';
import { sendSchedule } from '../../tools/loadgen/schedule.js';
import { runLoadgen } from '../support/loadgen.js';
import { FAILURE, handle, infers, REPLY_MS, seen, seenOf } from '../support/loadgenStandIn.js';

let server: http.Server;
let url: string;
const dir = mkdtempSync(join(tmpdir(), 'inss-loadgen-'));

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, Buffer.concat(chunks), res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const byModel = (r: LoadgenReport, name: string) => r.models.find((m) => m.model === name)!;

describe('inss loadgen against a stand-in server', () => {
  it('binary: every scheduled request reaches the server well-formed and is counted once', async () => {
    seen.clear();
    const models = [
      { name: 'resnet50', ratePerS: 40 },
      { name: 'tiny', ratePerS: 60 },
      { name: 'broken', ratePerS: 20 },
    ];
    const r = await runLoadgen([
      '--url',
      url,
      ...models.flatMap((m) => ['--model', `${m.name}=${m.ratePerS}`]),
      '--duration',
      '1.5',
      '--seed',
      '3',
      '--json',
    ]);
    expect(r.stderr).toBe(''); // --json: no progress
    expect(r.code).toBe(0);
    const report = LoadgenReportSchema.parse(JSON.parse(r.stdout));
    const expected = sendSchedule(models, { durationS: 1.5, arrival: { kind: 'poisson' }, seed: 3 });
    expect(report.total.sent).toBe(expected.length);
    expect(infers()).toBe(expected.length);
    for (const [i, m] of models.entries()) {
      const s = seenOf(m.name);
      expect(s.malformed).toEqual([]);
      expect(s.json).toBe(0);
      expect(byModel(report, m.name).sent).toBe(expected.filter((x) => x.model === i).length);
      expect(s.binary).toBe(byModel(report, m.name).sent);
    }
    for (const name of ['resnet50', 'tiny']) {
      const m = byModel(report, name);
      expect(m.ok).toBe(m.sent);
      expect(m.latency.p50Ms).toBeGreaterThanOrEqual(REPLY_MS - 1);
      expect(m.okWithinSlo).toBeLessThanOrEqual(m.ok);
    }
    const broken = byModel(report, 'broken');
    expect(broken.ok).toBe(0);
    expect(broken.errors['http-5xx']).toBe(broken.sent);
    expect(broken.topErrors).toEqual([{ error: `HTTP 503: ${FAILURE}`, count: broken.sent }]);
    expect(broken.sloAttainmentPct).toBe(0);
    const { 'http-5xx': fails, ...others } = report.total.errors;
    expect(fails).toBe(broken.sent);
    expect(Object.values(others).every((n) => n === 0)).toBe(true);
    expect(report.total.ok + fails).toBe(report.total.sent);
    expect(report.settings).toMatchObject({ url, encoding: 'binary', seed: 3, durationS: 1.5 });
  });

  it('JSON encoding: well-formed, the same input tensors as binary; the table, progress and --out', async () => {
    seen.clear();
    const out = join(dir, 'report.json');
    const r = await runLoadgen([
      '--url',
      `${url}/`,
      '--model',
      'tiny=30',
      '--model',
      'resnet50=5',
      '--duration',
      '1.2',
      '--encoding',
      'json',
      '--out',
      out,
    ]);
    expect(r.code).toBe(0);
    for (const name of ['tiny', 'resnet50']) {
      expect(seenOf(name).malformed).toEqual([]);
      expect(seenOf(name).binary).toBe(0);
    }
    const report = LoadgenReportSchema.parse(JSON.parse(readFileSync(out, 'utf8')));
    expect(seenOf('tiny').json).toBe(byModel(report, 'tiny').sent);
    expect(byModel(report, 'tiny').ok).toBe(byModel(report, 'tiny').sent);
    expect(report.settings.encoding).toBe('json');
    // The table on stdout; the banner and at least one progress line on stderr.
    const lines = r.stdout.trim().split('\n');
    expect(lines[1]).toMatch(/^model +slo ms +rate\/s +sent +ok/);
    expect(lines.find((l) => l.startsWith('total '))).toContain(String(report.total.sent));
    expect(r.stderr).toMatch(/loadgen: tiny 30\/s \(SLO 50 ms/);
    expect(r.stderr).toMatch(/loadgen: 1 s: sent \d+, answered \d+, errors 0, in flight \d+/);
    expect(r.stderr).toContain(`wrote ${out}`);

    // The same seed in binary: the server decodes the very same tensors.
    const jsonInputs = seenOf('tiny').firstInputs.json!;
    seen.clear();
    expect((await runLoadgen(['--url', url, '--model', 'tiny=30', '--duration', '0.3', '--json'])).code).toBe(0);
    const binaryInputs = seenOf('tiny').firstInputs.binary!;
    expect(binaryInputs.length).toBe(2);
    for (const [i, b] of binaryInputs.entries()) expect(b.equals(jsonInputs[i]!)).toBe(true);
  });

  it('--trace: a replayed model sends one request per arrival in the window, beside a drawn one', async () => {
    seen.clear();
    const trace = join(dir, 'tiny-arrivals.txt');
    // 7 arrivals in the 0.8 s window (two at the same instant), one after it.
    writeFileSync(trace, '# tiny\n0.05\n0.1\n0.1\n0.3\n0.45\n0.6\n0.79\n0.9\n');
    const r = await runLoadgen([
      '--url',
      url,
      '--trace',
      `tiny=${trace}`,
      '--model',
      'resnet50=10',
      '--duration',
      '0.8',
      '--seed',
      '5',
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const report = LoadgenReportSchema.parse(JSON.parse(r.stdout));
    expect(report.settings.traces).toEqual({ tiny: trace });
    const tiny = byModel(report, 'tiny');
    expect(tiny.sent).toBe(7);
    expect(tiny.targetRatePerS).toBeCloseTo(7 / 0.8, 9);
    expect(seenOf('tiny').binary).toBe(7);
    expect(seenOf('tiny').malformed).toEqual([]);
    expect(tiny.ok).toBe(7);
    // The drawn model is the one its flags alone give.
    expect(byModel(report, 'resnet50').sent).toBe(
      sendSchedule([{ name: 'resnet50', ratePerS: 10 }], { durationS: 0.8, arrival: { kind: 'poisson' }, seed: 5 })
        .length,
    );
    const table = await runLoadgen(['--url', url, '--trace', `tiny=${trace}`, '--duration', '0.8']);
    expect(table.stdout).toContain(`poisson arrivals (replayed: tiny from ${trace})`);
    expect(table.stderr).toMatch(/loadgen: tiny trace .*tiny-arrivals\.txt \(8\.75\/s\)/);
  });

  it.each([
    ['uint8', 'binary', 'UINT8'],
    ['uint8', 'json', 'UINT8'],
    ['jpeg', 'binary', 'JPEG'],
    ['png', 'binary', 'PNG'],
  ])('--input %s (%s): every request is an image the codec accepts as %s', async (input, encoding, want) => {
    seen.clear();
    const r = await runLoadgen([
      '--url',
      url,
      '--model',
      'resnet50=20',
      '--duration',
      '0.5',
      '--input',
      input,
      '--encoding',
      encoding,
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const report = LoadgenReportSchema.parse(JSON.parse(r.stdout));
    expect(report.settings.input).toBe(input);
    expect(seenOf('resnet50').malformed).toEqual([]);
    expect([...seenOf('resnet50').encodings]).toEqual([want]);
    expect(byModel(report, 'resnet50').ok).toBe(byModel(report, 'resnet50').sent);
  });

  it('--input refuses a model that takes no images, and JPEG/PNG in JSON', async () => {
    const r = await runLoadgen(['--url', url, '--model', 'tiny=5', '--duration', '0.2', '--input', 'jpeg']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("--input jpeg: model 'tiny' does not take its input as BYTES");
    const j = await runLoadgen([
      '--url',
      url,
      '--model',
      'resnet50=5',
      '--duration',
      '0.2',
      '--input',
      'png',
      '--encoding',
      'json',
    ]);
    expect(j.code).toBe(2);
    expect(j.stderr).toContain('--input png needs --encoding binary');
  });

  it('a request with no answer within --timeout is a timeout error, and the run still ends', async () => {
    seen.clear();
    const r = await runLoadgen([
      '--url',
      url,
      '--model',
      'slow=20',
      '--model',
      'tiny=20',
      '--duration',
      '0.5',
      '--timeout',
      '200',
      '--json',
    ]);
    expect(r.code).toBe(0);
    const report = LoadgenReportSchema.parse(JSON.parse(r.stdout));
    const slow = byModel(report, 'slow');
    expect(slow.errors.timeout).toBe(slow.sent);
    expect(slow.topErrors[0]!.error).toBe('no answer within 200 ms (--timeout)');
    expect(byModel(report, 'tiny').ok).toBe(byModel(report, 'tiny').sent);
  });

  it('an unreachable server: a clear error and exit status 1', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const r = await runLoadgen(['--url', `http://127.0.0.1:${port}`, '--model', 'resnet50=10', '--duration', '1']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `inss loadgen: cannot reach the server at --url http://127.0.0.1:${port} (GET /v2/models/resnet50): connect ECONNREFUSED 127.0.0.1:${port}\n`,
    );
  });

  it('a model the server does not serve: exit status 1, nothing sent', async () => {
    seen.clear();
    const r = await runLoadgen(['--url', url, '--model', 'resnet50=10', '--model', 'nope=10']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('inss loadgen: --model nope: the server at');
    expect(r.stderr).toContain("does not serve this model (HTTP 404: unknown model 'nope')");
    expect(infers()).toBe(0);
  });

  it('no SLO from the server and none given: exit status 2 naming --slo; with --slo it runs', async () => {
    const r = await runLoadgen(['--url', url, '--model', 'noslo=10', '--duration', '0.2']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      "inss loadgen: --slo: no SLO for model 'noslo': its metadata has no parameters.slo_ms; give --slo noslo=<ms>",
    );
    const ok = await runLoadgen([
      '--url',
      url,
      '--model',
      'noslo=10',
      '--slo',
      'noslo=30',
      '--duration',
      '0.2',
      '--json',
    ]);
    expect(ok.code).toBe(0);
    expect(LoadgenReportSchema.parse(JSON.parse(ok.stdout)).models[0]!.sloMs).toBe(30);
  });

  it('--out in a folder that does not exist: exit status 1 before anything is sent', async () => {
    seen.clear();
    const r = await runLoadgen(['--url', url, '--model', 'tiny=10', '--out', join(dir, 'no', 'such', 'r.json')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--out .*r\.json: cannot write there: ENOENT/);
    expect(infers()).toBe(0);
  });
});

// `inss loadgen --url URL`: an open-loop load generator for a KServe v2 / Open Inference Protocol
// endpoint (the inss scheduler, or any server that speaks the protocol and its binary extension).
// This file is the shell: flags, the metadata requests, timers and sockets. What is sent, when, how an
// answer is judged and the report are pure (tools/loadgen/). docs/loadgen.md is the user's guide.
//
// Open loop: each request leaves at its scheduled time whether or not earlier ones have been answered.
// Requests go out on node:http with one keep-alive agent (--connections sockets; a request that finds
// every socket busy waits in the agent, and that wait counts in its latency), or with --protocol grpc
// as ModelInfer calls (cli/loadgenGrpc.ts) on --connections HTTP/2 channels, taken in turn. Every
// request is waited for, or timed out, before the report.
import { accessSync, constants, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Writable } from 'node:stream';
import { setImmediate as yieldToIo, setTimeout as sleep } from 'node:timers/promises';
import { urlToHttpOptions } from 'node:url';
import { type Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import {
  buildReport,
  formatReport,
  type LoadgenReport,
  type LoadgenSettings,
  type RequestRecord,
} from '../tools/loadgen/report.js';
import { type ImageForm, imageRequest, uint8JsonRequest } from '../tools/loadgen/images.js';
import {
  type EncodedRequest,
  type Encoding,
  encodeInferRequest,
  judgeInferAnswer,
  metadataSloMs,
  type ModelMetadata,
  parseModelMetadata,
  randomInputs,
  requestInputs,
  serverTimingMs,
} from '../tools/loadgen/request.js';
import { type ModelLoad, modelStreamSeed, SendSchedule, STREAM_INPUT, traceLoad } from '../tools/loadgen/schedule.js';
import { parseTrace, ScenarioError } from '../src/scenario/build.js';
import { GrpcTarget } from './loadgenGrpc.js';
import {
  DEFAULT_CONNECTIONS,
  EXIT_BAD_FLAGS,
  EXIT_OK,
  EXIT_SETUP,
  imagePicture,
  type LoadgenOptions,
  LoadgenSetupError,
  type ModelPlan,
  type Protocol,
  type Sent,
} from './loadgenPlan.js';

export {
  DEFAULT_CONNECTIONS,
  EXIT_BAD_FLAGS,
  EXIT_OK,
  EXIT_SETUP,
  type LoadgenOptions,
  type Protocol,
} from './loadgenPlan.js';
import { Rng } from '../src/workload/random.js';

export interface LoadgenIo {
  readonly stdout: Writable;
  readonly stderr: Writable;
}

const PROGRESS_EVERY_MS = 1000;
/** Most sends in one go when catching up, before reading answers again. */
const MAX_BURST = 256;

// ---- flags -------------------------------------------------------------------------------------

function num(v: string): number {
  return v.trim() === '' ? NaN : Number(v);
}

function positiveNumber(v: string): number {
  const n = num(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number > 0');
  return n;
}

function positiveInt(v: string): number {
  const n = num(v);
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('must be an integer >= 1');
  return n;
}

function seedNumber(v: string): number {
  const n = num(v);
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff)
    throw new InvalidArgumentError('must be an integer in 0..4294967295');
  return n;
}

function baseUrl(v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new InvalidArgumentError(`'${v}' is not a URL (e.g. http://127.0.0.1:8000)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new InvalidArgumentError(`'${v}': only http:// and https:// URLs are supported`);
  if (u.search !== '' || u.hash !== '')
    throw new InvalidArgumentError(`'${v}': give the server's base URL, without a query or fragment`);
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

/** `name=value` split at the last '='; the name must be a usable path segment. */
function nameValue(v: string, what: string, example: string): { name: string; value: number } {
  const i = v.lastIndexOf('=');
  const name = i > 0 ? v.slice(0, i) : '';
  if (name === '' || name.includes('/'))
    throw new InvalidArgumentError(`'${v}' is not <name>=<${what}> (e.g. ${example})`);
  const value = num(v.slice(i + 1));
  if (!Number.isFinite(value) || value <= 0) throw new InvalidArgumentError(`'${v}': ${what} must be a number > 0`);
  return { name, value };
}

function modelRate(v: string, prev: ModelLoad[] | undefined): ModelLoad[] {
  const { name, value } = nameValue(v, 'ratePerS', 'resnet50=100');
  if (prev?.some((m) => m.name === name)) throw new InvalidArgumentError(`model '${name}' is given twice`);
  return [...(prev ?? []), { name, ratePerS: value }];
}

/** `--trace name=file`, split at the first '=' (a model name has none; a path may). */
function modelTrace(v: string, prev: { name: string; file: string }[] | undefined): { name: string; file: string }[] {
  const i = v.indexOf('=');
  const name = i > 0 ? v.slice(0, i) : '';
  const file = v.slice(i + 1);
  if (name === '' || name.includes('/') || file === '')
    throw new InvalidArgumentError(`'${v}' is not <name>=<file> (e.g. resnet50=arrivals.txt)`);
  if (prev?.some((t) => t.name === name)) throw new InvalidArgumentError(`model '${name}' is given twice`);
  return [...(prev ?? []), { name, file }];
}

function modelSlo(v: string, prev: Map<string, number> | undefined): Map<string, number> {
  const { name, value } = nameValue(v, 'ms', 'resnet50=80');
  if (prev?.has(name)) throw new InvalidArgumentError(`model '${name}' is given twice`);
  return new Map([...(prev ?? []), [name, value]]);
}

/** The flags as commander hands them over (after each flag's own parser). */
interface RawFlags {
  url: string;
  protocol: Protocol;
  model?: ModelLoad[];
  trace?: { name: string; file: string }[];
  duration: number;
  arrival: 'poisson' | 'gamma';
  cv?: number;
  seed: number;
  encoding: Encoding;
  input: 'fp32' | ImageForm;
  slo?: Map<string, number>;
  timeout: number;
  json?: boolean;
  out?: string;
  connections?: number;
  token?: string;
  tokenFile?: string;
  ca?: string;
}

/** A file a flag names, read whole; `fail` when it cannot be. */
function flagFile(flag: string, path: string, fail: (message: string) => never): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    return fail(`${flag} ${path}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** The bearer token of INSS_CLIENT_TOKEN or --token-file (one line), checked; undefined when neither is given. */
function clientToken(f: RawFlags, fail: (message: string) => never): string | undefined {
  if (f.token !== undefined && f.tokenFile !== undefined) fail('--token-file and INSS_CLIENT_TOKEN: give one');
  const token =
    f.tokenFile !== undefined ? flagFile('--token-file', f.tokenFile, fail).toString('utf8').trim() : f.token;
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token))
    fail(
      `${f.tokenFile !== undefined ? `--token-file ${f.tokenFile}` : 'INSS_CLIENT_TOKEN'}: expected one token (printable ASCII, no spaces) on one line`,
    );
  return token;
}

/**
 * The --trace models: each file read and parsed in the scenario trace format (one arrival time in
 * seconds per line; blank lines and # comments ignored), checked to send something in the window.
 */
function traceModels(f: RawFlags, fail: (message: string) => never): ModelLoad[] {
  return (f.trace ?? []).map(({ name, file }) => {
    const flag = `--trace ${name}=${file}`;
    let timesS: number[];
    try {
      timesS = parseTrace(readFileSync(file, 'utf8'), file);
    } catch (err) {
      if (err instanceof ScenarioError) fail(`${flag}: ${err.message} (expected one arrival time in seconds per line)`);
      fail(`${flag}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const load = traceLoad(name, timesS, f.duration);
    if (load.ratePerS === 0)
      fail(
        `${flag}: no arrival before the end of the send window (--duration ${f.duration} s; the trace has ${timesS.length} arrival${timesS.length === 1 ? '' : 's'})`,
      );
    return load;
  });
}

/** Cross-flag rules; `fail` reports a bad flag (it does not return). */
function resolveFlags(f: RawFlags, fail: (message: string) => never): LoadgenOptions {
  if (f.model === undefined && f.trace === undefined)
    fail('give at least one --model <name=ratePerS> or --trace <name=file>');
  for (const t of f.trace ?? [])
    if (f.model?.some((m) => m.name === t.name))
      fail(
        `--trace ${t.name}=...: model '${t.name}' is also given by --model (a model's sends are drawn or replayed, not both)`,
      );
  if (f.arrival === 'gamma' && f.cv === undefined)
    fail('--cv <x> is required with --arrival gamma (the CV of the inter-arrival times; 1 is Poisson)');
  if (f.arrival === 'poisson' && f.cv !== undefined)
    fail('--cv is only for --arrival gamma (Poisson arrivals have CV 1)');
  if (f.encoding === 'json' && (f.input === 'jpeg' || f.input === 'png'))
    fail(
      `--input ${f.input} needs --encoding binary (a JPEG or PNG travels as binary data; JSON strings cannot carry it)`,
    );
  const models = [...(f.model ?? []), ...traceModels(f, fail)];
  const names = new Set(models.map((m) => m.name));
  for (const name of f.slo?.keys() ?? [])
    if (!names.has(name))
      fail(`--slo ${name}=...: '${name}' is not one of the --model models (${[...names].join(', ')})`);
  if (f.ca !== undefined && !f.url.startsWith('https:')) fail('--ca: only for an https:// --url');
  const token = clientToken(f, fail);
  const ca = f.ca !== undefined ? flagFile('--ca', f.ca, fail) : undefined;
  return {
    url: f.url,
    protocol: f.protocol,
    models,
    traces: new Map((f.trace ?? []).map((t) => [t.name, t.file])),
    durationS: f.duration,
    arrival: f.arrival === 'gamma' ? { kind: 'gamma', cv: f.cv! } : { kind: 'poisson' },
    seed: f.seed,
    encoding: f.encoding,
    input: f.input,
    sloMs: f.slo ?? new Map(),
    timeoutMs: f.timeout,
    json: f.json === true,
    out: f.out,
    connections: f.connections ?? DEFAULT_CONNECTIONS[f.protocol],
    ...(token !== undefined ? { token } : {}),
    ...(ca !== undefined ? { ca } : {}),
  };
}

export interface LoadgenDeps {
  /** Where the report, progress and errors go (default: the process's stdout and stderr). */
  readonly stdout?: Writable;
  readonly stderr?: Writable;
  /** Receives the exit status of a run (default: sets process.exitCode, which `main` returns). */
  readonly setExitCode?: (code: number) => void;
  /** Runs the validated options (default: runLoadgen); a test may replace it to check the flags alone. */
  readonly run?: (opts: LoadgenOptions, io: LoadgenIo) => Promise<number>;
}

/**
 * Adds `loadgen` to the program (cli/main.ts). A bad flag prints commander's message naming the flag
 * and throws a CommanderError with exitCode 2 (EXIT_BAD_FLAGS), which `main` returns.
 */
export function registerLoadgen(program: Command, deps: LoadgenDeps = {}): Command {
  const io: LoadgenIo = { stdout: deps.stdout ?? process.stdout, stderr: deps.stderr ?? process.stderr };
  return program
    .command('loadgen')
    .description(
      'Open-loop load generator for the KServe v2 task endpoint: Poisson or Gamma arrivals per model, or replayed from a trace; reports throughput, goodput, SLO attainment and latency (docs/loadgen.md)',
    )
    .requiredOption(
      '--url <url>',
      'base URL of the server, e.g. http://127.0.0.1:8000 (with --protocol grpc its gRPC port, e.g. http://127.0.0.1:8001; https:// for TLS)',
      baseUrl,
    )
    .addOption(
      new Option(
        '--protocol <protocol>',
        "http (KServe v2 over HTTP/REST) or grpc (its gRPC service, Triton's inference.GRPCInferenceService)",
      )
        .choices(['http', 'grpc'])
        .default('http'),
    )
    .option('--model <name=ratePerS>', 'a model and its request rate per second; repeat for several models', modelRate)
    .option(
      '--trace <name=file>',
      'a model whose requests leave at the arrival times in FILE (seconds from the start, one per line, as a scenario trace); repeatable',
      modelTrace,
    )
    .option('--duration <s>', 'seconds of sending (the report waits for the last answers after)', positiveNumber, 10)
    .addOption(
      new Option('--arrival <process>', 'inter-arrival times: poisson, or gamma with --cv')
        .choices(['poisson', 'gamma'])
        .default('poisson'),
    )
    .option(
      '--cv <x>',
      'coefficient of variation of the Gamma inter-arrival times (> 1 burstier than Poisson, < 1 smoother)',
      positiveNumber,
    )
    .option('--seed <n>', 'seed of the send times and the input values', seedNumber, 1)
    .addOption(
      new Option('--encoding <kind>', "request body: binary (Triton's binary tensor extension) or json")
        .choices(['binary', 'json'])
        .default('binary'),
    )
    .addOption(
      new Option(
        '--input <form>',
        "each request's input: the model's own tensor (fp32), or a generated 224x224 picture as uint8 pixels, a jpeg or a png (image models)",
      )
        .choices(['fp32', 'uint8', 'jpeg', 'png'])
        .default('fp32'),
    )
    .option(
      '--slo <name=ms>',
      "a model's latency SLO; repeatable (default: parameters.slo_ms of the model's metadata)",
      modelSlo,
    )
    .option(
      '--timeout <ms>',
      'per-request timeout: no whole answer within it counts as a timeout error',
      positiveInt,
      30_000,
    )
    .option('--json', 'print the JSON report instead of the table (and no progress)')
    .option('--out <file>', 'also write the JSON report to this file')
    .option(
      '--connections <n>',
      `keep-alive sockets to the server (default ${DEFAULT_CONNECTIONS.http}); with --protocol grpc, HTTP/2 channels (default ${DEFAULT_CONNECTIONS.grpc})`,
      positiveInt,
    )
    .option(
      '--token-file <file>',
      'a bearer token (one line) sent on every request, for a server with client tokens; or set INSS_CLIENT_TOKEN',
    )
    .addOption(
      new Option('--token <token>', 'the bearer token (environment only: keep it off the command line)')
        .env('INSS_CLIENT_TOKEN')
        .hideHelp(),
    )
    .option(
      '--ca <file>',
      'https://: PEM certificate(s) to trust for the server (its self-signed certificate, or a private CA)',
    )
    .configureOutput({ writeOut: (s) => void io.stdout.write(s), writeErr: (s) => void io.stderr.write(s) })
    .exitOverride((err) => {
      throw err.exitCode === 0 ? err : new CommanderError(EXIT_BAD_FLAGS, err.code, err.message);
    })
    .action(async (flags: RawFlags, command: Command) => {
      const opts = resolveFlags(flags, (message) =>
        command.error(`error: ${message}`, { exitCode: EXIT_BAD_FLAGS, code: 'inss.loadgen.invalidFlag' }),
      );
      const code = await (deps.run ?? runLoadgen)(opts, io);
      if (deps.setExitCode) deps.setExitCode(code);
      else process.exitCode = code;
    });
}

// ---- HTTP --------------------------------------------------------------------------------------

/** What became of one HTTP exchange. */
type Exchange =
  | {
      readonly kind: 'answer';
      readonly status: number;
      readonly inferenceHeaderLength: string | undefined;
      readonly body: Buffer;
      readonly serverMs: number | undefined;
    }
  | { readonly kind: 'timeout' | 'network'; readonly error: string };

function networkError(err: NodeJS.ErrnoException): string {
  const code = err.code;
  return code !== undefined && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
}

/**
 * One request; `done` is called exactly once. The timeout covers everything from this call to the end
 * of the answer, waiting for a free socket included.
 */
function exchange(
  target: http.RequestOptions,
  body: Buffer | undefined,
  timeoutMs: number,
  done: (x: Exchange) => void,
): void {
  let settled = false;
  const finish = (x: Exchange): void => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    done(x);
  };
  const req = (target.protocol === 'https:' ? https : http).request(target, (res) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      const h = res.headers['inference-header-content-length'];
      const st = res.headers['server-timing'];
      finish({
        kind: 'answer',
        status: res.statusCode ?? 0,
        inferenceHeaderLength: typeof h === 'string' ? h : undefined,
        body: Buffer.concat(chunks),
        serverMs: serverTimingMs(Array.isArray(st) ? st.join(', ') : st),
      });
    });
    res.on('error', (e) => finish({ kind: 'network', error: networkError(e) }));
    res.on('close', () => {
      if (!res.complete) finish({ kind: 'network', error: 'the connection closed before the answer ended' });
    });
  });
  const timer = setTimeout(() => {
    finish({ kind: 'timeout', error: `no answer within ${timeoutMs} ms (--timeout)` });
    req.destroy();
  }, timeoutMs);
  req.on('error', (e) => finish({ kind: 'network', error: networkError(e) }));
  req.end(body);
}

function exchangeAsync(target: http.RequestOptions, body: Buffer | undefined, timeoutMs: number): Promise<Exchange> {
  return new Promise((resolve) => exchange(target, body, timeoutMs, resolve));
}

function requestTarget(
  url: string,
  method: 'GET' | 'POST',
  agent: http.Agent,
  headers: Readonly<Record<string, string>> = {},
): http.RequestOptions {
  return { ...urlToHttpOptions(new URL(url)), method, agent, headers: { ...headers } };
}

// ---- the run -----------------------------------------------------------------------------------

function errorText(body: Buffer): string {
  const text = body.toString('utf8');
  try {
    const j = JSON.parse(text) as { error?: unknown };
    if (typeof j.error === 'string') return j.error;
  } catch {
    // not JSON: the text as it is
  }
  return text.slice(0, 200);
}

/** GETs a model's metadata and builds its one pre-encoded request (seeded by --seed and the name). */
async function planModel(opts: LoadgenOptions, m: ModelLoad, agent: http.Agent): Promise<ModelPlan> {
  const path = `/v2/models/${encodeURIComponent(m.name)}`;
  const auth: Record<string, string> = opts.token !== undefined ? { authorization: `Bearer ${opts.token}` } : {};
  const x = await exchangeAsync(
    requestTarget(`${opts.url}${path}`, 'GET', agent, { accept: 'application/json', ...auth }),
    undefined,
    opts.timeoutMs,
  );
  if (x.kind !== 'answer')
    throw new LoadgenSetupError(`cannot reach the server at --url ${opts.url} (GET ${path}): ${x.error}`, EXIT_SETUP);
  if (x.status === 404)
    throw new LoadgenSetupError(
      `--model ${m.name}: the server at ${opts.url} does not serve this model (HTTP 404: ${errorText(x.body)})`,
      EXIT_SETUP,
    );
  if (x.status !== 200)
    throw new LoadgenSetupError(
      `--model ${m.name}: GET ${path} answered HTTP ${x.status}: ${errorText(x.body)}`,
      EXIT_SETUP,
    );
  let raw: unknown;
  try {
    raw = JSON.parse(x.body.toString('utf8'));
  } catch {
    throw new LoadgenSetupError(
      `--model ${m.name}: the metadata at ${opts.url}${path} is not JSON: ${x.body.toString('utf8').slice(0, 120)}`,
      EXIT_SETUP,
    );
  }
  const meta = parseModelMetadata(raw);
  if (!meta.ok) throw new LoadgenSetupError(`--model ${m.name}: ${meta.error}`, EXIT_SETUP);
  const specs = requestInputs(meta.value);
  if (!specs.ok) throw new LoadgenSetupError(`--model ${m.name}: ${specs.error}`, EXIT_SETUP);
  const sloMs = opts.sloMs.get(m.name) ?? metadataSloMs(meta.value);
  if (sloMs === undefined)
    throw new LoadgenSetupError(
      `--slo: no SLO for model '${m.name}': its metadata has no parameters.slo_ms; give --slo ${m.name}=<ms>`,
      EXIT_BAD_FLAGS,
    );
  const request =
    opts.input === 'fp32'
      ? encodeInferRequest(
          randomInputs(specs.value, new Rng(modelStreamSeed(opts.seed, m.name, STREAM_INPUT))),
          opts.encoding,
        )
      : imagePlan(opts, opts.input, m.name, meta.value);
  const target = requestTarget(`${opts.url}${path}/infer`, 'POST', agent, { ...request.headers, ...auth });
  return {
    name: m.name,
    ratePerS: m.ratePerS,
    sloMs,
    bytes: request.body.length,
    send: (timeoutMs, done) => exchange(target, request.body, timeoutMs, (x) => done(sentOf(x))),
  };
}

/** The one request of an image model for --input uint8|jpeg|png: a picture seeded by --seed and the model's name. */
function imagePlan(opts: LoadgenOptions, form: ImageForm, name: string, meta: ModelMetadata): EncodedRequest {
  const { input, picture } = imagePicture(opts, form, name, meta);
  return form === 'uint8' && opts.encoding === 'json'
    ? uint8JsonRequest(input, picture)
    : imageRequest(input, form, picture);
}

/** Live counts for the progress line. */
interface Counters {
  sent: number;
  answered: number;
  errors: number;
}

function sentOf(x: Exchange): Sent {
  if (x.kind !== 'answer') return { outcome: x.kind, error: x.error };
  const j = judgeInferAnswer(x);
  return j.outcome === 'ok'
    ? { outcome: 'ok', status: x.status, ...(x.serverMs !== undefined ? { serverMs: x.serverMs } : {}) }
    : { outcome: j.outcome, status: x.status, error: j.error };
}

/**
 * Sends the schedule open-loop against the clock and resolves once every request has its outcome.
 * Timers wake the loop at the next send time; after each wake it sends everything that is due (catching
 * up if the event loop was late), at most MAX_BURST at once before letting answers be read.
 */
async function sendOpenLoop(
  plans: readonly ModelPlan[],
  schedule: SendSchedule,
  timeoutMs: number,
  counters: Counters,
): Promise<RequestRecord[]> {
  const records: RequestRecord[] = [];
  let inFlight = 0;
  let sending = true;
  let drained: () => void = () => undefined;
  const allAnswered = new Promise<void>((resolve) => (drained = resolve));
  const t0 = performance.now();
  const fire = (model: number, scheduledAtMs: number): void => {
    const plan = plans[model]!;
    const sentAtMs = performance.now() - t0;
    inFlight++;
    counters.sent++;
    plan.send(timeoutMs, (x) => {
      const r: RequestRecord = {
        model: plan.name,
        scheduledAtMs,
        sentAtMs,
        latencyMs: performance.now() - t0 - sentAtMs,
        ...x,
      };
      records.push(r);
      counters.answered++;
      if (r.outcome !== 'ok') counters.errors++;
      inFlight--;
      if (!sending && inFlight === 0) drained();
    });
  };
  let next = schedule.next();
  while (next !== undefined) {
    const aheadMs = next.atMs - (performance.now() - t0);
    if (aheadMs > 0) {
      await sleep(aheadMs);
      continue;
    }
    for (let burst = 0; next !== undefined && next.atMs <= performance.now() - t0 && burst < MAX_BURST; burst++) {
      fire(next.model, next.atMs);
      next = schedule.next();
    }
    await yieldToIo();
  }
  sending = false;
  if (inFlight > 0) await allAnswered;
  return records;
}

function checkOutWritable(out: string): void {
  const dir = dirname(out);
  try {
    if (!statSync(dir).isDirectory()) throw new Error(`${dir} is not a folder`);
    accessSync(dir, constants.W_OK);
  } catch (err) {
    throw new LoadgenSetupError(
      `--out ${out}: cannot write there: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      EXIT_SETUP,
    );
  }
}

function settingsOf(opts: LoadgenOptions): LoadgenSettings {
  return {
    url: opts.url,
    protocol: opts.protocol,
    durationS: opts.durationS,
    arrival: opts.arrival,
    seed: opts.seed,
    encoding: opts.encoding,
    input: opts.input,
    timeoutMs: opts.timeoutMs,
    connections: opts.connections,
    ...(opts.traces.size > 0 ? { traces: Object.fromEntries(opts.traces) } : {}),
  };
}

/**
 * One whole run: metadata, the open-loop sends, the report on `io.stdout` (and in --out). Resolves to
 * the exit status (EXIT_*); a setup failure is one line on `io.stderr`, not an exception.
 */
export async function runLoadgen(opts: LoadgenOptions, io: LoadgenIo): Promise<number> {
  const sockets = { keepAlive: true, maxSockets: opts.connections, maxFreeSockets: opts.connections };
  const agent = opts.url.startsWith('https:')
    ? new https.Agent({ ...sockets, ...(opts.ca !== undefined ? { ca: opts.ca } : {}) })
    : new http.Agent(sockets);
  const grpc = opts.protocol === 'grpc' ? new GrpcTarget(opts) : null;
  const say = (line: string): void => void io.stderr.write(`${line}\n`);
  try {
    if (opts.out !== undefined) checkOutWritable(opts.out);
    const plans: ModelPlan[] = [];
    for (const m of opts.models) plans.push(grpc ? await grpc.plan(m) : await planModel(opts, m, agent));
    const schedule = new SendSchedule(opts.models, {
      durationS: opts.durationS,
      arrival: opts.arrival,
      seed: opts.seed,
    });
    const counters: Counters = { sent: 0, answered: 0, errors: 0 };
    let progress: NodeJS.Timeout | undefined;
    if (!opts.json) {
      const arrival = opts.arrival.kind === 'gamma' ? `gamma arrivals (CV ${opts.arrival.cv})` : 'Poisson arrivals';
      say(
        `loadgen: ${plans.map((p) => `${p.name} ${opts.traces.has(p.name) ? `trace ${opts.traces.get(p.name)} (${p.ratePerS.toFixed(2)}/s)` : `${p.ratePerS}/s`} (SLO ${p.sloMs} ms, ${p.bytes} bytes)`).join(', ')}; ${arrival}, ${opts.encoding} encoding, ${opts.durationS} s to ${opts.url}${grpc ? ' over gRPC' : ''}`,
      );
      const startMs = performance.now();
      progress = setInterval(() => {
        const s = ((performance.now() - startMs) / 1000).toFixed(0);
        say(
          `loadgen: ${s} s: sent ${counters.sent}, answered ${counters.answered}, errors ${counters.errors}, in flight ${counters.sent - counters.answered}`,
        );
      }, PROGRESS_EVERY_MS);
    }
    let records: RequestRecord[];
    try {
      records = await sendOpenLoop(plans, schedule, opts.timeoutMs, counters);
    } finally {
      clearInterval(progress);
    }
    const report: LoadgenReport = buildReport(
      settingsOf(opts),
      plans.map((p) => ({ name: p.name, ratePerS: p.ratePerS, sloMs: p.sloMs })),
      records,
    );
    io.stdout.write(`${opts.json ? JSON.stringify(report) : formatReport(report)}\n`);
    if (opts.out !== undefined) {
      try {
        writeFileSync(opts.out, `${JSON.stringify(report, null, 1)}\n`);
      } catch (err) {
        throw new LoadgenSetupError(
          `--out ${opts.out}: cannot write: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
          EXIT_SETUP,
        );
      }
      if (!opts.json) say(`loadgen: wrote ${opts.out}`);
    }
    return EXIT_OK;
  } catch (err) {
    if (!(err instanceof LoadgenSetupError)) throw err;
    say(`inss loadgen: ${err.message}`);
    return err.exitCode;
  } finally {
    agent.destroy();
    grpc?.close();
  }
}

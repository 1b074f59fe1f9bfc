// The flags of `inss loadgen`: each flag's parser (commander reports its message with the flag) and the
// cross-flag rules that turn them into LoadgenOptions (cli/loadgenPlan.ts).
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';
import type { ImageForm } from '../tools/loadgen/images.js';
import type { Encoding } from '../tools/loadgen/request.js';
import { parseTrace, ScenarioError } from '../src/scenario/build.js';
import { type ModelLoad, traceLoad } from '../tools/loadgen/schedule.js';
import { DEFAULT_CONNECTIONS, type LoadgenOptions, type Protocol } from './loadgenPlan.js';

function num(v: string): number {
  return v.trim() === '' ? NaN : Number(v);
}

export function positiveNumber(v: string): number {
  const n = num(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number > 0');
  return n;
}

export function positiveInt(v: string): number {
  const n = num(v);
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('must be an integer >= 1');
  return n;
}

export function seedNumber(v: string): number {
  const n = num(v);
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff)
    throw new InvalidArgumentError('must be an integer in 0..4294967295');
  return n;
}

export function baseUrl(v: string): string {
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

export function modelRate(v: string, prev: ModelLoad[] | undefined): ModelLoad[] {
  const { name, value } = nameValue(v, 'ratePerS', 'resnet50=100');
  if (prev?.some((m) => m.name === name)) throw new InvalidArgumentError(`model '${name}' is given twice`);
  return [...(prev ?? []), { name, ratePerS: value }];
}

/** `--trace name=file`, split at the first '=' (a model name has none; a path may). */
export function modelTrace(
  v: string,
  prev: { name: string; file: string }[] | undefined,
): { name: string; file: string }[] {
  const i = v.indexOf('=');
  const name = i > 0 ? v.slice(0, i) : '';
  const file = v.slice(i + 1);
  if (name === '' || name.includes('/') || file === '')
    throw new InvalidArgumentError(`'${v}' is not <name>=<file> (e.g. resnet50=arrivals.txt)`);
  if (prev?.some((t) => t.name === name)) throw new InvalidArgumentError(`model '${name}' is given twice`);
  return [...(prev ?? []), { name, file }];
}

export function modelSlo(v: string, prev: Map<string, number> | undefined): Map<string, number> {
  const { name, value } = nameValue(v, 'ms', 'resnet50=80');
  if (prev?.has(name)) throw new InvalidArgumentError(`model '${name}' is given twice`);
  return new Map([...(prev ?? []), [name, value]]);
}

/** The flags as commander hands them over (after each flag's own parser). */
export interface RawFlags {
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
      `${f.tokenFile !== undefined ? `--token-file ${f.tokenFile}` : 'INSS_CLIENT_TOKEN'}: ` +
        'expected one token (printable ASCII, no spaces) on one line',
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
        `${flag}: no arrival before the end of the send window (--duration ${f.duration} s; the trace has ` +
          `${timesS.length} arrival${timesS.length === 1 ? '' : 's'})`,
      );
    return load;
  });
}

/** Cross-flag rules; `fail` reports a bad flag (it does not return). */
export function resolveFlags(f: RawFlags, fail: (message: string) => never): LoadgenOptions {
  if (f.model === undefined && f.trace === undefined)
    fail('give at least one --model <name=ratePerS> or --trace <name=file>');
  for (const t of f.trace ?? [])
    if (f.model?.some((m) => m.name === t.name))
      fail(
        `--trace ${t.name}=...: model '${t.name}' is also given by --model (a model's sends are drawn or ` +
          `replayed, not both)`,
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

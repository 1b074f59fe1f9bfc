// `inss loadgen` over HTTP: one request on node:http(s) with its timeout, and a model's plan (its metadata
// fetched once, its one pre-encoded request, and how to send it).
import http from 'node:http';
import https from 'node:https';
import { urlToHttpOptions } from 'node:url';
import { Rng } from '../src/workload/random.js';
import { type ImageForm, imageRequest, uint8JsonRequest } from '../tools/loadgen/images.js';
import {
  type EncodedRequest,
  encodeInferRequest,
  judgeInferAnswer,
  metadataSloMs,
  type ModelMetadata,
  parseModelMetadata,
  randomInputs,
  requestInputs,
  serverTimingMs,
} from '../tools/loadgen/request.js';
import { type ModelLoad, modelStreamSeed, STREAM_INPUT } from '../tools/loadgen/schedule.js';
import {
  EXIT_BAD_FLAGS,
  EXIT_SETUP,
  imagePicture,
  type LoadgenOptions,
  LoadgenSetupError,
  type ModelPlan,
  type Sent,
} from './loadgenPlan.js';

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
export async function planModel(opts: LoadgenOptions, m: ModelLoad, agent: http.Agent): Promise<ModelPlan> {
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

function sentOf(x: Exchange): Sent {
  if (x.kind !== 'answer') return { outcome: x.kind, error: x.error };
  const j = judgeInferAnswer(x);
  return j.outcome === 'ok'
    ? { outcome: 'ok', status: x.status, ...(x.serverMs !== undefined ? { serverMs: x.serverMs } : {}) }
    : { outcome: j.outcome, status: x.status, error: j.error };
}

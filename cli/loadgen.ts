// `inss loadgen --url URL`: an open-loop client for the task endpoint. Each request leaves at its
// scheduled time whether or not earlier ones have been answered (node:http on a keep-alive agent, so
// the client stays cheap); every request is waited for (or times out) before the report.
import http from 'node:http';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { buildReport, formatReport, type RequestRecord, sendSchedule } from '../src/loadgen/report.js';
import { InvalidInputError } from '../src/profile/schema.js';
import { DATATYPE_BYTES, type Datatype, elementCount } from '../src/protocol/tensor.js';
import { mixSeed, Rng } from '../src/workload/random.js';

function keyValue(what: string) {
  return (v: string, prev: Record<string, number> = {}): Record<string, number> => {
    const m = /^([^=]+)=(.+)$/.exec(v);
    const n = m ? Number(m[2]) : NaN;
    if (!m || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`'${v}' is not <model>=<${what} > 0>`);
    return { ...prev, [m[1]!]: n };
  };
}

function positive(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number > 0');
  return n;
}

interface Meta {
  inputs: { name: string; datatype: Datatype; shape: number[] }[];
  parameters?: { slo_ms?: number };
}

async function metadata(url: string, model: string): Promise<Meta> {
  let res: Response;
  try {
    res = await fetch(`${url}/v2/models/${encodeURIComponent(model)}`);
  } catch (e) {
    throw new InvalidInputError(`--url ${url}: cannot reach the server (${(e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message})`);
  }
  if (res.status !== 200) throw new InvalidInputError(`--model ${model}: the server answers ${res.status}: ${await res.text()}`);
  return (await res.json()) as Meta;
}

/** One pre-encoded request body per model: random values of the right datatype, batch dimension 1. */
function requestBody(meta: Meta, encoding: 'binary' | 'json', rng: Rng): { body: Buffer; headers: Record<string, string> } {
  const inputs = meta.inputs.map((i) => {
    const shape = [1, ...i.shape.slice(1)];
    const n = elementCount(shape);
    const values = Array.from({ length: n }, () => (i.datatype.startsWith('FP') ? rng.next() : Math.floor(rng.next() * 100)));
    return { ...i, shape, values };
  });
  if (encoding === 'json') {
    const body = Buffer.from(JSON.stringify({ inputs: inputs.map((i) => ({ name: i.name, shape: i.shape, datatype: i.datatype, data: i.datatype === 'BOOL' ? i.values.map((v) => v > 50) : i.values })) }));
    return { body, headers: { 'content-type': 'application/json' } };
  }
  const blobs = inputs.map((i) => {
    const b = Buffer.alloc(i.values.length * DATATYPE_BYTES[i.datatype]);
    i.values.forEach((v, k) => {
      if (i.datatype === 'FP32') b.writeFloatLE(v, k * 4);
      else if (i.datatype === 'FP64') b.writeDoubleLE(v, k * 8);
      else if (DATATYPE_BYTES[i.datatype] === 1) b.writeUInt8(Math.min(255, v), k);
      else if (DATATYPE_BYTES[i.datatype] === 4) b.writeInt32LE(v, k * 4);
      else if (DATATYPE_BYTES[i.datatype] === 8) b.writeBigInt64LE(BigInt(v), k * 8);
      else b.writeUInt16LE(v, k * 2);
    });
    return b;
  });
  const header = Buffer.from(JSON.stringify({ inputs: inputs.map((i, k) => ({ name: i.name, shape: i.shape, datatype: i.datatype, parameters: { binary_data_size: blobs[k]!.length } })), parameters: { binary_data_output: true } }));
  return { body: Buffer.concat([header, ...blobs]), headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) } };
}

function send(url: string, req: { body: Buffer; headers: Record<string, string> }, agent: http.Agent, timeoutMs: number): Promise<{ status: number; error?: string }> {
  return new Promise((resolve) => {
    const r = http.request(url, { method: 'POST', agent, timeout: timeoutMs, headers: { ...req.headers, 'content-length': String(req.body.length) } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        if (status === 200) return resolve({ status });
        let error = `HTTP ${status}`;
        try {
          error = (JSON.parse(Buffer.concat(parts).toString()) as { error?: string }).error ?? error;
        } catch {
          // not JSON: keep the status
        }
        resolve({ status, error: error.replace(/\d+(\.\d+)? ms/g, 'N ms') });
      });
    });
    r.on('timeout', () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    r.on('error', (e) => resolve({ status: 0, error: e.message }));
    r.end(req.body);
  });
}

export function registerLoadgen(program: Command): void {
  program
    .command('loadgen')
    .description('Open-loop load generator for the task endpoint: Poisson or Gamma arrivals per model; reports throughput, goodput, SLO attainment, p50/p99')
    .requiredOption('--url <url>', 'the endpoint, e.g. http://127.0.0.1:8000')
    .requiredOption('--model <name=ratePerS>', 'a model and its rate (repeat for several)', keyValue('rate per s'))
    .option('--duration <s>', 'seconds of sending', positive, 10)
    .addOption(new Option('--arrival <process>', 'arrival process').choices(['poisson', 'gamma']).default('poisson'))
    .option('--cv <x>', 'coefficient of variation of Gamma inter-arrivals', positive, 2)
    .option('--seed <n>', 'seed of the schedule and the inputs', positive, 1)
    .addOption(new Option('--encoding <kind>', 'request encoding').choices(['binary', 'json']).default('binary'))
    .option('--slo <name=ms>', "a model's SLO (default: the server's parameters.slo_ms)", keyValue('ms'))
    .option('--timeout <ms>', 'per-request timeout', positive, 30_000)
    .option('--json', 'print the report as JSON')
    .action(async (opts: { url: string; model: Record<string, number>; duration: number; arrival: string; cv: number; seed: number; encoding: 'binary' | 'json'; slo?: Record<string, number>; timeout: number; json?: boolean }) => {
      const url = opts.url.replace(/\/+$/, '');
      const rng = new Rng(mixSeed(opts.seed, 0x696e));
      const bodies = new Map<string, { body: Buffer; headers: Record<string, string> }>();
      const slo: Record<string, number> = {};
      for (const m of Object.keys(opts.model)) {
        const meta = await metadata(url, m);
        const s = opts.slo?.[m] ?? meta.parameters?.slo_ms;
        if (s === undefined) throw new InvalidInputError(`--slo ${m}=<ms> is needed: the server states no SLO for '${m}'`);
        slo[m] = s;
        bodies.set(m, requestBody(meta, opts.encoding, rng));
      }
      const plan = sendSchedule(opts.model, opts.duration, opts.arrival === 'gamma' ? opts.cv : 1, opts.seed);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
      const records: Promise<RequestRecord>[] = [];
      let answered = 0;
      const progress = opts.json ? null : setInterval(() => process.stderr.write(`sent ${records.length}/${plan.length}, answered ${answered}\n`), 1000);
      const t0 = performance.now();
      for (const p of plan) {
        const wait = p.atMs - (performance.now() - t0);
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        const sentAtMs = performance.now() - t0;
        records.push(
          send(`${url}/v2/models/${encodeURIComponent(p.model)}/infer`, bodies.get(p.model)!, agent, opts.timeout).then((r): RequestRecord => {
            answered++;
            const latencyMs = performance.now() - t0 - sentAtMs;
            const outcome = r.status === 200 ? 'ok' : r.status === 0 ? 'network' : r.status < 500 ? 'http-4xx' : 'http-5xx';
            return { model: p.model, sentAtMs, latencyMs, outcome, ...(r.status ? { status: r.status } : {}), ...(r.error ? { error: r.error } : {}) };
          }),
        );
      }
      const all = await Promise.all(records);
      if (progress) clearInterval(progress);
      agent.destroy();
      const report = buildReport(all, slo, opts.duration);
      console.log(opts.json ? JSON.stringify(report) : formatReport(report));
    });
}

// The soak's client (benchmarks/soak.ts): its requests (binary FP32 images), what each model must answer
// for them, one request with its outcome tallied, and the count of tasks the scheduler answered.
import http from 'node:http';
import { standInForward } from '../src/serving/standIn.js';
import { fp32ImageRequest } from '../tools/loadgen/binary.js';

export const MODELS = ['resnet50', 'mobilenet'] as const;
export type Model = (typeof MODELS)[number];

export const INPUTS = Array.from({ length: 4 }, (_, i) =>
  new Float32Array(3 * 224 * 224).map((_, k) => ((k * 7 + i * 13) % 101) / 101),
);
export const REQUESTS = INPUTS.map((x) => {
  return fp32ImageRequest(x);
});
/** What a simulated worker of each model answers for each input (src/serving/standIn.ts). */
export const EXPECTED = new Map(MODELS.map((m) => [m, INPUTS.map((x) => standInForward(m, x, 1, x.length, 1000))]));

export const tally = { sent: 0, ok: 0, wrong: 0, neverAnswered: 0, byReason: {} as Record<string, number> };
export const pending = new Set<Promise<void>>();
export const clientAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One request; its outcome goes into `tally` (the promise is also in `pending` until it ends). */
export function send(base: string, model: Model, i: number): Promise<boolean> {
  const { body, headers } = REQUESTS[i % REQUESTS.length]!;
  tally.sent++;
  const p = new Promise<boolean>((res) => {
    const req = http.request(
      `${base}/v2/models/${model}/infer`,
      {
        method: 'POST',
        agent: clientAgent,
        timeout: 60_000,
        headers: { ...headers, 'content-length': String(body.length) },
      },
      (r) => {
        const parts: Buffer[] = [];
        r.on('data', (d: Buffer) => parts.push(d));
        r.on('end', () => {
          const b = Buffer.concat(parts);
          if (r.statusCode !== 200) {
            const why = `${r.statusCode} ${/"reason":"([^"]+)"/.exec(b.toString())?.[1] ?? 'no reason'}`;
            tally.byReason[why] = (tally.byReason[why] ?? 0) + 1;
            res(false);
            return;
          }
          const n = Number(r.headers['inference-header-content-length']);
          const named = (JSON.parse(b.subarray(0, n).toString()) as { model_name?: string }).model_name;
          const bin = b.subarray(n);
          const out = new Float32Array(bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.length));
          const want = EXPECTED.get(model)![i % INPUTS.length]!;
          if (named === model && out.length === want.length && out.every((x, k) => Math.abs(x - want[k]!) < 1e-5))
            tally.ok++;
          else tally.wrong++;
          res(true);
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 60 s')));
    req.on('error', () => {
      tally.neverAnswered++;
      res(false);
    });
    req.end(body);
  });
  const settled = p.then(() => undefined);
  pending.add(settled);
  void settled.then(() => pending.delete(settled));
  return p;
}

/** Tasks the scheduler answered, over every outcome. */
export async function tasksAnswered(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return [...text.matchAll(/^inss_requests_total\{[^}]*\} (\d+)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
}

export async function swapsDone(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^inss_shadow_swaps_total (\d+)$/m.exec(text)?.[1] ?? 0);
}

type Worker = { workerId: string; model: string; pct: number; state: string; role: string; pid: number | null };
export async function workers(base: string): Promise<Worker[]> {
  return ((await (await fetch(`${base}/v2/inss/cluster`)).json()) as { workers: Worker[] }).workers;
}

/** Closed loop, 64 outstanding over both models, for `seconds`: 200 answers per second. */
export async function capacity(base: string, seconds: number): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let ok = 0;
  let i = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (performance.now() < end) if (await send(base, MODELS[i % MODELS.length]!, i++)) ok++;
    }),
  );
  return ok / seconds;
}

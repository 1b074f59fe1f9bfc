// The load of the fault tests (test/integration/chaos.test.ts): open-loop binary requests against a running
// scheduler, each answer checked for its model and output, and the exactly-once ledger over them.
import http from 'node:http';
import { expect } from 'vitest';
import { Rng } from '../../src/workload/random.js';
import { binaryInferRequest, simForward } from './system.js';

export const RATES = { resnet50: 30, mobilenet: 15 };
export const INPUT = new Float32Array(3 * 224 * 224).map((_, k) => (k % 101) / 101);
export const REQUEST = binaryInferRequest(INPUT);
/** What a simulated worker of each model answers for INPUT (the output depends on the model). */
export const EXPECTED = new Map(Object.keys(RATES).map((m) => [m, simForward(INPUT, m)]));

/** The load of a cluster: tasks/s per model, and what each model answers for INPUT (within `tolerance`). */
export interface Load {
  readonly rates: Readonly<Record<string, number>>;
  readonly expected: ReadonlyMap<string, Float32Array>;
  readonly tolerance: number;
}
export const SIM_LOAD: Load = { rates: RATES, expected: EXPECTED, tolerance: 1e-5 };

/** The output of a 200 answer, and the model it names. */
export function readAnswer(body: Buffer, headerLength: number): { model: string; output: Float32Array } {
  const head = JSON.parse(body.subarray(0, headerLength).toString()) as { model_name: string };
  const bin = body.subarray(headerLength);
  return {
    model: head.model_name,
    output: new Float32Array(bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.length)),
  };
}

export interface Outcome {
  readonly model: string;
  /** HTTP status, or 0 when the request failed without an answer. */
  readonly status: number;
  readonly reason?: string;
  readonly answeredModel?: string;
  readonly rightOutput?: boolean;
  readonly doneAtMs: number;
}

/** Open-loop Poisson requests for `seconds`; resolves when every one has ended. */
export async function load(base: string, seconds: number, spec: Load = SIM_LOAD, seed = 11): Promise<Outcome[]> {
  const rng = new Rng(seed);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const plan: { atMs: number; model: string }[] = [];
  for (const [model, r] of Object.entries(spec.rates))
    for (let t = (rng.exponential() / r) * 1000; t < seconds * 1000; t += (rng.exponential() / r) * 1000)
      plan.push({ atMs: t, model });
  plan.sort((a, b) => a.atMs - b.atMs);
  const t0 = performance.now();
  const pending: Promise<Outcome>[] = [];
  for (const p of plan) {
    const wait = p.atMs - (performance.now() - t0);
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(
      new Promise<Outcome>((resolve) => {
        const req = http.request(
          `${base}/v2/models/${p.model}/infer`,
          {
            method: 'POST',
            agent,
            timeout: 60_000,
            headers: { ...REQUEST.headers, 'content-length': String(REQUEST.body.length) },
          },
          (res) => {
            const parts: Buffer[] = [];
            res.on('data', (d: Buffer) => parts.push(d));
            res.on('end', () => {
              const body = Buffer.concat(parts);
              const doneAtMs = performance.now();
              if (res.statusCode !== 200) {
                resolve({
                  model: p.model,
                  status: res.statusCode ?? 0,
                  reason: (JSON.parse(body.toString()) as { reason?: string }).reason ?? 'none',
                  doneAtMs,
                });
                return;
              }
              const a = readAnswer(body, Number(res.headers['inference-header-content-length']));
              const want = spec.expected.get(p.model)!;
              resolve({
                model: p.model,
                status: 200,
                answeredModel: a.model,
                rightOutput:
                  a.output.length === want.length && a.output.every((x, k) => Math.abs(x - want[k]!) <= spec.tolerance),
                doneAtMs,
              });
            });
          },
        );
        req.on('error', () => resolve({ model: p.model, status: 0, doneAtMs: performance.now() }));
        req.on('timeout', () => req.destroy());
        req.end(REQUEST.body);
      }),
    );
  }
  const out = await Promise.all(pending);
  agent.destroy();
  return out;
}

/** Tasks the scheduler answered, over every outcome (inss_requests_total). */
export async function tasksAnswered(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return [...text.matchAll(/^inss_requests_total\{[^}]*\} (\d+)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
}

export type Worker = { workerId: string; model: string; pid: number | null; state: string };
export async function workers(base: string): Promise<Worker[]> {
  return ((await (await fetch(`${base}/v2/inss/cluster`)).json()) as { workers: Worker[] }).workers;
}

export async function until<T>(
  what: string,
  f: () => Promise<T | null | undefined | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One request per model until each is answered 200 (a loaded machine may drop a few on their SLO). */
export async function servesEveryModel(base: string, spec: Load = SIM_LOAD, timeoutMs = 15_000): Promise<void> {
  await Promise.all(
    Object.keys(spec.rates).map((model) =>
      until(
        `a 200 from ${model}`,
        async () => {
          const res = await fetch(`${base}/v2/models/${model}/infer`, {
            method: 'POST',
            headers: REQUEST.headers,
            body: REQUEST.body,
          });
          await res.arrayBuffer();
          return res.status === 200;
        },
        timeoutMs,
      ),
    ),
  );
}

/**
 * The checks every fault shares (`answeredBefore`: the scheduler's count before the load); returns the errors by
 * reason.
 */
export async function checkAnswers(
  base: string,
  out: readonly Outcome[],
  allowed: readonly string[],
  answeredBefore: number,
): Promise<Record<string, number>> {
  expect(out.filter((o) => o.status === 0)).toHaveLength(0); // every request got an answer
  const byReason: Record<string, number> = {};
  for (const o of out.filter((x) => x.status !== 200)) {
    expect(o.status, JSON.stringify(o)).toBe(503);
    byReason[o.reason!] = (byReason[o.reason!] ?? 0) + 1;
  }
  for (const r of Object.keys(byReason)) expect(allowed, `reason ${r}`).toContain(r);
  const ok = out.filter((o) => o.status === 200);
  for (const o of ok) {
    expect(o.answeredModel).toBe(o.model);
    expect(o.rightOutput).toBe(true);
  }
  // Exactly once: the scheduler answered as many tasks as the client got task answers.
  expect((await tasksAnswered(base)) - answeredBefore).toBe(out.length);
  expect(ok.length).toBeGreaterThan(0);
  return byReason;
}

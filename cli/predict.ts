// `inss predict`: the latency model on the command line, one JSON line in, one JSON line out.
import { createInterface } from 'node:readline';
import { z } from 'zod';
import type { LatencyModel } from '../src/model/predictor.js';
import { formatIssues } from '../src/profile/schema.js';

const LineSchema = z
  .object({
    models: z.array(z.object({ model: z.string(), batch: z.number(), pct: z.number() }).strict()).min(1),
    interference: z.boolean().optional(),
  })
  .strict();

/** Answers one input line: the prediction, or `{error}`. Pure apart from the model it is given. */
export function answerLine(model: LatencyModel, line: string): { ok: boolean; out: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (err) {
    return { ok: false, out: JSON.stringify({ error: `malformed JSON: ${(err as Error).message}` }) };
  }
  const parsed = LineSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, out: JSON.stringify({ error: formatIssues(parsed.error) }) };
  const check = model.checkPlacement(parsed.data.models);
  if (!check.ok) return { ok: false, out: JSON.stringify({ error: check.reason }) };
  const r = model.predict(parsed.data.models, { interference: parsed.data.interference ?? true });
  return {
    ok: true,
    out: JSON.stringify({ latencyMs: r.latencyMs.map(round), throughputPerS: r.throughputPerS.map(round) }),
  };
}

function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

/** Streams stdin to stdout; resolves to the exit code (1 if any line was bad). */
export async function runPredict(
  model: LatencyModel,
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
): Promise<number> {
  const rl = createInterface({ input, crlfDelay: Infinity });
  let failed = false;
  for await (const line of rl) {
    if (line.trim() === '') continue;
    const r = answerLine(model, line);
    if (!r.ok) failed = true;
    output.write(`${r.out}\n`);
  }
  return failed ? 1 : 0;
}

// Pipelines in `npm run bench:twin`: a pipeline's requests arrive as a model's do (its own rate and arrival
// process; its step models' own rate is 0), so its arrivals are drawn by the models' one rule, as entries after
// the models; and its line of the comparison, end to end: at the client, at the scheduler (its requests are
// counted under its name, scheduler/pipelineFront.ts) and in the twin, where the simulator reports pipelines.
import { pipelineStreams } from '../src/scenario/build.js';
import type { Scenario } from '../src/scenario/schema.js';
import type { SimResult } from '../src/sim/types.js';
import type { LoadgenReport } from '../tools/loadgen/report.js';

/** The scenario with each pipeline appended to its models, as an entry that arrives at the pipeline's rate. */
export function withPipelineEntries(s: Scenario): Scenario {
  const asModel = (p: Scenario['pipelines'][number]): Scenario['models'][number] => ({
    ...s.models[0]!,
    name: p.name,
    sloMs: p.sloMs,
    arrival: p.arrival,
    rate: p.rate,
  });
  return { ...s, models: [...s.models, ...s.pipelines.map(asModel)] };
}

/** The scenario replaying `files` (one per model, then one per pipeline) as its rates: the twin's arrivals. */
export function replayedScenario(s: Scenario, files: readonly string[]): Scenario {
  const trace = (i: number) => ({ kind: 'trace' as const, file: files[i]! });
  return {
    ...s,
    models: s.models.map((m, i) => ({ ...m, rate: trace(i) })),
    pipelines: s.pipelines.map((p, j) => ({ ...p, rate: trace(s.models.length + j) })),
  };
}

/** The twin's pipeline arrivals (the replayed scenario's, `replayedScenario`), for `simulate`'s input. */
export function twinPipelineInput(
  replayed: Scenario,
  traces: ReadonlyMap<string, readonly number[]>,
): { pipelineStreams?: ReturnType<typeof pipelineStreams> } {
  return replayed.pipelines.length > 0 ? { pipelineStreams: pipelineStreams(replayed, traces) } : {};
}

/** Pipeline `p`'s line: the share of its requests answered within its SLO at the client, the scheduler, the twin. */
export function pipelineLine(
  p: Scenario['pipelines'][number],
  report: LoadgenReport,
  metric: (name: string, labels: string) => number,
  twin: SimResult | null,
): string {
  const live = report.models.find((x) => x.model === p.name);
  const outcomes = (o: string) => metric('inss_requests_total', `model="${p.name}",outcome="${o}"`);
  const all = ['ok', 'late', 'dropped_slo', 'dropped_queue_full', 'not_deployed', 'worker_failed', 'shutdown'];
  const schedAtt = (100 * outcomes('ok')) / all.reduce((a, o) => a + outcomes(o), 0);
  const t = twin?.pipelines?.find((x) => x.pipeline === p.name);
  return (
    `pipeline ${p.name}: within its ${p.sloMs} ms SLO end to end: live ` +
    `${live?.sloAttainmentPct?.toFixed(2) ?? '-'}% (mean ${live?.latency.meanMs?.toFixed(1) ?? '-'} ms), ` +
    `at the scheduler ${schedAtt.toFixed(2)}%, twin ` +
    (t ? `${((100 * t.good) / t.arrivals).toFixed(2)}% (mean ${t.latencyMs.mean.toFixed(1)} ms)` : '-')
  );
}

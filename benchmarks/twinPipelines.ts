// Pipelines in `npm run bench:twin`: a pipeline's requests arrive as a model's do (its own rate and arrival
// process; its step models' own rate is 0), so its arrivals are drawn by the models' one rule, as entries after
// the models; and its line of the comparison, end to end: at the client, at the scheduler (its requests are
// counted under its name, scheduler/pipelineFront.ts) and in the twin, where the simulator reports pipelines.
import { pipelineStreams } from '../src/scenario/build.js';
import type { Scenario } from '../src/scenario/schema.js';
import type { TransportModel } from '../src/serving/transport.js';
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

/**
 * The path without the request's way in. The scheduler's clock starts a request at its headers read, so a request
 * that waits to be read while the scheduler's event loop stalls is not charged the wait there; in the twin every
 * request keeps its arrival and is queued no earlier than the one before it, so a slow way in (the stall, as the
 * request read before it measured it) delays every request behind it. The twin without it bounds that from the
 * other side: no way in at all.
 */
export function withoutWayIn(t: TransportModel): TransportModel {
  const { wayIn: _w, wayInSpread: _s, wayInSpreadLag1: _l, ...rest } = t;
  return rest;
}

/**
 * Pipeline `p`'s line: the share of its requests answered within its SLO at the client, the scheduler, the twin,
 * and the twin without the way in (`withoutWayIn`).
 */
export function pipelineLine(
  p: Scenario['pipelines'][number],
  report: LoadgenReport,
  metric: (name: string, labels: string) => number,
  twin: SimResult,
  noWayIn: SimResult,
): string {
  const live = report.models.find((x) => x.model === p.name);
  const outcomes = (o: string) => metric('inss_requests_total', `model="${p.name}",outcome="${o}"`);
  const all = ['ok', 'late', 'dropped_slo', 'dropped_queue_full', 'not_deployed', 'worker_failed', 'shutdown'];
  const schedAtt = (100 * outcomes('ok')) / all.reduce((a, o) => a + outcomes(o), 0);
  const within = (r: SimResult) => {
    const t = r.pipelines?.find((x) => x.pipeline === p.name);
    return t ? `${((100 * t.good) / t.arrivals).toFixed(2)}% (mean ${t.latencyMs.mean.toFixed(1)} ms)` : '-';
  };
  return (
    `pipeline ${p.name}: within its ${p.sloMs} ms SLO end to end: live ` +
    `${live?.sloAttainmentPct?.toFixed(2) ?? '-'}% (mean ${live?.latency.meanMs?.toFixed(1) ?? '-'} ms), ` +
    `at the scheduler ${schedAtt.toFixed(2)}%, twin ${within(twin)}, twin without the way in ${within(noWayIn)}`
  );
}

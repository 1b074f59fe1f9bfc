// The client's own leg in `npm run bench:twin`'s live runs: what the client sees of a task beyond the
// scheduler's span of it (docs/serving.md "The client's leg").
import type { TransportModel } from '../src/serving/transport.js';
import type { LoadgenReport } from '../tools/loadgen/report.js';

/** One live run of `inss up` driven by `inss loadgen`: the client's report and the scheduler's views. */
export interface LiveRun {
  readonly report: LoadgenReport;
  readonly transport: TransportModel;
  readonly eventLoopDelayMs: { p50: number; p99: number; max: number } | undefined;
  readonly metricsText: string;
}

/**
 * The client's own leg in a live run (docs/serving.md "The client's leg"): inss answers each task with
 * its own span (Server-Timing: request arrival -> answered); the client's latency less that span, less
 * the answer's way out the scheduler measured in that run, is what the scheduler cannot see: the
 * client's HTTP stack, the kernel both ways, and the wait for the scheduler's event loop before it
 * reads the request. Per model and over all tasks (ms a task).
 */
export function clientLegOf(
  live: LiveRun,
  tag: string,
  models: readonly string[],
): { ms: number; perModel: string; others: number[] } {
  const timed = live.report.models.reduce((a, m) => a + m.serverTimed, 0);
  if (timed === 0 || live.report.models.some((m) => m.serverTimed !== m.ok))
    throw new Error(
      `${tag}: every ok answer must carry inss's Server-Timing; ` +
        `${live.report.models.map((m) => `${m.model} ${m.serverTimed} of ${m.ok}`).join(', ')}`,
    );
  const wayOutMs = live.transport.wayOutMs ?? 0;
  const outside = (ms: readonly LoadgenReport['models'][number][]) => {
    const n = ms.reduce((a, m) => a + m.serverTimed, 0);
    const leg = n > 0 ? ms.reduce((a, m) => a + m.serverTimed * m.outsideServerMeanMs!, 0) / n - wayOutMs : 0;
    return Number(Math.max(0, leg).toFixed(4));
  };
  const rows = live.report.models;
  return {
    ms: outside(rows),
    perModel: rows.map((m) => `${m.model} ${(m.outsideServerMeanMs! - wayOutMs).toFixed(2)}`).join(', '),
    // Per name of `models` (a model's or a pipeline's), the leg over every other one's tasks (0 where none).
    others: models.map((name) => outside(rows.filter((r) => r.model !== name))),
  };
}

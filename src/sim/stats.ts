// The simulator's statistics over the whole run, per model (counts and latency histograms), and the
// result built from them at the end. Each decision epoch's own figures, which the policy observes, are
// src/serving/epochStats.ts (the scheduler's too).
import type { ClusterInfo } from '../policy/types.js';
import { LogHistogram } from './histogram.js';
import type { ModelStats, PipelineStats, SimResult, Summary, TimelinePoint } from './types.js';

export class SimStats {
  readonly arrivals: Float64Array;
  readonly served: Float64Array;
  readonly good: Float64Array;
  readonly late: Float64Array;
  readonly dropped: Float64Array;
  readonly delayed: Float64Array;
  readonly batchTasks: Float64Array;
  readonly batchCount: Float64Array;
  readonly latencyMs: LogHistogram[];
  readonly queueMs: LogHistogram[];
  readonly execMs: LogHistogram[];
  readonly timeline: TimelinePoint[] = [];
  /** Wall-clock time of each decision, ms (empty without a clock). */
  readonly decisionMs: number[] = [];
  swaps = 0;
  memoryOvercommits = 0;
  events = 0;

  constructor(nModels: number) {
    const counts = () => new Float64Array(nModels);
    const histograms = () => Array.from({ length: nModels }, () => new LogHistogram());
    this.arrivals = counts();
    this.served = counts();
    this.good = counts();
    this.late = counts();
    this.dropped = counts();
    this.delayed = counts();
    this.batchTasks = counts();
    this.batchCount = counts();
    this.latencyMs = histograms();
    this.queueMs = histograms();
    this.execMs = histograms();
  }

  /** A task of model m answered: its latency, its time queued and its batch's GPU time; `good`: within its SLO. */
  answered(m: number, latencyMs: number, queuedMs: number, execMs: number, good: boolean): void {
    this.latencyMs[m]!.add(latencyMs);
    this.queueMs[m]!.add(queuedMs);
    this.execMs[m]!.add(execMs);
    if (good) this.good[m]! += 1;
    else this.late[m]! += 1;
  }

  batchStarted(m: number, size: number): void {
    this.batchTasks[m]! += size;
    this.batchCount[m]! += 1;
  }
}

/** What was still queued or running of each model when the simulation ended. */
export interface Leftover {
  readonly queued: number;
  readonly delayed: number;
  readonly running: number;
}

/** The pipelines' end-to-end figures (pipelines.ts) and which served models are their steps. */
export interface PipelineResult {
  readonly stats: readonly PipelineStats[];
  readonly latencyMs: readonly LogHistogram[];
  /** Per served model: it runs a pipeline's step (its tasks are not clients' requests). */
  readonly isStep: (m: number) => boolean;
}

/**
 * The run's result: per model, then all together, over what clients see (SimResult): with `pipelines`, the
 * step models' tasks are left out of the totals and each pipeline request counts once. `shareTimePct`: per
 * GPU, the MPS share held integrated over the run (% x ms).
 */
export function simResult(
  cluster: ClusterInfo,
  stats: SimStats,
  leftover: readonly Leftover[],
  shareTimePct: Float64Array,
  durationMs: number,
  pipelines?: PipelineResult,
): SimResult {
  const summary = (h: LogHistogram): Summary => ({ p50: h.quantile(0.5), p99: h.quantile(0.99), mean: h.mean() });
  const models: ModelStats[] = cluster.models.map((m, i) => ({
    model: m.name,
    arrivals: stats.arrivals[i]!,
    served: stats.served[i]!,
    good: stats.good[i]!,
    late: stats.late[i]!,
    delayed: stats.delayed[i]!,
    dropped: stats.dropped[i]!,
    unfinished: leftover[i]!.queued + leftover[i]!.delayed + leftover[i]!.running,
    unfinishedLate: leftover[i]!.delayed,
    latencyMs: summary(stats.latencyMs[i]!),
    queueMs: summary(stats.queueMs[i]!),
    execMs: summary(stats.execMs[i]!),
    meanBatch: stats.batchCount[i]! > 0 ? stats.batchTasks[i]! / stats.batchCount[i]! : NaN,
  }));
  const direct = pipelines ? models.filter((_, i) => !pipelines.isStep(i)) : models;
  type Counts = Omit<ModelStats, 'model' | 'delayed' | 'latencyMs' | 'queueMs' | 'execMs' | 'meanBatch'>;
  const visible: readonly Counts[] = pipelines ? [...direct, ...pipelines.stats] : models;
  const sum = (f: (s: Counts) => number) => visible.reduce((a, s) => a + f(s), 0);
  const totalLat = new LogHistogram();
  stats.latencyMs.forEach((h, i) => {
    if (!pipelines?.isStep(i)) totalLat.merge(h);
  });
  pipelines?.latencyMs.forEach((h) => totalLat.merge(h));
  const finished = sum((s) => s.served + s.dropped + s.unfinishedLate);
  const pct = (x: number) => (finished > 0 ? (100 * x) / finished : 0);
  const secs = durationMs / 1000;
  return {
    durationMs,
    models,
    ...(pipelines ? { pipelines: pipelines.stats } : {}),
    arrivals: sum((s) => s.arrivals),
    served: sum((s) => s.served),
    good: sum((s) => s.good),
    late: sum((s) => s.late),
    dropped: sum((s) => s.dropped),
    unfinished: sum((s) => s.unfinished),
    throughputPerS: sum((s) => s.served) / secs,
    goodputPerS: sum((s) => s.good) / secs,
    sloViolationPct: pct(sum((s) => s.late + s.dropped + s.unfinishedLate)),
    latePct: pct(sum((s) => s.late + s.unfinishedLate)),
    dropPct: pct(sum((s) => s.dropped)),
    latencyMs: summary(totalLat),
    timeline: stats.timeline,
    decisionMs: stats.decisionMs,
    swaps: stats.swaps,
    memoryOvercommits: stats.memoryOvercommits,
    gpuSharePct: [...shareTimePct].map((s) => s / durationMs),
    batches: [...stats.batchCount].reduce((a, b) => a + b, 0),
    events: stats.events,
  };
}

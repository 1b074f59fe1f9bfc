// The twin's pipelines (src/serving/pipeline.ts states the rule the scheduler follows too): per pipeline its
// requests' arrivals, the budgets in force and its end-to-end counts. A request arriving at t is queued (after
// its way in) as a task of step 0's model stamped `stepStampMs(t, budgets, 0)`; when a step's batch ends, each
// of its tasks is queued at once as the next step's task, stamped for that step: the batch's time already holds
// its transport from the scheduler to the worker and back, and the answer of an inner step goes to the scheduler,
// not to the client, so no way out or way in lies between steps. The last step's answer goes the way out as a
// direct task's does. A dropped step task drops its request. A request counts once, end to end: within its SLO
// when its last step answers (way out and client leg included) within arrival + sloMs.
import type { ClusterInfo, ClusterPipeline, Deployment } from '../policy/types.js';
import { budgetsError, evenBudgets, stepStampMs } from '../serving/pipeline.js';
import type { ArrivalStream } from '../workload/arrivals.js';
import { LogHistogram } from './histogram.js';
import type { PipelineStats, Summary } from './types.js';

export class SimPipelines {
  readonly list: readonly ClusterPipeline[];
  /** Per served model, the pipeline it is a step of (-1: none), and which step. */
  readonly pipelineOf: Int32Array;
  readonly stepOf: Int32Array;
  /** Per pipeline, the SLO split in force (the deployment's `pipelineBudgetsMs`, even where absent). */
  readonly budgets: number[][];
  /** Per pipeline, its next request's arrival, and when it is queued (its arrival plus its way in). */
  readonly arrivalMs: Float64Array;
  readonly queuedMs: Float64Array;
  private readonly lastQueuedMs: Float64Array;
  readonly arrivals: Float64Array;
  readonly good: Float64Array;
  readonly late: Float64Array;
  readonly dropped: Float64Array;
  private readonly latencyMs: LogHistogram[];

  /** `wayInMs(m)`: the way in of a request whose first task is served model m's (0 without a transport model). */
  constructor(
    cluster: ClusterInfo,
    private readonly streams: readonly ArrivalStream[],
    private readonly wayInMs: (m: number) => number,
  ) {
    this.list = cluster.pipelines ?? [];
    const n = this.list.length;
    if (streams.length !== n) throw new RangeError(`${n} pipelines but ${streams.length} pipeline arrival streams`);
    this.pipelineOf = new Int32Array(cluster.models.length).fill(-1);
    this.stepOf = new Int32Array(cluster.models.length).fill(-1);
    this.list.forEach((p, i) =>
      p.stepModels.forEach((m, k) => {
        this.pipelineOf[m] = i;
        this.stepOf[m] = k;
      }),
    );
    this.budgets = this.list.map((p) => evenBudgets(p));
    const counts = () => new Float64Array(n);
    this.arrivalMs = counts();
    this.queuedMs = counts();
    this.lastQueuedMs = counts().fill(-Infinity);
    this.arrivals = counts();
    this.good = counts();
    this.late = counts();
    this.dropped = counts();
    this.latencyMs = this.list.map(() => new LogHistogram());
    for (let p = 0; p < n; p++) this.next(p);
  }

  get count(): number {
    return this.list.length;
  }

  /** Draws pipeline p's next request; a request is queued no earlier than the one before it (Requests.next). */
  next(p: number): void {
    const t = this.streams[p]!.next();
    this.arrivalMs[p] = t;
    this.queuedMs[p] = Math.max(t + this.wayInMs(this.list[p]!.stepModels[0]!), this.lastQueuedMs[p]!);
  }

  /** Pipeline p's request queued at `nowMs` is taken; returns its step-0 model. */
  taken(p: number, nowMs: number): number {
    this.lastQueuedMs[p] = nowMs;
    this.arrivals[p]! += 1;
    return this.list[p]!.stepModels[0]!;
  }

  /**
   * Takes the deployment's budgets (even where it names none); the step models whose budget changed. A split that
   * is not the pipeline's (budgetsError) is the policy's bug: it throws.
   */
  apply(d: Deployment): number[] {
    const changed: number[] = [];
    this.list.forEach((p, i) => {
      const b = d.pipelineBudgetsMs?.[p.name] ?? evenBudgets(p);
      const why = budgetsError(p, b);
      if (why !== undefined) throw new RangeError(`deployment's pipelineBudgetsMs: ${why}`);
      b.forEach((ms, k) => {
        if (ms === this.budgets[i]![k]) return;
        this.budgets[i]![k] = ms;
        changed.push(p.stepModels[k]!);
      });
    });
    return changed;
  }

  /** Model m's budget in force: its step's (m must be a step model). */
  budgetMs(m: number): number {
    return this.budgets[this.pipelineOf[m]!]![this.stepOf[m]!]!;
  }

  /** Whether model m runs the last step of its pipeline. */
  isLast(m: number): boolean {
    return this.stepOf[m]! === this.list[this.pipelineOf[m]!]!.stepModels.length - 1;
  }

  /** The model of the step after model m's. */
  nextModel(m: number): number {
    return this.list[this.pipelineOf[m]!]!.stepModels[this.stepOf[m]! + 1]!;
  }

  /** The deadline stamp of model m's task for a request that arrived at `originMs` (the shared rule). */
  stampMs(m: number, originMs: number): number {
    return stepStampMs(originMs, this.budgets[this.pipelineOf[m]!]!, this.stepOf[m]!);
  }

  /** A request of the pipeline model m is a step of is answered, `latencyMs` after its arrival. */
  answered(m: number, latencyMs: number): void {
    const p = this.pipelineOf[m]!;
    this.latencyMs[p]!.add(latencyMs);
    if (latencyMs <= this.list[p]!.sloMs) this.good[p]! += 1;
    else this.late[p]! += 1;
  }

  /** `n` tasks of step model m are dropped or lost: so are their requests. */
  droppedTasks(m: number, n: number): void {
    this.dropped[this.pipelineOf[m]!]! += n;
  }

  /** Each pipeline's end-to-end latencies. */
  latencies(): readonly LogHistogram[] {
    return this.latencyMs;
  }

  /** Each pipeline's end-to-end figures; `delayedOf(m)`: step model m's tasks in its delayed lane at the end. */
  stats(delayedOf: (m: number) => number): PipelineStats[] {
    const summary = (h: LogHistogram): Summary => ({ p50: h.quantile(0.5), p99: h.quantile(0.99), mean: h.mean() });
    return this.list.map((p, i) => {
      const served = this.good[i]! + this.late[i]!;
      return {
        pipeline: p.name,
        arrivals: this.arrivals[i]!,
        served,
        good: this.good[i]!,
        late: this.late[i]!,
        dropped: this.dropped[i]!,
        unfinished: this.arrivals[i]! - served - this.dropped[i]!,
        unfinishedLate: p.stepModels.reduce((s, m) => s + delayedOf(m), 0),
        latencyMs: summary(this.latencyMs[i]!),
      };
    });
  }
}

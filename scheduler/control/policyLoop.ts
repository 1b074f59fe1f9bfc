// The policy loop: the decision epoch's clock, the monitor (arrivals per epoch; a window of them gives
// the rates, src/serving/monitor.ts), the epoch's outcomes, and the policy made for the cluster. Each
// epoch observes, asks the policy, and hands its deployment to the worker set.
import type { DoorLoad } from '../../src/protocol/door.js';
import type { Logger } from 'pino';
import type { ClusterInfo, Deployment, GpuMode, Observation, Policy } from '../../src/policy/types.js';
import { type MonitorKind, RateMonitor } from '../../src/serving/monitor.js';
import type { ServingSettings } from '../../src/serving/settings.js';
import type { ControlObserver } from '../observer.js';
import { EpochStats } from '../../src/serving/epochStats.js';
import type { TaskOutcome } from '../metrics.js';
import type { ServedModelConfig, TaskAnswer } from './types.js';
import type { Batch, Worker } from './records.js';

export interface PolicyLoopDeps {
  readonly models: readonly ServedModelConfig[];
  readonly policyName: string;
  readonly createPolicy: (cluster: ClusterInfo) => Policy;
  /** The decision epoch, the monitor's window and its kind (src/serving/monitor.ts; absent: `mean`). */
  readonly settings: Pick<ServingSettings, 'epochMs' | 'monitorWindowMs'> & { readonly monitor?: MonitorKind };
  /** Per model, the rate to plan for until the monitor has seen a full window. */
  readonly initialRatesPerS: readonly number[];
  readonly clock: () => number;
  readonly nowIso: () => string;
  readonly observe: ControlObserver;
  readonly log: Logger;
}

/** A deployment with model and GPU names, as logs and observers show it. */
export interface NamedDeployment {
  readonly placements: unknown[];
  readonly gpuModes?: readonly GpuMode[];
  /** The plan's step budgets per pipeline (Deployment.pipelineBudgetsMs), which scheduler/pipelineFront.ts reads. */
  readonly pipelineBudgetsMs?: Readonly<Record<string, readonly number[]>>;
}

export class PolicyLoop {
  readonly stats: EpochStats;
  private readonly monitor: RateMonitor;
  private policy: Policy | null = null;
  private policyError: string | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: PolicyLoopDeps) {
    this.stats = new EpochStats(deps.models.length);
    this.monitor = new RateMonitor(
      deps.models.length,
      deps.settings.epochMs,
      deps.settings.monitorWindowMs,
      deps.settings.monitor,
    );
  }

  /** Why the policy cannot run on this cluster; null when it can (or there is no cluster yet). */
  get error(): string | null {
    return this.policyError;
  }

  /** Runs `epoch` every `epochMs` until `stop`. */
  start(epoch: () => void): void {
    this.timer = setInterval(epoch, this.deps.settings.epochMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** A task of model m arrived at `atMs`. */
  arrival(m: number, atMs: number): void {
    this.monitor.arrival(m, atMs);
  }

  /** The monitor's rule: the scenario's rates until a full window is seen. */
  ratesPerS(): number[] {
    return this.monitor.ratesPerS(this.deps.initialRatesPerS);
  }

  /** Closes the monitor's epoch (its arrivals count in the rate window from now on). */
  endMonitorEpoch(): void {
    this.monitor.endEpoch();
  }

  /** Makes the policy for a new cluster (none without one); an error is logged and kept for readiness. */
  clusterChanged(cluster: ClusterInfo | null): void {
    const { log, policyName } = this.deps;
    if (cluster === null) {
      this.policy = null;
      return;
    }
    try {
      this.policy = this.deps.createPolicy(cluster);
      this.policyError = null;
      log.info(
        { policy: policyName, gpus: cluster.gpus.length, models: this.deps.models.length },
        'policy ready for the cluster',
      );
    } catch (e) {
      this.policy = null;
      this.policyError = (e as Error).message;
      log.error({ policy: policyName, err: this.policyError }, 'the policy cannot run on this cluster');
    }
  }

  /** The policy's view now: the monitor's rates and burstiness, the queues, the epoch's outcomes. */
  observation(queued: readonly number[], current: Deployment): Observation {
    return this.stats.observe(this.deps.clock(), this.monitor, this.deps.initialRatesPerS, queued, current);
  }

  /**
   * Counts an answered task of model m in the epoch: a result as served (violated when late); an error
   * as dropped when it is the service's (SLO, queue full, worker failed), not the client's or the
   * deployment's.
   */
  answered(m: number, a: TaskAnswer, outcome: TaskOutcome, latencyMs: number): void {
    if (a.ok) this.stats.answered(m, latencyMs, outcome === 'late');
    else if (a.reason === 'slo' || a.reason === 'queue-full' || a.reason === 'worker-failed') this.stats.dropped(m);
  }

  /**
   * A batch came back after `latencyMs`: timed in the epoch, with its record for the policy's telemetry
   * (online profiling, src/policy/online/): its GPU, size and share, and the other models' batches in flight on
   * its GPU as it ends (the scheduler does not see when a batch starts on the GPU); on a time-shared GPU the
   * overlapping batches are timed at an even split (src/model/pooledGpu.ts).
   */
  batchTimed(b: Batch, latencyMs: number, workers: readonly Worker[], memoryMb?: number): void {
    const w = b.worker;
    if (w.gpu < 0) return this.stats.batchTimed(w.model, latencyMs);
    const others = workers.filter((x) => x !== w && x.gpu === w.gpu && x.inFlight.length > 0);
    const even = 100 / (1 + others.length);
    const pct = (x: Worker) => (b.timeshared ? even : x.pct);
    const beside = others.map((x) => ({ model: x.model, batch: x.inFlight[0]!.size, pct: pct(x) }));
    this.stats.batchTimed(w.model, latencyMs, {
      gpu: w.gpu,
      batch: b.size,
      pct: pct(w),
      pooled: b.timeshared,
      beside,
      ...(memoryMb !== undefined ? { memoryMb } : {}),
    });
  }

  /**
   * What a front door served since its last report (scheduler/doorDesk.ts): its arrivals, answers and batch
   * times count in the monitor and the epoch as this process's own, so the policy sees the whole cluster's load.
   */
  doorLoad(load: DoorLoad, indexOf: (model: string) => number): void {
    const now = this.deps.clock();
    for (const r of load.models) {
      const m = indexOf(r.model);
      if (m < 0) continue;
      for (let i = 0; i < r.arrivals; i++) this.monitor.arrival(m, now);
      for (let i = 0; i < r.served; i++) this.stats.answered(m, r.latencySumMs / r.served, i < r.violated);
      if (r.dropped > 0) this.stats.dropped(m, r.dropped);
    }
    for (const b of load.batches) {
      const m = indexOf(b.model);
      if (m >= 0) this.stats.batchTimed(m, b.latencyMs);
    }
  }

  /** Publishes the epoch's rate and on-time ratio per model, and starts the next epoch's counts. */
  endEpoch(obs: Observation): void {
    this.deps.models.forEach((m, i) => {
      const done = obs.lastEpoch.served[i]! + obs.lastEpoch.dropped[i]!;
      this.deps.observe.epochObserved(
        m.name,
        obs.ratePerS[i]!,
        done > 0 ? (obs.lastEpoch.served[i]! - obs.lastEpoch.violated[i]!) / done : null,
      );
    });
    this.stats.reset();
  }

  /**
   * Asks the policy and hands its deployment to `apply` (which says whether anything changed). A
   * policy that throws keeps the current deployment. No-op without a policy.
   */
  decide(obs: Observation, apply: (d: Deployment) => boolean, named: (d: Deployment) => NamedDeployment): void {
    if (!this.policy) return;
    const { clock, log } = this.deps;
    const t0 = clock();
    let d: Deployment;
    try {
      d = this.policy.decide(obs);
    } catch (e) {
      log.error({ err: (e as Error).message }, 'the policy failed to decide; keeping the current deployment');
      return;
    }
    const decideMs = clock() - t0;
    const changed = apply(d);
    this.deps.observe.decided({
      policy: this.deps.policyName,
      ratePerS: obs.ratePerS,
      deployment: named(d),
      decideMs,
      nowIso: this.deps.nowIso(),
      changed,
    });
    if (changed) log.info({ placements: named(d).placements, decideMs: Number(decideMs.toFixed(3)) }, 'new deployment');
  }
}

// The control plane's one observer port: what happens in it (tasks answered, batches sent and run,
// agents coming and going, decisions, the deployment in force), told to whoever records it. The
// control plane (scheduler/control.ts) calls only this interface; the Prometheus metrics
// (scheduler/metrics.ts) and the SQLite store (scheduler/store.ts) each implement the events they
// record, and `fanOut` tells every observer of each event.

/** What became of a task: the `outcome` label of inss_requests_total. */
export type TaskOutcome =
  'ok' | 'late' | 'dropped_slo' | 'dropped_queue_full' | 'not_deployed' | 'worker_failed' | 'shutdown' | 'bad_input';

/** A worker the scheduler wants, as the store keeps it. */
export interface PlacementRow {
  readonly workerId: string;
  readonly agentId: string;
  /** The GPU's index on its agent. */
  readonly gpu: number;
  readonly model: string;
  readonly pct: number;
  readonly batch: number;
  readonly role: string;
}

export interface AgentRecord {
  readonly agentId: string;
  readonly hostname: string;
  readonly workerKind: string;
  readonly gpus: unknown;
  readonly connected: boolean;
  readonly nowIso: string;
}

export interface DecisionRecord {
  readonly policy: string;
  readonly ratePerS: readonly number[];
  /** The deployment with model names and `agent:gpu` GPU names. */
  readonly deployment: unknown;
  readonly decideMs: number;
  readonly nowIso: string;
  /** The deployment differs from the one in force (only those are kept in the store's history). */
  readonly changed: boolean;
}

export interface ControlObserver {
  /** A task was answered (once per accepted task), `seconds` after it arrived. */
  taskFinished(model: string, outcome: TaskOutcome, seconds: number): void;
  /** A model's task buffer holds `tasks`. */
  queueChanged(model: string, tasks: number): void;
  /** A batch was sent to a worker; each of its tasks had waited `waitedSeconds[i]`. */
  batchSent(model: string, size: number, waitedSeconds: readonly number[]): void;
  /** A worker answered a batch of `size` tasks, reporting `seconds` of execution. */
  batchExecuted(model: string, size: number, seconds: number): void;
  /** A batch spent `seconds` outside its worker (scheduler -> agent -> worker and back). */
  batchTransported(model: string, seconds: number): void;
  agentJoined(a: AgentRecord): void;
  agentLeft(agentId: string, nowIso: string): void;
  /** Agents connected now. */
  agentCount(n: number): void;
  /** An agent's reading of a cluster GPU (null: not read). */
  gpuMeasured(gpu: number, utilPct: number | null, memUsedMb: number | null): void;
  workerLatencyMeasured(workerId: string, model: string, gpu: number, seconds: number): void;
  /** The policy decided (whether or not anything changed). */
  decided(d: DecisionRecord): void;
  /** The monitor's view of a model at the end of an epoch (attainment null: no task finished). */
  epochObserved(model: string, ratePerS: number, sloAttainment: number | null): void;
  swapCompleted(): void;
  /** What the latency model predicts for a cluster GPU's serving workers. */
  gpuPredicted(gpu: number, sharePct: number, memMb: number): void;
  /** Workers by their agent's last word on them. */
  workerStatesCounted(counts: Readonly<Record<string, number>>): void;
  /** The workers the scheduler wants now (persisted: a restarted scheduler reads their batch sizes back). */
  placementsChanged(rows: readonly PlacementRow[], nowIso: string): void;
}

/** One observer that tells each of `observers` of every event it implements. */
export function fanOut(observers: readonly Partial<ControlObserver>[]): ControlObserver {
  const each =
    <K extends keyof ControlObserver>(k: K) =>
    (...args: Parameters<ControlObserver[K]>): void => {
      for (const o of observers)
        (o[k] as ((...a: Parameters<ControlObserver[K]>) => void) | undefined)?.call(o, ...args);
    };
  return {
    taskFinished: each('taskFinished'),
    queueChanged: each('queueChanged'),
    batchSent: each('batchSent'),
    batchExecuted: each('batchExecuted'),
    batchTransported: each('batchTransported'),
    agentJoined: each('agentJoined'),
    agentLeft: each('agentLeft'),
    agentCount: each('agentCount'),
    gpuMeasured: each('gpuMeasured'),
    workerLatencyMeasured: each('workerLatencyMeasured'),
    decided: each('decided'),
    epochObserved: each('epochObserved'),
    swapCompleted: each('swapCompleted'),
    gpuPredicted: each('gpuPredicted'),
    workerStatesCounted: each('workerStatesCounted'),
    placementsChanged: each('placementsChanged'),
  };
}

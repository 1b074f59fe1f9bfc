// The scheduler's control plane: the task buffer, the monitor, the policy loop, the worker set and the
// dispatcher. It owns no socket: the hub hands it agent messages and it sends through `AgentLink`;
// the HTTP layer hands it tasks. Time comes from the injected `clock` (ms, monotonic).
//
// Workers follow the simulator's rules (src/sim/simulator.ts), so the running system behaves as the
// digital twin predicts:
// - applying a deployment: a placement whose worker already runs (same model, GPU and share) keeps it
//   and only its batch size and timeout change, at once; any other placement gets a new worker, which
//   is a shadow of the model's worker it replaces (same GPU preferred): the old one keeps serving until
//   the new one reports ready, then it leaves the desired set, finishes its batch and is stopped by its
//   agent; workers no longer wanted leave the desired set at once (their batches in flight finish);
// - dispatching: per model, each free serving worker takes batches by the shared dispatch rule
//   (src/sim/dispatch.ts) on its predicted t_inf table; a worker takes its next batch while one is in
//   flight once that one's predicted GPU time is over, where there is transport to hide (pipelining,
//   `nextBatchAtMs`, the simulator's rule too); on a pooled (timeshare) GPU, as many batches at once
//   as its reported mode allows (src/model/pooledGpu.ts: one when serial, one per worker when overlapping).
// - the path of a batch: straight to the worker's data socket when its agent reported one and the
//   connection is up (`DirectLink`, scheduler/workerLink.ts), else through the agent's WebSocket;
//   either way the batch names the worker's whole identity and the worker refuses one not its own.
// - queueing: each model's queue policy (src/serving/queuePolicy.ts, the simulator's too): a task that
//   times out is dropped or moved to the model's delayed lane, served late when a worker has nothing
//   on time to start; a task arriving at a full queue makes room by dropping the oldest delayed task,
//   or is rejected (`queue-full`). The dispatch rule's arrival rate is the monitor's, and its margin
//   the p99 of how late this process's dispatch timers fire (src/serving/lateness.ts).
// Every accepted task is answered exactly once: a result, or an error with its reason (dropped because
// it cannot meet its SLO, queue full, model not deployed, worker failed, shutting down). A batch
// refused because its worker was retiring goes back to the head of its queue.
import type { Logger } from 'pino';
import type { ClusterInfo, Deployment, GpuMode, Observation, Placement, Policy } from '../src/policy/types.js';
import type { Profile } from '../src/profile/schema.js';
import {
  AGENT_PROTOCOL_VERSION,
  type AgentGpu,
  type DataEndpoint,
  type DesiredWorker,
  type FromAgent,
  type ToAgent,
  type WorkerIdentity,
  workerKey,
  type WorkerStatus,
} from '../src/protocol/agent.js';
import type { ModelSignature, SampleEncoding, TensorRef } from '../src/protocol/tensor.js';
import { FromWorkerSchema, type RunningBatch, WORKER_PROTOCOL_VERSION } from '../src/protocol/worker.js';
import { LatenessWindow } from '../src/serving/lateness.js';
import { RateMonitor } from '../src/serving/monitor.js';
import {
  admit,
  onTimeBudgetMs,
  type QueuePolicy,
  type QueuePolicyConfig,
  resolveQueuePolicy,
} from '../src/serving/queuePolicy.js';
import { DEFAULT_SERVING_SETTINGS, type ServingSettings } from '../src/serving/settings.js';
import { nextModelsOnFreedGpu, pastDeadline } from '../src/serving/rules.js';
import { dispatchBudgetMs, idleOverheadMs, learnedOverheadMs, TransportFit } from '../src/serving/transport.js';
import { onReady, planApply, type WorkerView as PlanView } from '../src/serving/workerSet.js';
import {
  dispatchModel,
  type DispatchRules,
  type DispatchView,
  MAX_PRED_BATCH,
  nextBatchAtMs,
  predictedMs,
  predictionTable,
} from '../src/serving/dispatch.js';
import { pooledConcurrency } from '../src/model/pooledGpu.js';
import { carryModes, clusterView, gpuIndex, type GpuRef } from './clusterView.js';
import type { TaskOutcome, WorkerView } from './metrics.js';
import { type ControlObserver, fanOut } from './observer.js';
import type { PlacementRow } from './store.js';
import type { DirectLink } from './workerLink.js';

export interface ServedModelConfig {
  readonly name: string;
  readonly sloMs: number;
  readonly signature: ModelSignature;
  /** The largest batch dimension one request may carry (Triton's max_batch_size); default DEFAULT_MAX_BATCH_SIZE. */
  readonly maxBatchSize?: number;
  /** Its queue policy (src/serving/queuePolicy.ts; the scenario's `models[i].queuePolicy`); absent: the default. */
  readonly queuePolicy?: QueuePolicyConfig;
}

/** The scenario's serving settings (src/serving/settings.ts), the same the simulator runs by. */
export type ControlSettings = ServingSettings;

/** Sends a message to an agent; false when it is not connected. */
export interface AgentLink {
  /** `payload`: the frame's payload as parts written one after another (not copied together). */
  send(agentId: string, msg: ToAgent, payload?: readonly Uint8Array[]): boolean;
}

export interface TaskInput {
  readonly name: string;
  readonly datatype: TensorRef['datatype'];
  readonly shape: readonly number[];
  /** How `data` holds the sample (scheduler/kserve.ts InferInput); absent: the tensor's own bytes. */
  readonly encoding?: SampleEncoding;
  readonly data: Buffer;
}

/**
 * When the task's request reached the scheduler (its headers read, by the control plane's clock): the
 * task's deadline and latency count from then, and the time to its submission is the request's way in
 * (docs/serving.md, "The path in the twin"). Absent: the task arrives when it is submitted.
 */
export interface TaskArrival {
  readonly receivedMs: number;
}

export interface TaskOutput {
  readonly name: string;
  readonly datatype: TensorRef['datatype'];
  readonly shape: number[];
  readonly data: Buffer;
}

/**
 * Why a task got an error instead of a result: 'slo', it timed out under a reject policy or was the
 * oldest delayed task when its queue was full; 'queue-full', its model already held its policy's
 * `maxQueueSize` tasks, all on time (the client may retry: the service is overloaded, as 503);
 * 'bad-input', the worker could not decode its image.
 */
export type TaskErrorReason = 'slo' | 'queue-full' | 'not-deployed' | 'worker-failed' | 'shutdown' | 'bad-input';

export type TaskAnswer =
  | { readonly ok: true; readonly outputs: readonly TaskOutput[]; readonly latencyMs: number }
  | { readonly ok: false; readonly reason: TaskErrorReason; readonly error: string };

export interface ControlOptions {
  readonly models: readonly ServedModelConfig[];
  /** Profiles by id, for the GPUs agents report. */
  readonly profiles: ReadonlyMap<string, Profile>;
  readonly policyName: string;
  /** Creates the policy for a cluster; throws when it cannot run there (the error is logged and shown in readiness). */
  readonly createPolicy: (cluster: ClusterInfo) => Policy;
  readonly link: AgentLink;
  /** The direct path to workers' data sockets; absent: every batch goes through its agent. */
  readonly direct?: DirectLink;
  readonly clock: () => number;
  readonly wallClock?: () => Date;
  readonly logger: Logger;
  /** Who records what happens (scheduler/observer.ts): the metrics, the SQLite store. */
  readonly observers: readonly Partial<ControlObserver>[];
  /** The placements the last run persisted (a restarted scheduler adopts its workers with their batch sizes). */
  readonly storedPlacements?: () => readonly PlacementRow[];
  readonly settings?: Partial<ControlSettings>;
  /** Rates to plan for before traffic is seen (per model name); default 0 (the first epochs learn them). */
  readonly initialRatePerS?: Readonly<Record<string, number>>;
  /**
   * The generation of the first worker this control plane creates (each next one gets one more).
   * Default: the wall clock in ms, so a restarted scheduler's workers never share a generation with
   * those of the run before it; tests with a manual clock give a fixed one.
   */
  readonly firstGeneration?: number;
}

interface Task {
  readonly model: number;
  readonly arrivalMs: number;
  readonly input: Buffer;
  readonly encoding: SampleEncoding | undefined;
  readonly answer: (a: TaskAnswer) => void;
  /** When it was submitted (arrivalMs + the request's way in). */
  readonly submittedMs: number;
  dispatchedMs: number;
}

/** A FIFO with amortised O(1) shift and the ability to put tasks back at the head. */
class Fifo {
  private items: Task[] = [];
  private head = 0;
  get length(): number {
    return this.items.length - this.head;
  }
  /**
   * Appends a task in order of arrival: a request that arrived before others but whose body took
   * longer to read and parse goes ahead of them (the deadline order the dispatch rule and expiry
   * read at the head). Usually the tail, so O(1).
   */
  push(t: Task): void {
    let i = this.items.length;
    this.items.push(t);
    while (i > this.head && this.items[i - 1]!.arrivalMs > t.arrivalMs) {
      this.items[i] = this.items[i - 1]!;
      i--;
    }
    this.items[i] = t;
  }
  peek(): Task {
    return this.items[this.head]!;
  }
  shift(): Task {
    const t = this.items[this.head]!;
    // Let go of the task at once: a slot kept until the next compaction held its input (a 602 KB
    // image) alive, up to 1024 per model (the soak's scheduler grew by ~650 KB per task).
    this.items[this.head++] = undefined as unknown as Task;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return t;
  }
  /** Puts tasks back at the head, keeping their order (a batch its worker refused). */
  unshiftAll(ts: readonly Task[]): void {
    this.items = [...ts, ...this.items.slice(this.head)];
    this.head = 0;
  }
  drain(): Task[] {
    const all = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return all;
  }
}

type Role = 'active' | 'shadow' | 'retiring';

interface Worker {
  readonly workerId: string;
  /** Part of its identity (src/protocol/agent.ts): given at creation, or adopted from its agent. */
  readonly generation: number;
  readonly agentId: string;
  readonly localGpu: number;
  /** Index into the cluster's GPUs. */
  gpu: number;
  readonly model: number;
  readonly pct: number;
  batch: number;
  timeoutMs: number;
  role: Role;
  /** In the desired set sent to its agent; false once it is let go (it finishes what it holds). */
  wanted: boolean;
  /** The agent's last word on it. */
  state: WorkerStatus['state'] | 'unknown';
  pid: number | null;
  replaces: Worker | null;
  /** Its batches sent and not yet answered, oldest first (at most PIPELINE_DEPTH). */
  inFlight: Batch[];
  predicted: Float64Array;
  /** Moving average of (round trip of a batch) - (time the worker reports for it), ms. */
  overheadMs: number;
  /** Batches answered since the last epoch (an idle worker's overhead estimate decays). */
  batchesThisEpoch: number;
  /** When its last batch was answered (a batch sent before that waited behind it: pipelining). */
  lastAnsweredMs: number;
  /** GPU time its workers reported for batches on the direct path this epoch (the agent sees none of them). */
  directLatencySumMs: number;
  directBatches: number;
  /** Its data socket as its agent last reported it (null: none; its batches go through the agent). */
  data: DataEndpoint | null;
}

interface Batch {
  readonly batchId: string;
  readonly worker: Worker;
  readonly tasks: Task[];
  readonly sentMs: number;
  /** Sent on the worker's data socket (true) or through its agent. */
  readonly direct: boolean;
  /** Wall-clock ms when it was written (per-hop tracing against the worker's timestamps). */
  readonly sentWallMs: number;
  readonly bytes: number;
  /** Its predicted GPU time when it was sent (when the worker may take the next one: pipelining). */
  readonly predictedMs: number;
  /** It was sent to a time-shared GPU and counts in that GPU's batches in flight (`gpuRunning`). */
  readonly timeshared: boolean;
}

interface AgentEntry {
  readonly agentId: string;
  gpus: AgentGpu[];
  connected: boolean;
  hostname: string;
  workerKind: string;
}

/** The control plane's workers as the shared worker-set plan reads them (src/serving/workerSet.ts). */
const CONTROL_VIEW: PlanView<Worker> = {
  model: (w) => w.model,
  gpu: (w) => w.gpu,
  pct: (w) => w.pct,
  phase: (w) => (!w.wanted ? 'draining' : w.role === 'shadow' ? 'starting' : w.role),
  replaces: (w) => w.replaces,
};

export class Control {
  readonly models: readonly ServedModelConfig[];
  private readonly settings: ControlSettings;
  private readonly queues: Fifo[];
  /** Per model, tasks that timed out and wait for a worker with nothing on time to start (its queue policy). */
  private readonly delayedQueues: Fifo[];
  private readonly policies: QueuePolicy[];
  /** The dispatch rule's arrival rates (the monitor's, taken at each epoch) and its margin (timer lateness p99). */
  private ratesPerS: readonly number[];
  private readonly lateness = new LatenessWindow();
  private rules: DispatchRules;
  private readonly timers: (NodeJS.Timeout | null)[];
  private readonly timerAt: number[];
  private readonly agents = new Map<string, AgentEntry>();
  /** Per agent (host): its batches' transport fitted to fixed + per-megabyte cost (the twin's model of the path). */
  private readonly transport = new Map<string, TransportFit>();
  /** The requests' way in (headers read -> task submitted), fitted to fixed + per megabyte of input. */
  private readonly wayIn = new TransportFit();
  /**
   * The answers' way out (answer -> response handed to the kernel): the dispatch rule's estimate
   * (learned as a worker's transport is, `learnedOverheadMs`), and its sum and count (the twin's mean).
   */
  private wayOutMs = 0;
  private wayOutSumMs = 0;
  private wayOutN = 0;
  private workers: Worker[] = [];
  private readonly batches = new Map<string, Batch>();
  private cluster: ClusterInfo | null = null;
  /** Cluster GPU index -> (agent, local index). */
  private gpuRefs: readonly GpuRef[] = [];
  private gpuModes: GpuMode[] = [];
  /** Time-shared GPUs: batches in flight on each (send -> answer, transport included). */
  private gpuRunning: number[] = [];
  /** Per cluster GPU: batches that may run on it at once when pooled (its agent's reported mode). */
  private pooledLimit: number[] = [];
  private policy: Policy | null = null;
  private policyError: string | null = null;
  private current: Deployment = { placements: [] };
  private epochTimer: NodeJS.Timeout | null = null;
  private nextWorker = 1;
  private nextGeneration: number;
  private nextBatch = 1;
  private generation = 0;
  private stopped = false;
  // Monitor: arrivals per epoch (a window of them gives the rate, src/serving/monitor.ts), and last epoch's outcomes.
  private readonly monitor: RateMonitor;
  private readonly initialRates: number[];
  private readonly epochStats: {
    served: number[];
    violated: number[];
    dropped: number[];
    execSum: number[];
    execN: number[];
    latSum: number[];
  };
  private readonly log: Logger;
  private readonly observe: ControlObserver;
  /** The dispatch loop's view of the control plane (src/sim/dispatch.ts, shared with the simulator). */
  private dispatchNow = 0;
  private readonly dispatchView: DispatchView<Worker> = {
    model: (w) => w.model,
    canRun: (w) => this.canRun(w),
    batch: (w) => w.batch,
    timeoutMs: (w) => w.timeoutMs,
    predicted: (w) => w.predicted,
    overheadMs: (w) => w.overheadMs,
    gpu: (w) => w.gpu,
    timeshared: (w) => this.gpuModes[w.gpu] === 'timeshare',
    gpuBusy: (w) => (this.gpuRunning[w.gpu] ?? 0) > 0,
    budgetMs: (m) => this.onTimeMs(m),
    ratePerS: (m) => this.ratesPerS[m]!,
    delays: (m) => this.policies[m]!.delay,
    queued: (m) => this.queues[m]!.length,
    headArrivalMs: (m) => this.queues[m]!.peek().arrivalMs,
    delayed: (m) => this.delayedQueues[m]!.length,
    drop: (m, w) => {
      const t = this.queues[m]!.shift();
      const slo = this.models[m]!.sloMs;
      this.finish(
        t,
        {
          ok: false,
          reason: 'slo',
          error: `dropped: the task cannot meet its ${slo} ms SLO (predicted batch time ${w.predicted[1]!.toFixed(1)} ms or more, plus ${w.overheadMs.toFixed(1)} ms of measured transport, after waiting ${(this.dispatchNow - t.arrivalMs).toFixed(1)} ms)`,
        },
        'dropped_slo',
      );
    },
    delay: (m) => this.delayedQueues[m]!.push(this.queues[m]!.shift()),
    // Sent now (a timer armed early decides as of its instant, `tryDispatch`; the batch leaves when it leaves).
    start: (w, size) => this.sendBatch(w, size, Math.min(this.dispatchNow, this.opts.clock())),
    startDelayed: (w, size) =>
      this.sendBatch(w, size, Math.min(this.dispatchNow, this.opts.clock()), this.delayedQueues[w.model]),
    pipelinedAtMs: (w) => (w.inFlight.length > 0 && this.serving(w) ? this.nextBatchAt(w) : Infinity),
    idle: (w) => w.inFlight.length === 0,
  };

  constructor(private readonly opts: ControlOptions) {
    this.models = opts.models;
    this.settings = { ...DEFAULT_SERVING_SETTINGS, ...opts.settings };
    const n = opts.models.length;
    this.queues = opts.models.map(() => new Fifo());
    this.delayedQueues = opts.models.map(() => new Fifo());
    this.policies = opts.models.map((m) => resolveQueuePolicy(m.queuePolicy));
    this.timers = new Array<NodeJS.Timeout | null>(n).fill(null);
    this.timerAt = new Array<number>(n).fill(Infinity);
    this.monitor = new RateMonitor(n, this.settings.epochMs, this.settings.monitorWindowMs);
    this.initialRates = opts.models.map((m) => opts.initialRatePerS?.[m.name] ?? 0);
    this.ratesPerS = this.monitor.ratesPerS(this.initialRates);
    this.rules = { slack: this.settings.dispatchSlack, marginMs: 0 };
    const z = () => new Array<number>(n).fill(0);
    this.epochStats = { served: z(), violated: z(), dropped: z(), execSum: z(), execN: z(), latSum: z() };
    this.log = opts.logger;
    this.observe = fanOut(opts.observers);
    this.nextGeneration = opts.firstGeneration ?? (opts.wallClock?.() ?? new Date()).getTime();
  }

  start(): void {
    this.epochTimer = setInterval(() => this.epoch(), this.settings.epochMs);
  }

  /** Answers every waiting task with a shutdown error; no task is left unanswered. */
  stop(): void {
    this.stopped = true;
    if (this.epochTimer) clearInterval(this.epochTimer);
    for (const t of this.timers) if (t) clearTimeout(t);
    for (const q of [...this.queues, ...this.delayedQueues])
      for (const t of q.drain())
        this.finish(t, { ok: false, reason: 'shutdown', error: 'the scheduler is shutting down' }, 'shutdown');
    for (const b of this.batches.values())
      for (const t of b.tasks)
        this.finish(t, { ok: false, reason: 'shutdown', error: 'the scheduler is shutting down' }, 'shutdown');
    this.batches.clear();
    for (const w of this.workers) this.opts.direct?.close(this.linkKey(w));
  }

  modelIndex(name: string): number {
    return this.models.findIndex((m) => m.name === name);
  }

  /** A model is ready when it has a worker that takes batches. */
  modelReady(m: number): boolean {
    return this.workers.some((w) => w.model === m && this.serving(w));
  }

  /** What /v2/health/ready and `inss up` report. */
  readiness(): { ready: boolean; notReady: string[]; policyError: string | null } {
    const notReady = this.models.filter((_, m) => !this.modelReady(m)).map((m) => m.name);
    return { ready: notReady.length === 0, notReady, policyError: this.policyError };
  }

  /** A snapshot for GET /v2/inss/cluster (operators, tests). */
  snapshot(): unknown {
    return {
      policy: this.opts.policyName,
      policyError: this.policyError,
      settings: this.settings,
      agents: [...this.agents.values()].map((a) => ({
        agentId: a.agentId,
        connected: a.connected,
        hostname: a.hostname,
        workerKind: a.workerKind,
        gpus: a.gpus,
      })),
      gpus: this.gpuRefs.map((r, g) => ({
        index: g,
        agentId: r.agentId,
        local: r.local,
        profile: this.cluster?.gpus[g]?.profileId,
        mode: this.gpuModes[g] ?? 'mps',
        pooled: this.cluster?.gpus[g]?.pooled,
      })),
      workers: this.workers.map((w) => ({
        workerId: w.workerId,
        generation: w.generation,
        agentId: w.agentId,
        gpu: w.gpu,
        localGpu: w.localGpu,
        model: this.models[w.model]!.name,
        pct: w.pct,
        batch: w.batch,
        role: w.role,
        state: w.state,
        pid: w.pid,
        busy: w.inFlight.length > 0,
        // Where its batches go: its data socket (the secret is not shown), or null (through its agent).
        data: w.data?.address ?? null,
        overheadMs: Number(w.overheadMs.toFixed(3)),
      })),
      queued: Object.fromEntries(this.models.map((m, i) => [m.name, this.queues[i]!.length])),
      delayed: Object.fromEntries(this.models.map((m, i) => [m.name, this.delayedQueues[i]!.length])),
      dispatchMarginMs: Number(this.rules.marginMs.toFixed(3)),
      deployment: this.current,
      // What `inss bench --transport FILE` takes (one agent's entry): docs/serving.md, "The path in the twin".
      // The way in and out are the scheduler's (the same in every host's entry).
      transport: Object.fromEntries(
        [...this.transport].map(([agentId, f]) => [
          agentId,
          { ...f.model(), batches: f.samples, ...this.ways(), ...(f.spread() ? { spread: f.spread() } : {}) },
        ]),
      ),
    };
  }

  /** The requests' way in and the answers' way out as measured so far (the twin's terms; empty before any). */
  private ways(): {
    wayIn?: { fixedMs: number; perMbMs: number };
    requests?: number;
    wayInSpread?: number[];
    wayOutMs?: number;
    answers?: number;
  } {
    const wayIn = this.wayIn.model();
    const wayInSpread = this.wayIn.spread();
    return {
      ...(wayIn ? { wayIn, requests: this.wayIn.samples } : {}),
      ...(wayInSpread ? { wayInSpread } : {}),
      ...(this.wayOutN > 0
        ? { wayOutMs: Number((this.wayOutSumMs / this.wayOutN).toFixed(4)), answers: this.wayOutN }
        : {}),
    };
  }

  /** The workers with the share and batch in force (read-only: Triton's model configuration, metrics). */
  workerViews(): WorkerView[] {
    return this.workers.map((w) => ({
      workerId: w.workerId,
      model: this.models[w.model]!.name,
      gpu: w.gpu,
      pct: this.gpuModes[w.gpu] === 'timeshare' ? 100 : w.pct,
      batch: w.batch,
      timeoutMs: w.timeoutMs,
      role: w.role,
      state: w.state,
      serving: this.serving(w),
    }));
  }

  // ---- tasks ------------------------------------------------------------------------------------

  /**
   * Accepts a task (its input already validated against the model's signature). `answer` is called
   * exactly once, later or at once. The caller has checked that the model exists.
   */
  submit(m: number, input: TaskInput, answer: (a: TaskAnswer) => void, arrival?: TaskArrival): void {
    const now = this.opts.clock();
    const arrivalMs = arrival && arrival.receivedMs <= now ? arrival.receivedMs : now;
    this.monitor.arrival(m, arrivalMs);
    if (arrival) this.wayIn.add(input.data.length, now - arrivalMs);
    const task: Task = {
      model: m,
      arrivalMs,
      input: input.data,
      encoding: input.encoding,
      answer,
      submittedMs: now,
      dispatchedMs: NaN,
    };
    if (this.stopped) {
      this.finish(task, { ok: false, reason: 'shutdown', error: 'the scheduler is shutting down' }, 'shutdown');
      return;
    }
    if (!this.deployedOrComing(m)) {
      this.finish(task, { ok: false, reason: 'not-deployed', error: this.notDeployedMessage(m) }, 'not_deployed');
      return;
    }
    // A full queue makes room by dropping its oldest delayed task, or refuses the new one (queuePolicy.ts).
    const max = this.policies[m]!.maxQueueSize;
    const admission = admit(this.queues[m]!.length, this.delayedQueues[m]!.length, max);
    if (admission === 'reject') {
      this.finish(
        task,
        {
          ok: false,
          reason: 'queue-full',
          error: `rejected: the queue of model '${this.models[m]!.name}' is full (maxQueueSize ${max} tasks, none of them late)`,
        },
        'dropped_queue_full',
      );
      return;
    }
    if (admission === 'evict-delayed') {
      const old = this.delayedQueues[m]!.shift();
      this.finish(
        old,
        {
          ok: false,
          reason: 'slo',
          error: `dropped: the task missed its ${this.models[m]!.sloMs} ms SLO and waited for a free worker until its queue was full (maxQueueSize ${max})`,
        },
        'dropped_slo',
      );
    }
    this.queues[m]!.push(task);
    this.tryDispatch(m);
  }

  /**
   * A task's answer was handed to the kernel `wayOutMs` after the control plane answered it (the HTTP
   * layer tells, once per answered task): the dispatch rule budgets each task its SLO less the expected
   * way out (`dispatchBudgetMs`).
   */
  answerSent(wayOutMs: number): void {
    if (!(wayOutMs >= 0) || !Number.isFinite(wayOutMs)) return;
    this.wayOutMs = learnedOverheadMs(this.wayOutMs, wayOutMs);
    this.wayOutSumMs += wayOutMs;
    this.wayOutN++;
  }

  /** Model m's dispatch budget: its SLO less the answer's expected way out. */
  private budgetMs(m: number): number {
    return dispatchBudgetMs(this.models[m]!.sloMs, this.wayOutMs);
  }

  /** Model m's on-time deadline after a task's arrival: the budget, or its queue policy's shorter timeout. */
  private onTimeMs(m: number): number {
    return onTimeBudgetMs(this.budgetMs(m), this.policies[m]!);
  }

  private notDeployedMessage(m: number): string {
    const name = this.models[m]!.name;
    if (this.policyError)
      return `model '${name}' is not deployed: the policy cannot run on this cluster (${this.policyError})`;
    if (this.gpuRefs.length === 0) return `model '${name}' is not deployed: no agent with GPUs is connected`;
    return `model '${name}' is not deployed: the policy placed it on no GPU`;
  }

  /** The model has a worker that serves or will (starting, restarting). */
  private deployedOrComing(m: number): boolean {
    return this.workers.some((w) => w.model === m && w.wanted);
  }

  private serving(w: Worker): boolean {
    return w.wanted && w.state === 'ready' && w.role !== 'shadow' && (this.agents.get(w.agentId)?.connected ?? false);
  }

  private finish(t: Task, a: TaskAnswer, outcome: TaskOutcome): void {
    const now = this.opts.clock();
    const name = this.models[t.model]!.name;
    const lat = now - t.arrivalMs;
    this.observe.taskFinished(name, outcome, lat / 1000);
    // Per-task tracing (docs/serving.md, "Where the live system loses what the twin keeps").
    if (this.log.isLevelEnabled('debug'))
      this.log.debug(
        {
          model: name,
          outcome,
          wayInMs: t.submittedMs - t.arrivalMs,
          queuedMs: t.dispatchedMs - t.arrivalMs,
          batchMs: now - t.dispatchedMs,
          latencyMs: lat,
          budgetMs: this.budgetMs(t.model),
        },
        'task',
      );
    if (a.ok) {
      this.epochStats.served[t.model]! += 1;
      this.epochStats.latSum[t.model]! += lat;
      if (outcome === 'late') this.epochStats.violated[t.model]! += 1;
    } else if (a.reason === 'slo' || a.reason === 'queue-full' || a.reason === 'worker-failed') {
      this.epochStats.dropped[t.model]! += 1;
    }
    t.answer(a);
  }

  // ---- dispatch ---------------------------------------------------------------------------------

  private canRun(w: Worker): boolean {
    const timeshared = this.gpuModes[w.gpu] === 'timeshare';
    return (
      this.dispatchNow >= this.nextBatchAt(w) &&
      this.serving(w) &&
      !(timeshared && this.gpuRunning[w.gpu]! >= this.pooledLimit[w.gpu]!)
    );
  }

  /** When the worker may take another batch (pipelining: src/sim/dispatch.ts `nextBatchAtMs`). */
  private nextBatchAt(w: Worker): number {
    const last = w.inFlight[w.inFlight.length - 1];
    return nextBatchAtMs(
      w.inFlight.length,
      last?.sentMs ?? 0,
      last?.predictedMs ?? 0,
      w.overheadMs,
      this.gpuModes[w.gpu] === 'timeshare',
    );
  }

  /**
   * `asOfMs`: the instant a timer was armed for (Node's timers fire up to ~2 ms early against the
   * clock): the rule decides as of then, as the simulator's exact timer does.
   */
  private tryDispatch(m: number, asOfMs = -Infinity): void {
    const q = this.queues[m]!;
    const slo = this.onTimeMs(m);
    this.dispatchNow = Math.max(this.opts.clock(), asOfMs);
    let wake = dispatchModel(m, this.dispatchNow, this.rules, this.workers, this.dispatchView);
    // Tasks of a model with no serving worker wait (a worker is starting); drop them once past their
    // deadline (the timer's 1 ms granularity: it fires after the deadline, when pastDeadline holds).
    if (q.length > 0 && !this.workers.some((w) => w.model === m && this.serving(w)))
      wake = Math.min(wake, q.peek().arrivalMs + slo + 1);
    this.observe.queueChanged(this.models[m]!.name, q.length + this.delayedQueues[m]!.length);
    this.arm(m, wake);
  }

  private arm(m: number, atMs: number): void {
    if (atMs === this.timerAt[m]) return;
    const t = this.timers[m];
    if (t) clearTimeout(t);
    this.timers[m] = null;
    this.timerAt[m] = atMs;
    if (!Number.isFinite(atMs) || this.stopped) return;
    const delay = Math.max(0, atMs - this.opts.clock());
    this.timers[m] = setTimeout(() => {
      this.timers[m] = null;
      this.timerAt[m] = Infinity;
      this.lateness.add(atMs, this.opts.clock());
      this.expire(m);
      this.tryDispatch(m, atMs);
    }, delay);
  }

  /** On-time tasks already past their deadline time out (no worker could take them in time): dropped or delayed. */
  private expire(m: number): void {
    const q = this.queues[m]!;
    const slo = this.models[m]!.sloMs;
    const now = this.opts.clock();
    while (q.length > 0 && pastDeadline(q.peek().arrivalMs, this.onTimeMs(m), now)) {
      const t = q.shift();
      if (this.policies[m]!.delay) {
        this.delayedQueues[m]!.push(t);
        continue;
      }
      const why = this.modelReady(m) ? 'its queue was too long' : 'no worker of the model was ready in time';
      this.finish(
        t,
        { ok: false, reason: 'slo', error: `dropped: the task missed its ${slo} ms SLO while waiting (${why})` },
        'dropped_slo',
      );
    }
  }

  private sendBatch(w: Worker, size: number, now: number, q: Fifo = this.queues[w.model]!): void {
    const tasks: Task[] = [];
    for (let i = 0; i < size; i++) {
      const t = q.shift();
      t.dispatchedMs = now;
      tasks.push(t);
    }
    const spec = this.models[w.model]!.signature.inputs[0]!;
    const parts = tasks.map((t) => t.input);
    const bytes = parts.reduce((a, p) => a + p.length, 0);
    const batchId = `b${this.nextBatch++}`;
    // Samples sent in another encoding (UINT8, JPEG, PNG) are listed, so the worker can decode each (issue 14).
    const encoded = tasks.some((t) => t.encoding !== undefined && t.encoding !== spec.datatype);
    const samples = encoded
      ? {
          samples: tasks.map((t) => ({
            encoding: t.encoding ?? (spec.datatype as SampleEncoding),
            byteLength: t.input.length,
          })),
        }
      : {};
    const inputs: TensorRef[] = [
      { name: spec.name, datatype: spec.datatype, shape: [size, ...spec.shape], byteLength: bytes, ...samples },
    ];
    const identity = this.identity(w);
    // Straight to the worker when its data socket is connected (the agent's GPU state, `running`, comes
    // from here then: this side sends every batch); through its agent otherwise.
    const running = this.simulatedGpu(w) ? this.runningBeside(w) : undefined;
    const direct =
      this.opts.direct?.send(
        this.linkKey(w),
        {
          v: WORKER_PROTOCOL_VERSION,
          type: 'batch',
          id: batchId,
          model: identity.model,
          size,
          inputs,
          worker: identity,
          ...(running ? { running } : {}),
        },
        parts,
      ) ?? false;
    const sent =
      direct ||
      this.opts.link.send(
        w.agentId,
        { v: AGENT_PROTOCOL_VERSION, type: 'batch', batchId, ...identity, size, inputs },
        parts,
      );
    if (!sent) {
      // The agent went away between the check and the send: the tasks go back and wait.
      q.unshiftAll(tasks);
      return;
    }
    const sentWallMs = performance.timeOrigin + performance.now();
    const batch: Batch = {
      batchId,
      worker: w,
      tasks,
      sentMs: now,
      direct,
      sentWallMs,
      bytes,
      predictedMs: predictedMs(w.predicted, size),
      timeshared: this.gpuModes[w.gpu] === 'timeshare',
    };
    w.inFlight.push(batch);
    this.log.debug({ batchId, size, bytes, direct, sentAt: sentWallMs }, 'batch sent'); // transport tracing (docs/serving.md)
    if (batch.timeshared) this.gpuRunning[w.gpu]! += 1;
    this.batches.set(batchId, batch);
    this.observe.batchSent(
      this.models[w.model]!.name,
      size,
      tasks.map((t) => (now - t.arrivalMs) / 1000),
    );
  }

  /** The worker's GPU is simulated by its agent (its batches must name the batches running beside them). */
  private simulatedGpu(w: Worker): boolean {
    return this.agents.get(w.agentId)?.gpus.find((g) => g.index === w.localGpu)?.simulated ?? false;
  }

  /** The batches in flight on the worker's GPU beside its own (what a simulated GPU runs now). */
  private runningBeside(w: Worker): RunningBatch[] {
    const out: RunningBatch[] = [];
    for (const x of this.workers)
      if (x !== w && x.gpu === w.gpu && x.inFlight.length > 0)
        out.push({ model: this.models[x.model]!.name, batch: x.inFlight[0]!.tasks.length, pct: x.pct });
    return out;
  }

  private linkKey(w: Worker): string {
    return workerKey(this.identity(w));
  }

  /** Keeps the workers `keep` selects; the others' direct connections are closed (their batches are done). */
  private keepWorkers(keep: (w: Worker) => boolean): void {
    const gone = this.workers.filter((w) => !keep(w));
    if (gone.length === 0) return;
    this.workers = this.workers.filter(keep);
    for (const w of gone) this.opts.direct?.close(this.linkKey(w));
  }

  /** Opens the direct connection to a ready worker with a data socket (once; again after it closed). */
  private connectDirect(w: Worker): void {
    const direct = this.opts.direct;
    if (!direct || !w.data || w.state !== 'ready' || !w.wanted) return;
    const key = this.linkKey(w);
    if (direct.has(key)) return;
    direct.open(key, w.data, {
      frame: (header, payload) => this.directFrame(w, header, payload),
      closed: (why) => this.directClosed(w, why),
    });
  }

  /** A frame from a worker's data socket: the answer to one of its direct batches. */
  private directFrame(w: Worker, header: unknown, payload: Buffer): void {
    const parsed = FromWorkerSchema.safeParse(header);
    if (!parsed.success) {
      this.log.warn(
        { worker: w.workerId, err: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') },
        'bad message on a worker data socket; closing it',
      );
      this.opts.direct?.close(this.linkKey(w));
      return;
    }
    const m = parsed.data;
    if (m.type !== 'result' && m.type !== 'error') return; // ready/fatal belong on stdout; the agent reports them
    const b = this.batches.get(m.id);
    if (!b || b.worker !== w || !b.direct) return; // answered already, or not sent on this connection
    if (m.type === 'result') {
      const backWallMs = performance.timeOrigin + performance.now();
      if (m.receivedAtMs !== undefined && m.answeredAtMs !== undefined) {
        // Per-hop timing (docs/serving.md): clocks agree on one host; across hosts only workerMs and the round trip do.
        this.log.debug(
          {
            batchId: b.batchId,
            size: b.tasks.length,
            bytes: b.bytes,
            toWorkerMs: m.receivedAtMs - b.sentWallMs,
            workerMs: m.latencyMs,
            inWorkerMs: m.answeredAtMs - m.receivedAtMs,
            fromWorkerMs: backWallMs - m.answeredAtMs,
            roundTripMs: backWallMs - b.sentWallMs,
          },
          'batch back',
        );
      }
      this.complete(b, m.latencyMs, m.outputs, payload);
    } else if (m.reason === 'wrong-worker') {
      this.refusedAsWrongWorker(b, m.message);
    } else {
      for (const t of b.tasks)
        this.finish(
          t,
          { ok: false, reason: 'worker-failed', error: `worker ${w.workerId} rejected the batch: ${m.message}` },
          'worker_failed',
        );
      this.batchDone(b);
    }
  }

  /**
   * A worker's data connection ended: its direct batches still unanswered will never be. A worker let
   * go answers what it received before it exits, so those it did not answer did not run: they go back
   * to their queue; so do those sent to a process that refused one as not its own (state unknown). A
   * worker still wanted failed (killed, crashed): its tasks fail with the reason.
   */
  private directClosed(w: Worker, why: string): void {
    for (const b of [...this.batches.values()]) {
      if (b.worker !== w || !b.direct) continue;
      if (!w.wanted || w.state === 'unknown') this.queues[w.model]!.unshiftAll(b.tasks);
      else
        for (const t of b.tasks)
          this.finish(
            t,
            {
              ok: false,
              reason: 'worker-failed',
              error: `worker ${w.workerId} failed: its data connection closed (${why})`,
            },
            'worker_failed',
          );
      this.batchDone(b);
    }
  }

  private batchDone(b: Batch): void {
    this.batches.delete(b.batchId);
    const w = b.worker;
    w.inFlight = w.inFlight.filter((x) => x !== b);
    if (!w.wanted) this.keepWorkers((x) => x !== w);
    // (A cluster rebuilt while the batch ran counted from 0 again: never below it.)
    if (b.timeshared && w.gpu >= 0) this.gpuRunning[w.gpu] = Math.max(0, (this.gpuRunning[w.gpu] ?? 0) - 1);
    if (this.gpuModes[w.gpu] === 'timeshare') {
      // The GPU is free: the model whose oldest task is oldest goes next (src/serving/rules.ts).
      const onGpu = this.workers.filter((x) => x.gpu === w.gpu).map((x) => x.model);
      for (const m of nextModelsOnFreedGpu(onGpu, (x) =>
        this.queues[x]!.length > 0 ? this.queues[x]!.peek().arrivalMs : Infinity,
      ))
        this.tryDispatch(m);
    } else {
      this.tryDispatch(w.model);
    }
  }

  // ---- agent messages ---------------------------------------------------------------------------

  agentConnected(hello: Extract<FromAgent, { type: 'hello' }>): void {
    const prev = this.agents.get(hello.agentId);
    const gpusChanged = !prev || JSON.stringify(prev.gpus) !== JSON.stringify(hello.gpus);
    this.agents.set(hello.agentId, {
      agentId: hello.agentId,
      gpus: hello.gpus,
      connected: true,
      hostname: hello.hostname,
      workerKind: hello.workerKind,
    });
    this.observe.agentJoined({
      agentId: hello.agentId,
      hostname: hello.hostname,
      workerKind: hello.workerKind,
      gpus: hello.gpus,
      connected: true,
      nowIso: this.nowIso(),
    });
    this.observe.agentCount([...this.agents.values()].filter((a) => a.connected).length);
    this.opts.link.send(hello.agentId, { v: AGENT_PROTOCOL_VERSION, type: 'welcome', heartbeatMs: 1000 });
    // A scheduler that restarted adopts the workers the agent still runs, when it has none of its own
    // there, by what they are (model, GPU, share), before its policy decides anything.
    const adopt = this.workers.some((w) => w.agentId === hello.agentId) ? null : hello;
    if (gpusChanged) this.rebuildCluster(adopt);
    else if (adopt) this.adopt(adopt.agentId, adopt.workers);
    this.workersReported(hello.agentId, hello.workers);
    this.sendDesired(hello.agentId);
    for (let m = 0; m < this.models.length; m++) this.tryDispatch(m);
  }

  agentDisconnected(agentId: string): void {
    const a = this.agents.get(agentId);
    if (!a || this.stopped) return;
    a.connected = false;
    this.observe.agentLeft(agentId, this.nowIso());
    this.observe.agentCount([...this.agents.values()].filter((x) => x.connected).length);
    // Its relayed batches in flight will never be answered: fail their tasks now, with the reason (a
    // batch sent on a worker's data socket is answered there, or fails when that connection closes).
    for (const b of [...this.batches.values()]) {
      if (b.worker.agentId !== agentId || b.direct) continue;
      for (const t of b.tasks)
        this.finish(
          t,
          {
            ok: false,
            reason: 'worker-failed',
            error: `worker ${b.worker.workerId} failed: its agent ${agentId} disconnected`,
          },
          'worker_failed',
        );
      this.batchDone(b);
    }
    for (const w of this.workers) if (w.agentId === agentId) w.state = 'unknown';
    this.log.warn({ agentId }, 'agent disconnected; its placements are kept for its return');
  }

  workersReported(agentId: string, statuses: readonly WorkerStatus[]): void {
    // Matched by the whole identity: a process under the same id running another model, GPU, share or
    // generation is not this worker (it stays 'unknown' and takes no batch).
    const byKey = new Map(statuses.map((s) => [workerKey(s), s]));
    for (const s of statuses) this.nextGeneration = Math.max(this.nextGeneration, s.generation + 1);
    const touchedGpus = new Set<number>();
    for (const w of this.workers) {
      if (w.agentId !== agentId) continue;
      const s = byKey.get(workerKey(this.identity(w)));
      const state = s ? s.state : 'unknown';
      w.pid = s?.pid ?? null;
      w.data = s?.data ?? null;
      if (state !== w.state) {
        w.state = state;
        touchedGpus.add(w.gpu);
        if (state === 'ready' && w.role === 'shadow') this.activate(w);
      }
      // Once ready, with a data socket: its batches go straight to it (reopened after a close).
      this.connectDirect(w);
    }
    for (const g of touchedGpus) this.refreshPredictions(g);
    this.updateWorkerGauges();
    for (let m = 0; m < this.models.length; m++) this.tryDispatch(m);
  }

  batchResult(agentId: string, msg: Extract<FromAgent, { type: 'result' }>, payload: Buffer): void {
    const b = this.batches.get(msg.batchId);
    if (!b || b.direct || b.worker.agentId !== agentId || b.worker.workerId !== msg.workerId) return; // answered already (agent disconnect); late result ignored
    this.log.debug({ batchId: msg.batchId, backAt: Date.now() }, 'batch back');
    this.complete(b, msg.latencyMs, msg.outputs, payload);
  }

  /** A batch's answer, from its agent or its worker's data socket: each task gets its slice of the outputs. */
  private complete(b: Batch, latencyMs: number, outputs: readonly TensorRef[], payload: Buffer): void {
    const now = this.opts.clock();
    const m = b.worker.model;
    const model = this.models[m]!;
    this.observe.batchExecuted(model.name, b.tasks.length, latencyMs / 1000);
    this.epochStats.execSum[m]! += latencyMs;
    this.epochStats.execN[m]! += 1;
    // The transport a batch pays beyond its GPU time (scheduler -> agent -> worker and back): learned
    // per worker so the dispatch rule starts batches early enough to meet the SLO with it.
    // Starts at 0 and moves 10% toward each sample, so one slow batch (a cold start) cannot make the
    // rule drop everything; an estimate that did grow decays while the worker gets no batches (epoch()).
    // A batch sent ahead (pipelining) waited at the worker behind the one before it: that wait is not
    // transport, so its path counts from when the one before was answered (the simulator's held
    // batch likewise pays only the transport left when the GPU frees, src/sim/simulator.ts).
    const overhead = Math.max(0, now - Math.max(b.sentMs, b.worker.lastAnsweredMs) - latencyMs);
    b.worker.lastAnsweredMs = now;
    this.observe.batchTransported(model.name, overhead / 1000);
    let fit = this.transport.get(b.worker.agentId);
    if (!fit) this.transport.set(b.worker.agentId, (fit = new TransportFit()));
    fit.add(b.bytes, overhead);
    b.worker.overheadMs = learnedOverheadMs(b.worker.overheadMs, overhead);
    b.worker.batchesThisEpoch++;
    if (b.direct) {
      b.worker.directLatencySumMs += latencyMs;
      b.worker.directBatches++;
    }
    const n = b.tasks.length;
    // Split each output along the batch dimension, checking the worker sent what it said.
    let offset = 0;
    const per: { ref: TensorRef; bytesPer: number; start: number }[] = [];
    let problem: string | null = null;
    for (const ref of outputs) {
      if (ref.shape[0] !== n || ref.byteLength % n !== 0)
        problem = `output '${ref.name}' has shape [${ref.shape.join(',')}] for a batch of ${n}`;
      per.push({ ref, bytesPer: ref.byteLength / n, start: offset });
      offset += ref.byteLength;
    }
    if (offset !== payload.length) problem = `worker sent ${payload.length} output bytes, its header says ${offset}`;
    // Samples whose input the worker could not decode: those tasks alone get its error.
    const failed = new Map(outputs.flatMap((ref) => ref.failed ?? []).map((f) => [f.index, f.message]));
    b.tasks.forEach((t, i) => {
      if (problem) {
        this.finish(
          t,
          {
            ok: false,
            reason: 'worker-failed',
            error: `worker ${b.worker.workerId} returned a malformed result: ${problem}`,
          },
          'worker_failed',
        );
        return;
      }
      const bad = failed.get(i);
      if (bad !== undefined) {
        this.finish(t, { ok: false, reason: 'bad-input', error: bad }, 'bad_input');
        return;
      }
      const outputs = per.map((p) => ({
        name: p.ref.name,
        datatype: p.ref.datatype,
        shape: [1, ...p.ref.shape.slice(1)],
        data: payload.subarray(p.start + i * p.bytesPer, p.start + (i + 1) * p.bytesPer),
      }));
      const lat = now - t.arrivalMs;
      this.finish(t, { ok: true, outputs, latencyMs: lat }, lat <= model.sloMs ? 'ok' : 'late');
    });
    this.batchDone(b);
  }

  /**
   * The batch reached a process that is not its worker (another model, GPU, share or generation under
   * the id). Nothing ran; the tasks go back and the worker takes no batch until its agent reports it (by
   * its whole identity) ready. Its direct connection, if that is where the batch went, is closed (a
   * batch sent ahead on it goes back too: directClosed).
   */
  private refusedAsWrongWorker(b: Batch, message: string): void {
    this.log.warn(
      { worker: b.worker.workerId, agentId: b.worker.agentId, err: message },
      'a batch was refused: its worker is not the one sent to',
    );
    b.worker.state = 'unknown';
    this.queues[b.worker.model]!.unshiftAll(b.tasks);
    this.batchDone(b);
    this.opts.direct?.close(this.linkKey(b.worker));
  }

  batchError(agentId: string, msg: Extract<FromAgent, { type: 'batchError' }>): void {
    const b = this.batches.get(msg.batchId);
    if (!b || b.direct || b.worker.agentId !== agentId) return;
    if (msg.reason === 'wrong-worker') {
      this.refusedAsWrongWorker(b, msg.message);
      return;
    }
    if (msg.reason === 'worker-retired' || msg.reason === 'unknown-worker') {
      // Nothing ran: the tasks go back to the head of their queue for another worker.
      b.worker.state = msg.reason === 'worker-retired' ? 'draining' : 'unknown';
      this.queues[b.worker.model]!.unshiftAll(b.tasks);
    } else {
      const why =
        msg.reason === 'bad-batch'
          ? `worker ${msg.workerId} rejected the batch: ${msg.message}`
          : `worker ${msg.workerId} failed: ${msg.message}`;
      for (const t of b.tasks) this.finish(t, { ok: false, reason: 'worker-failed', error: why }, 'worker_failed');
      // The agent answers a dead worker's batches before it reports the worker failed: it takes no
      // batch until its agent reports it ready again (else the next batch is lost the same way).
      if (msg.reason === 'worker-failed') b.worker.state = 'failed';
    }
    this.batchDone(b);
  }

  telemetry(agentId: string, msg: Extract<FromAgent, { type: 'telemetry' }>): void {
    for (const g of msg.gpus) {
      const idx = gpuIndex(this.gpuRefs, agentId, g.index);
      if (idx < 0) continue;
      this.observe.gpuMeasured(idx, g.utilPct, g.memUsedMb);
    }
    for (const t of msg.workers) {
      const w = this.workers.find((x) => x.workerId === t.workerId);
      if (w && t.meanLatencyMs !== null)
        this.observe.workerLatencyMeasured(w.workerId, this.models[w.model]!.name, w.gpu, t.meanLatencyMs / 1000);
    }
  }

  // ---- the cluster and the policy loop ----------------------------------------------------------

  private rebuildCluster(adopt: Extract<FromAgent, { type: 'hello' }> | null = null): void {
    const view = clusterView(this.agents.values(), this.opts.profiles, this.models);
    for (const g of view.unprofiled)
      this.log.warn(
        { agentId: g.agentId, gpu: g.gpu, name: g.name, profile: g.profile },
        'GPU has no known profile; not used',
      );
    const refs = view.refs;
    this.gpuModes = carryModes(this.gpuRefs, this.gpuModes, refs);
    this.gpuRefs = refs;
    this.gpuRunning = refs.map(() => 0);
    this.pooledLimit = view.cluster?.gpus.map((g) => pooledConcurrency(g.pooled)) ?? [];
    for (const w of this.workers) w.gpu = gpuIndex(refs, w.agentId, w.localGpu);
    this.keepWorkers((w) => w.gpu >= 0);
    if (adopt) this.adopt(adopt.agentId, adopt.workers);
    if (view.cluster === null) {
      this.cluster = null;
      this.policy = null;
      return;
    }
    if (view.missingModels.length > 0)
      this.log.warn({ missing: view.missingModels }, 'no GPU profile has these models; they cannot be deployed');
    this.cluster = view.cluster;
    try {
      this.policy = this.opts.createPolicy(this.cluster);
      this.policyError = null;
      this.log.info(
        { policy: this.opts.policyName, gpus: refs.length, models: this.models.length },
        'policy ready for the cluster',
      );
    } catch (e) {
      this.policy = null;
      this.policyError = (e as Error).message;
      this.log.error({ policy: this.opts.policyName, err: this.policyError }, 'the policy cannot run on this cluster');
    }
    this.current = { placements: this.currentPlacements() };
    for (let g = 0; g < refs.length; g++) this.refreshPredictions(g);
    this.decide(this.observation());
  }

  /**
   * Adopts workers an agent reports that this scheduler does not know (after a scheduler restart): each
   * keeps its whole identity (id, model, GPU, share, generation), so its batches go to that process and
   * no other; the policy's first decision then keeps, retunes or replaces it like any worker.
   */
  private adopt(agentId: string, statuses: readonly WorkerStatus[]): void {
    const stored = this.opts.storedPlacements?.() ?? [];
    const known = new Set(this.workers.map((w) => workerKey(this.identity(w))));
    for (const s of statuses) {
      this.nextGeneration = Math.max(this.nextGeneration, s.generation + 1);
      const m = this.modelIndex(s.model);
      const g = gpuIndex(this.gpuRefs, agentId, s.gpu);
      if (m < 0 || g < 0 || s.state === 'draining' || s.state === 'failed' || known.has(workerKey(s))) continue;
      const row = stored.find(
        (p) =>
          p.workerId === s.workerId &&
          p.agentId === agentId &&
          p.model === s.model &&
          p.gpu === s.gpu &&
          p.pct === s.pct,
      );
      this.workers.push(
        this.newWorker(s.workerId, s.generation, agentId, s.gpu, g, m, s.pct, row?.batch ?? 1, NaN, 'active'),
      );
      this.log.info(
        { worker: s.workerId, generation: s.generation, model: s.model, gpu: s.gpu, pct: s.pct, agentId },
        'adopted a running worker',
      );
    }
    const n = Math.max(0, ...this.workers.map((w) => Number(/^w(\d+)$/.exec(w.workerId)?.[1] ?? 0)));
    this.nextWorker = Math.max(this.nextWorker, n + 1);
    this.current = { placements: this.currentPlacements() };
  }

  private newWorker(
    workerId: string,
    generation: number,
    agentId: string,
    localGpu: number,
    gpu: number,
    model: number,
    pct: number,
    batch: number,
    timeoutMs: number,
    role: Role,
  ): Worker {
    return {
      workerId,
      generation,
      agentId,
      localGpu,
      gpu,
      model,
      pct,
      batch,
      timeoutMs,
      role,
      wanted: true,
      state: 'unknown',
      pid: null,
      replaces: null,
      inFlight: [],
      predicted: new Float64Array(MAX_PRED_BATCH),
      overheadMs: 0,
      batchesThisEpoch: 0,
      lastAnsweredMs: -Infinity,
      directLatencySumMs: 0,
      directBatches: 0,
      data: null,
    };
  }

  private currentPlacements(): Placement[] {
    return this.workers
      .filter((w) => w.wanted && (w.role === 'active' || w.role === 'shadow'))
      .map((w) => ({
        model: w.model,
        gpu: w.gpu,
        pct: w.pct,
        batch: w.batch,
        ...(Number.isNaN(w.timeoutMs) ? {} : { timeoutMs: w.timeoutMs }),
      }));
  }

  /** One decision epoch: monitor -> policy -> apply. Runs every `epochMs` and when the cluster changes. */
  epoch(): void {
    if (this.stopped) return;
    this.monitor.endEpoch();
    for (let m = 0; m < this.models.length; m++) this.expire(m);
    for (const w of this.workers) {
      if (w.batchesThisEpoch === 0) w.overheadMs = idleOverheadMs(w.overheadMs);
      w.batchesThisEpoch = 0;
      // Batches on the direct path: the per-worker latency gauge the agent's telemetry sets for relayed ones.
      if (w.directBatches > 0)
        this.observe.workerLatencyMeasured(
          w.workerId,
          this.models[w.model]!.name,
          w.gpu,
          w.directLatencySumMs / w.directBatches / 1000,
        );
      w.directLatencySumMs = 0;
      w.directBatches = 0;
    }
    const obs = this.observation();
    // The dispatch rule's rates (the policy's observation) and margin (how late its timers fired).
    this.ratesPerS = obs.ratePerS;
    this.rules = { slack: this.settings.dispatchSlack, marginMs: this.lateness.quantileMs(0.99) };
    this.publishEpochMetrics(obs);
    this.resetEpoch();
    this.decide(obs);
  }

  /**
   * Asks the policy and applies its deployment: at each epoch's end, and when the cluster changes (an
   * agent joins or leaves), which decides without ending the monitor's epoch (as the simulator's
   * decision at time 0 does), so the warm-up rule counts only whole epochs.
   */
  private decide(obs: Observation): void {
    if (this.stopped || !this.policy || !this.cluster) return;
    const t0 = this.opts.clock();
    let d: Deployment;
    try {
      d = this.policy.decide(obs);
    } catch (e) {
      this.log.error({ err: (e as Error).message }, 'the policy failed to decide; keeping the current deployment');
      return;
    }
    const decideMs = this.opts.clock() - t0;
    const changed = this.apply(d);
    this.observe.decided({
      policy: this.opts.policyName,
      ratePerS: obs.ratePerS,
      deployment: this.named(d),
      decideMs,
      nowIso: this.nowIso(),
      changed,
    });
    if (changed) {
      this.log.info({ placements: this.named(d).placements, decideMs: Number(decideMs.toFixed(3)) }, 'new deployment');
    }
  }

  private named(d: Deployment): { placements: unknown[]; gpuModes?: readonly GpuMode[] } {
    return {
      placements: d.placements.map((p) => ({
        ...p,
        model: this.models[p.model]!.name,
        gpu: `${this.gpuRefs[p.gpu]?.agentId}:${this.gpuRefs[p.gpu]?.local}`,
      })),
      ...(d.gpuModes ? { gpuModes: d.gpuModes } : {}),
    };
  }

  private observation(): Observation {
    // The monitor's rule (src/serving/monitor.ts): the scenario's rates until a full window is seen.
    const ratePerS = this.monitor.ratesPerS(this.initialRates);
    const nan = (s: number, n: number) => (n > 0 ? s / n : NaN);
    const st = this.epochStats;
    return {
      nowMs: this.opts.clock(),
      ratePerS,
      arrivalCv2: this.monitor.arrivalCv2(),
      queued: this.queues.map((q) => q.length),
      lastEpoch: {
        served: [...st.served],
        violated: [...st.violated],
        dropped: [...st.dropped],
        meanExecMs: st.execSum.map((s, m) => nan(s, st.execN[m]!)),
        meanLatencyMs: st.latSum.map((s, m) => nan(s, st.served[m]!)),
      },
      current: this.current,
    };
  }

  private publishEpochMetrics(obs: Observation): void {
    this.models.forEach((m, i) => {
      const done = obs.lastEpoch.served[i]! + obs.lastEpoch.dropped[i]!;
      this.observe.epochObserved(
        m.name,
        obs.ratePerS[i]!,
        done > 0 ? (obs.lastEpoch.served[i]! - obs.lastEpoch.violated[i]!) / done : null,
      );
    });
  }

  private resetEpoch(): void {
    for (const a of Object.values(this.epochStats)) a.fill(0);
  }

  /** Moves the worker set toward a deployment (see the file header). Returns whether anything changed. */
  private apply(d: Deployment): boolean {
    const cluster = this.cluster!;
    const nG = cluster.gpus.length;
    // The plan is the simulator's too (src/serving/workerSet.ts); here it becomes desired sets.
    const plan = planApply(this.workers, CONTROL_VIEW, d, this.gpuModes, this.models.length, nG);
    const modes = plan.modes;
    for (const p of plan.invalid)
      this.log.error({ placement: p }, 'the policy emitted a placement outside the cluster; ignored');
    let changed =
      JSON.stringify(modes) !== JSON.stringify(this.gpuModes) ||
      plan.start.length > 0 ||
      plan.release.length > 0 ||
      plan.abandon.length > 0;
    for (const { worker, placement } of plan.retune) {
      const t = placement.timeoutMs ?? NaN;
      if (
        worker.batch !== placement.batch ||
        !(worker.timeoutMs === t || (Number.isNaN(t) && Number.isNaN(worker.timeoutMs)))
      )
        changed = true;
      worker.batch = placement.batch;
      worker.timeoutMs = t;
    }
    const letGo = (w: Worker) => {
      w.role = 'retiring';
      w.replaces = null;
      w.wanted = false;
    };
    // An abandoned shadow and a released worker both leave the desired set at once (the agent stops
    // it; a batch in hand finishes first).
    for (const w of plan.reinstate) w.role = 'active';
    for (const w of plan.abandon) letGo(w);
    for (const w of plan.retire) w.role = 'retiring';
    for (const st of plan.start) {
      const p = st.placement;
      const ref = this.gpuRefs[p.gpu]!;
      const w = this.newWorker(
        `w${this.nextWorker++}`,
        this.nextGeneration++,
        ref.agentId,
        ref.local,
        p.gpu,
        p.model,
        st.pct,
        p.batch,
        p.timeoutMs ?? NaN,
        'shadow',
      );
      w.replaces = st.replaces;
      this.workers.push(w);
    }
    for (const w of plan.release) letGo(w);
    this.gpuModes = modes;
    // Forget workers that left the desired set and have nothing in flight.
    this.keepWorkers((w) => w.wanted || w.inFlight.length > 0);
    this.current = d;
    if (changed) {
      for (let g = 0; g < nG; g++) this.refreshPredictions(g);
      this.generation++;
      for (const a of this.agents.values()) this.sendDesired(a.agentId);
      this.persistPlacements();
      this.updateWorkerGauges();
    }
    for (let m = 0; m < this.models.length; m++) this.tryDispatch(m);
    return changed;
  }

  /** A shadow reported ready: it takes over, and the worker it replaces leaves the desired set. */
  private activate(w: Worker): void {
    const old = onReady(w, CONTROL_VIEW);
    w.role = 'active';
    w.replaces = null;
    if (old) {
      old.replaces = null;
      old.wanted = false;
      this.observe.swapCompleted();
      if (old.inFlight.length === 0) this.keepWorkers((x) => x !== old);
      this.refreshPredictions(old.gpu);
    }
    this.refreshPredictions(w.gpu);
    this.log.info(
      { worker: w.workerId, model: this.models[w.model]!.name, gpu: w.gpu, pct: w.pct, replaced: old?.workerId },
      old ? 'shadow swap: new worker took over' : 'worker serving',
    );
    for (const a of this.agents.values()) this.sendDesired(a.agentId);
    this.current = {
      placements: this.currentPlacements(),
      ...(this.current.gpuModes ? { gpuModes: this.current.gpuModes } : {}),
    };
    this.persistPlacements();
  }

  private desiredFor(agentId: string): DesiredWorker[] {
    return this.workers.filter((w) => w.agentId === agentId && w.wanted).map((w) => this.identity(w));
  }

  /** What the worker is, as its agent and its batches name it. */
  private identity(w: Worker): WorkerIdentity {
    return {
      workerId: w.workerId,
      model: this.models[w.model]!.name,
      gpu: w.localGpu,
      pct: w.pct,
      generation: w.generation,
    };
  }

  private sendDesired(agentId: string): void {
    this.opts.link.send(agentId, {
      v: AGENT_PROTOCOL_VERSION,
      type: 'desired',
      generation: this.generation,
      workers: this.desiredFor(agentId),
    });
  }

  private persistPlacements(): void {
    const rows = this.workers
      .filter((w) => w.wanted)
      .map((w) => ({
        workerId: w.workerId,
        agentId: w.agentId,
        gpu: w.localGpu,
        model: this.models[w.model]!.name,
        pct: w.pct,
        batch: w.batch,
        role: w.role,
      }));
    this.observe.placementsChanged(rows, this.nowIso());
  }

  /** Recomputes the predicted batch-time tables of the serving workers on GPU g. */
  private refreshPredictions(g: number): void {
    if (!this.cluster || g < 0 || g >= this.cluster.gpus.length) return;
    const gpu = this.cluster.gpus[g]!;
    const serving = this.workers.filter(
      (w) => w.gpu === g && (w.role === 'active' || w.role === 'retiring') && w.wanted,
    );
    const timeshare = this.gpuModes[g] === 'timeshare';
    serving.forEach((w, k) => predictionTable(gpu, serving, k, timeshare, w.predicted));
    // A worker not yet serving gets its solo prediction, so a drop decision never divides by nothing.
    for (const w of this.workers)
      if (w.gpu === g && !serving.includes(w)) predictionTable(gpu, [w], 0, timeshare, w.predicted);
    let share = 0;
    let mem = 0;
    for (const w of this.workers) {
      if (w.gpu !== g || !w.wanted) continue;
      share += timeshare ? 0 : w.pct;
      const pi = gpu.profileIndex[w.model]!;
      if (pi >= 0) mem += gpu.model.memoryMb(pi, w.batch);
    }
    this.observe.gpuPredicted(g, timeshare ? 100 : share, mem);
  }

  private updateWorkerGauges(): void {
    const counts: Record<string, number> = { starting: 0, ready: 0, draining: 0, failed: 0, unknown: 0 };
    for (const w of this.workers) counts[w.state] = (counts[w.state] ?? 0) + 1;
    this.observe.workerStatesCounted(counts);
  }

  private nowIso(): string {
    return (this.opts.wallClock?.() ?? new Date()).toISOString();
  }
}

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
//   (src/sim/dispatch.ts) on its predicted t_inf table; one batch in flight per worker; on a
//   timeshare GPU one batch at a time on the GPU.
// Every accepted task is answered exactly once: a result, or an error with its reason (dropped because
// it cannot meet its SLO, model not deployed, worker failed, shutting down). A batch refused because
// its worker was retiring goes back to the head of its queue.
import type { Logger } from 'pino';
import type { ClusterInfo, Deployment, GpuMode, Observation, Placement, Policy } from '../src/policy/types.js';
import { buildCluster } from '../src/policy/cluster.js';
import type { Profile } from '../src/profile/schema.js';
import { AGENT_PROTOCOL_VERSION, type AgentGpu, type DesiredWorker, type FromAgent, type ToAgent, type WorkerIdentity, workerKey, type WorkerStatus } from '../src/protocol/agent.js';
import type { ModelSignature, TensorRef } from '../src/protocol/tensor.js';
import { RateMonitor } from '../src/serving/monitor.js';
import { DEFAULT_SERVING_SETTINGS, type ServingSettings } from '../src/serving/settings.js';
import { nextModelsOnFreedGpu, pastDeadline } from '../src/serving/rules.js';
import { onReady, planApply, type WorkerView as PlanView } from '../src/serving/workerSet.js';
import { dispatchModel, type DispatchView, MAX_PRED_BATCH, predictionTable } from '../src/sim/dispatch.js';
import type { Metrics, TaskOutcome, WorkerView } from './metrics.js';
import type { Store } from './store.js';

export interface ServedModelConfig {
  readonly name: string;
  readonly sloMs: number;
  readonly signature: ModelSignature;
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
  readonly data: Buffer;
}

export interface TaskOutput {
  readonly name: string;
  readonly datatype: TensorRef['datatype'];
  readonly shape: number[];
  readonly data: Buffer;
}

/** Why a task got an error instead of a result. */
export type TaskErrorReason = 'slo' | 'not-deployed' | 'worker-failed' | 'shutdown';

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
  readonly clock: () => number;
  readonly wallClock?: () => Date;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly store?: Store;
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
  readonly answer: (a: TaskAnswer) => void;
  dispatchedMs: number;
}

/** A FIFO with amortised O(1) shift and the ability to put tasks back at the head. */
class Fifo {
  private items: Task[] = [];
  private head = 0;
  get length(): number {
    return this.items.length - this.head;
  }
  push(t: Task): void {
    this.items.push(t);
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
  inFlight: Batch | null;
  predicted: Float64Array;
  /** Moving average of (round trip of a batch) - (time the worker reports for it), ms. */
  overheadMs: number;
  /** Batches answered since the last epoch (an idle worker's overhead estimate decays). */
  batchesThisEpoch: number;
}

interface Batch {
  readonly batchId: string;
  readonly worker: Worker;
  readonly tasks: Task[];
  readonly sentMs: number;
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
  private readonly timers: (NodeJS.Timeout | null)[];
  private readonly timerAt: number[];
  private readonly agents = new Map<string, AgentEntry>();
  private workers: Worker[] = [];
  private readonly batches = new Map<string, Batch>();
  private cluster: ClusterInfo | null = null;
  /** Cluster GPU index -> (agent, local index). */
  private gpuRefs: { agentId: string; local: number }[] = [];
  private gpuModes: GpuMode[] = [];
  private gpuBusy: boolean[] = [];
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
  private readonly epochStats: { served: number[]; violated: number[]; dropped: number[]; execSum: number[]; execN: number[]; latSum: number[] };
  private readonly log: Logger;
  /** The dispatch loop's view of the control plane (src/sim/dispatch.ts, shared with the simulator). */
  private dispatchNow = 0;
  private readonly dispatchView: DispatchView<Worker> = {
    model: (w) => w.model,
    canRun: (w) => this.canRun(w),
    batch: (w) => w.batch,
    timeoutMs: (w) => w.timeoutMs,
    predicted: (w) => w.predicted,
    overheadMs: (w) => w.overheadMs,
    queued: (m) => this.queues[m]!.length,
    headArrivalMs: (m) => this.queues[m]!.peek().arrivalMs,
    drop: (m, w) => {
      const t = this.queues[m]!.shift();
      const slo = this.models[m]!.sloMs;
      this.finish(t, { ok: false, reason: 'slo', error: `dropped: the task cannot meet its ${slo} ms SLO (predicted batch time ${w.predicted[1]!.toFixed(1)} ms or more, plus ${w.overheadMs.toFixed(1)} ms of measured transport, after waiting ${(this.dispatchNow - t.arrivalMs).toFixed(1)} ms)` }, 'dropped_slo');
    },
    start: (w, size) => this.sendBatch(w, size, this.dispatchNow),
  };

  constructor(private readonly opts: ControlOptions) {
    this.models = opts.models;
    this.settings = { ...DEFAULT_SERVING_SETTINGS, ...opts.settings };
    const n = opts.models.length;
    this.queues = opts.models.map(() => new Fifo());
    this.timers = new Array<NodeJS.Timeout | null>(n).fill(null);
    this.timerAt = new Array<number>(n).fill(Infinity);
    this.monitor = new RateMonitor(n, this.settings.epochMs, this.settings.monitorWindowMs);
    this.initialRates = opts.models.map((m) => opts.initialRatePerS?.[m.name] ?? 0);
    const z = () => new Array<number>(n).fill(0);
    this.epochStats = { served: z(), violated: z(), dropped: z(), execSum: z(), execN: z(), latSum: z() };
    this.log = opts.logger;
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
    for (const q of this.queues) for (const t of q.drain()) this.finish(t, { ok: false, reason: 'shutdown', error: 'the scheduler is shutting down' }, 'shutdown');
    for (const b of this.batches.values()) for (const t of b.tasks) this.finish(t, { ok: false, reason: 'shutdown', error: 'the scheduler is shutting down' }, 'shutdown');
    this.batches.clear();
  }

  /** The SQLite store while the service runs; after stop() nothing more is written (it may be closed). */
  private get store(): Store | undefined {
    return this.stopped ? undefined : this.opts.store;
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
      agents: [...this.agents.values()].map((a) => ({ agentId: a.agentId, connected: a.connected, hostname: a.hostname, workerKind: a.workerKind, gpus: a.gpus })),
      gpus: this.gpuRefs.map((r, g) => ({ index: g, agentId: r.agentId, local: r.local, profile: this.cluster?.gpus[g]?.profileId, mode: this.gpuModes[g] ?? 'mps' })),
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
        busy: w.inFlight !== null,
        overheadMs: Number(w.overheadMs.toFixed(3)),
      })),
      queued: Object.fromEntries(this.models.map((m, i) => [m.name, this.queues[i]!.length])),
      deployment: this.current,
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
  submit(m: number, input: TaskInput, answer: (a: TaskAnswer) => void): void {
    const now = this.opts.clock();
    this.monitor.arrival(m);
    const task: Task = { model: m, arrivalMs: now, input: input.data, answer, dispatchedMs: NaN };
    if (this.stopped) {
      this.finish(task, { ok: false, reason: 'shutdown', error: 'the scheduler is shutting down' }, 'shutdown');
      return;
    }
    if (!this.deployedOrComing(m)) {
      this.finish(task, { ok: false, reason: 'not-deployed', error: this.notDeployedMessage(m) }, 'not_deployed');
      return;
    }
    this.queues[m]!.push(task);
    this.tryDispatch(m);
  }

  private notDeployedMessage(m: number): string {
    const name = this.models[m]!.name;
    if (this.policyError) return `model '${name}' is not deployed: the policy cannot run on this cluster (${this.policyError})`;
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
    this.opts.metrics.taskFinished(name, outcome, lat / 1000);
    if (a.ok) {
      this.epochStats.served[t.model]! += 1;
      this.epochStats.latSum[t.model]! += lat;
      if (outcome === 'late') this.epochStats.violated[t.model]! += 1;
    } else if (a.reason === 'slo' || a.reason === 'worker-failed') {
      this.epochStats.dropped[t.model]! += 1;
    }
    t.answer(a);
  }

  // ---- dispatch ---------------------------------------------------------------------------------

  private canRun(w: Worker): boolean {
    return w.inFlight === null && this.serving(w) && !(this.gpuModes[w.gpu] === 'timeshare' && this.gpuBusy[w.gpu]);
  }

  private tryDispatch(m: number): void {
    const q = this.queues[m]!;
    const slo = this.models[m]!.sloMs;
    this.dispatchNow = this.opts.clock();
    let wake = dispatchModel(m, this.dispatchNow, slo, this.settings.dispatchSlack, this.workers, this.dispatchView);
    // Tasks of a model with no serving worker wait (a worker is starting); drop them once past their
    // deadline (the timer's 1 ms granularity: it fires after the deadline, when pastDeadline holds).
    if (q.length > 0 && !this.workers.some((w) => w.model === m && this.serving(w))) wake = Math.min(wake, q.peek().arrivalMs + slo + 1);
    this.opts.metrics.queueLength.set({ model: this.models[m]!.name }, q.length);
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
      this.expire(m);
      this.tryDispatch(m);
    }, delay);
  }

  /** Drops queued tasks already past their deadline (no worker could take them in time). */
  private expire(m: number): void {
    const q = this.queues[m]!;
    const slo = this.models[m]!.sloMs;
    const now = this.opts.clock();
    while (q.length > 0 && pastDeadline(q.peek().arrivalMs, slo, now)) {
      const t = q.shift();
      const why = this.modelReady(m) ? 'its queue was too long' : 'no worker of the model was ready in time';
      this.finish(t, { ok: false, reason: 'slo', error: `dropped: the task missed its ${slo} ms SLO while waiting (${why})` }, 'dropped_slo');
    }
  }

  private sendBatch(w: Worker, size: number, now: number): void {
    const q = this.queues[w.model]!;
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
    const batch: Batch = { batchId, worker: w, tasks, sentMs: now };
    const inputs: TensorRef[] = [{ name: spec.name, datatype: spec.datatype, shape: [size, ...spec.shape], byteLength: bytes }];
    const sent = this.opts.link.send(w.agentId, { v: AGENT_PROTOCOL_VERSION, type: 'batch', batchId, ...this.identity(w), size, inputs }, parts);
    if (!sent) {
      // The agent went away between the check and the send: the tasks go back and wait.
      q.unshiftAll(tasks);
      return;
    }
    w.inFlight = batch;
    this.log.debug({ batchId, size, sentAt: Date.now() }, 'batch sent'); // transport tracing (docs/serving.md)
    if (this.gpuModes[w.gpu] === 'timeshare') this.gpuBusy[w.gpu] = true;
    this.batches.set(batchId, batch);
    const name = this.models[w.model]!.name;
    this.opts.metrics.batchSize.observe({ model: name }, size);
    for (const t of tasks) this.opts.metrics.queueTime.observe({ model: name }, (now - t.arrivalMs) / 1000);
  }

  private batchDone(b: Batch): void {
    this.batches.delete(b.batchId);
    const w = b.worker;
    if (w.inFlight === b) w.inFlight = null;
    if (!w.wanted) this.workers = this.workers.filter((x) => x !== w);
    if (this.gpuModes[w.gpu] === 'timeshare') {
      this.gpuBusy[w.gpu] = false;
      // The GPU is free: the model whose oldest task is oldest goes next (src/serving/rules.ts).
      const onGpu = this.workers.filter((x) => x.gpu === w.gpu).map((x) => x.model);
      for (const m of nextModelsOnFreedGpu(onGpu, (x) => (this.queues[x]!.length > 0 ? this.queues[x]!.peek().arrivalMs : Infinity))) this.tryDispatch(m);
    } else {
      this.tryDispatch(w.model);
    }
  }

  // ---- agent messages ---------------------------------------------------------------------------

  agentConnected(hello: Extract<FromAgent, { type: 'hello' }>): void {
    const prev = this.agents.get(hello.agentId);
    const gpusChanged = !prev || JSON.stringify(prev.gpus) !== JSON.stringify(hello.gpus);
    this.agents.set(hello.agentId, { agentId: hello.agentId, gpus: hello.gpus, connected: true, hostname: hello.hostname, workerKind: hello.workerKind });
    this.store?.upsertAgent({ agentId: hello.agentId, hostname: hello.hostname, workerKind: hello.workerKind, gpus: hello.gpus, connected: true, nowIso: this.nowIso() });
    this.opts.metrics.agents.set([...this.agents.values()].filter((a) => a.connected).length);
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
    this.store?.setAgentConnected(agentId, false, this.nowIso());
    this.opts.metrics.agents.set([...this.agents.values()].filter((x) => x.connected).length);
    // Its batches in flight will never be answered: fail their tasks now, with the reason.
    for (const b of [...this.batches.values()]) {
      if (b.worker.agentId !== agentId) continue;
      for (const t of b.tasks) this.finish(t, { ok: false, reason: 'worker-failed', error: `worker ${b.worker.workerId} failed: its agent ${agentId} disconnected` }, 'worker_failed');
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
      if (state === w.state) continue;
      w.state = state;
      touchedGpus.add(w.gpu);
      if (state === 'ready' && w.role === 'shadow') this.activate(w);
    }
    for (const g of touchedGpus) this.refreshPredictions(g);
    this.updateWorkerGauges();
    for (let m = 0; m < this.models.length; m++) this.tryDispatch(m);
  }

  batchResult(agentId: string, msg: Extract<FromAgent, { type: 'result' }>, payload: Buffer): void {
    const b = this.batches.get(msg.batchId);
    if (!b || b.worker.agentId !== agentId || b.worker.workerId !== msg.workerId) return; // answered already (agent disconnect); late result ignored
    const now = this.opts.clock();
    const m = b.worker.model;
    const model = this.models[m]!;
    this.opts.metrics.batchExecuted(model.name, b.tasks.length, msg.latencyMs / 1000);
    this.epochStats.execSum[m]! += msg.latencyMs;
    this.epochStats.execN[m]! += 1;
    // The transport a batch pays beyond its GPU time (scheduler -> agent -> worker and back): learned
    // per worker so the dispatch rule starts batches early enough to meet the SLO with it.
    // Starts at 0 and moves 10% toward each sample, so one slow batch (a cold start) cannot make the
    // rule drop everything; an estimate that did grow decays while the worker gets no batches (epoch()).
    const overhead = Math.max(0, now - b.sentMs - msg.latencyMs);
    this.opts.metrics.transportTime.observe({ model: model.name }, overhead / 1000);
    this.log.debug({ batchId: msg.batchId, backAt: Date.now() }, 'batch back');
    b.worker.overheadMs = 0.9 * b.worker.overheadMs + 0.1 * overhead;
    b.worker.batchesThisEpoch++;
    const n = b.tasks.length;
    // Split each output along the batch dimension, checking the worker sent what it said.
    let offset = 0;
    const per: { ref: TensorRef; bytesPer: number; start: number }[] = [];
    let problem: string | null = null;
    for (const ref of msg.outputs) {
      if (ref.shape[0] !== n || ref.byteLength % n !== 0) problem = `output '${ref.name}' has shape [${ref.shape.join(',')}] for a batch of ${n}`;
      per.push({ ref, bytesPer: ref.byteLength / n, start: offset });
      offset += ref.byteLength;
    }
    if (offset !== payload.length) problem = `worker sent ${payload.length} output bytes, its header says ${offset}`;
    b.tasks.forEach((t, i) => {
      if (problem) {
        this.finish(t, { ok: false, reason: 'worker-failed', error: `worker ${b.worker.workerId} returned a malformed result: ${problem}` }, 'worker_failed');
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

  batchError(agentId: string, msg: Extract<FromAgent, { type: 'batchError' }>): void {
    const b = this.batches.get(msg.batchId);
    if (!b || b.worker.agentId !== agentId) return;
    if (msg.reason === 'wrong-worker') {
      // The agent runs another worker under this id: ours is not there. Nothing ran; the tasks go back
      // and the worker takes no batch until its agent reports it (by its whole identity) ready.
      this.log.warn({ worker: b.worker.workerId, agentId, err: msg.message }, 'the agent refused a batch: its worker is not the one sent to');
      b.worker.state = 'unknown';
      this.queues[b.worker.model]!.unshiftAll(b.tasks);
    } else if (msg.reason === 'worker-retired' || msg.reason === 'unknown-worker') {
      // Nothing ran: the tasks go back to the head of their queue for another worker.
      b.worker.state = msg.reason === 'worker-retired' ? 'draining' : 'unknown';
      this.queues[b.worker.model]!.unshiftAll(b.tasks);
    } else {
      const why = msg.reason === 'bad-batch' ? `worker ${msg.workerId} rejected the batch: ${msg.message}` : `worker ${msg.workerId} failed: ${msg.message}`;
      for (const t of b.tasks) this.finish(t, { ok: false, reason: 'worker-failed', error: why }, 'worker_failed');
    }
    this.batchDone(b);
  }

  telemetry(agentId: string, msg: Extract<FromAgent, { type: 'telemetry' }>): void {
    for (const g of msg.gpus) {
      const idx = this.gpuRefs.findIndex((r) => r.agentId === agentId && r.local === g.index);
      if (idx < 0) continue;
      if (g.utilPct !== null) this.opts.metrics.gpuUtil.set({ gpu: String(idx) }, g.utilPct);
      if (g.memUsedMb !== null) this.opts.metrics.gpuMemory.set({ gpu: String(idx), source: 'measured' }, g.memUsedMb);
    }
    for (const t of msg.workers) {
      const w = this.workers.find((x) => x.workerId === t.workerId);
      if (w && t.meanLatencyMs !== null) this.opts.metrics.workerLatency.set({ worker: w.workerId, model: this.models[w.model]!.name, gpu: String(w.gpu) }, t.meanLatencyMs / 1000);
    }
  }

  // ---- the cluster and the policy loop ----------------------------------------------------------

  private rebuildCluster(adopt: Extract<FromAgent, { type: 'hello' }> | null = null): void {
    const refs: { agentId: string; local: number }[] = [];
    const profiles: Profile[] = [];
    for (const a of [...this.agents.values()].sort((x, y) => x.agentId.localeCompare(y.agentId))) {
      for (const g of a.gpus) {
        const p = g.profile === null ? undefined : this.opts.profiles.get(g.profile);
        if (!p) {
          this.log.warn({ agentId: a.agentId, gpu: g.index, name: g.name, profile: g.profile }, 'GPU has no known profile; not used');
          continue;
        }
        refs.push({ agentId: a.agentId, local: g.index });
        profiles.push(p);
      }
    }
    const old = this.gpuRefs;
    this.gpuRefs = refs;
    this.gpuModes = refs.map((r) => {
      const o = old.findIndex((x) => x.agentId === r.agentId && x.local === r.local);
      return o >= 0 ? (this.gpuModes[o] ?? 'mps') : 'mps';
    });
    this.gpuBusy = refs.map(() => false);
    for (const w of this.workers) w.gpu = refs.findIndex((r) => r.agentId === w.agentId && r.local === w.localGpu);
    this.workers = this.workers.filter((w) => w.gpu >= 0);
    if (adopt) this.adopt(adopt.agentId, adopt.workers);
    if (refs.length === 0) {
      this.cluster = null;
      this.policy = null;
      return;
    }
    const models = this.models.filter((m) => profiles.some((p) => p.models[m.name]));
    if (models.length < this.models.length) this.log.warn({ missing: this.models.filter((m) => !models.includes(m)).map((m) => m.name) }, 'no GPU profile has these models; they cannot be deployed');
    this.cluster = buildCluster(profiles, this.models);
    try {
      this.policy = this.opts.createPolicy(this.cluster);
      this.policyError = null;
      this.log.info({ policy: this.opts.policyName, gpus: refs.length, models: this.models.length }, 'policy ready for the cluster');
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
    const stored = this.store?.placements() ?? [];
    const known = new Set(this.workers.map((w) => workerKey(this.identity(w))));
    for (const s of statuses) {
      this.nextGeneration = Math.max(this.nextGeneration, s.generation + 1);
      const m = this.modelIndex(s.model);
      const g = this.gpuRefs.findIndex((r) => r.agentId === agentId && r.local === s.gpu);
      if (m < 0 || g < 0 || s.state === 'draining' || s.state === 'failed' || known.has(workerKey(s))) continue;
      const row = stored.find((p) => p.workerId === s.workerId && p.agentId === agentId && p.model === s.model && p.gpu === s.gpu && p.pct === s.pct);
      this.workers.push(this.newWorker(s.workerId, s.generation, agentId, s.gpu, g, m, s.pct, row?.batch ?? 1, NaN, 'active'));
      this.log.info({ worker: s.workerId, generation: s.generation, model: s.model, gpu: s.gpu, pct: s.pct, agentId }, 'adopted a running worker');
    }
    const n = Math.max(0, ...this.workers.map((w) => Number(/^w(\d+)$/.exec(w.workerId)?.[1] ?? 0)));
    this.nextWorker = Math.max(this.nextWorker, n + 1);
    this.current = { placements: this.currentPlacements() };
  }

  private newWorker(workerId: string, generation: number, agentId: string, localGpu: number, gpu: number, model: number, pct: number, batch: number, timeoutMs: number, role: Role): Worker {
    return { workerId, generation, agentId, localGpu, gpu, model, pct, batch, timeoutMs, role, wanted: true, state: 'unknown', pid: null, replaces: null, inFlight: null, predicted: new Float64Array(MAX_PRED_BATCH), overheadMs: 0, batchesThisEpoch: 0 };
  }

  private currentPlacements(): Placement[] {
    return this.workers
      .filter((w) => w.wanted && (w.role === 'active' || w.role === 'shadow'))
      .map((w) => ({ model: w.model, gpu: w.gpu, pct: w.pct, batch: w.batch, ...(Number.isNaN(w.timeoutMs) ? {} : { timeoutMs: w.timeoutMs }) }));
  }

  /** One decision epoch: monitor -> policy -> apply. Runs every `epochMs` and when the cluster changes. */
  epoch(): void {
    if (this.stopped) return;
    this.monitor.endEpoch();
    for (let m = 0; m < this.models.length; m++) this.expire(m);
    for (const w of this.workers) {
      if (w.batchesThisEpoch === 0) w.overheadMs *= 0.5;
      w.batchesThisEpoch = 0;
    }
    const obs = this.observation();
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
    this.opts.metrics.decisions.inc();
    const changed = this.apply(d);
    if (changed) {
      this.store?.recordDecision({ policy: this.opts.policyName, ratePerS: obs.ratePerS, deployment: this.named(d), decideMs, nowIso: this.nowIso() });
      this.log.info({ placements: this.named(d).placements, decideMs: Number(decideMs.toFixed(3)) }, 'new deployment');
    }
  }

  private named(d: Deployment): { placements: unknown[]; gpuModes?: readonly GpuMode[] } {
    return {
      placements: d.placements.map((p) => ({ ...p, model: this.models[p.model]!.name, gpu: `${this.gpuRefs[p.gpu]?.agentId}:${this.gpuRefs[p.gpu]?.local}` })),
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
      this.opts.metrics.arrivalRate.set({ model: m.name }, obs.ratePerS[i]!);
      const done = obs.lastEpoch.served[i]! + obs.lastEpoch.dropped[i]!;
      if (done > 0) this.opts.metrics.sloAttainment.set({ model: m.name }, (obs.lastEpoch.served[i]! - obs.lastEpoch.violated[i]!) / done);
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
    for (const p of plan.invalid) this.log.error({ placement: p }, 'the policy emitted a placement outside the cluster; ignored');
    let changed = JSON.stringify(modes) !== JSON.stringify(this.gpuModes) || plan.start.length > 0 || plan.release.length > 0 || plan.abandon.length > 0;
    for (const { worker, placement } of plan.retune) {
      const t = placement.timeoutMs ?? NaN;
      if (worker.batch !== placement.batch || !(worker.timeoutMs === t || (Number.isNaN(t) && Number.isNaN(worker.timeoutMs)))) changed = true;
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
    for (const w of plan.abandon) letGo(w);
    for (const w of plan.retire) w.role = 'retiring';
    for (const st of plan.start) {
      const p = st.placement;
      const ref = this.gpuRefs[p.gpu]!;
      const w = this.newWorker(`w${this.nextWorker++}`, this.nextGeneration++, ref.agentId, ref.local, p.gpu, p.model, st.pct, p.batch, p.timeoutMs ?? NaN, 'shadow');
      w.replaces = st.replaces;
      this.workers.push(w);
    }
    for (const w of plan.release) letGo(w);
    this.gpuModes = modes;
    // Forget workers that left the desired set and have nothing in flight.
    this.workers = this.workers.filter((w) => w.wanted || w.inFlight !== null);
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
      this.opts.metrics.swaps.inc();
      if (old.inFlight === null) this.workers = this.workers.filter((x) => x !== old);
      this.refreshPredictions(old.gpu);
    }
    this.refreshPredictions(w.gpu);
    this.log.info({ worker: w.workerId, model: this.models[w.model]!.name, gpu: w.gpu, pct: w.pct, replaced: old?.workerId }, old ? 'shadow swap: new worker took over' : 'worker serving');
    for (const a of this.agents.values()) this.sendDesired(a.agentId);
    this.current = { placements: this.currentPlacements(), ...(this.current.gpuModes ? { gpuModes: this.current.gpuModes } : {}) };
    this.persistPlacements();
  }

  private desiredFor(agentId: string): DesiredWorker[] {
    return this.workers.filter((w) => w.agentId === agentId && w.wanted).map((w) => this.identity(w));
  }

  /** What the worker is, as its agent and its batches name it. */
  private identity(w: Worker): WorkerIdentity {
    return { workerId: w.workerId, model: this.models[w.model]!.name, gpu: w.localGpu, pct: w.pct, generation: w.generation };
  }

  private sendDesired(agentId: string): void {
    this.opts.link.send(agentId, { v: AGENT_PROTOCOL_VERSION, type: 'desired', generation: this.generation, workers: this.desiredFor(agentId) });
  }

  private persistPlacements(): void {
    if (!this.store) return;
    const rows = this.workers
      .filter((w) => w.wanted)
      .map((w) => ({ workerId: w.workerId, agentId: w.agentId, gpu: w.localGpu, model: this.models[w.model]!.name, pct: w.pct, batch: w.batch, role: w.role }));
    this.store.replacePlacements(rows, this.nowIso());
  }

  /** Recomputes the predicted batch-time tables of the serving workers on GPU g. */
  private refreshPredictions(g: number): void {
    if (!this.cluster || g < 0 || g >= this.cluster.gpus.length) return;
    const gpu = this.cluster.gpus[g]!;
    const serving = this.workers.filter((w) => w.gpu === g && (w.role === 'active' || w.role === 'retiring') && w.wanted);
    const timeshare = this.gpuModes[g] === 'timeshare';
    serving.forEach((w, k) => predictionTable(gpu, serving, k, timeshare, w.predicted));
    // A worker not yet serving gets its solo prediction, so a drop decision never divides by nothing.
    for (const w of this.workers) if (w.gpu === g && !serving.includes(w)) predictionTable(gpu, [w], 0, timeshare, w.predicted);
    let share = 0;
    let mem = 0;
    for (const w of this.workers) {
      if (w.gpu !== g || !w.wanted) continue;
      share += timeshare ? 0 : w.pct;
      const pi = gpu.profileIndex[w.model]!;
      if (pi >= 0) mem += gpu.model.memoryMb(pi, w.batch);
    }
    this.opts.metrics.gpuShare.set({ gpu: String(g) }, timeshare ? 100 : share);
    this.opts.metrics.gpuMemory.set({ gpu: String(g), source: 'predicted' }, mem);
  }

  private updateWorkerGauges(): void {
    const counts: Record<string, number> = { starting: 0, ready: 0, draining: 0, failed: 0, unknown: 0 };
    for (const w of this.workers) counts[w.state] = (counts[w.state] ?? 0) + 1;
    for (const [state, n] of Object.entries(counts)) this.opts.metrics.workers.set({ state }, n);
  }

  private nowIso(): string {
    return (this.opts.wallClock?.() ?? new Date()).toISOString();
  }
}

// The scheduler's control plane. It owns no socket: the hub hands it agent messages and it sends through `AgentLink`;
// the HTTP layer hands it tasks. Time comes from the injected `clock` (ms, monotonic). This class is the coordinator:
// each job is a manager in scheduler/control/, and each entry point here is a short list of calls to them:
// - the task buffer (taskBuffer.ts): per model, the tasks on time, the delayed lane, the dispatch timer;
// - the dispatcher (dispatcher.ts): the shared dispatch rule (src/serving/dispatch.ts) and batch sending;
// - the batches in flight (batches.ts): one `resolve` for every way a batch ends, relayed or direct;
// - the direct path (directPath.ts): batches straight to a worker's data socket when it is connected;
// - the worker set (workerSet.ts) and the agents (agents.ts): desired against reported workers;
// - the policy loop (policyLoop.ts), with the epoch's statistics (src/serving/epochStats.ts);
// - the path meter (pathMeter.ts): the way in, each batch's transport, the way out.
//
// Workers follow the serving rules in src/serving/ that the simulator follows too, so the running system
// behaves as the digital twin predicts; queueing follows each model's queue policy (src/serving/queuePolicy.ts).
// Every accepted task is answered exactly once: a result, or an error with its reason (dropped: cannot meet its
// SLO, queue full, not deployed, worker failed, shutting down); a batch its retiring worker refused is requeued.
// Over 400 lines because it is the one entry point of every manager: the agents', the tasks' and the doors'.
import type { Logger } from 'pino';
import type { Observation } from '../src/policy/types.js';
import type { FromAgent, WorkerStatus } from '../src/protocol/agent.js';
import type { DoorLoad, DoorTable } from '../src/protocol/door.js';
import { DEFAULT_SERVING_SETTINGS } from '../src/serving/settings.js';
import { clusterView, gpuIndex } from './clusterView.js';
import { AgentRegistry } from './control/agents.js';
import { taskShapes } from './control/batchInputs.js';
import { InFlightBatches, relayedErrorOutcome } from './control/batches.js';
import { DirectPath } from './control/directPath.js';
import { Dispatcher } from './control/dispatcher.js';
import { PathMeter } from './control/pathMeter.js';
import { PolicyLoop } from './control/policyLoop.js';
import type { Task } from './control/records.js';
import { TaskBuffer } from './control/taskBuffer.js';
import type {
  ControlOptions,
  ControlSettings,
  ServedModelConfig,
  TaskAnswer,
  TaskArrival,
  TaskInput,
} from './control/types.js';
import { doorRows, namedDeployment, notDeployed, snapshot, workerViews } from './control/views.js';
import { followTable } from './control/follow.js';
import { WorkerSet } from './control/workerSet.js';
import type { TaskOutcome, WorkerView } from './metrics.js';
import { type ControlObserver, fanOut } from './observer.js';

export type {
  AgentLink,
  ControlOptions,
  ControlSettings,
  ServedModelConfig,
  TaskAnswer,
  TaskArrival,
  TaskErrorReason,
  TaskInput,
  TaskOutput,
} from './control/types.js';

type Hello = Extract<FromAgent, { type: 'hello' }>;

const DISCONNECTED = 'agent disconnected; its tasks go to other workers, its placements kept for replaceAfterMs';
const LOST = 'agent lost: its GPUs leave the plan and its models are re-placed on the other agents until it is back';
const SHUTDOWN: TaskAnswer = { ok: false, reason: 'shutdown', error: 'the scheduler is shutting down' };

export class Control {
  readonly models: readonly ServedModelConfig[];
  private readonly settings: ControlSettings;
  private readonly log: Logger;
  private readonly observe: ControlObserver;
  private readonly agents = new AgentRegistry();
  private readonly buffer: TaskBuffer;
  private readonly meter: PathMeter;
  private readonly loop: PolicyLoop;
  private readonly direct: DirectPath;
  private readonly set: WorkerSet;
  private readonly batches: InFlightBatches;
  private readonly dispatcher: Dispatcher;
  private stopped = false;

  constructor(private readonly opts: ControlOptions) {
    const models = (this.models = opts.models);
    const settings = (this.settings = { ...DEFAULT_SERVING_SETTINGS, ...opts.settings });
    const log = (this.log = opts.logger);
    const observe = (this.observe = fanOut(opts.observers));
    const clock = opts.clock;
    const nowIso = () => this.nowIso();
    const finish = (t: Task, a: TaskAnswer, outcome: TaskOutcome) => this.finish(t, a, outcome);
    this.buffer = new TaskBuffer(models, clock);
    this.meter = new PathMeter(models, observe);
    this.loop = new PolicyLoop({
      models,
      policyName: opts.policyName,
      createPolicy: opts.createPolicy,
      settings,
      initialRatesPerS: models.map((m) => opts.initialRatePerS?.[m.name] ?? 0),
      clock,
      nowIso,
      observe,
      log,
    });
    this.direct = new DirectPath(opts.direct, models, log);
    this.set = new WorkerSet({
      models,
      agents: this.agents,
      link: opts.link,
      direct: this.direct,
      observe,
      log,
      storedPlacements: () => opts.storedPlacements?.() ?? [],
      nowIso,
      firstGeneration: opts.firstGeneration ?? (opts.wallClock?.() ?? new Date()).getTime(),
      followRunning: settings.pooledPrediction === 'running',
      ...(opts.holds ? { holds: opts.holds } : {}),
    });
    this.batches = new InFlightBatches(models, log, {
      clock,
      finish,
      requeue: (m, tasks) => this.buffer.onTime(m).unshiftAll(tasks),
      executed: (b, latencyMs, nowMs, memoryMb) => {
        observe.batchExecuted(models[b.worker.model]!.name, b.tasks.length, latencyMs / 1000);
        this.loop.batchTimed(b, latencyMs, this.set.workers, memoryMb);
        this.meter.batchAnswered(b, latencyMs, nowMs);
      },
      done: (b) => {
        this.set.batchFinished(b);
        this.dispatcher.afterBatch(b.worker);
      },
      closeDirect: (w) => this.direct.close(w),
    });
    this.direct.batches = this.batches;
    this.dispatcher = new Dispatcher({
      models,
      clock,
      dispatchSlack: settings.dispatchSlack,
      initialRatesPerS: this.loop.ratesPerS(),
      buffer: this.buffer,
      set: this.set,
      meter: this.meter,
      batches: this.batches,
      agents: this.agents,
      link: opts.link,
      direct: this.direct,
      finish,
      observe,
      log,
    });
  }

  start(): void {
    this.loop.start(() => this.epoch());
  }

  /** Answers every waiting task with a shutdown error; no task is left unanswered. */
  stop(): void {
    this.stopped = true;
    this.loop.stop();
    for (const t of this.buffer.stop()) this.finish(t, SHUTDOWN, 'shutdown');
    for (const b of this.batches.drain()) for (const t of b.tasks) this.finish(t, SHUTDOWN, 'shutdown');
    for (const w of this.set.workers) this.direct.close(w);
  }

  modelIndex(name: string): number {
    return this.models.findIndex((m) => m.name === name);
  }

  /** A model is ready when it has a worker that takes batches (a shared tier: its lane's). */
  modelReady(m: number): boolean {
    return this.set.modelReady(this.buffer.laneOf(m));
  }

  /** What /v2/health/ready and `inss up` report. */
  readiness(): { ready: boolean; notReady: string[]; policyError: string | null } {
    const notReady = this.models.filter((_, m) => !this.modelReady(m)).map((m) => m.name);
    return { ready: notReady.length === 0, notReady, policyError: this.loop.error };
  }

  /** A snapshot for GET /v2/inss/cluster (operators, tests). */
  snapshot(): unknown {
    return snapshot({
      policyName: this.opts.policyName,
      policyError: this.loop.error,
      settings: this.settings,
      models: this.models,
      agents: this.agents,
      set: this.set,
      buffer: this.buffer,
      meter: this.meter,
      dispatchMarginMs: this.dispatcher.marginMs,
    });
  }

  /** The workers with the share and batch in force (read-only: Triton's model configuration, metrics). */
  workerViews(): WorkerView[] {
    return workerViews(this.set, this.models);
  }

  // ---- tasks ------------------------------------------------------------------------------------

  /**
   * Accepts a task: its sample of each input of the model, in signature order, validated. `answer` is
   * called exactly once, later or at once. The caller has checked that the model exists.
   */
  submit(m: number, input: TaskInput | readonly TaskInput[], answer: (a: TaskAnswer) => void, arrival?: TaskArrival) {
    const now = this.opts.clock();
    const arrivalMs = arrival?.stampMs ?? (arrival && arrival.receivedMs <= now ? arrival.receivedMs : now);
    this.loop.arrival(m, arrival?.stampMs === undefined ? arrivalMs : now);
    const inputs = 'data' in input ? [input.data] : input.map((i) => i.data);
    this.meter.taskSubmitted(inputs, now, arrival);
    const task: Task = {
      model: m,
      arrivalMs,
      inputs,
      ...taskShapes(this.models[m]!, input),
      encoding: ('data' in input ? input : input[0])?.encoding,
      answer,
      submittedMs: now,
      dispatchedMs: NaN,
    };
    if (this.stopped) return this.finish(task, SHUTDOWN, 'shutdown');
    if (!this.set.deployedOrComing(this.buffer.laneOf(m))) {
      const error = notDeployed(this.models[m]!.name, this.loop.error, this.set.gpuRefs.length);
      this.finish(task, { ok: false, reason: 'not-deployed', error }, 'not_deployed');
      return;
    }
    // Into its lane (a shared tier's: its network's, src/serving/tiers.ts), making room or refused (queuePolicy.ts).
    const lane = this.buffer.enqueue(
      task,
      (x) => this.dispatcher.onTimeMs(x),
      (t, a, o) => this.finish(t, a, o),
    );
    if (lane >= 0) this.dispatcher.tryDispatch(lane);
  }

  /**
   * A task's answer was handed to the kernel `wayOutMs` after the control plane answered it (the HTTP
   * layer tells, once per answered task): the dispatch rule budgets each task its SLO less the expected
   * way out (`dispatchBudgetMs`).
   */
  answerSent(wayOutMs: number): void {
    this.meter.answerSent(wayOutMs);
  }

  private finish(t: Task, a: TaskAnswer, outcome: TaskOutcome): void {
    const now = this.opts.clock();
    const name = this.models[t.model]!.name;
    const lat = Math.max(0, now - t.arrivalMs); // from a pipeline step's stamp, which may be ahead of its answer
    this.observe.taskFinished(name, outcome, lat / 1000);
    // Per-task tracing (docs/results.md, "The live system against its twin").
    if (this.log.isLevelEnabled('debug'))
      this.log.debug(
        {
          model: name,
          outcome,
          wayInMs: t.submittedMs - t.arrivalMs,
          queuedMs: t.dispatchedMs - t.arrivalMs,
          batchMs: now - t.dispatchedMs,
          latencyMs: lat,
          budgetMs: this.dispatcher.budgetMs(t.model),
        },
        'task',
      );
    this.loop.answered(t.model, a, outcome, lat);
    t.answer(a);
  }

  // ---- agent messages ---------------------------------------------------------------------------

  agentConnected(hello: Hello): void {
    const gpusChanged = this.agents.hello(hello);
    this.observe.agentJoined({
      agentId: hello.agentId,
      hostname: hello.hostname,
      workerKind: hello.workerKind,
      gpus: hello.gpus,
      connected: true,
      nowIso: this.nowIso(),
    });
    this.observe.agentCount(this.agents.connectedCount());
    // A scheduler that restarted adopts the workers the agent still runs, when it has none of its own
    // there, by what they are (model, GPU, share), before its policy decides anything.
    const adopt = this.set.workers.some((w) => w.agentId === hello.agentId) ? null : hello;
    if (gpusChanged) this.rebuildCluster(adopt);
    else if (adopt) this.set.adopt(adopt.agentId, adopt.workers);
    this.workersReported(hello.agentId, hello.workers);
    this.set.sendDesired(hello.agentId);
    this.dispatcher.dispatchAll();
  }

  agentDisconnected(agentId: string): void {
    if (this.stopped || !this.agents.disconnected(agentId, this.opts.clock())) return;
    this.observe.agentLeft(agentId, this.nowIso());
    this.observe.agentCount(this.agents.connectedCount());
    // Whether its batches in flight ran is unknown (it may be cut off, not dead): their tasks go back to
    // their queues for the model's other workers, and an answer that comes late is ignored. Its workers'
    // data connections are dropped at once (a silent one would not close for minutes); their batches
    // go back too, their worker being in state 'unknown' (directPath.ts).
    this.set.agentLost(agentId);
    for (const b of this.batches.where((x) => x.worker.agentId === agentId && !x.direct))
      this.batches.resolve(b, { kind: 'not-run', workerState: 'unknown' });
    for (const w of this.set.workers) if (w.agentId === agentId) this.direct.close(w, true);
    this.log.warn({ agentId, replaceAfterMs: this.opts.agentLostMs ?? 0 }, DISCONNECTED);
    this.dispatcher.dispatchAll();
  }

  workersReported(agentId: string, statuses: readonly WorkerStatus[]): void {
    this.set.reported(agentId, statuses);
    this.dispatcher.dispatchAll();
  }

  batchResult(agentId: string, msg: Extract<FromAgent, { type: 'result' }>, payload: Buffer): void {
    const b = this.batches.find(msg.batchId, { direct: false, agentId, workerId: msg.workerId });
    if (!b) return;
    this.log.debug({ batchId: msg.batchId, backAt: Date.now() }, 'batch back');
    const { latencyMs, outputs, memoryMb } = msg;
    this.batches.resolve(b, { kind: 'result', latencyMs, outputs, payload, ...(memoryMb ? { memoryMb } : {}) });
  }

  batchError(agentId: string, msg: Extract<FromAgent, { type: 'batchError' }>): void {
    const b = this.batches.find(msg.batchId, { direct: false, agentId });
    if (b) this.batches.resolve(b, relayedErrorOutcome(msg));
  }

  telemetry(agentId: string, msg: Extract<FromAgent, { type: 'telemetry' }>): void {
    for (const g of msg.gpus) {
      const idx = gpuIndex(this.set.gpuRefs, agentId, g.index);
      if (idx < 0) continue;
      this.observe.gpuMeasured(idx, g.utilPct, g.memUsedMb);
    }
    for (const t of msg.workers) {
      const w = this.set.workers.find((x) => x.workerId === t.workerId);
      if (w && t.meanLatencyMs !== null)
        this.observe.workerLatencyMeasured(w.workerId, this.models[w.model]!.name, w.gpu, t.meanLatencyMs / 1000);
    }
  }

  // ---- front doors (docs/front-doors.md) ----------------------------------------------------------

  /** A front door's table from its scheduler (scheduler/frontDoor.ts): its worker set follows it. */
  follow(t: DoorTable): void {
    const { models, agents, set } = this;
    followTable({ models, profiles: this.opts.profiles, agents, set, nowMs: this.opts.clock() }, t);
    this.dispatcher.dispatchAll();
  }

  /** The agents and workers for the doors' tables, each worker with its GPU's door (`doorOf`). */
  doorRows(doorOf: (agentId: string, localGpu: number) => number): ReturnType<typeof doorRows> {
    return doorRows(this.agents, this.set, this.models, doorOf);
  }

  /** A front door's load since its last report counts as this process's (PolicyLoop.doorLoad). */
  doorLoad(load: DoorLoad): void {
    this.loop.doorLoad(load, (name) => this.modelIndex(name));
  }

  /** The workers this process dispatches to changed (a GPU changed doors): each model's rule runs again. */
  dispatchAll(): void {
    this.dispatcher.dispatchAll();
  }

  // ---- the cluster and the policy loop ----------------------------------------------------------

  /** An agent's GPUs changed: a new cluster, a new policy for it, and its first decision. */
  private rebuildCluster(adopt: Hello | null): void {
    const view = clusterView(this.agents.planned(), this.opts.profiles, this.models);
    this.set.rebuild(view, adopt);
    this.loop.clusterChanged(view.cluster);
    if (view.cluster === null) return;
    this.set.rebuilt();
    this.decide(this.observation());
  }

  /** At an epoch's end, agents away for `agentLostMs` leave the plan (agents.ts), as a cluster change. */
  private replaceLost(): void {
    const now = this.opts.clock();
    const lost = this.opts.agentLostMs ? this.agents.replaceLost(now, this.opts.agentLostMs) : [];
    for (const a of lost) this.log.warn({ agentId: a.agentId, awayMs: Math.round(now - a.lostSinceMs!) }, LOST);
    if (lost.length > 0) this.rebuildCluster(null);
  }

  /** One decision epoch: monitor -> policy -> apply. Runs every `epochMs` and when the cluster changes. */
  epoch(): void {
    if (this.stopped) return;
    this.loop.endMonitorEpoch();
    for (let m = 0; m < this.models.length; m++) this.dispatcher.expire(m);
    this.meter.endEpoch(this.set.workers);
    const obs = this.observation();
    // The dispatch rule's rates (the policy's observation) and margin (how late its timers fired).
    this.dispatcher.retune(obs.ratePerS);
    this.loop.endEpoch(obs);
    this.decide(obs);
    this.replaceLost();
  }

  /**
   * Asks the policy and applies its deployment: at each epoch's end, and when the cluster changes (an
   * agent joins or leaves), which decides without ending the monitor's epoch (as the simulator's
   * decision at time 0 does), so the warm-up rule counts only whole epochs.
   */
  private decide(obs: Observation): void {
    if (this.stopped || !this.set.cluster) return;
    this.loop.decide(
      obs,
      (d) => {
        this.buffer.sharedBy = d.sharedBy;
        const changed = this.set.apply(d);
        this.dispatcher.dispatchAll();
        return changed;
      },
      (d) => namedDeployment(d, this.set, this.models),
    );
  }

  private observation(): Observation {
    const queued = this.models.map((_, m) => this.buffer.onTime(m).length);
    return this.loop.observation(queued, this.set.current);
  }

  private nowIso(): string {
    return (this.opts.wallClock?.() ?? new Date()).toISOString();
  }
}

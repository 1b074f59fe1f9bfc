// The simulation of one run: the dispatch rule's view of the workers, the policy loop and the event
// loop, over the task buffer (taskBuffer.ts) and the simulated GPUs (gpus.ts). simulator.ts states the model;
// `simulate` (simulator.ts) is the entry point. Event order and seeded draws are part of the contract:
// the conformance suite and recorded decision digests depend on them.
// Over 400 lines because the event loop's handlers (model and pipeline arrivals, dispatch, batch ends,
// reconfiguration, failures) all act on the simulation's private state in an order that is part of the contract;
// what needs none of it lives in its own module (pipelines.ts, taskBuffer.ts, doors.ts, gpus.ts, requests.ts,
// stats.ts).
import type { ClusterInfo, Deployment, Observation, Placement, Policy } from '../policy/types.js';
import { type DispatchRules, type DispatchView, dispatchModel, nextBatchAtMs } from '../serving/dispatch.js';
import { EpochStats } from '../serving/epochStats.js';
import { RateMonitor } from '../serving/monitor.js';
import { nextModelsOnFreedGpu } from '../serving/rules.js';
import { dispatchBudgetMs, idleOverheadMs, learnedOverheadMs } from '../serving/transport.js';
import { laneOf, laneRatePerS } from '../serving/tiers.js';
import { onReady, planApply } from '../serving/workerSet.js';
import { SimDoors } from './doors.js';
import { SimGpus } from './gpus.js';
import { SimPipelines } from './pipelines.js';
import { Requests } from './requests.js';
import { simResult, SimStats } from './stats.js';
import { TaskBuffer } from './taskBuffer.js';
import type { SimInput, SimResult, SimSettings, WorkerFailure } from './types.js';
import { newWorker, serves, SIM_VIEW, type SimWorker, State } from './worker.js';

export class Simulation {
  private readonly cluster: ClusterInfo;
  private readonly settings: SimSettings;
  private readonly policy: Policy;
  private readonly nModels: number;
  /** The batch transport when no transport model is given (ms). */
  private readonly fixedTransportMs: number;
  private readonly learnsTransport: boolean;
  private readonly requests: Requests;
  private readonly gpus: SimGpus;
  private readonly stats: SimStats;
  private readonly epoch: EpochStats;
  private readonly monitor: RateMonitor;
  /** The dispatch rule's arrival rates: the monitor's estimate, taken at each decision as the policy's. */
  private ratesPerS: readonly number[];
  /** The front doors (doors.ts): per door a task buffer, dispatch timers and a share of the workers. */
  private readonly doors: SimDoors;
  /** Per door, the dispatch rule's view of it. */
  private readonly views: DispatchView<SimWorker>[];
  /** Per model, its tasks' SLO (a pipeline step model's: its step's budget in force). */
  private readonly sloMs: number[];
  /** Added to a task's latency after its batch ends: the answer's way out and the client's own leg. */
  private readonly answeredAfterMs: number;
  private readonly wayOutMs: number;
  private readonly pipelines: SimPipelines;
  private readonly rules: DispatchRules;
  private current: Deployment = { placements: [] };
  private nextWorkerId = 0;
  private dispatchNowMs = 0;

  constructor(private readonly input: SimInput) {
    const { cluster, settings } = input;
    this.cluster = cluster;
    this.settings = settings;
    this.policy = input.policy;
    const n = cluster.models.length;
    this.nModels = n;
    const transport = settings.transport;
    this.fixedTransportMs = settings.transportMs ?? 0;
    this.learnsTransport = transport !== undefined;
    this.stats = new SimStats(n);
    this.gpus = new SimGpus(cluster, input.truthCluster ?? cluster, settings.groundTruth, this.stats, input.trace);
    this.gpus.followRunning = settings.pooledPrediction !== 'solo';
    this.sloMs = cluster.models.map((m) => m.sloMs);
    // The answer's way out (the transport model's): the dispatch rule and expiry budget each task its
    // SLO less it (`dispatchBudgetMs`, the scheduler's rule). The client's own leg counts in each
    // task's latency as its client sees it, not in the budget: the scheduler cannot see it.
    const wayOutMs = transport?.wayOutMs ?? 0;
    this.wayOutMs = wayOutMs;
    this.answeredAfterMs = wayOutMs + (transport?.clientMs ?? 0);
    this.rules = { slack: settings.dispatchSlack, marginMs: settings.dispatchMarginMs ?? 0 };
    this.requests = new Requests(cluster, input.streams, transport, this.fixedTransportMs, settings.groundTruth.seed);
    this.pipelines = new SimPipelines(cluster, input.pipelineStreams ?? [], (m) => this.requests.drawWayInMs(m));
    // A step model's tasks are budgeted their step's share of its pipeline's SLO, only the last step's less the way
    // out (the even split until a deployment says otherwise).
    const pipes = this.pipelines;
    const wayOutOf = (m: number) => (pipes.pipelineOf[m]! < 0 || pipes.isLast(m) ? wayOutMs : 0);
    this.sloMs.forEach((_, m) => {
      if (pipes.pipelineOf[m]! >= 0) this.sloMs[m] = pipes.budgetMs(m);
    });
    const budgetMs = this.sloMs.map((slo, m) => dispatchBudgetMs(slo, wayOutOf(m)));
    this.monitor = new RateMonitor(n, settings.epochMs, settings.monitorWindowMs, settings.monitor);
    this.ratesPerS = this.monitor.ratesPerS(input.initialRatePerS);
    this.epoch = new EpochStats(n);
    const buffer = () =>
      new TaskBuffer(budgetMs, settings.queuePolicies, this.stats, this.epoch, input.trace, this.pipelines);
    this.doors = new SimDoors(settings.frontDoors ?? 1, n, cluster.gpus.length, buffer);
    this.views = this.doors.buffers.map((b, d) => this.dispatchView(b, d));
  }

  /** The dispatch loop's view of door d (src/serving/dispatch.ts, shared with the scheduler), its buffer `b`. */
  private dispatchView = (b: TaskBuffer, d: number): DispatchView<SimWorker> => ({
    model: (w) => w.model,
    canRun: (w) => this.canRun(w),
    batch: (w) => w.batch,
    timeoutMs: (w) => w.timeoutMs,
    predicted: (w) => w.predicted,
    // Without a transport model, the fixed transport; with one, learned from the worker's batches the
    // way the scheduler learns it (src/serving/transport.ts).
    overheadMs: (w) => (this.learnsTransport ? w.overheadMs : this.fixedTransportMs),
    gpu: (w) => w.gpu,
    timeshared: (w) => this.gpus.timeshared(w.gpu),
    gpuBusy: (w) => this.gpus.running[w.gpu]!.size > 0,
    budgetMs: (m) => b.onTimeMs[m]!,
    ratePerS: (m) => this.doors.ratePerS(d, m, laneRatePerS(this.current.sharedBy, m, this.ratesPerS)),
    delays: (m) => b.policies[m]!.delay,
    queued: (m) => b.onTime[m]!.length,
    headArrivalMs: (m) => b.onTime[m]!.peek(),
    delayed: (m) => b.delayed[m]!.length,
    // The head task cannot meet its deadline even if its batch starts now.
    drop: (m) => b.dropHead(m, this.dispatchNowMs),
    delay: (m) => b.delay(m, this.dispatchNowMs),
    start: (w, size) => this.sendBatch(w, this.dispatchNowMs, size, false),
    startDelayed: (w, size) => this.sendBatch(w, this.dispatchNowMs, size, true),
    idle: (w) => !w.busy && !w.held,
    pipelinedAtMs: (w) =>
      w.busy && !w.held && serves(w)
        ? nextBatchAtMs(1, w.lastSentMs, w.lastPredMs, w.overheadMs, this.gpus.timeshared(w.gpu))
        : Infinity,
  });

  private canRun(w: SimWorker): boolean {
    const timeshared = this.gpus.timeshared(w.gpu);
    const inFlight = (w.busy ? 1 : 0) + (w.held ? 1 : 0);
    return (
      w.downUntilMs === Infinity &&
      this.dispatchNowMs >= nextBatchAtMs(inFlight, w.lastSentMs, w.lastPredMs, w.overheadMs, timeshared) &&
      serves(w) &&
      !this.gpus.full(w.gpu)
    );
  }

  /**
   * Starts batches of `m` on its free workers as the dispatch rule allows, at door `door` (-1: at every door); arms
   * the door's timer for the model otherwise.
   */
  private tryDispatch(m: number, nowMs: number, door = -1): void {
    this.dispatchNowMs = nowMs;
    const doors = this.doors;
    const [from, to] = door < 0 ? [0, doors.count] : [door, door + 1];
    for (let d = from; d < to; d++) {
      doors.timer[d * this.nModels + m] = dispatchModel(
        m,
        nowMs,
        this.rules,
        doors.workers(d, this.gpus.workers),
        this.views[d]!,
      );
    }
  }

  /** Model m's request queued at `nowMs`: its tasks are admitted (or make room, or are dropped). */
  private arrive(m: number, nowMs: number): void {
    this.requests.taken(m, nowMs);
    // A shared tier's task goes to its lane's door and queue (src/serving/tiers.ts).
    const lane = laneOf(this.current.sharedBy, m);
    const door = this.doors.route(lane);
    for (let k = this.settings.samplesPerRequest?.[m] ?? 1; k > 0; k--) {
      this.stats.arrivals[m]! += 1;
      this.monitor.arrival(m, nowMs);
      this.doors.buffers[door]!.admit(m, this.requests.arrivalMs[m]!, nowMs);
    }
    this.requests.next(m);
    this.tryDispatch(lane, nowMs, door);
  }

  /** Pipeline p's request queued at `nowMs`: its step-0 task (pipelines.ts). */
  private arrivePipeline(p: number, nowMs: number): void {
    const m = this.pipelines.taken(p, nowMs);
    const arrivalMs = this.pipelines.arrivalMs[p]!;
    const door = this.doors.route(m);
    this.queueStep(m, arrivalMs, nowMs, door);
    this.pipelines.next(p);
    this.tryDispatch(m, nowMs, door);
  }

  /** A task of step model m for a request that arrived at `originMs` enters door `door`'s queue at `nowMs`. */
  private queueStep(m: number, originMs: number, nowMs: number, door: number): void {
    this.stats.arrivals[m]! += 1;
    this.monitor.arrival(m, nowMs);
    this.doors.buffers[door]!.admit(m, this.pipelines.stampMs(m, originMs), nowMs, originMs);
  }

  /**
   * Sends a batch of the `size` oldest tasks of its model's on-time (or delayed) lane to `w`: it runs now, or after
   * the one running (pipelining).
   */
  private sendBatch(w: SimWorker, nowMs: number, size: number, fromDelayed: boolean): void {
    w.lastSentMs = nowMs;
    w.lastPredMs = w.predicted.ms(size);
    if (w.busy) {
      const h = (w.held ??= {
        size: 0,
        sentMs: 0,
        transportMs: 0,
        arrivals: new Float64Array(Math.max(size, w.batch)),
        origins: new Float64Array(0),
        names: new Int32Array(0),
        tiers: false,
      });
      if (h.arrivals.length < size) h.arrivals = new Float64Array(size);
      h.tiers = this.doors.buffers[w.door]!.take(w.model, fromDelayed, h, size);
      h.size = size;
      h.sentMs = nowMs;
      h.transportMs = this.requests.batchTransportMs(w.model, size);
      return;
    }
    if (w.arrivals.length < size) w.arrivals = new Float64Array(Math.max(size, w.arrivals.length * 2));
    w.tiers = this.doors.buffers[w.door]!.take(w.model, fromDelayed, w, size);
    w.transportMs = this.requests.batchTransportMs(w.model, size);
    this.gpus.startBatch(w, nowMs, size, nowMs, w.transportMs);
  }

  /** The batch held by a worker whose GPU just freed starts; what is left of its transport comes first. */
  private startHeld(w: SimWorker, nowMs: number): void {
    const h = w.held!;
    w.held = null;
    w.arrivals = h.arrivals;
    w.origins = h.origins;
    [w.names, h.names] = [h.names, w.names];
    w.tiers = h.tiers;
    // What its dispatch estimate learns: the transport not hidden behind the batch before (as the scheduler measures
    // it).
    w.transportMs = Math.max(0, h.transportMs - (nowMs - h.sentMs));
    this.gpus.startBatch(w, nowMs, h.size, h.sentMs, w.transportMs);
  }

  /** A batch leaves its worker (done or lost): the worker is free, and so is a time-shared GPU. */
  private batchEnded(w: SimWorker, nowMs: number): void {
    const gpus = this.gpus;
    gpus.accountShares(nowMs);
    w.busy = false;
    w.doneAtMs = Infinity;
    w.size = 0;
    w.runSize = 0;
    gpus.endBatch(w);
    // Pipelining: the batch sent ahead starts now that the GPU is free.
    if (w.held) this.startHeld(w, nowMs);
    if (w.state === State.Draining && !w.busy) w.state = State.Stopped;
    if (gpus.timeshared(w.gpu)) {
      // The GPU is free: the model whose oldest task's deadline is soonest goes next (src/serving/rules.ts).
      const onGpu = gpus.workers.filter((x) => x.gpu === w.gpu && x.state !== State.Stopped).map((x) => x.model);
      const deadline = (m: number) => this.doors.headArrivalMs(m) + this.sloMs[m]!;
      for (const x of nextModelsOnFreedGpu(onGpu, deadline)) this.tryDispatch(x, nowMs);
    } else {
      this.tryDispatch(w.model, nowMs, w.door);
    }
  }

  private finishBatch(w: SimWorker, nowMs: number): void {
    const m = w.model;
    const slo = this.sloMs[m]!;
    const exec = w.execMs;
    // A pipeline's inner step answers the scheduler, not a client (pipelines.ts): no way out, and its tasks
    // go on to the next step; the last step's answers are its requests'.
    const step = this.pipelines.pipelineOf[m]! >= 0;
    const last = !step || this.pipelines.isLast(m);
    const after = last ? this.answeredAfterMs : 0;
    const next = last ? -1 : this.pipelines.nextModel(m);
    const nextDoor = next < 0 ? 0 : this.doors.routeStep(next, w.door);
    for (let i = 0; i < w.size; i++) {
      const a = w.arrivals[i]!;
      const lat = nowMs - a + after;
      // From a lane of shared tiers, each task is answered, timed and counted under its own name.
      const name = w.tiers ? w.names[i]! : m;
      const good = lat <= (w.tiers ? this.sloMs[name]! : slo);
      this.stats.answered(name, lat, w.startMs - a, exec, good);
      this.epoch.answered(name, lat, !good);
      if (w.tiers) this.stats.served[name]! += 1;
      if (!step) continue;
      if (last) this.pipelines.answered(m, nowMs - w.origins[i]! + after);
      else this.queueStep(next, w.origins[i]!, nowMs, nextDoor);
    }
    if (!w.tiers) this.stats.served[m]! += w.size;
    this.epoch.batchTimed(m, exec, w.detail ?? undefined);
    w.overheadMs = this.learnsTransport ? learnedOverheadMs(w.overheadMs, w.transportMs) : this.fixedTransportMs;
    w.batchesThisEpoch++;
    this.batchEnded(w, nowMs);
    if (next >= 0) this.tryDispatch(next, nowMs, nextDoor);
  }

  /** A worker dies (simulator.ts, "Worker failures"): the batches it runs and holds are lost. */
  private fail(f: WorkerFailure, nowMs: number): void {
    const w = this.gpus.workers.find(
      (x) => x.model === f.model && x.gpu === f.gpu && serves(x) && x.downUntilMs === Infinity,
    );
    if (!w) return;
    const lost = w.busy ? w.size + (w.held?.size ?? 0) : 0;
    this.input.trace?.fail?.(nowMs, w.model, w.gpu, lost);
    w.downUntilMs = nowMs + f.downMs;
    if (!w.busy) return;
    this.lost(w.model, w.tiers ? w.names : null, w.size);
    if (w.held) this.lost(w.model, w.held.tiers ? w.held.names : null, w.held.size);
    w.held = null;
    if (this.pipelines.pipelineOf[w.model]! >= 0) this.pipelines.droppedTasks(w.model, lost);
    this.batchEnded(w, nowMs);
  }

  /** `size` tasks of a lost batch of model m are dropped, each under its name where they came from shared tiers. */
  private lost(m: number, names: Int32Array | null, size: number): void {
    for (let i = 0; i < size; i++) {
      const name = names ? names[i]! : m;
      this.stats.dropped[name]! += 1;
      this.epoch.dropped(name, 1);
    }
  }

  private recover(w: SimWorker, nowMs: number): void {
    w.downUntilMs = Infinity;
    this.tryDispatch(w.model, nowMs);
  }

  private newWorker(p: Placement, nowMs: number, ready: boolean): SimWorker {
    const overheadMs = this.learnsTransport ? 0 : this.fixedTransportMs;
    return newWorker(this.nextWorkerId++, p, nowMs, ready, this.settings.swapMs, overheadMs);
  }

  /** Moves the cluster toward a new deployment (simulator.ts, "Reconfiguration": what is free, what swaps). */
  private apply(d: Deployment, nowMs: number, first: boolean): void {
    const gpus = this.gpus;
    gpus.accountShares(nowMs);
    gpus.learn(d.learned);
    // The plan is the control plane's too (src/serving/workerSet.ts); here it runs in simulated time.
    const nGpus = this.cluster.gpus.length;
    const plan = planApply(gpus.workers, SIM_VIEW, d, gpus.modes, this.nModels, nGpus, first);
    for (const { worker, placement } of plan.retune) {
      worker.batch = placement.batch;
      worker.timeoutMs = placement.timeoutMs ?? NaN;
      worker.padBatch = placement.padBatch === true;
    }
    for (const w of plan.reinstate) w.state = State.Active;
    for (const w of plan.abandon) w.state = State.Stopped;
    for (const w of plan.retire) w.state = State.Retiring;
    for (const st of plan.start) {
      const w = this.newWorker({ ...st.placement, pct: st.pct }, nowMs, first);
      w.replaces = st.replaces;
      if (!first) this.stats.swaps++;
      gpus.workers.push(w);
    }
    for (const w of plan.release) w.state = w.busy ? State.Draining : State.Stopped;
    this.doors.place(gpus.workers);
    for (const b of this.doors.buffers) b.route(d.sharedBy);
    gpus.modes = plan.modes;
    // A pipeline's new split: its step models' budgets follow it (pipelines.ts).
    for (const m of this.pipelines.apply(d)) {
      this.sloMs[m] = this.pipelines.budgetMs(m);
      const budgetMs = dispatchBudgetMs(this.sloMs[m], this.pipelines.isLast(m) ? this.wayOutMs : 0);
      for (const b of this.doors.buffers) b.setBudget(m, budgetMs);
    }
    gpus.workers = gpus.workers.filter((w) => w.state !== State.Stopped || w.busy);
    for (let g = 0; g < nGpus; g++) {
      gpus.refreshPredictions(g);
      if (gpus.overcommitted(g)) this.stats.memoryOvercommits++;
    }
    this.doors.refresh(gpus.workers);
    this.current = d;
  }

  private activate(w: SimWorker, nowMs: number): void {
    this.gpus.accountShares(nowMs);
    w.state = State.Active;
    w.readyAtMs = Infinity;
    this.input.trace?.activate?.(nowMs, w.model, w.gpu, w.pct);
    const old = onReady(w, SIM_VIEW);
    if (old) old.state = old.busy ? State.Draining : State.Stopped;
    w.replaces = null;
    this.gpus.refreshPredictions(w.gpu);
    this.doors.refresh(this.gpus.workers);
    this.tryDispatch(w.model, nowMs);
  }

  private observation(nowMs: number): Observation {
    const queued = this.cluster.models.map((_, m) => this.doors.queued(m));
    return this.epoch.observe(nowMs, this.monitor, this.input.initialRatePerS, queued, this.current);
  }

  private decide(nowMs: number, first: boolean): void {
    const obs = this.observation(nowMs);
    this.ratesPerS = obs.ratePerS;
    const clock = this.input.clock;
    const t0 = clock?.();
    const d = this.policy.decide(obs);
    if (t0 !== undefined) this.stats.decisionMs.push(clock!() - t0);
    this.apply(d, nowMs, first);
    for (let m = 0; m < this.nModels; m++) this.tryDispatch(m, nowMs);
  }

  private endEpoch(nowMs: number): void {
    this.monitor.endEpoch();
    for (const w of this.gpus.workers) {
      if (this.learnsTransport && w.batchesThisEpoch === 0) w.overheadMs = idleOverheadMs(w.overheadMs);
      w.batchesThisEpoch = 0;
    }
    for (const b of this.doors.buffers) for (let m = 0; m < this.nModels; m++) b.expire(m, nowMs);
    const sec = this.settings.epochMs / 1000;
    const t = this.epoch.totals();
    this.stats.timeline.push({
      tMs: nowMs,
      servedPerS: t.served / sec,
      goodPerS: t.good / sec,
      missedPerS: t.missed / sec,
    });
  }

  /**
   * Runs to `settings.durationMs`. Event sources are few (one next arrival and one timer per model,
   * one event per worker, the epoch), so the next event is found by scanning rather than with a heap;
   * at equal times the epoch goes first, then arrivals and timers by model, pipeline arrivals, workers, failures.
   */
  run(): SimResult {
    const { settings, requests, gpus } = this;
    const { timer, count: nDoors } = this.doors;
    this.decide(0, true);
    const failures = [...(this.input.failures ?? [])].sort((a, b) => a.tMs - b.tMs);
    let nextFailure = 0;
    let nextEpochMs = settings.epochMs;
    const end = settings.durationMs;
    for (;;) {
      let tMin = nextEpochMs;
      let kind = 0; // 0 epoch, 1 arrival, 2 timer, 3 worker, 4 failure, 5 pipeline arrival
      let which = -1;
      let door = 0;
      for (let m = 0; m < this.nModels; m++) {
        if (requests.queuedMs[m]! < tMin) {
          tMin = requests.queuedMs[m]!;
          kind = 1;
          which = m;
        }
        for (let d = 0; d < nDoors; d++)
          if (timer[d * this.nModels + m]! < tMin) {
            tMin = timer[d * this.nModels + m]!;
            kind = 2;
            which = m;
            door = d;
          }
      }
      for (let p = 0; p < this.pipelines.count; p++)
        if (this.pipelines.queuedMs[p]! < tMin) {
          tMin = this.pipelines.queuedMs[p]!;
          kind = 5;
          which = p;
        }
      let worker: SimWorker | null = null;
      for (const w of gpus.workers) {
        const t = w.busy ? w.doneAtMs : w.state === State.Starting ? w.readyAtMs : w.downUntilMs;
        if (t < tMin) {
          tMin = t;
          kind = 3;
          worker = w;
        }
      }
      if (nextFailure < failures.length && failures[nextFailure]!.tMs < tMin) {
        tMin = failures[nextFailure]!.tMs;
        kind = 4;
      }
      if (tMin > end) break;
      this.stats.events++;
      if (kind === 1) this.arrive(which, tMin);
      else if (kind === 2) this.tryDispatch(which, tMin, door);
      else if (kind === 3) {
        const w = worker!;
        if (w.busy) this.finishBatch(w, tMin);
        else if (w.state === State.Starting) this.activate(w, tMin);
        else this.recover(w, tMin);
        if (w.state === State.Stopped) gpus.workers = gpus.workers.filter((x) => x !== w);
      } else if (kind === 4) {
        this.fail(failures[nextFailure++]!, tMin);
      } else if (kind === 5) {
        this.arrivePipeline(which, tMin);
      } else {
        this.endEpoch(tMin);
        this.decide(tMin, false);
        this.epoch.reset();
        nextEpochMs += settings.epochMs;
      }
    }
    gpus.accountShares(end);
    return this.result(end);
  }

  private result(end: number): SimResult {
    // Counted under each task's name where lanes hold shared tiers.
    const held = (i: number, delayed: boolean) => this.doors.buffers.reduce((s, b) => s + b.held(i, delayed), 0);
    const count = (names: Int32Array, size: number, i: number) => names.subarray(0, size).filter((x) => x === i).length;
    const ofName = (w: SimWorker, i: number) =>
      (w.tiers ? count(w.names, w.size, i) : w.model === i ? w.size : 0) +
      (!w.held ? 0 : w.held.tiers ? count(w.held.names, w.held.size, i) : w.model === i ? w.held.size : 0);
    const leftover = this.cluster.models.map((_, i) => ({
      queued: held(i, false),
      delayed: held(i, true),
      running: this.gpus.workers.filter((w) => w.busy).reduce((s, w) => s + ofName(w, i), 0),
    }));
    const p = this.pipelines;
    const pipelines =
      p.count > 0
        ? {
            stats: p.stats((m) => this.doors.delayed(m)),
            latencyMs: p.latencies(),
            isStep: (m: number) => p.pipelineOf[m]! >= 0,
          }
        : undefined;
    return simResult(this.cluster, this.stats, leftover, this.gpus.shareTime, end, pipelines);
  }
}

// The digital twin: a discrete-event simulation of a GPU cluster serving DNN models under a policy.
// Pure: time is simulated; the only outside input is an optional `clock` used to time the policy's
// decisions (for the decision-time figure), which never influences the simulation itself.
//
// Task buffer (paper section 3.1): per model an on-time FIFO and a delayed one; a task's deadline is
// arrival + SLO (or its queue policy's timeout). The dispatch rule (dispatch.ts, shared with the
// scheduler) starts batches of the on-time FIFO; a task that can no longer meet its deadline times
// out and is dropped or, by its model's queue policy (src/serving/queuePolicy.ts), moved to the
// delayed FIFO, whose batches a worker takes when the on-time one has nothing to start; at every epoch
// on-time tasks already past their deadline time out too. A model's tasks held never exceed its
// policy's `maxQueueSize` (the oldest delayed task makes room, else the arrival is dropped), so no
// queue grows without bound.
//
// Execution: each batch takes the ground truth's time (groundTruth.ts) for the models running on
// its GPU when it starts. On a `timeshare` (pooled) GPU, the GPU's own mode (GpuInfo.pooled) says
// whether batches of different models overlap or run one at a time (src/model/pooledGpu.ts).
//
// Reconfiguration (paper section 5.5): a new batch size or timeout applies at once. A new share or
// GPU is a shadow-process swap: the new worker starts and warms up for `swapMs` while the old one
// keeps serving (both hold GPU memory), then the old one finishes its batch and stops. The first
// deployment at time 0 is ready at once (the system starts warm).
//
// Worker failures (`failures`, for the conformance suite and what-if runs): at the given time the
// serving worker of a model on a GPU dies; the batch it runs is lost (its tasks count as dropped, as
// the scheduler answers them `worker-failed`), and it serves nothing until its agent has restarted it
// `downMs` later. It keeps its place in the deployment meanwhile, as the scheduler keeps a failed worker.
import { throughputPerS } from '../model/latency.js';
import type { ClusterInfo, Deployment, GpuMode, Observation, Placement, Policy } from '../policy/types.js';
import type { ArrivalStream } from '../workload/arrivals.js';
import { RateMonitor } from '../serving/monitor.js';
import { DEFAULT_SERVING_SETTINGS } from '../serving/settings.js';
import { admit, DEFAULT_QUEUE_POLICY, onTimeBudgetMs, type QueuePolicy } from '../serving/queuePolicy.js';
import { nextModelsOnFreedGpu, pastDeadline } from '../serving/rules.js';
import { onReady, type Phase, planApply, type WorkerView } from '../serving/workerSet.js';
import {
  dispatchModel,
  type DispatchRules,
  type DispatchView,
  MAX_PRED_BATCH,
  nextBatchAtMs,
  predictedMs,
  predictionTable,
} from '../serving/dispatch.js';
import { GroundTruth, type GroundTruthSettings, gpuTypeIndex, type ProfileModelIndex } from './groundTruth.js';
import { LogHistogram } from './histogram.js';
import {
  dispatchBudgetMs,
  idleOverheadMs,
  learnedOverheadMs,
  spreadFactor,
  type TransportModel,
  transportMsFor,
  wayInMsFor,
} from '../serving/transport.js';
import { TaskQueue } from './queue.js';
import { pooledConcurrency } from '../model/pooledGpu.js';
import { mixSeed, Rng } from '../workload/random.js';

export interface SimSettings {
  readonly durationMs: number;
  /** Decision epoch: the policy is asked every `epochMs`. */
  readonly epochMs: number;
  /** Start and warm-up time of a shadow worker. */
  readonly swapMs: number;
  /** Window of the monitor's rate estimate (count of arrivals over the window). */
  readonly monitorWindowMs: number;
  /** Safety margin of the dispatch rule (c), as a fraction of the predicted batch time. */
  readonly dispatchSlack: number;
  /**
   * Time each batch spends outside the GPU on its way to the worker and back (ms), before its GPU
   * time: 0 by default (batches start where they are decided). The running system measures it
   * (inss_batch_transport_seconds); with it, the simulator predicts the running system's task
   * latencies, its dispatch rule starts batches that much earlier, as the scheduler's does, and a
   * worker takes its next batch while one runs (pipelining, `nextBatchAtMs` in dispatch.ts): the
   * next batch's transport overlaps the batch running.
   */
  readonly transportMs?: number;
  /**
   * The host's transport as the running system measured it (src/serving/transport.ts): each batch's
   * transport is `fixedMs + perMbMs x` its inputs' megabytes; with `wayIn` and `wayOutMs`, each task is
   * queued its request's way in after it arrives and answered the way out after its batch ends, and
   * the dispatch rule budgets its SLO less the way out; with `clientMs`, each task's latency also
   * counts its client's own leg (the budget does not). When given, it replaces `transportMs`.
   */
  readonly transport?: TransportModel;
  readonly groundTruth: GroundTruthSettings;
  /** Per served model, its queue policy (src/serving/queuePolicy.ts); absent entries: the default (delay). */
  readonly queuePolicies?: readonly (QueuePolicy | undefined)[];
  /**
   * Per served model, the samples each arrival carries (default 1): a request of k samples is k tasks
   * arriving at once, each admitted, queued, batched and counted on its own, as the live scheduler
   * takes a k-sample request (scheduler/infer.ts).
   */
  readonly samplesPerRequest?: readonly number[];
  /**
   * How much earlier than its latest start the dispatch rule starts a waiting batch (ms; default 0):
   * the running system's measured timer jitter, to replay it (the simulator's own timers are exact).
   */
  readonly dispatchMarginMs?: number;
}

export const DEFAULT_SIM_SETTINGS: Omit<SimSettings, 'durationMs' | 'groundTruth'> = {
  ...DEFAULT_SERVING_SETTINGS,
  swapMs: 3000,
};

export interface SimInput {
  readonly cluster: ClusterInfo;
  /** One arrival stream per served model, in cluster.models order. */
  readonly streams: readonly ArrivalStream[];
  /** The rates an operator expects at the start (the first decision's observation). */
  readonly initialRatePerS: readonly number[];
  readonly policy: Policy;
  readonly settings: SimSettings;
  /** Milliseconds from a monotonic clock, to time decisions; omit for no timing. */
  readonly clock?: () => number;
  /** Told of each batch start, drop and activation, as they happen (the conformance suite compares them with the control plane's). */
  readonly trace?: SimTrace;
  /** Workers that die during the run (see the file comment); none by default. */
  readonly failures?: readonly WorkerFailure[];
}

/** The worker serving `model` on `gpu` (active or retiring) dies at `tMs` and is back `downMs` later. */
export interface WorkerFailure {
  readonly tMs: number;
  readonly model: number;
  readonly gpu: number;
  readonly downMs: number;
}

export interface SimTrace {
  /** A batch of `size` tasks of `model` starts on `gpu`; it will take `durationMs` (transport included). */
  batchStart?(tMs: number, model: number, gpu: number, size: number, durationMs: number): void;
  /** A task of `model` is dropped (it timed out and its policy rejects, or its queue was full). */
  drop?(tMs: number, model: number): void;
  /** A task of `model` timed out and moved to its delayed lane. */
  delay?(tMs: number, model: number): void;
  /** A new worker of `model` on `gpu` at `pct` is ready and serves. */
  activate?(tMs: number, model: number, gpu: number, pct: number): void;
  /** The worker of `model` on `gpu` died; `lost` tasks of the batch it ran are lost with it. */
  fail?(tMs: number, model: number, gpu: number, lost: number): void;
}

export interface Summary {
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
}

export interface ModelStats {
  readonly model: string;
  readonly arrivals: number;
  readonly served: number;
  /** Served within the SLO. */
  readonly good: number;
  /** Served after the SLO. */
  readonly late: number;
  /** Timed out on the on-time lane and moved to the delayed one (each is then served late, or dropped). */
  readonly delayed: number;
  /** Dropped (timed out under a reject policy, no room in a full queue) or lost with a failed worker. */
  readonly dropped: number;
  /** Still queued or running when the simulation ended (neither served nor dropped). */
  readonly unfinished: number;
  /** Of those, timed out and waiting in the delayed lane: they count as missed in `sloViolationPct`. */
  readonly unfinishedLate: number;
  readonly latencyMs: Summary;
  readonly queueMs: Summary;
  readonly execMs: Summary;
  readonly meanBatch: number;
}

export interface TimelinePoint {
  readonly tMs: number;
  readonly servedPerS: number;
  readonly goodPerS: number;
  readonly missedPerS: number;
}

export interface SimResult {
  readonly durationMs: number;
  readonly models: readonly ModelStats[];
  readonly arrivals: number;
  readonly served: number;
  readonly good: number;
  readonly late: number;
  readonly dropped: number;
  readonly unfinished: number;
  readonly throughputPerS: number;
  readonly goodputPerS: number;
  /**
   * Late or dropped, percent of the tasks that finished (served or dropped); a task that timed out and
   * still waits in its delayed lane at the end counts as late (it has missed its SLO already).
   */
  readonly sloViolationPct: number;
  readonly latePct: number;
  readonly dropPct: number;
  readonly latencyMs: Summary;
  readonly timeline: readonly TimelinePoint[];
  /** Wall-clock time of each decision, ms (empty without a clock). */
  readonly decisionMs: readonly number[];
  readonly swaps: number;
  /** Times a GPU's workers (shadows included) needed more memory than it has. */
  readonly memoryOvercommits: number;
  /** Time-averaged MPS share held by workers per GPU, percent (timeshare GPUs count 100 while busy). */
  readonly gpuSharePct: readonly number[];
  readonly batches: number;
  /** Simulated events per wall second are the caller's to compute; this counts events. */
  readonly events: number;
}

const enum State {
  Starting,
  Active,
  Retiring, // serving until its replacement is ready
  Draining, // finishes the batch it runs, then stops
  Stopped,
}

interface Worker {
  readonly id: number;
  readonly model: number;
  readonly gpu: number;
  readonly pct: number;
  batch: number;
  timeoutMs: number; // NaN: no timeout
  state: State;
  readyAtMs: number;
  busy: boolean;
  doneAtMs: number;
  startMs: number;
  /** GPU time of the batch running now (its duration less the transport). */
  execMs: number;
  /** The running batch counts in its GPU's timeshare `gpuBusy` (it started while the GPU was timeshare). */
  timeshared: boolean;
  size: number;
  arrivals: Float64Array; // arrival times of the running batch
  /** When the latest batch sent to it was sent, and that batch's predicted GPU time (pipelining). */
  lastSentMs: number;
  lastPredMs: number;
  /** A batch sent ahead while one runs (pipelining; only with transport): it runs when the GPU frees. */
  held: { size: number; sentMs: number; transportMs: number; arrivals: Float64Array } | null;
  /** The transport of the batch running (ms), and the dispatch rule's estimate learned from its batches (as the scheduler learns it). */
  transportMs: number;
  overheadMs: number;
  batchesThisEpoch: number;
  /** Predicted t_inf at batch 1..32 (index b) given the GPU's placements: the task buffer's view. */
  predicted: Float64Array;
  replaces: Worker | null;
  /** Dead until its agent restarts it at this time (Infinity: up); it takes no batch meanwhile. */
  downUntilMs: number;
}

/** The simulator's workers as the shared worker-set plan reads them. */
const SIM_PHASE: Record<State, Phase> = {
  [State.Starting]: 'starting',
  [State.Active]: 'active',
  [State.Retiring]: 'retiring',
  [State.Draining]: 'draining',
  [State.Stopped]: 'draining',
};
const SIM_VIEW: WorkerView<Worker> = {
  model: (w) => w.model,
  gpu: (w) => w.gpu,
  pct: (w) => w.pct,
  phase: (w) => SIM_PHASE[w.state],
  replaces: (w) => w.replaces,
};

export function simulate(input: SimInput): SimResult {
  const { cluster, settings, policy } = input;
  const nModels = cluster.models.length;
  const nGpus = cluster.gpus.length;
  const truth = new GroundTruth(settings.groundTruth);
  const transportModel = settings.transport;
  const fixedTransportMs = settings.transportMs ?? 0;
  // Per served model, the bytes of one task's input (the profile's), for the per-megabyte transport.
  const inputBytes = cluster.models.map((m) => {
    const g = cluster.gpus.find((x) => x.model.profile.models[m.name]);
    return g ? g.model.profile.models[m.name]!.inputBytes : 0;
  });
  // A batch's transport spreads around the fit as the scheduler measured it (`spread`), drawn from its
  // own seeded stream (the ground truth's draws stay the same with or without it).
  const spreadRng = transportModel?.spread ? new Rng(mixSeed(settings.groundTruth.seed, 0x7370)) : null;
  /** The transport of a batch of `size` tasks of model m (ms). */
  const transportMs = (m: number, size: number): number =>
    transportModel
      ? transportMsFor(transportModel, size * inputBytes[m]!) *
        (spreadRng ? spreadFactor(transportModel.spread, spreadRng.next()) : 1)
      : fixedTransportMs;
  const gpuType = cluster.gpus.map((g) => gpuTypeIndex(g.profileId));
  const sloMs = cluster.models.map((m) => m.sloMs);
  // The request's way in and the answer's way out (the transport model's, as the scheduler measured
  // them): a task arriving at t is queued at t + its way in, keeps t for its deadline and latency, and
  // is answered at its batch's end + the way out; the dispatch rule and expiry budget each task its SLO
  // less the way out (`dispatchBudgetMs`, the scheduler's rule). Without them, 0 and the SLO.
  const wayInMs = inputBytes.map((b) => (transportModel ? wayInMsFor(transportModel, b) : 0));
  // With `wayInSpread`, each request's way in is its model's fitted way in times a draw from it (its
  // own seeded stream); a request is queued no earlier than the one before it of its model (requests
  // are read and parsed in turn on the scheduler's one thread), so each queue stays in arrival order.
  const wayInRng = transportModel?.wayInSpread ? new Rng(mixSeed(settings.groundTruth.seed, 0x7769)) : null;
  const nextArrivalAt = new Float64Array(nModels); // the next request's arrival; nextArrival: when it is queued
  const lastQueuedAt = new Float64Array(nModels).fill(-Infinity);
  /** Draws model m's next request: when it arrives and when it is queued. */
  function nextRequest(m: number): void {
    const t = input.streams[m]!.next();
    nextArrivalAt[m] = t;
    const wayIn = wayInRng ? wayInMs[m]! * spreadFactor(transportModel!.wayInSpread, wayInRng.next()) : wayInMs[m]!;
    nextArrival[m] = Math.max(t + wayIn, lastQueuedAt[m]!);
  }
  const wayOutMs = transportModel?.wayOutMs ?? 0;
  // The client's own leg counts in each task's latency as its client sees it, not in the budget: the
  // scheduler's dispatch rule cannot see it, and the twin follows the scheduler.
  const answeredAfterMs = wayOutMs + (transportModel?.clientMs ?? 0);
  const budgetMs = sloMs.map((slo) => dispatchBudgetMs(slo, wayOutMs));

  const queues = cluster.models.map(() => new TaskQueue());
  // Each model's delayed lane (tasks that timed out, served when a worker has nothing on time to start).
  const delayedQueues = cluster.models.map(() => new TaskQueue());
  const policies = cluster.models.map((_, m) => settings.queuePolicies?.[m] ?? DEFAULT_QUEUE_POLICY);
  const onTimeMs = budgetMs.map((b, m) => onTimeBudgetMs(b, policies[m]!));
  const rules: DispatchRules = { slack: settings.dispatchSlack, marginMs: settings.dispatchMarginMs ?? 0 };
  const nextArrival = new Float64Array(nModels);
  for (let m = 0; m < nModels; m++) nextRequest(m);
  const timer = new Float64Array(nModels).fill(Infinity);

  let workers: Worker[] = [];
  let nextWorkerId = 0;
  let gpuModes: GpuMode[] = new Array<GpuMode>(nGpus).fill('mps');
  const gpuBusy = new Uint8Array(nGpus); // timeshare GPUs: batches running now
  // How many batches may run at once on each GPU when pooled (its mode's rule); see startBatch for their time.
  const pooledLimit = cluster.gpus.map((g) => pooledConcurrency(g.pooled));
  let current: Deployment = { placements: [] };

  // Statistics.
  const arrivals = new Float64Array(nModels);
  const served = new Float64Array(nModels);
  const good = new Float64Array(nModels);
  const late = new Float64Array(nModels);
  const dropped = new Float64Array(nModels);
  const delayedCount = new Float64Array(nModels);
  const batchTasks = new Float64Array(nModels);
  const batchCount = new Float64Array(nModels);
  const latH = cluster.models.map(() => new LogHistogram());
  const queueH = cluster.models.map(() => new LogHistogram());
  const execH = cluster.models.map(() => new LogHistogram());
  const monitor = new RateMonitor(nModels, settings.epochMs, settings.monitorWindowMs);
  // The dispatch rule's arrival rates: the monitor's estimate, taken at each decision as the policy's.
  let ratesPerS: readonly number[] = monitor.ratesPerS(input.initialRatePerS);
  const epochServed = new Float64Array(nModels);
  const epochViolated = new Float64Array(nModels);
  const epochDropped = new Float64Array(nModels);
  const epochExecSum = new Float64Array(nModels);
  const epochExecN = new Float64Array(nModels);
  const epochLatSum = new Float64Array(nModels);
  const timeline: TimelinePoint[] = [];
  const decisionMs: number[] = [];
  let swaps = 0;
  let memoryOvercommits = 0;
  let events = 0;
  const shareTime = new Float64Array(nGpus);
  let lastShareMs = 0;
  let epochGood = 0;
  let epochAll = 0;
  let epochMissed = 0;

  const scratchModels: ProfileModelIndex[] = [];
  const scratchBatches: number[] = [];
  const scratchPcts: number[] = [];
  const scratchOut: number[] = [];

  function liveOnGpu(g: number): Worker[] {
    return workers.filter((w) => w.gpu === g && w.state !== State.Stopped);
  }

  /** Recomputes every worker's predicted t_inf table on a GPU (its placements as the scheduler sees them). */
  function refreshPredictions(g: number): void {
    // Workers that serve: a shadow still warming up runs no task batches and is not counted.
    const onGpu = liveOnGpu(g).filter((w) => w.state === State.Active || w.state === State.Retiring);
    onGpu.forEach((w, k) => predictionTable(cluster.gpus[g]!, onGpu, k, gpuModes[g] === 'timeshare', w.predicted));
  }

  function accountShares(nowMs: number): void {
    const dt = nowMs - lastShareMs;
    if (dt <= 0) return;
    for (const w of workers) {
      if (w.state === State.Stopped || w.state === State.Starting) continue;
      if (gpuModes[w.gpu] !== 'timeshare') shareTime[w.gpu]! += w.pct * dt;
    }
    // A timeshare GPU counts 100 while any batch runs on it, however many overlap.
    for (let g = 0; g < nGpus; g++) if (gpuModes[g] === 'timeshare' && gpuBusy[g]! > 0) shareTime[g]! += 100 * dt;
    lastShareMs = nowMs;
  }

  /** Sends a batch of the model's `size` oldest tasks to `w`: it runs now, or after the batch running (pipelining). */
  function sendBatch(w: Worker, nowMs: number, size: number, q: TaskQueue = queues[w.model]!): void {
    w.lastSentMs = nowMs;
    w.lastPredMs = predictedMs(w.predicted, size);
    if (w.busy) {
      const h = (w.held ??= {
        size: 0,
        sentMs: 0,
        transportMs: 0,
        arrivals: new Float64Array(Math.max(size, w.batch)),
      });
      if (h.arrivals.length < size) h.arrivals = new Float64Array(size);
      for (let i = 0; i < size; i++) h.arrivals[i] = q.shift();
      h.size = size;
      h.sentMs = nowMs;
      h.transportMs = transportMs(w.model, size);
      return;
    }
    if (w.arrivals.length < size) w.arrivals = new Float64Array(Math.max(size, w.arrivals.length * 2));
    for (let i = 0; i < size; i++) w.arrivals[i] = q.shift();
    w.transportMs = transportMs(w.model, size);
    startBatch(w, nowMs, size, nowMs, w.transportMs);
  }

  /** The batch held by a worker whose GPU just freed starts; what is left of its transport comes first. */
  function startHeld(w: Worker, nowMs: number): void {
    const h = w.held!;
    w.held = null;
    w.arrivals = h.arrivals;
    // What its dispatch estimate learns: the transport not hidden behind the batch before (as the scheduler measures it).
    w.transportMs = Math.max(0, h.transportMs - (nowMs - h.sentMs));
    startBatch(w, nowMs, h.size, h.sentMs, w.transportMs);
  }

  /**
   * Batch of `size` (its arrival times in w.arrivals) starts on `w` at `nowMs`: its GPU time from the
   * neighbours running now, answered after `transportLeftMs` + that time. `sentMs`: when it was sent
   * (its tasks' queueing ends there).
   */
  function startBatch(w: Worker, nowMs: number, size: number, sentMs: number, transportLeftMs: number): void {
    const g = w.gpu;
    const gpu = cluster.gpus[g]!;
    accountShares(nowMs);
    // The models running on this GPU now, and this batch: MPS partitions at their shares; on a pooled
    // GPU, its mode's rule (src/model/pooledGpu.ts, the simulated worker's too).
    const timeshared = gpuModes[g] === 'timeshare';
    scratchModels.length = scratchBatches.length = scratchPcts.length = scratchOut.length = 0;
    scratchModels.push(gpu.profileIndex[w.model]! as ProfileModelIndex);
    scratchBatches.push(size);
    scratchPcts.push(w.pct);
    for (const x of workers) {
      if (x !== w && x.gpu === g && x.busy) {
        scratchModels.push(gpu.profileIndex[x.model]! as ProfileModelIndex);
        scratchBatches.push(x.size);
        scratchPcts.push(x.pct);
      }
    }
    scratchOut.length = scratchModels.length;
    const t = truth.batchMs(
      gpu.model,
      gpuType[g]!,
      timeshared ? gpu.pooled : null,
      scratchModels,
      scratchBatches,
      scratchPcts,
      scratchModels.length,
      scratchOut,
    );
    if (timeshared) gpuBusy[g]! += 1;
    w.timeshared = timeshared;
    w.busy = true;
    w.size = size;
    w.startMs = sentMs;
    w.execMs = t;
    w.doneAtMs = nowMs + t + transportLeftMs;
    // Told at its start on the GPU; a batch held by pipelining was sent earlier (tMs = when it was sent).
    input.trace?.batchStart?.(sentMs, w.model, g, size, w.doneAtMs - sentMs);
    batchTasks[w.model]! += size;
    batchCount[w.model]! += 1;
  }

  function canRun(w: Worker): boolean {
    const timeshared = gpuModes[w.gpu] === 'timeshare';
    const inFlight = (w.busy ? 1 : 0) + (w.held ? 1 : 0);
    return (
      w.downUntilMs === Infinity &&
      dispatchNow >= nextBatchAtMs(inFlight, w.lastSentMs, w.lastPredMs, w.overheadMs, timeshared) &&
      (w.state === State.Active || w.state === State.Retiring) &&
      !(timeshared && gpuBusy[w.gpu]! >= pooledLimit[w.gpu]!)
    );
  }

  /** The dispatch loop's view of this simulation (src/sim/dispatch.ts, shared with the scheduler). */
  const dispatchView: DispatchView<Worker> = {
    model: (w) => w.model,
    canRun,
    batch: (w) => w.batch,
    timeoutMs: (w) => w.timeoutMs,
    predicted: (w) => w.predicted,
    // Without a transport model, the fixed transport (as before); with one, learned from the worker's
    // batches the way the scheduler learns it (src/serving/transport.ts).
    overheadMs: (w) => (transportModel ? w.overheadMs : fixedTransportMs),
    gpu: (w) => w.gpu,
    timeshared: (w) => gpuModes[w.gpu] === 'timeshare',
    gpuBusy: (w) => gpuBusy[w.gpu]! > 0,
    budgetMs: (m) => onTimeMs[m]!,
    ratePerS: (m) => ratesPerS[m]!,
    delays: (m) => policies[m]!.delay,
    queued: (m) => queues[m]!.length,
    headArrivalMs: (m) => queues[m]!.peek(),
    delayed: (m) => delayedQueues[m]!.length,
    drop: (m) => {
      // The head task cannot meet its deadline even if its batch starts now.
      queues[m]!.shift();
      dropTask(m, dispatchNow);
    },
    delay: (m) => delayTask(m, dispatchNow),
    start: (w, size) => sendBatch(w, dispatchNow, size),
    startDelayed: (w, size) => sendBatch(w, dispatchNow, size, delayedQueues[w.model]),
    idle: (w) => !w.busy && !w.held,
    pipelinedAtMs: (w) =>
      w.busy && !w.held && (w.state === State.Active || w.state === State.Retiring)
        ? nextBatchAtMs(1, w.lastSentMs, w.lastPredMs, w.overheadMs, gpuModes[w.gpu] === 'timeshare')
        : Infinity,
  };
  let dispatchNow = 0;

  /** A task of model m (already taken off its queue) is dropped at `nowMs`. */
  function dropTask(m: number, nowMs: number): void {
    dropped[m]! += 1;
    epochDropped[m]! += 1;
    epochMissed++;
    input.trace?.drop?.(nowMs, m);
  }

  /** Model m's on-time head timed out: dropped, or moved to the delayed lane, by its queue policy. */
  function timeOut(m: number, nowMs: number): void {
    if (policies[m]!.delay) delayTask(m, nowMs);
    else {
      queues[m]!.shift();
      dropTask(m, nowMs);
    }
  }

  function delayTask(m: number, nowMs: number): void {
    delayedQueues[m]!.push(queues[m]!.shift());
    delayedCount[m]! += 1;
    input.trace?.delay?.(nowMs, m);
  }

  /** Starts batches of `m` on its free workers as the dispatch rule allows; arms the model's timer otherwise. */
  function tryDispatch(m: number, nowMs: number): void {
    dispatchNow = nowMs;
    timer[m] = dispatchModel(m, nowMs, rules, workers, dispatchView);
  }

  /** A batch leaves its worker (done or lost): the worker is free, and so is a time-shared GPU. */
  function batchEnded(w: Worker, nowMs: number): void {
    accountShares(nowMs);
    w.busy = false;
    w.doneAtMs = Infinity;
    w.size = 0;
    if (w.timeshared) gpuBusy[w.gpu]! -= 1;
    // Pipelining: the batch sent ahead starts now that the GPU is free.
    if (w.held) startHeld(w, nowMs);
    if (w.state === State.Draining && !w.busy) w.state = State.Stopped;
    if (gpuModes[w.gpu] === 'timeshare') {
      // The GPU is free: the model whose oldest task is oldest goes next (src/serving/rules.ts).
      const onGpu = workers.filter((x) => x.gpu === w.gpu && x.state !== State.Stopped).map((x) => x.model);
      for (const x of nextModelsOnFreedGpu(onGpu, (m) => (queues[m]!.length ? queues[m]!.peek() : Infinity)))
        tryDispatch(x, nowMs);
    } else {
      tryDispatch(w.model, nowMs);
    }
  }

  function fail(f: WorkerFailure, nowMs: number): void {
    const w = workers.find(
      (x) =>
        x.model === f.model &&
        x.gpu === f.gpu &&
        (x.state === State.Active || x.state === State.Retiring) &&
        x.downUntilMs === Infinity,
    );
    if (!w) return;
    // The batch running and the one sent ahead of it (pipelining) are both lost with the worker.
    const lost = w.busy ? w.size + (w.held?.size ?? 0) : 0;
    input.trace?.fail?.(nowMs, w.model, w.gpu, lost);
    w.downUntilMs = nowMs + f.downMs;
    if (!w.busy) return;
    w.held = null;
    dropped[w.model]! += lost;
    epochDropped[w.model]! += lost;
    epochMissed += lost;
    batchEnded(w, nowMs);
  }

  function recover(w: Worker, nowMs: number): void {
    w.downUntilMs = Infinity;
    tryDispatch(w.model, nowMs);
  }

  function finishBatch(w: Worker, nowMs: number): void {
    const m = w.model;
    const slo = sloMs[m]!;
    const exec = w.execMs;
    for (let i = 0; i < w.size; i++) {
      const a = w.arrivals[i]!;
      const lat = nowMs - a + answeredAfterMs;
      latH[m]!.add(lat);
      queueH[m]!.add(w.startMs - a);
      execH[m]!.add(exec);
      if (lat <= slo) {
        good[m]! += 1;
        epochGood++;
      } else {
        late[m]! += 1;
        epochViolated[m]! += 1;
        epochMissed++;
      }
      epochLatSum[m]! += lat;
    }
    served[m]! += w.size;
    epochServed[m]! += w.size;
    epochAll += w.size;
    epochExecSum[m]! += exec;
    epochExecN[m]! += 1;
    w.overheadMs = transportModel ? learnedOverheadMs(w.overheadMs, w.transportMs) : fixedTransportMs;
    w.batchesThisEpoch++;
    batchEnded(w, nowMs);
  }

  function newWorker(p: Placement, nowMs: number, ready: boolean): Worker {
    return {
      id: nextWorkerId++,
      model: p.model,
      gpu: p.gpu,
      pct: p.pct,
      batch: p.batch,
      timeoutMs: p.timeoutMs ?? NaN,
      state: ready ? State.Active : State.Starting,
      readyAtMs: ready ? nowMs : nowMs + settings.swapMs,
      busy: false,
      doneAtMs: Infinity,
      startMs: 0,
      execMs: 0,
      timeshared: false,
      size: 0,
      arrivals: new Float64Array(Math.max(1, p.batch)),
      lastSentMs: -Infinity,
      lastPredMs: 0,
      held: null,
      transportMs: 0,
      overheadMs: transportModel ? 0 : fixedTransportMs,
      batchesThisEpoch: 0,
      predicted: new Float64Array(MAX_PRED_BATCH),
      replaces: null,
      downUntilMs: Infinity,
    };
  }

  /** Moves the cluster toward a new deployment (see the file comment for what is free and what swaps). */
  function apply(d: Deployment, nowMs: number, first: boolean): void {
    accountShares(nowMs);
    // The plan is the control plane's too (src/serving/workerSet.ts); here it runs in simulated time.
    const plan = planApply(workers, SIM_VIEW, d, gpuModes, nModels, nGpus, first);
    const modes = plan.modes;
    for (const { worker, placement } of plan.retune) {
      worker.batch = placement.batch;
      worker.timeoutMs = placement.timeoutMs ?? NaN;
    }
    for (const w of plan.reinstate) w.state = State.Active;
    for (const w of plan.abandon) w.state = State.Stopped;
    for (const w of plan.retire) w.state = State.Retiring;
    for (const st of plan.start) {
      const w = newWorker({ ...st.placement, pct: st.pct }, nowMs, first);
      w.replaces = st.replaces;
      if (!first) swaps++;
      workers.push(w);
    }
    for (const w of plan.release) w.state = w.busy ? State.Draining : State.Stopped;
    gpuModes = modes;
    workers = workers.filter((w) => w.state !== State.Stopped || w.busy);
    for (let g = 0; g < nGpus; g++) {
      refreshPredictions(g);
      const mem = liveOnGpu(g).reduce(
        (s, w) => s + cluster.gpus[g]!.model.memoryMb(cluster.gpus[g]!.profileIndex[w.model]!, w.batch),
        0,
      );
      if (mem > cluster.gpus[g]!.memMb + 1e-6) memoryOvercommits++;
    }
    current = d;
  }

  function activate(w: Worker, nowMs: number): void {
    accountShares(nowMs);
    w.state = State.Active;
    w.readyAtMs = Infinity;
    input.trace?.activate?.(nowMs, w.model, w.gpu, w.pct);
    const old = onReady(w, SIM_VIEW);
    if (old) old.state = old.busy ? State.Draining : State.Stopped;
    w.replaces = null;
    refreshPredictions(w.gpu);
    tryDispatch(w.model, nowMs);
  }

  function observation(nowMs: number): Observation {
    // The monitor's rule (src/serving/monitor.ts): the scenario's rates until a full window is seen.
    const ratePerS = monitor.ratesPerS(input.initialRatePerS);
    const nan = (s: number, n: number) => (n > 0 ? s / n : NaN);
    return {
      nowMs,
      ratePerS,
      arrivalCv2: monitor.arrivalCv2(),
      queued: queues.map((q) => q.length),
      lastEpoch: {
        served: [...epochServed],
        violated: [...epochViolated],
        dropped: [...epochDropped],
        meanExecMs: [...epochExecSum].map((s, m) => nan(s, epochExecN[m]!)),
        meanLatencyMs: [...epochLatSum].map((s, m) => nan(s, epochServed[m]!)),
      },
      current,
    };
  }

  function decide(nowMs: number, first: boolean): void {
    const obs = observation(nowMs);
    ratesPerS = obs.ratePerS;
    const t0 = input.clock?.();
    const d = policy.decide(obs);
    if (t0 !== undefined) decisionMs.push(input.clock!() - t0);
    apply(d, nowMs, first);
    for (let m = 0; m < nModels; m++) tryDispatch(m, nowMs);
  }

  function endEpoch(nowMs: number): void {
    monitor.endEpoch();
    for (const w of workers) {
      if (transportModel && w.batchesThisEpoch === 0) w.overheadMs = idleOverheadMs(w.overheadMs);
      w.batchesThisEpoch = 0;
    }
    for (let m = 0; m < nModels; m++) {
      // On-time tasks already past their deadline can no longer meet it: they time out (src/serving/rules.ts).
      const q = queues[m]!;
      while (q.length > 0 && pastDeadline(q.peek(), onTimeMs[m]!, nowMs)) timeOut(m, nowMs);
    }
    const sec = settings.epochMs / 1000;
    timeline.push({ tMs: nowMs, servedPerS: epochAll / sec, goodPerS: epochGood / sec, missedPerS: epochMissed / sec });
  }

  function resetEpoch(): void {
    epochServed.fill(0);
    epochViolated.fill(0);
    epochDropped.fill(0);
    epochExecSum.fill(0);
    epochExecN.fill(0);
    epochLatSum.fill(0);
    epochGood = epochAll = epochMissed = 0;
  }

  // The event loop. Event sources are few (one next arrival and one timer per model, one event per
  // worker, the epoch), so the next event is found by scanning rather than with a heap.
  decide(0, true);
  const failures = [...(input.failures ?? [])].sort((a, b) => a.tMs - b.tMs);
  let nextFailure = 0;
  let nextEpochMs = settings.epochMs;
  const end = settings.durationMs;
  for (;;) {
    let tMin = nextEpochMs;
    let kind = 0; // 0 epoch, 1 arrival, 2 timer, 3 worker, 4 failure
    let which = -1;
    for (let m = 0; m < nModels; m++) {
      if (nextArrival[m]! < tMin) {
        tMin = nextArrival[m]!;
        kind = 1;
        which = m;
      }
      if (timer[m]! < tMin) {
        tMin = timer[m]!;
        kind = 2;
        which = m;
      }
    }
    let worker: Worker | null = null;
    for (const w of workers) {
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
    events++;
    if (kind === 1) {
      const m = which;
      lastQueuedAt[m] = tMin;
      for (let k = settings.samplesPerRequest?.[m] ?? 1; k > 0; k--) {
        arrivals[m]! += 1;
        monitor.arrival(m, tMin);
        // A full queue makes room by dropping its oldest delayed task, or drops the arrival (queuePolicy.ts).
        const admission = admit(queues[m]!.length, delayedQueues[m]!.length, policies[m]!.maxQueueSize);
        if (admission === 'evict-delayed') {
          delayedQueues[m]!.shift();
          dropTask(m, tMin);
        }
        if (admission === 'reject') dropTask(m, tMin);
        else queues[m]!.push(nextArrivalAt[m]!);
      }
      nextRequest(m);
      tryDispatch(m, tMin);
    } else if (kind === 2) {
      tryDispatch(which, tMin);
    } else if (kind === 3) {
      const w = worker!;
      if (w.busy) finishBatch(w, tMin);
      else if (w.state === State.Starting) activate(w, tMin);
      else recover(w, tMin);
      if (w.state === State.Stopped) workers = workers.filter((x) => x !== w);
    } else if (kind === 4) {
      fail(failures[nextFailure++]!, tMin);
    } else {
      endEpoch(tMin);
      decide(tMin, false);
      resetEpoch();
      nextEpochMs += settings.epochMs;
    }
  }
  accountShares(end);

  const summary = (h: LogHistogram): Summary => ({ p50: h.quantile(0.5), p99: h.quantile(0.99), mean: h.mean() });
  const models: ModelStats[] = cluster.models.map((m, i) => {
    const running = workers
      .filter((w) => w.model === i && w.busy)
      .reduce((s, w) => s + w.size + (w.held?.size ?? 0), 0);
    return {
      model: m.name,
      arrivals: arrivals[i]!,
      served: served[i]!,
      good: good[i]!,
      late: late[i]!,
      delayed: delayedCount[i]!,
      dropped: dropped[i]!,
      unfinished: queues[i]!.length + delayedQueues[i]!.length + running,
      unfinishedLate: delayedQueues[i]!.length,
      latencyMs: summary(latH[i]!),
      queueMs: summary(queueH[i]!),
      execMs: summary(execH[i]!),
      meanBatch: batchCount[i]! > 0 ? batchTasks[i]! / batchCount[i]! : NaN,
    };
  });
  const sum = (f: (s: ModelStats) => number) => models.reduce((a, s) => a + f(s), 0);
  const totalLat = new LogHistogram();
  latH.forEach((h) => totalLat.merge(h));
  const finished = sum((s) => s.served + s.dropped + s.unfinishedLate);
  const pct = (x: number) => (finished > 0 ? (100 * x) / finished : 0);
  const secs = end / 1000;
  return {
    durationMs: end,
    models,
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
    timeline,
    decisionMs,
    swaps,
    memoryOvercommits,
    gpuSharePct: [...shareTime].map((s) => s / end),
    batches: [...batchCount].reduce((a, b) => a + b, 0),
    events,
  };
}

/** Predicted capacity (tasks/s) of a deployment's workers per model, for reports. */
export function predictedCapacityPerS(cluster: ClusterInfo, d: Deployment): number[] {
  const cap = new Array<number>(cluster.models.length).fill(0);
  for (let g = 0; g < cluster.gpus.length; g++) {
    const gpu = cluster.gpus[g]!;
    const on = d.placements.filter((p) => p.gpu === g);
    if (on.length === 0) continue;
    const ts = d.gpuModes?.[g] === 'timeshare';
    const out = new Array<number>(on.length).fill(0);
    gpu.model.predictGpu(
      on.map((p) => gpu.profileIndex[p.model]!),
      on.map((p) => p.batch),
      on.map((p) => (ts ? 100 : p.pct)),
      ts ? 1 : on.length,
      out,
    );
    if (ts) {
      for (const [i, p] of on.entries()) {
        const o = [0];
        gpu.model.predictGpu([gpu.profileIndex[p.model]!], [p.batch], [100], 1, o);
        cap[p.model]! += throughputPerS(p.batch, o[0]!) / on.length;
        void i;
      }
    } else {
      on.forEach((p, i) => (cap[p.model]! += throughputPerS(p.batch, out[i]!)));
    }
  }
  return cap;
}

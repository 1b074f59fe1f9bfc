// The dispatcher: per model, each free serving worker takes batches by the shared dispatch rule
// (src/serving/dispatch.ts) on its predicted t_inf table. A worker takes its next batch while one is in
// flight once that one's predicted GPU time is over, where there is transport to hide (pipelining,
// `nextBatchAtMs`, the simulator's rule too); on a pooled (timeshare) GPU, as many batches at once as
// its reported mode allows (src/model/pooledGpu.ts: one when serial, one per worker when overlapping).
// The rule's arrival rates are the monitor's, and its margin the p99 of how late this process's
// dispatch timers fire (src/serving/lateness.ts).
import type { Logger } from 'pino';
import { AGENT_PROTOCOL_VERSION } from '../../src/protocol/agent.js';
import { type RunningBatch, WORKER_PROTOCOL_VERSION } from '../../src/protocol/worker.js';
import { LatenessWindow } from '../../src/serving/lateness.js';
import { onTimeBudgetMs } from '../../src/serving/queuePolicy.js';
import { nextModelsOnFreedGpu } from '../../src/serving/rules.js';
import { dispatchModel, type DispatchRules, type DispatchView, nextBatchAtMs } from '../../src/serving/dispatch.js';
import { runBatchSize } from '../../src/serving/padding.js';
import { laneRatePerS } from '../../src/serving/tiers.js';
import type { ControlObserver } from '../observer.js';
import type { AgentRegistry } from './agents.js';
import type { InFlightBatches } from './batches.js';
import type { DirectPath } from './directPath.js';
import type { PathMeter } from './pathMeter.js';
import { type Batch, type Finish, identity, laneMsOf, type Task, type Worker } from './records.js';
import type { TaskQueue } from '../../src/serving/taskQueue.js';
import type { TaskBuffer } from './taskBuffer.js';
import { batchInputs, batchLimit, padded } from './batchInputs.js';
import type { AgentLink, ServedModelConfig } from './types.js';
import type { WorkerSet } from './workerSet.js';

export interface DispatcherDeps {
  readonly models: readonly ServedModelConfig[];
  readonly clock: () => number;
  readonly dispatchSlack: number;
  readonly initialRatesPerS: readonly number[];
  readonly buffer: TaskBuffer;
  readonly set: WorkerSet;
  readonly meter: PathMeter;
  readonly batches: InFlightBatches;
  readonly agents: AgentRegistry;
  readonly link: AgentLink;
  readonly direct: DirectPath;
  readonly finish: Finish;
  readonly observe: ControlObserver;
  readonly log: Logger;
}

export class Dispatcher {
  /** The dispatch rule's arrival rates (the monitor's, taken at each epoch). */
  private ratesPerS: readonly number[];
  private readonly lateness = new LatenessWindow();
  private rules: DispatchRules;
  /** The instant the rule decides as of (see `tryDispatch`). */
  private nowMs = 0;
  private readonly view: DispatchView<Worker>;

  constructor(private readonly deps: DispatcherDeps) {
    this.ratesPerS = deps.initialRatesPerS;
    this.rules = { slack: deps.dispatchSlack, marginMs: 0 };
    const { buffer, set, models } = deps;
    this.view = {
      model: (w) => w.model,
      canRun: (w) => this.canRun(w),
      batch: (w) => w.batch,
      timeoutMs: (w) => w.timeoutMs,
      predicted: (w) => w.predicted,
      overheadMs: (w) => w.overheadMs,
      gpu: (w) => w.gpu,
      timeshared: (w) => set.timeshared(w.gpu),
      gpuBusy: (w) => set.gpuBusy(w.gpu),
      budgetMs: (m) => this.onTimeMs(m),
      ratePerS: (m) => laneRatePerS(buffer.sharedBy, m, this.ratesPerS),
      delays: (m) => buffer.policy(m).delay,
      queued: (m) => buffer.onTime(m).length,
      headArrivalMs: (m) => laneMsOf(buffer.onTime(m).peek()),
      delayed: (m) => buffer.delayed(m).length,
      drop: (m, w) => {
        const t = buffer.onTime(m).shift();
        const error =
          `dropped: the task cannot meet its ${models[t.model]!.sloMs} ms SLO (predicted batch time ` +
          `${w.predicted.ms(1).toFixed(1)} ms or more, plus ${w.overheadMs.toFixed(1)} ms of measured transport, ` +
          `after waiting ${(this.nowMs - t.arrivalMs).toFixed(1)} ms)`;
        deps.finish(t, { ok: false, reason: 'slo', error }, 'dropped_slo');
      },
      delay: (m) => buffer.delayed(m).push(buffer.onTime(m).shift()),
      // Sent now (a timer armed early decides as of its instant, `tryDispatch`; the batch leaves when it leaves).
      start: (w, size) => this.send(w, size, Math.min(this.nowMs, deps.clock())),
      startDelayed: (w, size) => this.send(w, size, Math.min(this.nowMs, deps.clock()), buffer.delayed(w.model)),
      pipelinedAtMs: (w) => (w.inFlight.length > 0 && set.serving(w) ? this.nextBatchAt(w) : Infinity),
      idle: (w) => w.inFlight.length === 0,
    };
  }

  /** The margin the rule keeps for late timers (ms). */
  get marginMs(): number {
    return this.rules.marginMs;
  }

  /** An epoch ended: the rule takes the monitor's rates and the timers' lateness p99 as its margin. */
  retune(ratesPerS: readonly number[]): void {
    this.ratesPerS = ratesPerS;
    this.rules = { slack: this.deps.dispatchSlack, marginMs: this.lateness.quantileMs(0.99) };
  }

  /** Model m's dispatch budget: its SLO less the answer's expected way out. */
  budgetMs(m: number): number {
    return this.deps.meter.budgetMs(this.deps.models[m]!.sloMs);
  }

  /** Model m's on-time deadline after a task's arrival: the budget, or its queue policy's shorter timeout. */
  onTimeMs(m: number): number {
    return onTimeBudgetMs(this.budgetMs(m), this.deps.buffer.policy(m));
  }

  dispatchAll(): void {
    for (let m = 0; m < this.deps.models.length; m++) this.tryDispatch(m);
  }

  /**
   * Starts what model m's rule starts now and arms its timer for the next decision. `asOfMs`: the
   * instant a timer was armed for (Node's timers fire up to ~2 ms early against the clock): the rule
   * decides as of then, as the simulator's exact timer does.
   */
  tryDispatch(m: number, asOfMs = -Infinity): void {
    const { buffer, set, clock } = this.deps;
    const q = buffer.onTime(m);
    const slo = this.onTimeMs(m);
    this.nowMs = Math.max(clock(), asOfMs);
    let wake = dispatchModel(m, this.nowMs, this.rules, set.workers, this.view);
    // Tasks of a model with no serving worker wait (a worker is starting); drop them once past their
    // deadline (the timer's 1 ms granularity: it fires after the deadline, when pastDeadline holds).
    if (q.length > 0 && !set.workers.some((w) => w.model === m && set.serving(w)))
      wake = Math.min(wake, laneMsOf(q.peek()) + slo + 1);
    this.deps.observe.queueChanged(this.deps.models[m]!.name, buffer.waiting(m));
    buffer.arm(m, wake, (atMs) => {
      this.lateness.add(atMs, clock());
      this.expire(m);
      this.tryDispatch(m, atMs);
    });
  }

  /** On-time tasks already past their deadline time out (no worker could take them in time). */
  expire(m: number): void {
    this.deps.buffer.expire(
      m,
      this.deps.clock(),
      () => this.onTimeMs(m),
      (t) => {
        const why = this.deps.set.modelReady(m) ? 'its queue was too long' : 'no worker of the model was ready in time';
        const error = `dropped: the task missed its ${this.deps.models[t.model]!.sloMs} ms SLO while waiting (${why})`;
        this.deps.finish(t, { ok: false, reason: 'slo', error }, 'dropped_slo');
      },
    );
  }

  /** Worker w's batch left flight: its model goes next, or on a pooled GPU, the model whose deadline is soonest. */
  afterBatch(w: Worker): void {
    const { buffer, set } = this.deps;
    if (!set.timeshared(w.gpu)) {
      this.tryDispatch(w.model);
      return;
    }
    // The GPU is free: the model whose oldest task's deadline is soonest goes next (src/serving/rules.ts).
    const onGpu = set.workers.filter((x) => x.gpu === w.gpu).map((x) => x.model);
    const deadline = (x: number) => buffer.oldestArrivalMs(x) + this.deps.models[x]!.sloMs;
    for (const m of nextModelsOnFreedGpu(onGpu, deadline)) this.tryDispatch(m);
  }

  private canRun(w: Worker): boolean {
    const { set } = this.deps;
    return this.nowMs >= this.nextBatchAt(w) && set.serving(w) && !(set.timeshared(w.gpu) && set.gpuFull(w.gpu));
  }

  /** When the worker may take another batch (pipelining: src/serving/dispatch.ts `nextBatchAtMs`). */
  private nextBatchAt(w: Worker): number {
    const last = w.inFlight[w.inFlight.length - 1];
    return nextBatchAtMs(
      w.inFlight.length,
      last?.sentMs ?? 0,
      last?.predictedMs ?? 0,
      w.overheadMs,
      this.deps.set.timeshared(w.gpu),
    );
  }

  /** The batches in flight on the worker's GPU beside its own (what a simulated GPU runs now). */
  private runningBeside(w: Worker): RunningBatch[] {
    const out: RunningBatch[] = [];
    for (const x of this.deps.set.workers)
      if (x !== w && x.gpu === w.gpu && x.inFlight.length > 0)
        out.push({ model: this.deps.models[x.model]!.name, batch: x.inFlight[0]!.size, pct: x.pct });
    return out;
  }

  /**
   * Sends `want` tasks from the head of `q` to worker w (at most its model's maxBatchSize: the
   * placements may ask for more): straight to its data socket when connected (the agent's GPU state,
   * `running`, comes from here then: this side sends every batch), else through its agent. Either way
   * the batch names the worker's whole identity and the worker refuses one not its own. When neither
   * path takes it, the tasks go back and wait.
   */
  private send(w: Worker, want: number, now: number, q: TaskQueue<Task> = this.deps.buffer.onTime(w.model)): void {
    const { models, set, batches, observe } = this.deps;
    const model = models[w.model]!;
    const n = batchLimit(want, model.maxBatchSize);
    const tasks: Task[] = [];
    for (let i = 0; i < n; i++) {
      const t = q.shift();
      t.dispatchedMs = now;
      tasks.push(t);
    }
    // A padded batch (Placement.padBatch) runs the tasks and copies of the first; only the tasks are answered.
    const size = runBatchSize(w, n, model.maxBatchSize);
    const { inputs, parts, bytes } = batchInputs(model, padded(tasks, size));
    const batchId = batches.nextId();
    const id = identity(w, models);
    const running = this.deps.agents.simulatedGpu(w.agentId, w.localGpu) ? this.runningBeside(w) : undefined;
    // Shared-memory slots carry the samples of the one-image-input model only (docs/worker-protocol.md):
    // a worker refuses them for any other signature.
    const direct = this.deps.direct.send(
      w,
      {
        v: WORKER_PROTOCOL_VERSION,
        type: 'batch',
        id: batchId,
        model: id.model,
        size,
        inputs,
        worker: id,
        ...(running ? { running } : {}),
      },
      parts,
      inputs.length === 1 && model.signature.inputs[0]!.image === true,
    );
    const sent =
      direct ||
      this.deps.link.send(w.agentId, { v: AGENT_PROTOCOL_VERSION, type: 'batch', batchId, ...id, size, inputs }, parts);
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
      size,
      sentMs: now,
      direct,
      sentWallMs,
      bytes,
      predictedMs: w.predicted.ms(size),
      timeshared: set.timeshared(w.gpu),
    };
    set.batchSent(batch);
    // Transport tracing (docs/serving.md).
    this.deps.log.debug({ batchId, size, bytes, direct, sentAt: sentWallMs }, 'batch sent');
    batches.add(batch);
    observe.batchSent(
      models[w.model]!.name,
      n,
      // From a pipeline step's deadline stamp (TaskArrival.stampMs), which may be ahead of its dispatch.
      tasks.map((t) => Math.max(0, now - t.arrivalMs) / 1000),
    );
  }
}

// The worker set: the workers the control plane wants and what their agents report of them, on the cluster the agents'
// GPUs make. It applies the policy's deployments by the simulator's plan (src/serving/workerSet.ts): a placement whose
// worker already runs (same model, GPU and share) keeps it (its batch size and timeout change at once); any other gets
// a new worker, a shadow of the model's worker it replaces (same GPU preferred), which serves until the shadow reports
// ready, then finishes its batch and is stopped by its agent; workers no longer wanted leave the desired set at once
// (their batches in flight finish). A restarted scheduler adopts the workers its agents still run.
import type { Logger } from 'pino';
import { pooledConcurrency } from '../../src/model/pooledGpu.js';
import { LearnedCluster } from '../../src/policy/online/clusterMap.js';
import type { ClusterInfo, Deployment, GpuMode, LearnedProfiles } from '../../src/policy/types.js';
import { AGENT_PROTOCOL_VERSION, type FromAgent, workerKey, type WorkerStatus } from '../../src/protocol/agent.js';
import { onReady, planApply } from '../../src/serving/workerSet.js';
import { refreshTimes, RunningBatches } from '../../src/serving/dispatch.js';
import { carryModes, type ClusterView, gpuIndex, type GpuRef } from '../clusterView.js';
import type { ControlObserver } from '../observer.js';
import type { PlacementRow } from '../store.js';
import type { AgentRegistry } from './agents.js';
import { type Batch, identity, newWorker, placementsOf, PLAN_VIEW, type Worker } from './records.js';
import type { AgentLink, ServedModelConfig } from './types.js';

/** The workers' direct connections (scheduler/control/directPath.ts). */
export interface DirectPort {
  /** Opens the connection to a ready worker with a data socket, unless it is open. */
  connect(w: Worker): void;
  close(w: Worker): void;
}

export interface WorkerSetDeps {
  readonly models: readonly ServedModelConfig[];
  readonly agents: AgentRegistry;
  readonly link: AgentLink;
  readonly direct: DirectPort;
  readonly observe: ControlObserver;
  readonly log: Logger;
  readonly storedPlacements: () => readonly PlacementRow[];
  readonly nowIso: () => string;
  readonly firstGeneration: number;
  readonly followRunning?: boolean; // a pooled batch predicted beside those in flight (`pooledPrediction: running`)
  readonly holds?: (w: Worker) => boolean; // this front door dispatches to the worker (docs/front-doors.md)
}

export class WorkerSet {
  private list: Worker[] = [];
  private readonly dispatch = new LearnedCluster(); // what the dispatch rule predicts with: the view's + learned
  /** Cluster GPU index -> (agent, local index). */
  private refs: readonly GpuRef[] = [];
  private modes: GpuMode[] = [];
  /** Time-shared GPUs: batches in flight on each (send -> answer), which a pooled batch is predicted beside. */
  private running: RunningBatches[] = [];
  /** Per cluster GPU: batches that may run on it at once when pooled (its agent's reported mode). */
  private pooledLimit: number[] = [];
  private deployment: Deployment = { placements: [] };
  private nextWorker = 1;
  private nextGeneration: number;
  /** The desired sets' generation: one more at each change. */
  private generation = 0;

  constructor(private readonly deps: WorkerSetDeps) {
    this.nextGeneration = deps.firstGeneration;
  }

  get workers(): readonly Worker[] {
    return this.list;
  }
  get cluster(): ClusterInfo | null {
    return this.dispatch.cluster;
  }
  get gpuRefs(): readonly GpuRef[] {
    return this.refs;
  }
  get gpuModes(): readonly GpuMode[] {
    return this.modes;
  }
  /** The deployment in force (the policy's Observation.current). */
  get current(): Deployment {
    return this.deployment;
  }

  /** The worker takes batches: wanted, ready, not a shadow, its agent connected. */
  serving(w: Worker): boolean {
    const ok = w.wanted && w.state === 'ready' && w.role !== 'shadow' && this.deps.agents.connected(w.agentId);
    return ok && this.deps.holds?.(w) !== false;
  }

  /** A model is ready when it has a worker that takes batches. */
  modelReady(m: number): boolean {
    return this.list.some((w) => w.model === m && this.serving(w));
  }

  /** The model has a worker that serves or will (starting, restarting). */
  deployedOrComing(m: number): boolean {
    return this.list.some((w) => w.model === m && w.wanted);
  }

  timeshared(g: number): boolean {
    return this.modes[g] === 'timeshare';
  }

  /** A time-shared GPU g has batches in flight. */
  gpuBusy(g: number): boolean {
    return (this.running[g]?.size ?? 0) > 0;
  }

  /** A time-shared GPU g runs as many batches as its pooled mode allows. */
  gpuFull(g: number): boolean {
    return this.running[g]!.size >= this.pooledLimit[g]!;
  }

  batchSent(b: Batch): void {
    b.worker.inFlight.push(b);
    if (b.timeshared) this.running[b.worker.gpu]?.add(b, b.worker, b.worker.model, b.size);
  }

  /** Batch b left flight: a worker let go with nothing left is forgotten. */
  batchFinished(b: Batch): void {
    const w = b.worker;
    w.inFlight = w.inFlight.filter((x) => x !== b);
    if (b.timeshared) this.running[w.gpu]?.remove(b);
    if (!w.wanted) this.keep((x) => x !== w);
  }

  /** Keeps the workers `keep` selects; the others' direct connections are closed (their batches are done). */
  keep(keep: (w: Worker) => boolean): void {
    const gone = this.list.filter((w) => !keep(w));
    if (gone.length === 0) return;
    this.list = this.list.filter(keep);
    for (const w of gone) this.deps.direct.close(w);
  }

  /** The agent reported its workers, matched by whole identity (another model, GPU, share or generation: 'unknown'). */
  reported(agentId: string, statuses: readonly WorkerStatus[]): void {
    const byKey = new Map(statuses.map((s) => [workerKey(s), s]));
    for (const s of statuses) this.nextGeneration = Math.max(this.nextGeneration, s.generation + 1);
    const touchedGpus = new Set<number>();
    for (const w of this.list) {
      if (w.agentId !== agentId) continue;
      const s = byKey.get(workerKey(identity(w, this.deps.models)));
      const state = s ? s.state : 'unknown';
      w.pid = s?.pid ?? null;
      w.data = s?.data ?? null;
      if (state !== w.state) {
        w.state = state;
        touchedGpus.add(w.gpu);
        if (state === 'ready' && w.role === 'shadow') this.activate(w);
      }
      // Once ready, with a data socket: its batches go straight to it (reopened after a close).
      this.deps.direct.connect(w);
    }
    for (const g of touchedGpus) this.refreshPredictions(g);
    this.updateGauges();
  }

  /** The agent disconnected: what its workers do is unknown until it is back. */
  agentLost(agentId: string): void {
    for (const w of this.list) if (w.agentId === agentId) w.state = 'unknown';
  }

  /**
   * Moves onto a new cluster view (an agent's GPUs changed): GPUs keep their mode (a front door's: `modes`, its
   * table's), workers on GPUs gone are forgotten, and `adopt`'s workers are adopted. The caller makes a policy for it.
   */
  rebuild(view: ClusterView, adopt: Extract<FromAgent, { type: 'hello' }> | null, modes?: GpuMode[]): void {
    for (const g of view.unprofiled)
      this.deps.log.warn(
        { agentId: g.agentId, gpu: g.gpu, name: g.name, profile: g.profile },
        'GPU has no known profile; not used',
      );
    const refs = view.refs;
    this.modes = modes ?? carryModes(this.refs, this.modes, refs);
    this.refs = refs;
    this.pooledLimit = view.cluster?.gpus.map((g) => pooledConcurrency(g.pooled)) ?? [];
    for (const w of this.list) w.gpu = gpuIndex(refs, w.agentId, w.localGpu);
    this.keep((w) => w.gpu >= 0);
    this.running = refs.map(() => new RunningBatches());
    for (const b of this.list.flatMap((w) => w.inFlight.filter((x) => x.timeshared)))
      this.running[b.worker.gpu]!.add(b, b.worker, b.worker.model, b.size);
    if (adopt) this.adopt(adopt.agentId, adopt.workers);
    this.dispatch.setGiven(view.cluster);
    if (view.cluster === null) return;
    if (view.missingModels.length > 0)
      this.deps.log.warn(
        { missing: view.missingModels },
        'no GPU profile has these models: served only by a policy with online profiling (docs/online-profiling.md)',
      );
  }

  /** The profiles the policy learned while serving (the simulator's rule too: src/sim/gpus.ts, `learn`). */
  learn(learned: LearnedProfiles | undefined): void {
    if (this.dispatch.learn(learned)) for (let g = 0; g < this.refs.length; g++) this.refreshPredictions(g);
  }
  get learned(): LearnedProfiles | undefined {
    return this.dispatch.learned;
  }

  /** After a rebuild: the deployment in force is what runs, and every GPU's predictions are redone. */
  rebuilt(): void {
    this.deployment = { placements: placementsOf(this.list) };
    for (let g = 0; g < this.refs.length; g++) this.refreshPredictions(g);
  }

  /**
   * Adopts workers an agent reports that this scheduler does not know (after a scheduler restart): each keeps its
   * whole identity (id, model, GPU, share, generation), so its batches go to that process and no other; the policy's
   * first decision then keeps, retunes or replaces it like any worker.
   */
  adopt(agentId: string, statuses: readonly WorkerStatus[]): void {
    const { models, log } = this.deps;
    const stored = this.deps.storedPlacements();
    const known = new Set(this.list.map((w) => workerKey(identity(w, models))));
    for (const s of statuses) {
      this.nextGeneration = Math.max(this.nextGeneration, s.generation + 1);
      const m = models.findIndex((x) => x.name === s.model);
      const g = gpuIndex(this.refs, agentId, s.gpu);
      if (m < 0 || g < 0 || s.state === 'draining' || s.state === 'failed' || known.has(workerKey(s))) continue;
      const row = stored.find(
        (p) =>
          p.workerId === s.workerId &&
          p.agentId === agentId &&
          p.model === s.model &&
          p.gpu === s.gpu &&
          p.pct === s.pct,
      );
      this.list.push(
        newWorker({
          workerId: s.workerId,
          generation: s.generation,
          agentId,
          localGpu: s.gpu,
          gpu: g,
          model: m,
          pct: s.pct,
          batch: row?.batch ?? 1,
          timeoutMs: NaN,
          role: 'active',
        }),
      );
      log.info(
        { worker: s.workerId, generation: s.generation, model: s.model, gpu: s.gpu, pct: s.pct, agentId },
        'adopted a running worker',
      );
    }
    const n = Math.max(0, ...this.list.map((w) => Number(/^w(\d+)$/.exec(w.workerId)?.[1] ?? 0)));
    this.nextWorker = Math.max(this.nextWorker, n + 1);
    this.deployment = { placements: placementsOf(this.list) };
  }

  /** Moves the worker set toward a deployment (see the file header). Returns whether anything changed. */
  apply(d: Deployment): boolean {
    const nG = this.dispatch.cluster!.gpus.length;
    this.learn(d.learned);
    // The plan is the simulator's too (src/serving/workerSet.ts); here it becomes desired sets.
    const plan = planApply(this.list, PLAN_VIEW, d, this.modes, this.deps.models.length, nG);
    for (const p of plan.invalid)
      this.deps.log.error({ placement: p }, 'the policy emitted a placement outside the cluster; ignored');
    let changed =
      JSON.stringify(plan.modes) !== JSON.stringify(this.modes) ||
      plan.start.length > 0 ||
      plan.release.length > 0 ||
      plan.abandon.length > 0;
    for (const { worker, placement } of plan.retune) {
      const t = placement.timeoutMs ?? NaN;
      const pad = placement.padBatch === true;
      const sameTimeout = Object.is(worker.timeoutMs, t); // NaN (no timeout) is NaN
      if (worker.batch !== placement.batch || worker.padBatch !== pad || !sameTimeout) changed = true;
      worker.batch = placement.batch;
      worker.timeoutMs = t;
      worker.padBatch = pad;
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
      const ref = this.refs[p.gpu]!;
      const w = newWorker({
        workerId: `w${this.nextWorker++}`,
        generation: this.nextGeneration++,
        agentId: ref.agentId,
        localGpu: ref.local,
        gpu: p.gpu,
        model: p.model,
        pct: st.pct,
        batch: p.batch,
        timeoutMs: p.timeoutMs ?? NaN,
        padBatch: p.padBatch === true,
        role: 'shadow',
      });
      w.replaces = st.replaces;
      this.list.push(w);
    }
    for (const w of plan.release) letGo(w);
    this.modes = plan.modes;
    // Forget workers that left the desired set and have nothing in flight.
    this.keep((w) => w.wanted || w.inFlight.length > 0);
    this.deployment = d;
    if (changed) {
      for (let g = 0; g < nG; g++) this.refreshPredictions(g);
      this.generation++;
      this.sendDesiredAll();
      this.persist();
      this.updateGauges();
    }
    return changed;
  }

  /** A shadow reported ready: it takes over, and the worker it replaces leaves the desired set. */
  private activate(w: Worker): void {
    const old = onReady(w, PLAN_VIEW);
    w.role = 'active';
    w.replaces = null;
    if (old) {
      old.replaces = null;
      old.wanted = false;
      this.deps.observe.swapCompleted();
      if (old.inFlight.length === 0) this.keep((x) => x !== old);
      this.refreshPredictions(old.gpu);
    }
    this.refreshPredictions(w.gpu);
    this.deps.log.info(
      { worker: w.workerId, model: this.deps.models[w.model]!.name, gpu: w.gpu, pct: w.pct, replaced: old?.workerId },
      old ? 'shadow swap: new worker took over' : 'worker serving',
    );
    this.sendDesiredAll();
    this.deployment = {
      placements: placementsOf(this.list),
      ...(this.deployment.gpuModes ? { gpuModes: this.deployment.gpuModes } : {}),
    };
    this.persist();
  }

  /** Sends the agent its desired set (the workers it should run). */
  sendDesired(agentId: string): void {
    this.deps.link.send(agentId, {
      v: AGENT_PROTOCOL_VERSION,
      type: 'desired',
      generation: this.generation,
      workers: this.list.filter((w) => w.agentId === agentId && w.wanted).map((w) => identity(w, this.deps.models)),
    });
  }

  private sendDesiredAll(): void {
    for (const a of this.deps.agents.all()) this.sendDesired(a.agentId);
  }

  private persist(): void {
    const rows = this.list
      .filter((w) => w.wanted)
      .map((w) => ({
        workerId: w.workerId,
        agentId: w.agentId,
        gpu: w.localGpu,
        model: this.deps.models[w.model]!.name,
        pct: w.pct,
        batch: w.batch,
        role: w.role,
      }));
    this.deps.observe.placementsChanged(rows, this.deps.nowIso());
  }

  /** Recomputes the predicted batch-time tables of the serving workers on GPU g. */
  private refreshPredictions(g: number): void {
    if (!this.dispatch.cluster || g < 0 || g >= this.dispatch.cluster.gpus.length) return;
    const gpu = this.dispatch.cluster.gpus[g]!;
    const serving = this.list.filter((w) => w.gpu === g && (w.role === 'active' || w.role === 'retiring') && w.wanted);
    const timeshare = this.modes[g] === 'timeshare';
    const plan = (m: number) => this.dispatch.cluster!.models[m]?.cost?.plan;
    const running = this.deps.followRunning === true ? this.running[g]! : null;
    serving.forEach((w, k) => refreshTimes(gpu, serving, k, timeshare, running, w.predicted, plan(w.model)));
    // A worker not yet serving gets its solo prediction, so a drop decision never divides by nothing.
    for (const w of this.list)
      if (w.gpu === g && !serving.includes(w)) refreshTimes(gpu, [w], 0, timeshare, null, w.predicted, plan(w.model));
    let share = 0;
    let mem = 0;
    for (const w of this.list) {
      if (w.gpu !== g || !w.wanted) continue;
      share += timeshare ? 0 : w.pct;
      const pi = gpu.profileIndex[w.model]!;
      if (pi >= 0) mem += gpu.model.memoryMb(pi, w.batch);
    }
    this.deps.observe.gpuPredicted(g, timeshare ? 100 : share, mem);
  }

  private updateGauges(): void {
    const counts: Record<string, number> = { starting: 0, ready: 0, draining: 0, failed: 0, unknown: 0 };
    for (const w of this.list) counts[w.state] = (counts[w.state] ?? 0) + 1;
    this.deps.observe.workerStatesCounted(counts);
  }
}

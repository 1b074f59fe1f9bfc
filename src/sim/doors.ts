// The simulator's front doors (docs/front-doors.md; the rules are src/serving/frontDoors.ts): per door its own task
// buffer (taskBuffer.ts, pipeline step lanes included), its own dispatch timers and its share of the workers. One
// door is the plain simulator: its buffer holds every task and its worker list is the simulation's own.
import { assignDoors, DoorRouter, leastWaiting } from '../serving/frontDoors.js';
import type { TaskBuffer } from './taskBuffer.js';
import { type SimWorker, serves, State } from './worker.js';

/** Counted where a GPU goes: the workers that serve or will (a retiring one leaves its place to its heir). */
function placed(w: SimWorker): boolean {
  return w.state === State.Starting || w.state === State.Active;
}

export class SimDoors {
  readonly buffers: TaskBuffer[];
  /** Per door x model, when the dispatch rule asked to be called again (Infinity: on the next arrival). */
  readonly timer: Float64Array;
  private readonly router: DoorRouter;
  /** Per door, its workers (refreshed when the worker set changes); unused with one door. */
  private lists: SimWorker[][];
  /** Per GPU, its door (-1: none yet). */
  private readonly gpuDoor: number[];

  constructor(
    readonly count: number,
    private readonly nModels: number,
    nGpus: number,
    makeBuffer: () => TaskBuffer,
  ) {
    if (!Number.isInteger(count) || count < 1) throw new Error(`frontDoors: must be an integer >= 1, got ${count}`);
    this.buffers = Array.from({ length: count }, makeBuffer);
    this.timer = new Float64Array(count * nModels).fill(Infinity);
    this.router = new DoorRouter(count, nModels);
    this.lists = Array.from({ length: count }, () => []);
    this.gpuDoor = new Array<number>(nGpus).fill(-1);
  }

  /** Door d's workers: with one door, every worker (`all`, the simulation's list, in its order). */
  workers(d: number, all: readonly SimWorker[]): readonly SimWorker[] {
    return this.count === 1 ? all : this.lists[d]!;
  }

  /** New workers were placed: GPUs without a door get one by the shared rule, and each worker its GPU's door. */
  place(all: readonly SimWorker[]): void {
    if (this.count === 1) return;
    const gpus = this.gpuDoor.map((door) => ({ models: [] as number[], door }));
    for (const w of all) if (placed(w)) gpus[w.gpu]!.models.push(w.model);
    assignDoors(gpus, this.count).forEach((d, g) => (this.gpuDoor[g] = d));
    for (const w of all) if (this.gpuDoor[w.gpu]! >= 0) w.door = this.gpuDoor[w.gpu]!;
  }

  /**
   * The worker set changed: each door's list, and the routing weights: per model its serving workers, or, while
   * none serves, its starting ones (the tasks wait where a worker is coming).
   */
  refresh(all: readonly SimWorker[]): void {
    if (this.count === 1) return;
    this.lists = Array.from({ length: this.count }, () => []);
    for (const w of all) this.lists[w.door]!.push(w);
    const serving = new Array<boolean>(this.nModels).fill(false);
    for (const w of all) if (serves(w)) serving[w.model] = true;
    const weighed = all.filter((w) => (serving[w.model] ? serves(w) : w.state === State.Starting));
    this.router.setWorkers(
      weighed.length,
      (i) => weighed[i]!.door,
      (i) => weighed[i]!.model,
    );
    // A door left without a worker of a model forwards the model's waiting tasks to a door with one.
    for (let m = 0; m < this.nModels; m++) {
      if (!serving[m] && !weighed.some((w) => w.model === m)) continue;
      for (let d = 0; d < this.count; d++) {
        const b = this.buffers[d]!;
        if (this.router.holds(d, m) || b.onTime[m]!.length + b.delayed[m]!.length === 0) continue;
        const to = this.buffers[this.route(m)]!;
        b.handOver(m, to, b.onTime[m]!.length);
        b.handOver(m, to, b.delayed[m]!.length, true);
      }
    }
  }

  /** The door model m's next request goes to: the fewest waiting per share of its workers (`leastWaiting`). */
  route(m: number): number {
    if (this.count === 1) return 0;
    const b = this.buffers;
    const d = leastWaiting(
      this.count,
      (x) => this.router.share(x, m),
      (x) => b[x]!.onTime[m]!.length + b[x]!.delayed[m]!.length,
    );
    return d >= 0 ? d : this.router.next(m);
  }

  /** A pipeline's next step task stays at door d where d has a worker of its model, else is forwarded. */
  routeStep(m: number, d: number): number {
    return this.count === 1 || this.router.holds(d, m) ? d : this.route(m);
  }

  /** The arrival rate door d sees of model m, given the model's over all doors. */
  ratePerS(d: number, m: number, ratePerS: number): number {
    return this.count === 1 ? ratePerS : ratePerS * this.router.share(d, m);
  }

  /** Model m's tasks on time, over every door. */
  queued(m: number): number {
    let n = 0;
    for (const b of this.buffers) n += b.onTime[m]!.length;
    return n;
  }

  /** Model m's delayed tasks, over every door. */
  delayed(m: number): number {
    let n = 0;
    for (const b of this.buffers) n += b.delayed[m]!.length;
    return n;
  }

  /** Arrival of model m's oldest on-time task at any door; Infinity when none waits. */
  headArrivalMs(m: number): number {
    let t = Infinity;
    for (const b of this.buffers) t = Math.min(t, b.headArrivalMs(m));
    return t;
  }
}

// Front doors (docs/front-doors.md): N ingress points that each accept every model's tasks, each with its own
// queues, running the dispatch rule (dispatch.ts) over its own share of the GPUs. The rules that split the work,
// shared by the simulator (src/sim/doors.ts) and the control plane:
// - a GPU belongs to one door, with all its workers (a pooled GPU's batches are arbitrated where its workers'
//   queues are): a GPU without a door goes to the door with the fewest workers of the GPU's models, then the
//   fewest workers in all, then the lowest index (`pickDoor`); a GPU whose door died is placed again the same way
//   (`assignDoors`);
// - a model's task goes to the door, of those that hold the model's workers, with the fewest of the model's tasks
//   waiting per share of its workers (`leastWaiting`; the shares from `DoorRouter`): a door with none of the
//   model's workers forwards its tasks there, and a door whose workers fall behind (a pooled GPU busy with other
//   models) gets fewer, so no door's queue outgrows its workers. Without waiting counts (a fallback), the shares
//   are kept by a smooth weighted round robin (`DoorRouter.next`).

/** The most front doors a scenario or `inss bench --front-doors` may ask for. */
export const MAX_FRONT_DOORS = 64;

/**
 * The door for a GPU whose workers serve `models`: the fewest workers of those models, then the fewest in all,
 * then the lowest index. `ofModel(d, m)` and `total(d)` count the workers each door holds now.
 */
export function pickDoor(
  doors: number,
  models: readonly number[],
  ofModel: (d: number, m: number) => number,
  total: (d: number) => number,
): number {
  const load = (d: number) => models.reduce((n, m) => n + ofModel(d, m), 0);
  let best = 0;
  for (let d = 1; d < doors; d++) {
    const a = load(d);
    const b = load(best);
    if (a < b || (a === b && total(d) < total(best))) best = d;
  }
  return best;
}

/**
 * Every GPU's door, given the models of its workers and its door now (-1, or a door not `alive`: none). GPUs that
 * keep their door count first; the others are placed one by one, in order, by `pickDoor` over the alive doors.
 * `alive` absent: every door is.
 */
export function assignDoors(
  gpus: readonly { readonly models: readonly number[]; readonly door: number }[],
  doors: number,
  alive?: readonly boolean[],
): number[] {
  const live = Array.from({ length: doors }, (_, d) => d).filter((d) => alive?.[d] ?? true);
  if (live.length === 0) throw new Error('assignDoors: no front door is alive');
  const counts = new Map<string, number>();
  const totals = new Array<number>(doors).fill(0);
  const add = (d: number, models: readonly number[]) => {
    for (const m of models) counts.set(`${d}/${m}`, (counts.get(`${d}/${m}`) ?? 0) + 1);
    totals[d]! += models.length;
  };
  const out = gpus.map((g) => (g.door >= 0 && g.door < doors && (alive?.[g.door] ?? true) ? g.door : -1));
  out.forEach((d, i) => {
    if (d >= 0) add(d, gpus[i]!.models);
  });
  out.forEach((d, i) => {
    if (d >= 0 || gpus[i]!.models.length === 0) return;
    const k = pickDoor(
      live.length,
      gpus[i]!.models,
      (j, m) => counts.get(`${live[j]}/${m}`) ?? 0,
      (j) => totals[live[j]!]!,
    );
    out[i] = live[k]!;
    add(live[k]!, gpus[i]!.models);
  });
  return out;
}

/**
 * The door model m's next task goes to: of the doors holding its workers (`share(d)` > 0), the one with the fewest
 * waiting tasks of the model (`waiting(d)`) per share, ties to the lowest index; -1 when no door holds one.
 */
export function leastWaiting(doors: number, share: (d: number) => number, waiting: (d: number) => number): number {
  let best = -1;
  let bestScore = Infinity;
  for (let d = 0; d < doors; d++) {
    const s = share(d);
    if (!(s > 0)) continue;
    const score = (waiting(d) + 1) / s;
    if (score < bestScore) {
      best = d;
      bestScore = score;
    }
  }
  return best;
}

/**
 * Where each model's tasks go: per model, the doors in proportion to their workers of it (smooth weighted round
 * robin: deterministic, and never more than one task ahead of the exact shares). `setWorkers` gives the counts.
 */
export class DoorRouter {
  /** Per door x model, its workers of the model, and the round robin's running credit. */
  private readonly counts: Int32Array;
  private readonly credit: Float64Array;
  /** Per model, its workers over every door. */
  private readonly totals: Int32Array;

  constructor(
    readonly doors: number,
    private readonly models: number,
  ) {
    this.counts = new Int32Array(doors * models);
    this.credit = new Float64Array(doors * models);
    this.totals = new Int32Array(models);
  }

  /** The workers each door holds now: `doorOf(i)` and `modelOf(i)` for i < n. */
  setWorkers(n: number, doorOf: (i: number) => number, modelOf: (i: number) => number): void {
    this.counts.fill(0);
    this.totals.fill(0);
    // The round robin starts over: a door that lost its workers keeps no credit.
    this.credit.fill(0);
    for (let i = 0; i < n; i++) {
      this.counts[doorOf(i) * this.models + modelOf(i)]! += 1;
      this.totals[modelOf(i)]! += 1;
    }
  }

  /** Door d's share of model m's tasks (each door an even share while the model has no worker). */
  share(d: number, m: number): number {
    const total = this.totals[m]!;
    return total === 0 ? 1 / this.doors : this.counts[d * this.models + m]! / total;
  }

  /** Door d holds a worker of model m. */
  holds(d: number, m: number): boolean {
    return this.counts[d * this.models + m]! > 0;
  }

  /** The door model m's next task goes to. */
  next(m: number): number {
    const n = this.models;
    const total = this.totals[m]!;
    let best = 0;
    for (let d = 0; d < this.doors; d++) {
      const weight = total === 0 ? 1 : this.counts[d * n + m]!;
      this.credit[d * n + m]! += weight;
      if (this.credit[d * n + m]! > this.credit[best * n + m]!) best = d;
    }
    this.credit[best * n + m]! -= total === 0 ? this.doors : total;
    return best;
  }
}

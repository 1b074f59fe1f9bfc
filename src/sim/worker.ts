// A simulated worker: one model's process on one GPU at one MPS share, through its life (started,
// serving, retiring behind its replacement, draining, stopped), with the batch it runs and the one
// sent ahead of it (pipelining).
import type { Placement } from '../policy/types.js';
import type { BatchDetail } from '../serving/epochStats.js';
import { WorkerTimes } from '../serving/dispatch.js';
import type { Phase, WorkerView } from '../serving/workerSet.js';

export enum State {
  Starting,
  Active,
  /** Serving until its replacement is ready. */
  Retiring,
  /** Finishes the batch it runs, then stops. */
  Draining,
  Stopped,
}

/** A batch sent to a worker while it runs another (pipelining; only with transport). */
export interface HeldBatch {
  size: number;
  sentMs: number;
  transportMs: number;
  arrivals: Float64Array;
  /** A pipeline step's tasks: their requests' arrivals (taskBuffer.ts). */
  origins: Float64Array;
  /** A shared tiers' lane: its tasks' names (taskBuffer.ts), and whether it came from one. */
  names: Int32Array;
  tiers: boolean;
}

export interface SimWorker {
  readonly id: number;
  readonly model: number;
  readonly gpu: number;
  readonly pct: number;
  batch: number;
  /** NaN: no timeout. */
  timeoutMs: number;
  /** Every other batch runs at `batch`, padded (Placement.padBatch; src/serving/padding.ts `runBatchSize`). */
  padBatch: boolean;
  /** The previous batch was padded. */
  padTurn: boolean;
  state: State;
  readyAtMs: number;
  busy: boolean;
  doneAtMs: number;
  startMs: number;
  /** GPU time of the batch running now (its duration less the transport). */
  execMs: number;
  /** The running batch's record (its share and what ran beside it when it started), for the epoch's telemetry. */
  detail: BatchDetail | null;
  /** The running batch counts in its GPU's timeshare `gpuBusy` (it started while the GPU was timeshare). */
  timeshared: boolean;
  /** Tasks in the running batch. */
  size: number;
  /** The batch size it runs at on the GPU: `size`, or more where it pads (`padBatch`). */
  runSize: number;
  /** Arrival times of the running batch's tasks (a pipeline step's: their deadline stamps). */
  arrivals: Float64Array;
  /** A pipeline step's running batch: its tasks' requests' arrivals (taskBuffer.ts). */
  origins: Float64Array;
  /** The running batch's tasks' names where its lane holds shared tiers (`tiers`), as `take` fills them. */
  names: Int32Array;
  /** The running batch came from a lane of shared tiers: each task is counted under `names[i]`. */
  tiers: boolean;
  /** When the latest batch sent to it was sent, and that batch's predicted GPU time (pipelining). */
  lastSentMs: number;
  lastPredMs: number;
  /** A batch sent ahead while one runs: it runs when the GPU frees. */
  held: HeldBatch | null;
  /** The transport of the batch running (ms). */
  transportMs: number;
  /** The dispatch rule's transport estimate, learned from its batches as the scheduler learns it. */
  overheadMs: number;
  batchesThisEpoch: number;
  /** Predicted t_inf by batch size given the GPU's placements and what runs on it: the dispatch rule's view. */
  readonly predicted: WorkerTimes;
  replaces: SimWorker | null;
  /** Dead until its agent restarts it at this time (Infinity: up); it takes no batch meanwhile. */
  downUntilMs: number;
  /** The front door whose queues it serves (doors.ts; 0 with one door). */
  door: number;
}

const EMPTY = new Float64Array(0);
const NO_NAMES = new Int32Array(0);

/** Takes task batches: serving, and not a shadow still warming up. */
export function serves(w: SimWorker): boolean {
  return w.state === State.Active || w.state === State.Retiring;
}

/** A worker for `p`, ready at once (the first deployment) or after its warm-up `swapMs`. */
export function newWorker(
  id: number,
  p: Placement,
  nowMs: number,
  ready: boolean,
  swapMs: number,
  overheadMs: number,
): SimWorker {
  return {
    id,
    model: p.model,
    gpu: p.gpu,
    pct: p.pct,
    batch: p.batch,
    timeoutMs: p.timeoutMs ?? NaN,
    padBatch: p.padBatch === true,
    padTurn: false,
    state: ready ? State.Active : State.Starting,
    readyAtMs: ready ? nowMs : nowMs + swapMs,
    busy: false,
    doneAtMs: Infinity,
    startMs: 0,
    execMs: 0,
    detail: null,
    timeshared: false,
    size: 0,
    runSize: 0,
    arrivals: new Float64Array(Math.max(1, p.batch)),
    origins: EMPTY,
    names: NO_NAMES,
    tiers: false,
    lastSentMs: -Infinity,
    lastPredMs: 0,
    held: null,
    transportMs: 0,
    overheadMs,
    batchesThisEpoch: 0,
    predicted: new WorkerTimes(),
    replaces: null,
    downUntilMs: Infinity,
    door: 0,
  };
}

/** The simulator's workers as the shared worker-set plan (src/serving/workerSet.ts) reads them. */
const SIM_PHASE: Record<State, Phase> = {
  [State.Starting]: 'starting',
  [State.Active]: 'active',
  [State.Retiring]: 'retiring',
  [State.Draining]: 'draining',
  [State.Stopped]: 'draining',
};
export const SIM_VIEW: WorkerView<SimWorker> = {
  model: (w) => w.model,
  gpu: (w) => w.gpu,
  pct: (w) => w.pct,
  phase: (w) => SIM_PHASE[w.state],
  replaces: (w) => w.replaces,
};

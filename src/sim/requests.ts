// The simulator's requests and the wire they cross: per model, when its next request arrives and when
// it is queued (after its way in), and each batch's transport. Each spread is drawn from its own
// seeded stream, so the ground truth's draws stay the same with or without a transport model.
import type { ClusterInfo } from '../policy/types.js';
import { SpreadChain, type TransportModel, transportMsFor, wayInMsFor } from '../serving/transport.js';
import type { ArrivalStream } from '../workload/arrivals.js';
import { mixSeed, Rng } from '../workload/random.js';

export class Requests {
  /** Per model, the next request's arrival time: its deadline and latency count from it. */
  readonly arrivalMs: Float64Array;
  /** Per model, when the next request is queued (its arrival plus its way in); the arrival event's time. */
  readonly queuedMs: Float64Array;
  private readonly lastQueuedMs: Float64Array;
  /** Per served model, the bytes of one task's input (the profile's), for the per-megabyte transport. */
  private readonly inputBytes: number[];
  /** Per served model, a request's way in (ms; 0 without a transport model). */
  private readonly wayInMs: number[];
  /** Per served model, its own factor on the host's batch transport (`TransportModel.modelFactors`). */
  private readonly modelFactor: number[];
  private readonly spreadRng: Rng | null;
  private readonly spreadChain: SpreadChain;
  private readonly wayInRng: Rng | null;
  private readonly wayInChain: SpreadChain;

  constructor(
    cluster: ClusterInfo,
    private readonly streams: readonly ArrivalStream[],
    private readonly transport: TransportModel | undefined,
    private readonly fixedTransportMs: number,
    seed: number,
  ) {
    const n = cluster.models.length;
    this.inputBytes = cluster.models.map((m) => {
      const g = cluster.gpus.find((x) => x.model.profile.models[m.name]);
      return g ? g.model.profile.models[m.name]!.inputBytes : 0;
    });
    // A batch's transport spreads around the fit as the scheduler measured it (`spread`), slow batches
    // in runs as they came there (`spreadLag1`): one chain for the host's batches, drawn as they are
    // sent (the scheduler's fit takes them as they are answered: the same order wherever a batch does
    // not overtake another of another worker; the draw is needed at the send).
    this.spreadRng = transport?.spread ? new Rng(mixSeed(seed, 0x7370)) : null;
    this.modelFactor = cluster.models.map((m) => transport?.modelFactors?.[m.name] ?? 1);
    this.spreadChain = new SpreadChain(transport?.spread, transport?.spreadLag1);
    // The request's way in (the transport model's, as the scheduler measured it): a task arriving at t
    // is queued at t + its way in and keeps t for its deadline and latency. With `wayInSpread`, each
    // request's way in is its model's fitted one times a draw from its own stream; one chain for every
    // model's requests (`wayInSpreadLag1`), as the scheduler's one fit of the way in.
    this.wayInMs = this.inputBytes.map((b) => (transport ? wayInMsFor(transport, b) : 0));
    this.wayInRng = transport?.wayInSpread ? new Rng(mixSeed(seed, 0x7769)) : null;
    this.wayInChain = new SpreadChain(transport?.wayInSpread, transport?.wayInSpreadLag1);
    this.arrivalMs = new Float64Array(n);
    this.queuedMs = new Float64Array(n);
    this.lastQueuedMs = new Float64Array(n).fill(-Infinity);
    for (let m = 0; m < n; m++) this.next(m);
  }

  /**
   * Model m's request queued at `nowMs` is taken; draws its next one. A request is queued no earlier
   * than the one before it of its model (requests are read and parsed in turn on the scheduler's one
   * thread), so each queue stays in arrival order.
   */
  taken(m: number, nowMs: number): void {
    this.lastQueuedMs[m] = nowMs;
  }

  /** Draws model m's next request: when it arrives and when it is queued. */
  next(m: number): void {
    const t = this.streams[m]!.next();
    this.arrivalMs[m] = t;
    this.queuedMs[m] = Math.max(t + this.drawWayInMs(m), this.lastQueuedMs[m]!);
  }

  /**
   * The way in of a request whose first task is model m's (a pipeline's request too: the scheduler measures it at
   * its first step, in the same fit): model m's fitted one times the next draw of the one chain.
   */
  drawWayInMs(m: number): number {
    return this.wayInRng ? this.wayInMs[m]! * this.wayInChain.factor(this.wayInRng.next()) : this.wayInMs[m]!;
  }

  /** The transport of a batch of `size` tasks of model m (ms). */
  batchTransportMs(m: number, size: number): number {
    const t = this.transport;
    if (!t) return this.fixedTransportMs;
    const factor = this.spreadRng ? this.spreadChain.factor(this.spreadRng.next()) : 1;
    return transportMsFor(t, size * this.inputBytes[m]!) * this.modelFactor[m]! * factor;
  }
}

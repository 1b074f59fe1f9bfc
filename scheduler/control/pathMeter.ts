// The path meter: what a task pays besides its GPU time, measured as the system runs, in the twin's
// terms (docs/serving.md, "The path in the twin"): the request's way in (headers read -> task
// submitted), each batch's transport (per worker for the dispatch rule, per agent fitted to fixed +
// per-megabyte cost) and the answer's way out (answer -> response handed to the kernel).
import { dispatchBudgetMs, idleOverheadMs, learnedOverheadMs, TransportFit } from '../../src/serving/transport.js';
import type { ControlObserver } from '../observer.js';
import type { Batch, Worker } from './records.js';
import type { ServedModelConfig, TaskArrival } from './types.js';

export class PathMeter {
  /** Per agent (host): its batches' transport fitted to fixed + per-megabyte cost. */
  private readonly transport = new Map<string, TransportFit>();
  /** The requests' way in, fitted to fixed + per megabyte of input. */
  private readonly wayIn = new TransportFit();
  /** The answers' way out: the dispatch rule's estimate (learned as a worker's transport is), sum, count. */
  private wayOutMs = 0;
  private wayOutSumMs = 0;
  private wayOutN = 0;

  constructor(
    private readonly models: readonly ServedModelConfig[],
    private readonly observe: ControlObserver,
  ) {}

  /**
   * A task with these input bytes was submitted at `nowMs`: where it measures its request's way in
   * (`TaskArrival.wayIn`), the time from the request's headers to now.
   */
  taskSubmitted(inputs: readonly Buffer[], nowMs: number, arrival: TaskArrival | undefined): void {
    if (!arrival || !(arrival.wayIn ?? arrival.stampMs === undefined)) return;
    let bytes = 0;
    for (const d of inputs) bytes += d.length;
    this.wayIn.add(bytes, nowMs - Math.min(arrival.receivedMs, nowMs));
  }

  /** A task's answer was handed to the kernel `wayOutMs` after the control plane answered it. */
  answerSent(wayOutMs: number): void {
    if (!(wayOutMs >= 0) || !Number.isFinite(wayOutMs)) return;
    this.wayOutMs = learnedOverheadMs(this.wayOutMs, wayOutMs);
    this.wayOutSumMs += wayOutMs;
    this.wayOutN++;
  }

  /** A model's dispatch budget: its SLO less the answer's expected way out. */
  budgetMs(sloMs: number): number {
    return dispatchBudgetMs(sloMs, this.wayOutMs);
  }

  /**
   * Batch b was answered at `nowMs` after `latencyMs` of GPU time: the rest of its round trip is
   * transport, learned per worker so the dispatch rule starts batches early enough to meet the SLO
   * with it. The estimate starts at 0 and moves 10% toward each sample, so one slow batch (a cold
   * start) cannot make the rule drop everything; one that grew decays while the worker is idle
   * (`endEpoch`). A batch sent ahead (pipelining) waited at the worker behind the one before it: that
   * wait is not transport, so its path counts from when the one before was answered (the simulator's
   * held batch likewise pays only the transport left when the GPU frees, src/sim/simulator.ts).
   */
  batchAnswered(b: Batch, latencyMs: number, nowMs: number): void {
    const w = b.worker;
    const overhead = Math.max(0, nowMs - Math.max(b.sentMs, w.lastAnsweredMs) - latencyMs);
    w.lastAnsweredMs = nowMs;
    this.observe.batchTransported(this.models[w.model]!.name, overhead / 1000);
    let fit = this.transport.get(w.agentId);
    if (!fit) this.transport.set(w.agentId, (fit = new TransportFit()));
    fit.add(b.bytes, overhead, this.models[w.model]!.name);
    w.overheadMs = learnedOverheadMs(w.overheadMs, overhead);
    w.batchesThisEpoch++;
    if (b.direct) {
      w.directLatencySumMs += latencyMs;
      w.directBatches++;
    }
  }

  /**
   * An epoch ended: an idle worker's transport estimate decays, and the GPU time of batches on the
   * direct path sets the per-worker latency gauge (the agent's telemetry sets it for relayed ones).
   */
  endEpoch(workers: readonly Worker[]): void {
    for (const w of workers) {
      if (w.batchesThisEpoch === 0) w.overheadMs = idleOverheadMs(w.overheadMs);
      w.batchesThisEpoch = 0;
      if (w.directBatches > 0)
        this.observe.workerLatencyMeasured(
          w.workerId,
          this.models[w.model]!.name,
          w.gpu,
          w.directLatencySumMs / w.directBatches / 1000,
        );
      w.directLatencySumMs = 0;
      w.directBatches = 0;
    }
  }

  /**
   * Per agent, what `inss bench --transport FILE` takes (docs/serving.md, "The path in the twin"); the
   * way in and out are the scheduler's, the same in every host's entry.
   */
  snapshot(): Record<string, unknown> {
    return Object.fromEntries(
      [...this.transport].map(([agentId, f]) => {
        // Each is computed over the fit's samples: once per snapshot.
        const [spread, lag1, factors] = [f.spread(), f.spreadLag1(), f.modelFactors()];
        return [
          agentId,
          {
            ...f.model(),
            batches: f.samples,
            ...this.ways(),
            ...(spread ? { spread } : {}),
            ...(lag1 !== null ? { spreadLag1: lag1 } : {}),
            ...(factors ? { modelFactors: factors } : {}),
          },
        ];
      }),
    );
  }

  /** The requests' way in and the answers' way out as measured so far (empty before any). */
  private ways(): {
    wayIn?: { fixedMs: number; perMbMs: number };
    requests?: number;
    wayInSpread?: number[];
    wayInSpreadLag1?: number;
    wayOutMs?: number;
    answers?: number;
  } {
    const wayIn = this.wayIn.model();
    const wayInSpread = this.wayIn.spread();
    const wayInSpreadLag1 = this.wayIn.spreadLag1();
    return {
      ...(wayIn ? { wayIn, requests: this.wayIn.samples } : {}),
      ...(wayInSpread ? { wayInSpread } : {}),
      ...(wayInSpreadLag1 !== null ? { wayInSpreadLag1 } : {}),
      ...(this.wayOutN > 0
        ? { wayOutMs: Number((this.wayOutSumMs / this.wayOutN).toFixed(4)), answers: this.wayOutN }
        : {}),
    };
  }
}

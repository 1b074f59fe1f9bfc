// The batches in flight: each sent batch until its answer, from whichever path it took (its agent's
// WebSocket or its worker's data socket), and the one place an answered or lost batch is resolved.
import type { Logger } from 'pino';
import type { FromAgent } from '../../src/protocol/agent.js';
import type { TensorRef } from '../../src/protocol/tensor.js';
import { splitOutputs } from './outputs.js';
import type { Batch, Finish, Task, Worker } from './records.js';
import type { ServedModelConfig } from './types.js';

/**
 * How a batch ended. 'result': it ran; each task gets its slice of the outputs. 'wrong-worker': it
 * reached a process that is not its worker; nothing ran, the tasks go back and the worker takes no
 * batch until its agent reports it (by its whole identity) ready. 'not-run': nothing ran; the tasks go
 * back to the head of their queue for another worker. 'failed': every task fails with `error`.
 * `workerState`, where given, is what the outcome says of the worker.
 */
export type BatchOutcome =
  | {
      readonly kind: 'result';
      readonly latencyMs: number;
      readonly outputs: readonly TensorRef[];
      readonly payload: Buffer;
      /** The worker's GPU memory while it ran (MB), where it measured it. */
      readonly memoryMb?: number;
    }
  | { readonly kind: 'wrong-worker'; readonly message: string }
  | { readonly kind: 'not-run'; readonly workerState?: 'draining' | 'unknown' }
  | { readonly kind: 'failed'; readonly error: string; readonly workerState?: 'failed' };

/**
 * What an agent's batch error means. 'worker-retired' and 'unknown-worker': nothing ran. 'worker-failed':
 * the agent answers a dead worker's batches before it reports the worker failed, so the worker takes no
 * batch until its agent reports it ready again (else the next batch is lost the same way).
 */
export function relayedErrorOutcome(msg: Extract<FromAgent, { type: 'batchError' }>): BatchOutcome {
  switch (msg.reason) {
    case 'wrong-worker':
      return { kind: 'wrong-worker', message: msg.message };
    case 'worker-retired':
      return { kind: 'not-run', workerState: 'draining' };
    case 'unknown-worker':
      return { kind: 'not-run', workerState: 'unknown' };
    case 'bad-batch':
      return { kind: 'failed', error: `worker ${msg.workerId} rejected the batch: ${msg.message}` };
    case 'worker-failed':
      return { kind: 'failed', error: `worker ${msg.workerId} failed: ${msg.message}`, workerState: 'failed' };
  }
}

/**
 * Where an answer came from: a worker's data socket (only its direct batches), or an agent's WebSocket
 * (only its relayed batches; `workerId`, where the message names one, must be the batch's worker).
 */
export type BatchSource =
  | { readonly direct: true; readonly worker: Worker }
  | { readonly direct: false; readonly agentId: string; readonly workerId?: string };

/** What resolving a batch asks of the rest of the control plane. */
export interface BatchPorts {
  readonly clock: () => number;
  readonly finish: Finish;
  /** Puts tasks of model m back at the head of its queue, keeping their order. */
  requeue(m: number, tasks: readonly Task[]): void;
  /**
   * Batch b ran `latencyMs` of GPU time and was answered at `nowMs` (metrics, epoch, path meter); its worker used
   * `memoryMb` of GPU memory, where measured.
   */
  executed(b: Batch, latencyMs: number, nowMs: number, memoryMb?: number): void;
  /** Batch b left flight: its worker (and GPU) may take the next. */
  done(b: Batch): void;
  /** Closes the worker's direct connection, if it has one. */
  closeDirect(w: Worker): void;
}

export class InFlightBatches {
  private readonly byId = new Map<string, Batch>();
  private next = 1;

  constructor(
    private readonly models: readonly ServedModelConfig[],
    private readonly log: Logger,
    private readonly ports: BatchPorts,
  ) {}

  /** The id of the next batch sent. */
  nextId(): string {
    return `b${this.next++}`;
  }

  add(b: Batch): void {
    this.byId.set(b.batchId, b);
  }

  /**
   * The batch an answer from `from` is for; undefined when it was answered already (its agent
   * disconnected, its connection closed) or was not sent on that path: such an answer is ignored.
   */
  find(batchId: string, from: BatchSource): Batch | undefined {
    const b = this.byId.get(batchId);
    if (!b || b.direct !== from.direct) return undefined;
    if (from.direct) return b.worker === from.worker ? b : undefined;
    if (b.worker.agentId !== from.agentId) return undefined;
    return from.workerId === undefined || b.worker.workerId === from.workerId ? b : undefined;
  }

  /** The batches in flight that `select` picks, in the order they were sent. */
  where(select: (b: Batch) => boolean): Batch[] {
    return [...this.byId.values()].filter(select);
  }

  /** Hands back every batch in flight and forgets them (the control plane is stopping). */
  drain(): Batch[] {
    const all = [...this.byId.values()];
    this.byId.clear();
    return all;
  }

  /** Ends batch b with `outcome`: answers or requeues its tasks, then frees its worker. */
  resolve(b: Batch, outcome: BatchOutcome): void {
    const w = b.worker;
    switch (outcome.kind) {
      case 'result':
        this.answer(b, outcome);
        break;
      case 'wrong-worker':
        this.log.warn(
          { worker: w.workerId, agentId: w.agentId, err: outcome.message },
          'a batch was refused: its worker is not the one sent to',
        );
        w.state = 'unknown';
        this.ports.requeue(w.model, b.tasks);
        this.done(b);
        // A batch sent ahead on its direct connection goes back too, when that connection closes.
        this.ports.closeDirect(w);
        return;
      case 'not-run':
        if (outcome.workerState) w.state = outcome.workerState;
        this.ports.requeue(w.model, b.tasks);
        break;
      case 'failed':
        for (const t of b.tasks)
          this.ports.finish(t, { ok: false, reason: 'worker-failed', error: outcome.error }, 'worker_failed');
        if (outcome.workerState) w.state = outcome.workerState;
        break;
    }
    this.done(b);
  }

  private done(b: Batch): void {
    this.byId.delete(b.batchId);
    this.ports.done(b);
  }

  /** Each task gets its slice of the outputs, or the reason it has none. */
  private answer(b: Batch, result: Extract<BatchOutcome, { kind: 'result' }>): void {
    const { outputs, payload } = result;
    const now = this.ports.clock();
    const model = this.models[b.worker.model]!;
    this.ports.executed(b, result.latencyMs, now, result.memoryMb);
    const split = splitOutputs(b.size, outputs, payload, {
      outputs: model.signature.outputs,
      batchDim: model.maxBatchSize !== 0,
    });
    b.tasks.forEach((t, i) => {
      if (split.problem) {
        const error = `worker ${b.worker.workerId} returned a malformed result: ${split.problem}`;
        this.ports.finish(t, { ok: false, reason: 'worker-failed', error }, 'worker_failed');
        return;
      }
      const bad = split.failed.get(i);
      if (bad !== undefined) {
        this.ports.finish(t, { ok: false, reason: 'bad-input', error: bad }, 'bad_input');
        return;
      }
      const lat = now - t.arrivalMs;
      const outcome = lat <= model.sloMs ? 'ok' : 'late';
      this.ports.finish(t, { ok: true, outputs: split.outputsOf(i), latencyMs: lat }, outcome);
    });
  }
}

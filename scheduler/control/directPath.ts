// The direct path: batches straight to a worker's data socket (scheduler/workerLink.ts) when its agent
// reported one and the connection is up; the agent's WebSocket carries them otherwise. Answers that
// come back here are resolved as the relayed ones are (scheduler/control/batches.ts).
import type { Logger } from 'pino';
import { FromWorkerSchema, type ToWorker } from '../../src/protocol/worker.js';
import type { DirectLink } from '../workerLink.js';
import type { InFlightBatches } from './batches.js';
import { linkKey, type Worker } from './records.js';
import type { ServedModelConfig } from './types.js';
import type { DirectPort } from './workerSet.js';

export class DirectPath implements DirectPort {
  /** Set once the batches exist (they resolve what comes back here, and close connections here). */
  batches: InFlightBatches | null = null;

  constructor(
    private readonly link: DirectLink | undefined,
    private readonly models: readonly ServedModelConfig[],
    private readonly log: Logger,
  ) {}

  /**
   * Sends a batch on the worker's connection; false when there is none (it goes through the agent).
   * `slots`: its parts may go as shared-memory slots (a one-input model's batch only).
   */
  send(w: Worker, msg: ToWorker, parts: readonly Uint8Array[], slots = true): boolean {
    return this.link?.send(linkKey(w, this.models), msg, parts, slots) ?? false;
  }

  /** Opens the direct connection to a ready worker with a data socket (once; again after it closed). */
  connect(w: Worker): void {
    const link = this.link;
    if (!link || !w.data || w.state !== 'ready' || !w.wanted) return;
    const key = linkKey(w, this.models);
    if (link.has(key)) return;
    link.open(key, w.data, {
      frame: (header, payload) => this.frame(w, header, payload),
      closed: (why) => this.closed(w, why),
    });
  }

  /** `abort`: at once, dropping what is unsent (a connection to a host cut off would not end cleanly). */
  close(w: Worker, abort = false): void {
    this.link?.close(linkKey(w, this.models), abort);
  }

  /** A frame from a worker's data socket: the answer to one of its direct batches. */
  private frame(w: Worker, header: unknown, payload: Buffer): void {
    const parsed = FromWorkerSchema.safeParse(header);
    if (!parsed.success) {
      this.log.warn(
        { worker: w.workerId, err: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') },
        'bad message on a worker data socket; closing it',
      );
      this.close(w);
      return;
    }
    const m = parsed.data;
    if (m.type !== 'result' && m.type !== 'error') return; // ready/fatal belong on stdout; the agent reports them
    const batches = this.batches!;
    const b = batches.find(m.id, { direct: true, worker: w });
    if (!b) return;
    if (m.type === 'result') {
      const backWallMs = performance.timeOrigin + performance.now();
      if (m.receivedAtMs !== undefined && m.answeredAtMs !== undefined) {
        // Per-hop timing (docs/serving.md): clocks agree on one host; across hosts only workerMs and the
        // round trip do.
        this.log.debug(
          {
            batchId: b.batchId,
            size: b.size,
            bytes: b.bytes,
            toWorkerMs: m.receivedAtMs - b.sentWallMs,
            workerMs: m.latencyMs,
            inWorkerMs: m.answeredAtMs - m.receivedAtMs,
            fromWorkerMs: backWallMs - m.answeredAtMs,
            roundTripMs: backWallMs - b.sentWallMs,
          },
          'batch back',
        );
      }
      const { latencyMs, outputs, memoryMb } = m;
      batches.resolve(b, { kind: 'result', latencyMs, outputs, payload, ...(memoryMb ? { memoryMb } : {}) });
    } else if (m.reason === 'wrong-worker') {
      batches.resolve(b, { kind: 'wrong-worker', message: m.message });
    } else {
      batches.resolve(b, { kind: 'failed', error: `worker ${w.workerId} rejected the batch: ${m.message}` });
    }
  }

  /**
   * A worker's data connection ended: its direct batches still unanswered will never be. A worker let
   * go answers what it received before it exits, so those it did not answer did not run: they go back
   * to their queue; so do those sent to a process that refused one as not its own (state unknown). A
   * worker still wanted failed (killed, crashed): its tasks fail with the reason.
   */
  private closed(w: Worker, why: string): void {
    const batches = this.batches!;
    for (const b of batches.where((x) => x.worker === w && x.direct)) {
      if (!w.wanted || w.state === 'unknown') batches.resolve(b, { kind: 'not-run' });
      else
        batches.resolve(b, {
          kind: 'failed',
          error: `worker ${w.workerId} failed: its data connection closed (${why})`,
        });
    }
  }
}

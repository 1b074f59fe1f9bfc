// `MpsSupervisor`: watches one MPS daemon and, when its server fails, has the GPU's workers stopped and
// restarts the daemon with a backoff (agent/mps.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import type { MpsDaemon } from './mpsDaemon.js';
import { type MpsFailed, restartBackoffMs } from './mpsParse.js';

/** The supervisor's clock, injectable so tests control time. */
export interface SupervisorClock {
  /** Calls `fn` once after `ms`; returns a function that cancels the call. */
  after(ms: number, fn: () => void): () => void;
  /** Resolves after `ms` (the backoff between failed restarts). */
  sleep(ms: number): Promise<void>;
}

export const systemClock: SupervisorClock = {
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
  sleep: (ms) => sleep(ms),
};

export interface MpsSupervisorOptions {
  /** Time between the end of one health check and the start of the next. */
  readonly intervalMs: number;
  /**
   * Called once per detected failure, before the daemon is restarted. The agent stops the GPU's
   * workers here, answering their tasks in flight with errors: clients of a failed server cannot
   * recover, the failed server waits for them to exit, and `quit` waits for them too.
   */
  readonly onFailure?: (why: MpsFailed) => void | Promise<void>;
  /** Called once per failure after the daemon answers again; the agent starts the GPU's workers again. */
  readonly onRecovered: () => void | Promise<void>;
  /** Called after each failed restart, before the backoff (for logs). */
  readonly onRestartFailed?: (why: MpsFailed, failedRestarts: number) => void;
  /** Backoff between failed restarts: doubling from `initialMs` (200 ms) to `maxMs` (10 s). */
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number };
  readonly clock?: SupervisorClock;
}

/** What one check did: nothing to do, a failure recovered, stopped during recovery, or skipped as one was running. */
export type SupervisorCheck = 'healthy' | 'recovered' | 'stopped' | 'busy';

/**
 * Watches one daemon: a health check every `intervalMs` (checks never overlap); on a failure,
 * `onFailure`, then restarts with backoff until one succeeds (or `stop`), then `onRecovered`.
 * Callbacks that throw are bugs and reject the check.
 */
export class MpsSupervisor {
  private readonly clock: SupervisorClock;
  private cancelNext: (() => void) | null = null;
  private running: Promise<SupervisorCheck> | null = null;
  private stopped = false;

  constructor(
    private readonly daemon: Pick<MpsDaemon, 'healthy' | 'restart'>,
    private readonly opts: MpsSupervisorOptions,
  ) {
    this.clock = opts.clock ?? systemClock;
  }

  /** Starts the periodic checks (the first after `intervalMs`). */
  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** No further checks; a recovery in progress ends at its next backoff. See `idle`. */
  stop(): void {
    this.stopped = true;
    this.cancelNext?.();
    this.cancelNext = null;
  }

  /** Resolves when no check is running (after `stop`, before stopping the daemon). */
  async idle(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  /** One health check, with recovery on failure; resolves when done. */
  check(): Promise<SupervisorCheck> {
    if (this.running) return Promise.resolve('busy');
    const run = this.checkOnce().finally(() => {
      this.running = null;
    });
    this.running = run;
    return run;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.cancelNext = this.clock.after(this.opts.intervalMs, () => {
      this.cancelNext = null;
      void this.check().finally(() => this.schedule());
    });
  }

  private async checkOnce(): Promise<SupervisorCheck> {
    const health = await this.daemon.healthy();
    if (health.ok) return 'healthy';
    await this.opts.onFailure?.(health);
    let failedRestarts = 0;
    for (;;) {
      if (this.stopped) return 'stopped';
      const r = await this.daemon.restart();
      if (r.ok) break;
      failedRestarts++;
      this.opts.onRestartFailed?.(r, failedRestarts);
      if (this.stopped) return 'stopped';
      await this.clock.sleep(restartBackoffMs(failedRestarts, this.opts.backoff));
    }
    await this.opts.onRecovered();
    return 'recovered';
  }
}

// What the deployment in force was measured to miss (`planFeedback` in InssAdditions; docs/inss.md,
// "Measured misses of the deployment in force"). inss keeps a deployment its latency model predicts to meet
// the attainment target (rl/inss.ts, the stability rule); when the prediction is wrong for that layout (a
// model whose profile was fitted online, a layout another policy handed over, a worker slower than its
// profile) the deployment would be kept while it misses. This counts the late and dropped tasks of the
// layout in force, from the epoch after its dwell on, over a sliding window, and gives the planner the
// measured miss rate to set against the prediction. Pure.
import type { Deployment, Observation } from '../src/policy/types.js';
import { DWELL_MS, FEEDBACK_EPOCHS, FEEDBACK_MIN_TASKS } from './inssTuning.js';
import { sameLayout } from './switching.js';

interface EpochCount {
  readonly missed: number;
  readonly finished: number;
  readonly ms: number;
}

export class PlanFeedback {
  private layout: Deployment | null = null;
  private sinceMs = 0;
  private lastMs: number | null = null;
  private window: EpochCount[] = [];

  /**
   * Adds the last epoch's counts when the layout that served it has been in force past its dwell for the
   * whole epoch; a new layout starts the count again.
   */
  update(obs: Observation): void {
    const epochMs = this.lastMs === null ? null : obs.nowMs - this.lastMs;
    this.lastMs = obs.nowMs;
    const current = obs.current;
    if (current.placements.length === 0 || this.layout === null || !sameLayout(this.layout, current)) {
      this.layout = current.placements.length > 0 ? current : null;
      this.sinceMs = obs.nowMs;
      this.window = [];
      return;
    }
    if (epochMs === null || !(epochMs > 0) || obs.nowMs - epochMs < this.sinceMs + DWELL_MS) return;
    const e = obs.lastEpoch;
    let missed = 0;
    let finished = 0;
    for (let i = 0; i < e.served.length; i++) {
      const dropped = e.dropped[i] ?? 0;
      missed += (e.violated[i] ?? 0) + dropped;
      finished += (e.served[i] ?? 0) + dropped;
    }
    this.window.push({ missed, finished, ms: epochMs });
    if (this.window.length > FEEDBACK_EPOCHS) this.window.shift();
  }

  /**
   * Tasks/s the layout in force was measured to miss over the last FEEDBACK_EPOCHS epochs past its dwell,
   * or null while fewer epochs or fewer than FEEDBACK_MIN_TASKS finished tasks were counted.
   */
  missedPerS(): number | null {
    if (this.window.length < FEEDBACK_EPOCHS) return null;
    let missed = 0;
    let finished = 0;
    let ms = 0;
    for (const c of this.window) {
      missed += c.missed;
      finished += c.finished;
      ms += c.ms;
    }
    return finished >= FEEDBACK_MIN_TASKS && ms > 0 ? (missed * 1000) / ms : null;
  }

  /**
   * Counts the observation's epoch (update) and returns the tasks/s the layout in force was measured to miss
   * when that is more than twice `meetsMissed` of the tasks measured arriving (twice: a window of a few epochs
   * at the edge of the target is noisy), else null.
   */
  verdict(obs: Observation, meetsMissed: number): number | null {
    this.update(obs);
    const measured = this.missedPerS();
    const total = obs.ratePerS.reduce((a, b) => a + b, 0);
    return measured !== null && measured > 2 * meetsMissed * total ? measured : null;
  }

  /** How long the layout in force has been in force at `nowMs` (ms; 0 when none is). */
  inForceMs(nowMs: number): number {
    return this.layout === null ? 0 : Math.max(0, nowMs - this.sinceMs);
  }

  /** Forgets the window (the planner weighed it): the next verdict needs a full window again. */
  restart(): void {
    this.window = [];
  }
}

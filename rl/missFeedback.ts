// Feedback from measured misses (`inss-fb`; docs/inss.md, "Tried, and not in `inss`"): per model, a rate
// multiplier the planner plans with, raised while the model misses more than its target and let decay
// once it meets it comfortably. Pure.
import type { Observation } from '../src/policy/types.js';
import {
  FEEDBACK_EPOCHS,
  FEEDBACK_MIN_TASKS,
  MAX_MISS_BOOST,
  MISS_BOOST,
  MISS_BOOST_DECAY,
  MISS_TARGET,
} from './inssTuning.js';

export class MissFeedback {
  /** Per model: the rate multiplier measured misses have earned it (1: none). */
  readonly boost: number[];
  /** Per model: late or dropped tasks, finished tasks and epochs counted since the count (re)started. */
  private readonly missCount: number[];
  private readonly finishedCount: number[];
  private readonly epochsCounted: number[];

  constructor(models: number) {
    this.boost = new Array<number>(models).fill(1);
    this.missCount = new Array<number>(models).fill(0);
    this.finishedCount = new Array<number>(models).fill(0);
    this.epochsCounted = new Array<number>(models).fill(0);
  }

  /**
   * Adds the last epoch's late and dropped tasks to each model's count; at the end of a window
   * (FEEDBACK_EPOCHS epochs and FEEDBACK_MIN_TASKS finished tasks) raises the boost of a model that
   * missed more than MISS_TARGET, lets the boost of one that missed at most a quarter of it decay, and
   * starts the count again. True when a boost rose (plan again).
   */
  update(obs: Observation): boolean {
    if (obs.current.placements.length === 0) return false;
    const e = obs.lastEpoch;
    let rose = false;
    for (let i = 0; i < this.boost.length; i++) {
      this.finishedCount[i]! += (e.served[i] ?? 0) + (e.dropped[i] ?? 0);
      this.missCount[i]! += (e.violated[i] ?? 0) + (e.dropped[i] ?? 0);
      this.epochsCounted[i]!++;
      const finished = this.finishedCount[i]!;
      if (this.epochsCounted[i]! < FEEDBACK_EPOCHS || finished < FEEDBACK_MIN_TASKS) continue;
      const missed = this.missCount[i]! / finished;
      if (missed > MISS_TARGET && this.boost[i]! < MAX_MISS_BOOST) {
        this.boost[i] = Math.min(MAX_MISS_BOOST, this.boost[i]! * MISS_BOOST);
        rose = true;
      } else if (missed <= MISS_TARGET / 4) this.boost[i] = 1 + (this.boost[i]! - 1) * MISS_BOOST_DECAY;
      this.missCount[i] = this.finishedCount[i] = this.epochsCounted[i] = 0;
    }
    return rose;
  }
}

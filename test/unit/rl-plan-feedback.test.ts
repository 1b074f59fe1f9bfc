// What the deployment in force was measured to miss (rl/planFeedback.ts) and the stability rule that weighs it
// (rl/switching.ts keepInForce), alone and inside inss.
import { describe, expect, it } from 'vitest';
import { ALL_ADDITIONS, DWELL_MS, FEEDBACK_EPOCHS, FEEDBACK_MIN_TASKS, inssVariantFactory } from '../../rl/inss.js';
import { PlanFeedback } from '../../rl/planFeedback.js';
import { keepInForce, type KeepInput, sameLayout } from '../../rl/switching.js';
import type { Deployment, Observation } from '../../src/policy/types.js';
import { Rng } from '../../src/workload/random.js';
import { builtInScenario } from '../support/clusters.js';

const A: Deployment = { placements: [0, 1, 2, 3, 4, 5].map((m) => ({ model: m, gpu: m % 4, pct: 50, batch: 4 })) };
const B: Deployment = { placements: A.placements.map((p) => ({ ...p, gpu: (p.gpu + 1) % 4 })) };

/** An epoch ending at `nowMs` under `current`: each of six models served `served` tasks, `violated` of them late. */
function epoch(nowMs: number, current: Deployment, served: number, violated: number, rate = served): Observation {
  const six = (v: number) => [v, v, v, v, v, v];
  return {
    nowMs,
    ratePerS: six(rate),
    queued: six(0),
    lastEpoch: { served: six(served), violated: six(violated), dropped: six(0), meanExecMs: [], meanLatencyMs: [] },
    current,
  };
}

describe('PlanFeedback', () => {
  it('counts a layout only past its dwell, over FEEDBACK_EPOCHS epochs, and starts again on a new layout', () => {
    const f = new PlanFeedback();
    let t = 0;
    f.update(epoch(t, A, 100, 10)); // the layout is new here
    // Epochs that end within the dwell (or start before its end) are not counted.
    for (t = 1000; t <= DWELL_MS; t += 1000) f.update(epoch(t, A, 100, 50));
    expect(f.missedPerS()).toBeNull();
    for (let k = 0; k < FEEDBACK_EPOCHS; k++, t += 1000) f.update(epoch(t, A, 100, 3));
    // 6 models x 3 late tasks an epoch of 1 s; none of the dwell's 50s.
    expect(f.missedPerS()).toBeCloseTo(18, 9);
    expect(f.inForceMs(t)).toBe(t);
    f.update(epoch(t, B, 100, 3));
    expect(f.missedPerS()).toBeNull();
    expect(f.inForceMs(t + 500)).toBe(500);
  });

  it('gives no verdict on too few tasks, and one only above twice the misses that meet the target', () => {
    const few = new PlanFeedback();
    const per = Math.floor(FEEDBACK_MIN_TASKS / (6 * FEEDBACK_EPOCHS)) - 1;
    for (let t = 0; t <= DWELL_MS + 1000 * FEEDBACK_EPOCHS + 1000; t += 1000) few.update(epoch(t, A, per, per));
    expect(few.missedPerS()).toBeNull();
    const run = (violated: number) => {
      const f = new PlanFeedback();
      let v: number | null = null;
      for (let t = 0; t <= DWELL_MS + 1000 * FEEDBACK_EPOCHS + 1000; t += 1000)
        v = f.verdict(epoch(t, A, 1000, violated), 0.01);
      return v;
    };
    expect(run(15)).toBeNull(); // 1.5% missed: within twice 1%
    expect(run(30)).toBeCloseTo(180, 9); // 3%: 6 x 30 tasks/s
  });
});

describe('keepInForce', () => {
  const { cluster } = builtInScenario('paper-6');
  const planned = [300, 250, 125, 250, 275, 250];
  const total = planned.reduce((a, b) => a + b, 0);
  const margins = { meetsMissed: 0.01, switchSaves: 0.005 };
  const input = (o: Partial<KeepInput>): KeepInput => ({
    cluster,
    current: A,
    kept: { missedPerS: 0.5 * margins.meetsMissed * total, score: 20 },
    best: { missedPerS: 0, score: 5, deployment: B },
    planned,
    margins,
    measuredMissedPerS: null,
    inForceMs: 60_000,
    ...o,
  });

  it('keeps a deployment predicted to meet the target unless a switch saves enough, however long in force', () => {
    expect(keepInForce(input({}))).toBe(true);
    expect(keepInForce(input({ inForceMs: 1_000_000 }))).toBe(true);
  });

  it('weighs what the deployment in force was measured to miss, and spreads the switch over its time in force', () => {
    // Measured 6% of the tasks missed: the prediction of 0.5% no longer keeps it.
    const measured = 0.06 * total;
    expect(keepInForce(input({ measuredMissedPerS: measured }))).toBe(false);
    // The same misses on a layout just past its dwell: every model moves, costing 10% of their rate a second.
    expect(keepInForce(input({ measuredMissedPerS: measured, inForceMs: DWELL_MS }))).toBe(true);
    // A best plan of the same layout is no switch.
    expect(keepInForce(input({ measuredMissedPerS: measured, best: { missedPerS: 0, score: 5, deployment: A } }))).toBe(
      true,
    );
    // Where the best plan is predicted to miss too (above what the GPUs carry), measured misses change nothing.
    const missing = { missedPerS: 0.02 * total, score: 5, deployment: B };
    expect(keepInForce(input({ measuredMissedPerS: measured, best: missing }))).toBe(
      keepInForce(input({ best: missing })),
    );
    expect(keepInForce(input({ best: missing }))).toBe(true);
    // An infeasible deployment in force is never kept.
    expect(keepInForce(input({ kept: { missedPerS: Infinity, score: Infinity } }))).toBe(false);
  });
});

describe('inss with measured misses of the deployment in force', () => {
  it('decides as without them when none is measured missing, and leaves a layout it would keep when it misses', () => {
    const { cluster } = builtInScenario('paper-6');
    const base = [300, 250, 125, 250, 275, 250];
    const withPf = inssVariantFactory({ name: 'pf', interference: true, additions: ALL_ADDITIONS, description: '' });
    const without = inssVariantFactory({
      name: 'nopf',
      interference: true,
      additions: { ...ALL_ADDITIONS, planFeedback: false },
      description: '',
    });
    const rng = new Rng(11);
    let left = 0;
    for (let tries = 0; tries < 12; tries++) {
      const rates = base.map((x) => x * (0.3 + 1.7 * rng.next()));
      const other = base.map((x) => x * (0.3 + 1.7 * rng.next()));
      const inForce = without.create(cluster, {}).decide({ ...epoch(0, { placements: [] }, 0, 0), ratePerS: other });
      // Twelve epochs under the deployment in force, each model serving its rate with 5% (then 0%) late.
      for (const lateShare of [0.05, 0]) {
        const pa = withPf.create(cluster, {});
        const pb = without.create(cluster, {});
        let aLeft = false;
        let bKept = true;
        for (let k = 0; k < 12; k++) {
          const obs: Observation = {
            nowMs: k * 1000,
            ratePerS: rates,
            queued: rates.map(() => 0),
            lastEpoch: {
              served: rates.map((r) => Math.round(r)),
              violated: rates.map((r) => Math.round(r * lateShare)),
              dropped: rates.map(() => 0),
              meanExecMs: [],
              meanLatencyMs: [],
            },
            current: inForce,
          };
          const da = pa.decide(obs);
          const db = pb.decide(obs);
          if (lateShare === 0) expect(sameLayout(da, db)).toBe(true);
          aLeft ||= !sameLayout(da, inForce);
          bKept &&= sameLayout(db, inForce);
        }
        if (lateShare > 0 && aLeft && bKept) left++;
      }
    }
    expect(left).toBeGreaterThan(0);
  });
});

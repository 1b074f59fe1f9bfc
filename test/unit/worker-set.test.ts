// The worker set's apply plan (src/serving/workerSet.ts), the one the simulator and the scheduler's
// control plane both carry out.
import { describe, expect, it } from 'vitest';
import type { Deployment } from '../../src/policy/types.js';
import { onReady, type Phase, planApply, type WorkerView } from '../../src/serving/workerSet.js';

interface W {
  readonly name: string;
  readonly model: number;
  readonly gpu: number;
  readonly pct: number;
  phase: Phase;
  replaces: W | null;
}
const view: WorkerView<W> = {
  model: (w) => w.model,
  gpu: (w) => w.gpu,
  pct: (w) => w.pct,
  phase: (w) => w.phase,
  replaces: (w) => w.replaces,
};
const w = (
  name: string,
  model: number,
  gpu: number,
  pct: number,
  phase: Phase = 'active',
  replaces: W | null = null,
): W => ({ name, model, gpu, pct, phase, replaces });
const names = (ws: readonly W[]) => ws.map((x) => x.name);

describe('planApply', () => {
  it('retunes a worker that already runs the placement, starts a shadow for a new share, releases the rest', () => {
    const a = w('a', 0, 0, 50);
    const b = w('b', 1, 0, 50);
    const c = w('c', 2, 1, 30);
    const d: Deployment = {
      placements: [
        { model: 0, gpu: 0, pct: 50, batch: 8 },
        { model: 1, gpu: 0, pct: 40, batch: 4 },
      ],
    };
    const plan = planApply([a, b, c], view, d, ['mps', 'mps'], 3, 2);
    expect(plan.retune.map((r) => [r.worker.name, r.placement.batch])).toEqual([['a', 8]]);
    expect(plan.start.map((s) => [s.placement.model, s.pct, s.replaces?.name])).toEqual([[1, 40, 'b']]);
    expect(names(plan.retire)).toEqual(['b']);
    expect(names(plan.release)).toEqual(['c']);
    expect(plan.abandon).toEqual([]);
  });

  it('reinstates a retiring worker a plan returns to: active again, its shadow released', () => {
    // D1 put the model on GPU 0 at 50%; D2 moved it to 70% (a shadow starting, the old one retiring);
    // D3 goes back to 50%.
    const old = w('old', 0, 0, 50, 'retiring');
    const shadow = w('shadow', 0, 0, 70, 'starting', old);
    const plan = planApply(
      [old, shadow],
      view,
      { placements: [{ model: 0, gpu: 0, pct: 50, batch: 2 }] },
      ['mps'],
      1,
      1,
    );
    expect(plan.retune.map((r) => r.worker.name)).toEqual(['old']);
    expect(names(plan.reinstate)).toEqual(['old']);
    expect(names(plan.release)).toEqual(['shadow']);
    expect(plan.start).toEqual([]);
    expect(plan.retire).toEqual([]);
    // An active worker kept as it is is not reinstated.
    expect(
      planApply([w('a', 0, 0, 50)], view, { placements: [{ model: 0, gpu: 0, pct: 50, batch: 2 }] }, ['mps'], 1, 1)
        .reinstate,
    ).toEqual([]);
  });

  it('abandons a shadow still starting: the new worker replaces what the shadow was to replace', () => {
    // The model moves from GPU 1 to GPU 0 at 60%, then, before that shadow is ready, to 70%.
    const old = w('old', 0, 1, 50, 'retiring');
    const shadow = w('shadow', 0, 0, 60, 'starting', old);
    const plan = planApply(
      [old, shadow],
      view,
      { placements: [{ model: 0, gpu: 0, pct: 70, batch: 4 }] },
      ['mps', 'mps'],
      1,
      2,
    );
    expect(names(plan.abandon)).toEqual(['shadow']);
    expect(plan.start.map((s) => s.replaces?.name)).toEqual(['old']);
    // The old worker keeps serving until the new one is ready: neither released nor retired again.
    expect(plan.release).toEqual([]);
    expect(plan.retire).toEqual([]);
  });

  it('keeps a time-shared GPU time-shared whatever the share, and starts new time-shared workers at 100%', () => {
    const a = w('a', 0, 0, 100);
    const plan = planApply(
      [a],
      view,
      {
        placements: [
          { model: 0, gpu: 0, pct: 50, batch: 2 },
          { model: 1, gpu: 0, pct: 50, batch: 2 },
        ],
        gpuModes: ['timeshare'],
      },
      ['timeshare'],
      2,
      1,
    );
    expect(names(plan.retune.map((r) => r.worker))).toEqual(['a']);
    expect(plan.start.map((s) => [s.placement.model, s.pct, s.replaces])).toEqual([[1, 100, null]]);
  });

  it('at the first deployment of a simulation nothing is replaced', () => {
    const plan = planApply([], view, { placements: [{ model: 0, gpu: 0, pct: 50, batch: 2 }] }, ['mps'], 1, 1, true);
    expect(plan.start.map((s) => s.replaces)).toEqual([null]);
  });

  it('sets aside placements outside the cluster', () => {
    const plan = planApply(
      [],
      view,
      {
        placements: [
          { model: 5, gpu: 0, pct: 50, batch: 2 },
          { model: 0, gpu: 9, pct: 50, batch: 2 },
        ],
      },
      ['mps'],
      1,
      1,
    );
    expect(plan.invalid.length).toBe(2);
    expect(plan.start).toEqual([]);
  });
});

describe('onReady', () => {
  it('drains the replaced worker only while it is still retiring', () => {
    const old = w('old', 0, 0, 50, 'retiring');
    expect(onReady(w('s', 0, 0, 60, 'starting', old), view)?.name).toBe('old');
    old.phase = 'active'; // kept by a later deployment
    expect(onReady(w('s', 0, 0, 60, 'starting', old), view)).toBeNull();
    expect(onReady(w('s', 0, 0, 60, 'starting'), view)).toBeNull();
  });
});

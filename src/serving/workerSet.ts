// The worker set's one vocabulary and its one plan for applying a deployment, driven by both the
// simulator (src/sim/simulator.ts) and the scheduler's control plane (scheduler/control.ts). Pure:
// it reads the workers through a view and returns what to do; each side carries the plan out on its
// own workers (simulated time, or desired sets sent to agents).
//
// Phases:
//   starting  a new worker warming up; a shadow when it replaces another (that one keeps serving)
//   active    serving
//   retiring  serving until the shadow that replaces it is ready
//   draining  no longer wanted: finishes the batch in hand, then stops
//
// Applying a deployment (paper section 5.5):
// - retune: a placement whose worker already runs (same model and GPU, same share, or a time-shared
//   GPU staying time-shared) keeps it; only its batch size and timeout change, at once; a kept worker
//   that was retiring (a plan returning to it before its shadow was ready) is reinstated: active again;
// - start: any other placement gets a new worker; where the model has a worker that is not kept
//   (same GPU preferred), the new one is its shadow and that one retires (serves until the new one is
//   ready). A shadow that was itself still starting is abandoned (stopped at once) and the new worker
//   replaces the worker the abandoned one was to replace;
// - release: every other live worker is no longer wanted and drains.
// On ready (activate), a shadow becomes active and the worker it replaces, if still retiring, drains.
import type { Deployment, GpuMode, Placement } from '../policy/types.js';

export type Phase = 'starting' | 'active' | 'retiring' | 'draining';

/** How the plan reads a side's workers. */
export interface WorkerView<W> {
  model(w: W): number;
  gpu(w: W): number;
  pct(w: W): number;
  phase(w: W): Phase;
  /** The worker a starting shadow replaces, or null. */
  replaces(w: W): W | null;
}

export interface ApplyPlan<W> {
  /** The GPUs' modes from now on. */
  readonly modes: GpuMode[];
  /** Placements outside the cluster (a policy bug): ignored. */
  readonly invalid: Placement[];
  /** Kept workers and their new placement (batch size and timeout). */
  readonly retune: { readonly worker: W; readonly placement: Placement }[];
  /**
   * Kept workers that were retiring: active again (the shadow that was to replace them is released or kept beside
   * them).
   */
  readonly reinstate: W[];
  /** New workers: the placement, the share to start with (100 on a time-shared GPU), the worker it replaces. */
  readonly start: { readonly placement: Placement; readonly pct: number; readonly replaces: W | null }[];
  /** Shadows still starting that are given up: stopped at once. */
  readonly abandon: W[];
  /** Workers that now retire: they serve until their shadow is ready. */
  readonly retire: W[];
  /** Live workers no longer wanted: they drain. */
  readonly release: W[];
}

/**
 * The plan for moving `workers` toward `d` (see the file header). `first`: the deployment at time 0
 * of a simulation, which starts warm (no shadows, nothing replaced).
 */
export function planApply<W>(
  workers: readonly W[],
  view: WorkerView<W>,
  d: Deployment,
  currentModes: readonly GpuMode[],
  nModels: number,
  nGpus: number,
  first = false,
): ApplyPlan<W> {
  const modes: GpuMode[] = d.gpuModes ? [...d.gpuModes] : new Array<GpuMode>(nGpus).fill('mps');
  const live = (w: W) => view.phase(w) !== 'draining';
  const keep = new Set<W>();
  const plan: ApplyPlan<W> = {
    modes,
    invalid: [],
    retune: [],
    reinstate: [],
    start: [],
    abandon: [],
    retire: [],
    release: [],
  };
  const unmatched: Placement[] = [];
  for (const p of d.placements) {
    if (p.gpu < 0 || p.gpu >= nGpus || p.model < 0 || p.model >= nModels) {
      plan.invalid.push(p);
      continue;
    }
    const same = workers.find(
      (w) =>
        live(w) &&
        !keep.has(w) &&
        view.model(w) === p.model &&
        view.gpu(w) === p.gpu &&
        modes[p.gpu] === currentModes[p.gpu] &&
        (view.pct(w) === p.pct || modes[p.gpu] === 'timeshare'),
    );
    if (same) {
      plan.retune.push({ worker: same, placement: p });
      if (view.phase(same) === 'retiring') plan.reinstate.push(same);
      keep.add(same);
    } else {
      unmatched.push(p);
    }
  }
  const abandoned = new Set<W>();
  // The worker each new worker replaces, as the plan goes (an abandoned shadow's target passes on).
  const newReplaces: (W | null)[] = [];
  for (const p of unmatched) {
    let replaces: W | null = null;
    const candidates = workers.filter((x) => live(x) && !keep.has(x) && !abandoned.has(x) && view.model(x) === p.model);
    const replaced = candidates.find((x) => view.gpu(x) === p.gpu) ?? candidates[0];
    if (replaced && !first) {
      if (view.phase(replaced) === 'starting') {
        abandoned.add(replaced);
        plan.abandon.push(replaced);
        replaces = view.replaces(replaced);
      } else {
        keep.add(replaced);
        plan.retire.push(replaced);
        replaces = replaced;
      }
    }
    newReplaces.push(replaces);
    plan.start.push({ placement: p, pct: modes[p.gpu] === 'timeshare' ? 100 : p.pct, replaces });
  }
  // A kept shadow still starting keeps the worker it replaces serving; so does a new one.
  for (const w of [...keep]) {
    const r = view.phase(w) === 'starting' ? view.replaces(w) : null;
    if (r) keep.add(r);
  }
  for (const r of newReplaces) if (r) keep.add(r);
  for (const w of workers) if (live(w) && !keep.has(w) && !abandoned.has(w)) plan.release.push(w);
  return plan;
}

/**
 * A starting worker reported ready: it becomes active. Returns the worker it replaced when that one
 * is still retiring (it now drains), else null.
 */
export function onReady<W>(w: W, view: WorkerView<W>): W | null {
  const old = view.replaces(w);
  return old && view.phase(old) === 'retiring' ? old : null;
}

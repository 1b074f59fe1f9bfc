// inss under the envelope monitor: where the tuner's raised rate for a burst cannot be met by any plan, the plan is
// made at the window's mean rates (Observation.meanRatePerS) rather than giving a model up for the hold.
import { describe, expect, it } from 'vitest';
import { inssFactory } from '../../rl/inss.js';
import { sameLayout } from '../../rl/switching.js';
import type { Deployment } from '../../src/policy/types.js';
import { observation } from '../support/builders.js';
import { builtInScenario } from '../support/clusters.js';

const served = (d: Deployment, models: number) =>
  Array.from({ length: models }, (_, m) => d.placements.some((p) => p.model === m));

describe('inss with the tuner', () => {
  const { cluster } = builtInScenario('paper-6');
  const mean = [300, 250, 125, 250, 275, 250];

  it('decides as without the field when the mean rates are the rates', () => {
    const a = inssFactory.create(cluster, {}).decide(observation(mean, { placements: [] }));
    const b = inssFactory.create(cluster, {}).decide({ ...observation(mean, { placements: [] }), meanRatePerS: mean });
    expect(sameLayout(a, b)).toBe(true);
    expect(a.placements.map((p) => p.batch)).toEqual(b.placements.map((p) => p.batch));
  });

  it('plans at the mean rates where no plan meets a burst rate, serving every model', () => {
    // One model's rate raised thirtyfold: no plan meets it.
    const raised = mean.map((r, i) => (i === 1 ? r * 30 : r));
    const d = inssFactory
      .create(cluster, {})
      .decide({ ...observation(raised, { placements: [] }), meanRatePerS: mean });
    expect(served(d, mean.length)).toEqual(mean.map(() => true));
    const atMean = inssFactory.create(cluster, {}).decide(observation(mean, { placements: [] }));
    expect(served(atMean, mean.length)).toEqual(mean.map(() => true));
  });
});

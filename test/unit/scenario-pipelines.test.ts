import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import { withPipelinesByName } from '../../src/scenario/build.js';
import { ScenarioSchema } from '../../src/scenario/schema.js';
import { type Profile, ProfileSchema } from '../../src/profile/schema.js';
import { ProfileBuilder } from '../support/builders.js';

const zero = { kind: 'constant', ratePerS: 0 };
const base = {
  name: 'p',
  gpus: [{ profile: 'v100', count: 1 }],
  models: [
    { name: 'resize', sloMs: 50, rate: zero },
    { name: 'classify', sloMs: 50, rate: zero },
    { name: 'direct', sloMs: 50, rate: { kind: 'constant', ratePerS: 10 } },
  ],
  durationS: 10,
};
const pipeline = {
  name: 'chain',
  sloMs: 200,
  rate: { kind: 'constant', ratePerS: 20 },
  steps: [{ model: 'resize' }, { model: 'classify' }],
};

function issues(x: unknown): string[] {
  const r = ScenarioSchema.safeParse(x);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('scenario pipelines', () => {
  it('parses a chain of step models, with no pipelines by default', () => {
    expect(ScenarioSchema.parse(base).pipelines).toEqual([]);
    const s = ScenarioSchema.parse({ ...base, pipelines: [pipeline] });
    expect(s.pipelines[0]!.steps.map((x) => x.model)).toEqual(['resize', 'classify']);
    expect(s.pipelines[0]!.arrival).toEqual({ process: 'poisson' });
  });

  it('names a step model that does not exist, one with its own traffic, and one used twice', () => {
    const bad = {
      ...pipeline,
      steps: [{ model: 'nope' }, { model: 'direct' }, { model: 'resize' }, { model: 'resize' }],
    };
    expect(issues({ ...base, pipelines: [bad] })).toEqual([
      "pipelines.0.steps.0.model: no model 'nope' in models",
      expect.stringMatching(
        /^pipelines\.0\.steps\.1\.model: model 'direct' is a step of pipeline 'chain': its own rate/,
      ),
      "pipelines.0.steps.3.model: model 'resize' is already a step of pipeline 'chain'",
    ]);
  });

  it('refuses a pipeline named like a model, and wiring that reads a tensor before it is written', () => {
    expect(issues({ ...base, pipelines: [{ ...pipeline, name: 'direct' }] })).toEqual([
      "pipelines.0.name: name 'direct' is already used",
    ]);
    const wired = {
      ...pipeline,
      inputs: ['IMAGE'],
      outputs: ['LABELS'],
      steps: [
        { model: 'resize', inputMap: { x: 'small' }, outputMap: { y: 'LABELS' } },
        { model: 'classify', inputMap: { x: 'IMAGE' }, outputMap: { y: 'small' } },
      ],
    };
    expect(issues({ ...base, pipelines: [wired] })).toEqual([
      expect.stringMatching(/^pipelines\.0\.steps: pipeline 'chain' step 0 \(resize\): input 'x' reads 'small'/),
    ]);
  });
});

const M = { runAtB1Full: 1, batchExp: 0.5, pctExp: 1 };

describe("a live cluster's pipelines", () => {
  const profile: Profile = ProfileSchema.parse(
    new ProfileBuilder().model('classify', M).model('resize', M).model('direct', M).build(),
  );
  // The scheduler's models come in its own order, not the scenario's.
  const cluster = buildCluster(
    [profile],
    ['direct', 'classify', 'resize'].map((name) => ({ name, sloMs: 50 })),
  );

  it('finds each step model by name in the served models', () => {
    const s = ScenarioSchema.parse({ ...base, pipelines: [pipeline] });
    const c = withPipelinesByName(cluster, s.pipelines);
    expect(c.pipelines).toEqual([{ name: 'chain', sloMs: 200, steps: s.pipelines[0]!.steps, stepModels: [2, 1] }]);
  });

  it('leaves out a pipeline whose step is not served, and the cluster as it was without any', () => {
    const s = ScenarioSchema.parse({ ...base, pipelines: [pipeline] });
    const partial = buildCluster([profile], [{ name: 'resize', sloMs: 50 }]);
    expect(withPipelinesByName(partial, s.pipelines)).toBe(partial);
    expect(withPipelinesByName(cluster, [])).toBe(cluster);
  });
});

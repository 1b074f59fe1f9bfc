import { describe, expect, it } from 'vitest';
import { inssFactory } from '../../rl/inss.js';
import { PipelineSplitPolicy } from '../../rl/inssPipelines.js';
import { buildCluster } from '../../src/policy/cluster.js';
import { candidateSplits } from '../../src/policy/pipelineSplit.js';
import type { ClusterInfo, Observation } from '../../src/policy/types.js';
import { ProfileSchema } from '../../src/profile/schema.js';
import { budgetsError, evenBudgets } from '../../src/serving/pipeline.js';
import { makeProfile } from '../support/builders.js';

// 'light': 1 ms a batch of one; 'heavy': 12 ms x sqrt(batch), so it needs batches of 2 or more (and the time they
// take) past 83/s a GPU. Shares do not change the times (pctExp 0).
const flat = { batchExp: 1, pctExp: 0, schedPerKernelMs: 0, alphaCache: 0, alphaU: 0, betaU: 0 };
const profile = ProfileSchema.parse(
  makeProfile()
    .model('light', { ...flat, runAtB1Full: 1 })
    .model('heavy', { ...flat, runAtB1Full: 12, batchExp: 0.5 })
    .schedInterference(0, 0)
    .build(),
);

/** light -> heavy under 30 ms end to end on two GPUs: even, 'heavy' gets 15 ms, room for a batch of 1. */
function cluster(): ClusterInfo {
  const c = buildCluster(
    [profile, profile],
    [
      { name: 'pre', profileModel: 'light', sloMs: 15 },
      { name: 'heavy', sloMs: 15 },
    ],
  );
  const steps = ['pre', 'heavy'].map((model) => ({ model, inputMap: {}, outputMap: {} }));
  return { ...c, pipelines: [{ name: 'p', sloMs: 30, steps, stepModels: [0, 1] }] };
}

const observe = (ratePerS: number): Observation => ({
  nowMs: 0,
  ratePerS: [ratePerS, ratePerS],
  queued: [0, 0],
  lastEpoch: { served: [0, 0], violated: [0, 0], dropped: [0, 0], meanExecMs: [], meanLatencyMs: [] },
  current: { placements: [] },
});

describe("inss's split of a pipeline's SLO", () => {
  it("offers splits that are the pipeline's, the even one first, none taking from the last step", () => {
    const p = cluster().pipelines![0]!;
    const splits = candidateSplits(p, [1, 30]);
    expect(splits[0]).toEqual(evenBudgets(p));
    expect(splits.length).toBeGreaterThan(2);
    for (const s of splits) {
      expect(budgetsError(p, s)).toBeUndefined();
      expect(s[1]).toBeGreaterThanOrEqual(15);
    }
    expect(splits.at(-1)![1]).toBeGreaterThan(25);
  });

  it('gives the heavy step more where the even split is predicted to miss, and predicts fewer misses with it', () => {
    const c = cluster();
    const policy = inssFactory.create(c, {});
    expect(policy).toBeInstanceOf(PipelineSplitPolicy);
    const d = policy.decide(observe(110));
    const split = d.pipelineBudgetsMs!['p']!;
    const p = c.pipelines![0]!;
    expect(budgetsError(p, split)).toBeUndefined();
    expect(split[1]).toBeGreaterThan(20);
    const s = policy as PipelineSplitPolicy;
    const rates = [121, 121];
    expect(s.scoreSplit({ p: split }, rates)[0]).toBeLessThan(s.scoreSplit({ p: evenBudgets(p) }, rates)[0]);
  });

  it('gives the last step the room the first does not need where every split is predicted to meet the SLOs', () => {
    const d = inssFactory.create(cluster(), {}).decide(observe(20));
    const split = d.pipelineBudgetsMs!['p']!;
    expect(budgetsError(cluster().pipelines![0]!, split)).toBeUndefined();
    expect(split[1]).toBeGreaterThan(15);
  });
});

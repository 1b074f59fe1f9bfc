// The TS policy (rl/inss.ts) with a real (small, untrained) actor: feasibility, the two cases of
// section 5.5, and policy-file validation. Training quality is a benchmark, not a test.
import { describe, expect, it } from 'vitest';
import { initTf } from '../../rl/backend.js';
import { ProvisioningEnv } from '../../rl/env.js';
import { ActorForward, actorSnapshot } from '../../rl/actorForward.js';
import { inssFactory, inssNiFactory, inssPaperFactory } from '../../rl/inss.js';
import { actionSpace } from '../../rl/mdp.js';
import { clusterSignature, type PolicyFile } from '../../rl/policyFile.js';
import { SacDiscrete } from '../../rl/sacDiscrete.js';
import { deploymentProblem } from '../../src/policy/util.js';
import { observation } from '../support/builders.js';
import { builtInScenario } from '../support/clusters.js';

const { cluster, scenario } = builtInScenario('paper-6');

async function policyFile(): Promise<PolicyFile> {
  await initTf('wasm');
  const space = actionSpace(cluster);
  const agent = await SacDiscrete.create(4 + 12, new Array<number>(6).fill(space.options.length), {
    hidden: [16],
    seed: 5,
    learningStarts: 100,
    batchSize: 32,
  });
  const file: PolicyFile = {
    format: 'inss-policy/1',
    scenario: 'paper-6',
    cluster: clusterSignature(cluster),
    actionSpace: { options: [...space.options] },
    trainedWith: {},
    actor: actorSnapshot(agent.save()),
  };
  agent.dispose();
  return file;
}

describe('inss policy', () => {
  it('always emits a feasible deployment, and changes only batch sizes when rates move a little (case 1)', async () => {
    const p = inssFactory.create(cluster, { policyData: await policyFile() });
    const rates = [100, 100, 50, 100, 100, 100];
    const first = p.decide(observation(rates, { placements: [] }));
    expect(deploymentProblem(cluster, first)).toBeNull();
    // Every model served (pooled ones on several GPUs).
    expect(new Set(first.placements.map((x) => x.model)).size).toBe(6);
    const second = p.decide(
      observation(
        rates.map((r) => r * 1.1),
        first,
      ),
    );
    expect(deploymentProblem(cluster, second)).toBeNull();
    expect(second.placements.map((x) => [x.model, x.gpu, x.pct])).toEqual(
      first.placements.map((x) => [x.model, x.gpu, x.pct]),
    );
    expect(
      p.decide(
        observation(
          rates.map((r) => r * 1.1),
          second,
        ),
      ),
    ).toBe(second); // nothing changed: nothing to do
  });

  it('reallocates when BDA finds the current placement infeasible (case 2) and never makes it worse', async () => {
    const p = inssNiFactory.create(cluster, { policyData: await policyFile() });
    // Everything crammed on GPU 0 at one unit each: infeasible at these rates.
    const crammed = { placements: cluster.models.map((m) => ({ model: m.index, gpu: 0, pct: 6, batch: 1 })) };
    const d = p.decide(observation([300, 300, 150, 300, 300, 300], crammed));
    expect(deploymentProblem(cluster, d)).toBeNull();
    expect(new Set(d.placements.map((x) => x.gpu)).size).toBeGreaterThan(1);
  });

  it('inss-paper refuses a missing or mismatched policy file, saying why; both refuse a malformed one', async () => {
    // inss falls back to the model-based planner and says why.
    expect(() => inssPaperFactory.create(cluster, {})).toThrow(/needs a trained policy/);
    expect(inssPaperFactory.supports(cluster, {})).toMatch(/needs a trained policy/);
    expect(() => inssFactory.create(cluster, { policyData: { format: 'nope' } })).toThrow(/policy file: format/);
    expect(() => inssPaperFactory.create(cluster, { policyData: { format: 'nope' } })).toThrow(/policy file: format/);
    expect(inssFactory.supports(cluster, { policyData: { format: 'nope' } })).toMatch(/^inss: policy file: format/);
    expect(inssPaperFactory.supports(cluster, { policyData: { format: 'nope' } })).toMatch(
      /^inss-paper: policy file: format/,
    );
    expect(inssFactory.supports(cluster, {})).toBeNull();
    const other = builtInScenario('v100-4').cluster;
    const file = await policyFile();
    expect(() => inssPaperFactory.create(other, { policyData: file })).toThrow(
      /does not fit this cluster: trained for GPUs/,
    );
    expect(inssFactory.create(other, { policyData: file }).note).toMatch(
      /model-based planner .*does not fit this cluster: trained for GPUs/,
    );
    expect(inssFactory.create(cluster, { policyData: file }).note).toMatch(/trained actor/);
    // Same GPUs and models, other SLOs: the file does not fit either (SLOs are part of what it was trained for).
    const tighter = { gpus: cluster.gpus, models: cluster.models.map((m) => ({ ...m, sloMs: m.sloMs / 2 })) };
    expect(inssPaperFactory.supports(tighter, { policyData: file })).toMatch(/trained for SLOs \[alexnet 25 ms/);
    expect(inssFactory.create(tighter, { policyData: file }).note).toMatch(/model-based planner/);
  });
});

describe('actor snapshot', () => {
  it('decides exactly as the full saved agent does, and rejects a wrong layer size', async () => {
    await initTf('wasm');
    const agent = await SacDiscrete.create(5, [3, 4], { hidden: [8], seed: 2, learningStarts: 100, batchSize: 32 });
    const saved = agent.save();
    agent.dispose();
    const full = ActorForward.fromSerialized(saved);
    const snap = ActorForward.fromSnapshot(JSON.parse(JSON.stringify(actorSnapshot(saved))));
    for (const s of [
      [0, 1, 2, 3, 4],
      [5, -1, 0.5, 2, 9],
    ])
      expect(Array.from(snap.act(Float32Array.from(s)))).toEqual(Array.from(full.act(Float32Array.from(s))));
    const bad = actorSnapshot(saved);
    expect(() => ActorForward.fromSnapshot({ ...bad, hidden: [9] })).toThrow(/actor\.0: expected 5x9/);
  });
});

describe('training environment', () => {
  it('runs an episode of the scenario with rewards by eq. (3), seeded', () => {
    const mk = () =>
      new ProvisioningEnv(cluster, scenario.models, {
        stepS: 1,
        stepsPerEpisode: 5,
        rateJitter: 0.2,
        startSpreadS: 100,
        interference: true,
        seed: 9,
      });
    const run = (env: ProvisioningEnv) => {
      env.reset();
      const out: number[] = [];
      for (let t = 0; t < 5; t++) out.push(env.step([0, 20, 40, 10, 30, 50]).reward);
      return out;
    };
    const a = run(mk());
    expect(a).toEqual(run(mk()));
    expect(a.every(Number.isFinite)).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { carryModes, clusterView, gpuIndex } from '../../scheduler/clusterView.js';
import { servedCost } from '../../src/model/costDistribution.js';
import { withProfiles } from '../../src/policy/online/clusterMap.js';
import type { AgentGpu } from '../../src/protocol/agent.js';
import { loadProfileFile } from '../support/clusters.js';

const rtx = loadProfileFile('rtx2060s');
const v100 = loadProfileFile('v100');
const profiles = new Map([
  [rtx.id, rtx],
  [v100.id, v100],
]);
const gpu = (index: number, profile: string | null): AgentGpu => ({
  index,
  uuid: `G-${index}`,
  name: profile ?? 'Unknown GPU',
  memMb: 8000,
  profile,
  simulated: true,
  pooled: index % 2 === 0 ? 'overlap' : 'serial',
});
const MODELS = [
  { name: 'resnet50', sloMs: 80 },
  { name: 'mnasnet', sloMs: 50 },
];

describe('clusterView: agents and profiles -> the policy cluster and GPU references', () => {
  it('numbers the GPUs with a known profile, agents in id order, GPUs in their order', () => {
    const v = clusterView(
      [
        { agentId: 'b', gpus: [gpu(0, 'v100'), gpu(1, 'rtx2060s')] },
        { agentId: 'a', gpus: [gpu(0, 'rtx2060s'), gpu(1, 'mystery'), gpu(2, null)] },
      ],
      profiles,
      MODELS,
    );
    expect(v.refs).toEqual([
      { agentId: 'a', local: 0 },
      { agentId: 'b', local: 0 },
      { agentId: 'b', local: 1 },
    ]);
    expect(v.cluster!.gpus.map((g) => [g.index, g.profileId])).toEqual([
      [0, 'rtx2060s'],
      [1, 'v100'],
      [2, 'rtx2060s'],
    ]);
    // Each GPU pools as its agent reports (local GPU 0 overlaps, 1 is serial: see `gpu`).
    expect(v.cluster!.gpus.map((g) => g.pooled)).toEqual(['overlap', 'overlap', 'serial']);
    expect(v.cluster!.models.map((m) => [m.name, m.sloMs])).toEqual([
      ['resnet50', 80],
      ['mnasnet', 50],
    ]);
    expect(v.unprofiled).toEqual([
      { agentId: 'a', gpu: 1, name: 'mystery', profile: 'mystery' },
      { agentId: 'a', gpu: 2, name: 'Unknown GPU', profile: null },
    ]);
    expect(v.missingModels).toEqual([]);
    expect(gpuIndex(v.refs, 'b', 1)).toBe(2);
    expect(gpuIndex(v.refs, 'a', 1)).toBe(-1);
  });

  it('names the served models no GPU profile has; no GPU with a profile is no cluster', () => {
    const v = clusterView([{ agentId: 'a', gpus: [gpu(0, 'v100')] }], profiles, MODELS);
    expect(v.missingModels).toEqual(['mnasnet']); // the V100 profile has no mnasnet
    expect(v.cluster!.gpus[0]!.profileIndex[1]).toBe(-1);
    const none = clusterView([{ agentId: 'a', gpus: [gpu(0, 'mystery')] }], profiles, MODELS);
    expect(none.cluster).toBeNull();
    expect(none.refs).toEqual([]);
  });

  it('carries each GPU mode over to the new numbering; a new GPU starts as MPS', () => {
    const old = [
      { agentId: 'a', local: 0 },
      { agentId: 'b', local: 0 },
    ];
    const now = [
      { agentId: 'a', local: 0 },
      { agentId: 'a', local: 1 },
      { agentId: 'b', local: 0 },
    ];
    expect(carryModes(old, ['mps', 'timeshare'], now)).toEqual(['mps', 'mps', 'timeshare']);
  });

  it("carries a model's input-dependent cost to the policy's cluster, and through new profiles", () => {
    const cost = servedCost(
      [
        { relative: 16, weight: 3 },
        { relative: 128, weight: 1 },
      ],
      'tail',
      0.99,
    );
    const v = clusterView([{ agentId: 'a', gpus: [gpu(0, 'rtx2060s')] }], profiles, [
      MODELS[0]!,
      { ...MODELS[1]!, cost },
    ]);
    expect(v.cluster!.models[1]!.cost).toBe(cost);
    expect(v.cluster!.models[0]!.cost).toBeUndefined();
    expect(withProfiles(v.cluster!, profiles).models[1]!.cost).toBe(cost);
  });
});

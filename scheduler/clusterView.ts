// The cluster as the policy sees it, from the agents' GPUs and the known profiles (pure): every GPU
// of every agent (agents in id order, GPUs in their order) whose profile is known gets the next
// cluster index, with the mode it reports for pooling; GPU references map between a cluster index and
// (agent, local GPU). The control plane (scheduler/control.ts) rebuilds it whenever an agent's GPUs change.
import type { ServedCost } from '../src/model/costDistribution.js';
import { buildCluster } from '../src/policy/cluster.js';
import type { ClusterInfo, GpuMode } from '../src/policy/types.js';
import type { PooledGpuMode } from '../src/model/pooledGpu.js';
import type { Profile } from '../src/profile/schema.js';
import type { AgentGpu } from '../src/protocol/agent.js';

/** A cluster GPU: the agent that has it and its index there. */
export interface GpuRef {
  readonly agentId: string;
  readonly local: number;
}

export interface ClusterView {
  /** Cluster GPU index -> (agent, local index). */
  readonly refs: readonly GpuRef[];
  /** The policy's cluster; null when no GPU has a known profile. */
  readonly cluster: ClusterInfo | null;
  /** GPUs left out: their profile is unknown (or they reported none). */
  readonly unprofiled: readonly {
    readonly agentId: string;
    readonly gpu: number;
    readonly name: string;
    readonly profile: string | null;
  }[];
  /**
   * Served models no GPU's profile has (profileIndex -1 on every GPU): unprofiled. A policy wrapped with
   * `withOnlineProfiling` (src/policy/online/policy.ts) serves them and fits their profiles; another leaves
   * them undeployed.
   */
  readonly missingModels: readonly string[];
}

export function clusterView(
  agents: Iterable<{ readonly agentId: string; readonly gpus: readonly AgentGpu[] }>,
  profiles: ReadonlyMap<string, Profile>,
  models: readonly {
    readonly name: string;
    readonly sloMs: number;
    readonly profileModel?: string;
    readonly cost?: ServedCost;
  }[],
): ClusterView {
  const refs: GpuRef[] = [];
  const gpuProfiles: Profile[] = [];
  const pooled: PooledGpuMode[] = [];
  const unprofiled: { agentId: string; gpu: number; name: string; profile: string | null }[] = [];
  for (const a of [...agents].sort((x, y) => x.agentId.localeCompare(y.agentId))) {
    for (const g of a.gpus) {
      const p = g.profile === null ? undefined : profiles.get(g.profile);
      if (!p) {
        unprofiled.push({ agentId: a.agentId, gpu: g.index, name: g.name, profile: g.profile });
        continue;
      }
      refs.push({ agentId: a.agentId, local: g.index });
      gpuProfiles.push(p);
      pooled.push(g.pooled);
    }
  }
  if (refs.length === 0) return { refs, cluster: null, unprofiled, missingModels: [] };
  const missingModels = models
    .filter((m) => !gpuProfiles.some((p) => p.models[m.profileModel ?? m.name]))
    .map((m) => m.name);
  return { refs, cluster: buildCluster(gpuProfiles, models, pooled), unprofiled, missingModels };
}

/** The cluster index of an agent's GPU, or -1 when it is not in the cluster. */
export function gpuIndex(refs: readonly GpuRef[], agentId: string, local: number): number {
  return refs.findIndex((r) => r.agentId === agentId && r.local === local);
}

/** The GPU modes carried over to new references: a GPU keeps its mode, a new one starts as MPS. */
export function carryModes(
  oldRefs: readonly GpuRef[],
  oldModes: readonly GpuMode[],
  refs: readonly GpuRef[],
): GpuMode[] {
  return refs.map((r) => {
    const o = gpuIndex(oldRefs, r.agentId, r.local);
    return o >= 0 ? (oldModes[o] ?? 'mps') : 'mps';
  });
}

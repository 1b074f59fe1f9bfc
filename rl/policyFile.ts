// The trained-policy file `inss train` writes and the `inss` policy loads: the actor's weights with
// what they were trained for (the cluster, the action space), validated on load.
import { z } from 'zod';
import type { ClusterInfo } from '../src/policy/types.js';
import type { ActionSpace } from './mdp.js';

export const PolicyFileSchema = z
  .object({
    format: z.literal('inss-policy/1'),
    scenario: z.string().min(1),
    cluster: z
      .object({
        gpus: z.array(z.string()).min(1),
        models: z.array(z.object({ name: z.string(), sloMs: z.number().positive() }).strict()).min(1),
      })
      .strict(),
    actionSpace: z
      .object({
        options: z.array(z.object({ gpu: z.number().int().min(0), pct: z.number().gt(0).max(100) }).strict()).min(1),
      })
      .strict(),
    trainedWith: z.record(z.string(), z.unknown()),
    /** The actor and its state normaliser (rl/actorForward.ts, ActorSnapshotSchema): all deciding needs. */
    actor: z.unknown(),
  })
  .strict();

export type PolicyFile = z.infer<typeof PolicyFileSchema>;

/** Cluster signature stored in a policy file. */
export function clusterSignature(cluster: ClusterInfo): PolicyFile['cluster'] {
  return {
    gpus: cluster.gpus.map((g) => g.profileId),
    models: cluster.models.map((m) => ({ name: m.name, sloMs: m.sloMs })),
  };
}

/** Why a policy file does not fit a cluster, or null when it does. */
export function policyMismatch(file: PolicyFile, cluster: ClusterInfo, space: ActionSpace): string | null {
  const sig = clusterSignature(cluster);
  if (JSON.stringify(sig.gpus) !== JSON.stringify(file.cluster.gpus))
    return `trained for GPUs [${file.cluster.gpus.join(', ')}], this cluster has [${sig.gpus.join(', ')}]`;
  const names = (m: { name: string }[]) => m.map((x) => x.name).join(', ');
  if (names(sig.models) !== names(file.cluster.models))
    return `trained for models [${names(file.cluster.models)}], this cluster serves [${names(sig.models)}]`;
  const slos = (m: { name: string; sloMs: number }[]) => m.map((x) => `${x.name} ${x.sloMs} ms`).join(', ');
  if (sig.models.some((m, i) => Math.abs(m.sloMs - file.cluster.models[i]!.sloMs) > 1e-9))
    return `trained for SLOs [${slos(file.cluster.models)}], this cluster has [${slos(sig.models)}]`;
  if (JSON.stringify(space.options) !== JSON.stringify(file.actionSpace.options))
    return 'trained with another action space (share levels differ)';
  return null;
}

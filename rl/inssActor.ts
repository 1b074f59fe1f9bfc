// The trained actor a policy file holds, when it fits the cluster (inss.ts loads it for each variant).
import type { ClusterInfo } from '../src/policy/types.js';
import { formatIssues } from '../src/profile/schema.js';
import { ActorForward } from './actorForward.js';
import { type ActionSpace, actionSpace } from './mdp.js';
import { policyMismatch, PolicyFileSchema } from './policyFile.js';

/**
 * `malformed`: a policy file was given and is not one (no variant runs with it); otherwise it is absent or
 * does not fit.
 */
export type LoadedActor =
  | { readonly space: ActionSpace; readonly actor: ActorForward }
  | { readonly reason: string; readonly malformed?: true };

/** The trained actor in `policyData` when it fits the cluster (GPU types, models, SLOs, action space), else why not. */
export function loadActor(cluster: ClusterInfo, policyData: unknown): LoadedActor {
  if (policyData === undefined)
    return { reason: `no trained policy for this cluster (train one with \`inss train\`, or pass --policy-file)` };
  const parsed = PolicyFileSchema.safeParse(policyData);
  if (!parsed.success) return { reason: `policy file: ${formatIssues(parsed.error)}`, malformed: true };
  const space = actionSpace(cluster);
  const mismatch = policyMismatch(parsed.data, cluster, space);
  if (mismatch)
    return { reason: `the policy file (scenario ${parsed.data.scenario}) does not fit this cluster: ${mismatch}` };
  return { space, actor: ActorForward.fromSnapshot(parsed.data.actor) };
}

// Shared pieces of the policy contract (src/policy/types.ts PolicyFactory).
import type { ClusterInfo, PolicyOptions } from './types.js';

/** `supports` of a policy that runs on every valid cluster (every served model profiled on some GPU). */
export function runsAnywhere(_cluster: ClusterInfo, _options: PolicyOptions): string | null {
  return null;
}

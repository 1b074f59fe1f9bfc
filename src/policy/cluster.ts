// Builds the ClusterInfo policies see from profiles and the served models. Pure: profiles come in
// already loaded; each distinct profile is compiled once and shared by its GPUs.
import type { ServedCost } from '../model/costDistribution.js';
import { LatencyModel } from '../model/predictor.js';
import type { Profile } from '../profile/schema.js';
import { DEFAULT_POOLED_GPU_MODE, type PooledGpuMode } from '../model/pooledGpu.js';
import type { ClusterInfo, GpuInfo, ServedModel } from './types.js';

// Compiling a profile takes about 10 ms a model; a service that rebuilds its cluster when agents come
// and go reuses the compiled model of a profile object it has seen (profiles are immutable values).
const compiledByProfile = new WeakMap<Profile, LatencyModel>();

/**
 * `pooled`: what each GPU does when pooled (src/model/pooledGpu.ts), one mode for all or one per GPU
 * (in `gpuProfiles` order); default overlap.
 */
export function buildCluster(
  gpuProfiles: readonly Profile[],
  models: readonly { name: string; sloMs: number; profileModel?: string | undefined; cost?: ServedCost }[],
  pooled: PooledGpuMode | readonly PooledGpuMode[] = DEFAULT_POOLED_GPU_MODE,
): ClusterInfo {
  if (typeof pooled !== 'string' && pooled.length !== gpuProfiles.length)
    throw new RangeError(`pooled: ${pooled.length} modes for ${gpuProfiles.length} GPUs`);
  const compiled = new Map<string, LatencyModel>();
  for (const p of gpuProfiles) {
    const c = compiledByProfile.get(p);
    if (c) compiled.set(p.id, c);
  }
  const served: ServedModel[] = models.map((m, index) => ({
    index,
    name: m.name,
    sloMs: m.sloMs,
    ...(m.profileModel !== undefined && m.profileModel !== m.name ? { profileModel: m.profileModel } : {}),
    ...(m.cost ? { cost: m.cost } : {}),
  }));
  const gpus: GpuInfo[] = gpuProfiles.map((p, index) => {
    let model = compiled.get(p.id);
    if (!model) {
      model = LatencyModel.compile(p);
      compiled.set(p.id, model);
      compiledByProfile.set(p, model);
    }
    const lm = model;
    return {
      index,
      profileId: p.id,
      model: lm,
      profileIndex: served.map((m) => lm.modelIndex(m.profileModel ?? m.name)),
      memMb: p.gpu.memMb,
      mpsUnitPct: p.gpu.mpsUnitPct,
      smCount: p.gpu.smCount,
      pooled: typeof pooled === 'string' ? pooled : pooled[index]!,
    };
  });
  return { gpus, models: served };
}

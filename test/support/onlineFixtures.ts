// Fixtures of the online-profiling tests: a synthetic GPU profile with a model 'new' hidden from the fit, a
// recording inner policy and observations (docs/online-profiling.md).
import { LatencyModel } from '../../src/model/predictor.js';
import type { FitSample } from '../../src/policy/online/fit.js';
import { gpuPrior } from '../../src/policy/online/prior.js';
import { type Profile, ProfileSchema } from '../../src/profile/schema.js';
import type {
  BatchRecord,
  ClusterInfo,
  Deployment,
  Observation,
  Policy,
  PolicyFactory,
} from '../../src/policy/types.js';
import { Rng } from '../../src/workload/random.js';
import { ProfileBuilder } from './builders.js';

export const TRUE_NEW = { runAtB1Full: 3, batchExp: 0.8, pctExp: 1.3, alphaCache: 0.5 };
export const full: Profile = ProfileSchema.parse(
  new ProfileBuilder()
    .model('a', { runAtB1Full: 2, batchExp: 0.9, pctExp: 1 })
    .model('b', { runAtB1Full: 1, batchExp: 0.7, pctExp: 1 })
    .model('c', { runAtB1Full: 4, batchExp: 0.85, pctExp: 1 })
    .model('new', TRUE_NEW)
    .build(),
);
export const { new: _hidden, ...known } = full.models;
export const withoutNew: Profile = { ...full, models: known };
export const truth = LatencyModel.compile(full);
export const rng = new Rng(7);
export const noisy = (ms: number) => ms * Math.exp(0.02 * rng.normal());
export const trueMs = (batch: number, pct: number) => truth.predict([{ model: 'new', batch, pct }]).latencyMs[0]!;
/** A batch of 'new' alone at `pct`, timed by its true profile with 2% noise. */
export const solo = (batch: number, pct = 100): FitSample => ({
  batch,
  pct,
  execMs: noisy(trueMs(batch, pct)),
  models: 1,
  othersL2: 0,
});
export const prior0 = gpuPrior(LatencyModel.compile(withoutNew));

/** A fake inner policy: records what it is created on and sees, and places model i on GPU 0 at batch 4. */
export function recordingFactory(): { factory: PolicyFactory; created: ClusterInfo[]; seen: Observation[] } {
  const created: ClusterInfo[] = [];
  const seen: Observation[] = [];
  const factory: PolicyFactory = {
    name: 'rec',
    description: 'records',
    supports: () => null,
    create(cluster): Policy {
      created.push(cluster);
      return {
        name: 'rec',
        decide(obs: Observation): Deployment {
          seen.push(obs);
          const pct = 100 / cluster.models.length;
          return { placements: cluster.models.map((m) => ({ model: m.index, gpu: 0, pct, batch: 4 })) };
        },
      };
    },
  };
  return { factory, created, seen };
}

export function observation(n: number, batches: BatchRecord[], nowMs: number): Observation {
  const z = new Array<number>(n).fill(0);
  return {
    nowMs,
    ratePerS: Array.from({ length: n }, (_, i) => 10 * (i + 1)),
    queued: z,
    lastEpoch: { served: z, violated: z, dropped: z, meanExecMs: z, meanLatencyMs: z, batches },
    current: { placements: [] },
  };
}

/** The served models of the decorator's tests: 'new' between two profiled ones. */
export const models = [
  { name: 'a', sloMs: 100 },
  { name: 'new', sloMs: 100 },
  { name: 'b', sloMs: 100 },
];

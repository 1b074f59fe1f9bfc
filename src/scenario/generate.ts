// Generated clusters for measuring the planner and the simulator at scale (docs/benchmarks.md,
// "Decisions at scale"): N GPUs of two profiled types serving M served names over the profiled
// networks at three SLO tiers, built the way scenarios/mixed-32x24.json is (`profileModel`, tiers 1x,
// 1.5x and 2x the paper SLO), with rates a stated fraction of what the cluster carries. Pure and
// deterministic: the same spec and profiles give the same scenario on every machine.
import { soloBatchMs } from '../model/pooledGpu.js';
import { buildCluster } from '../policy/cluster.js';
import type { Profile } from '../profile/schema.js';
import { mixSeed, Rng } from '../workload/random.js';
import { type Scenario, ScenarioSchema } from './schema.js';

/** The GPU types a generated cluster mixes, half and half (the first takes the odd one). */
export const GENERATED_GPU_PROFILES = ['rtx2060s', 'rtx2060'] as const;

/** The profiled networks (both GPU types have all eight) and their paper SLOs, ms. */
const NETWORKS: readonly (readonly [string, number])[] = [
  ['alexnet', 25],
  ['resnet50', 80],
  ['vgg16', 150],
  ['resnet18', 40],
  ['vgg19', 150],
  ['mnasnet', 50],
  ['mobilenet', 60],
  ['efficientnet', 40],
];

/**
 * The SLO tiers (suffix, SLO multiple) and each tier's relative demand, as mixed-32x24 sets them (50%, 40%
 * and 30% of a share there: tighter SLOs get more traffic).
 */
const TIERS: readonly (readonly [string, number, number])[] = [
  ['t1', 1, 1.25],
  ['t15', 1.5, 1],
  ['t2', 2, 0.75],
];

/** The batch each model's capacity is counted at (mixed-32x24's). */
const CAPACITY_BATCH = 8;

export interface GenerateSpec {
  readonly gpus: number;
  readonly models: number;
  readonly seed: number;
  /**
   * The load: the models' demand, in GPUs' time at batch 8 alone on a GPU, as a fraction of the GPUs (0.4:
   * mixed-32x24's mean).
   */
  readonly loadFraction: number;
  /** Simulated seconds. */
  readonly durationS: number;
}

export const GENERATE_DEFAULTS = { seed: 1, loadFraction: 0.4, durationS: 10 } as const;
/** Bounds on a generated cluster: past them a run no longer fits one machine's memory and time. */
export const GENERATE_MAX_GPUS = 4096;
export const GENERATE_MAX_MODELS = 2048;

/** A generated scenario's name: gen-<gpus>x<models>, with -s<seed> when the seed is not 1. */
const NAME = /^gen-(\d+)x(\d+)(?:-s(\d+))?$/;

/** Whether `name` names a generated scenario (gen-256x128, gen-1024x512-s3). */
export function isGeneratedName(name: string): boolean {
  return NAME.test(name);
}

/** The spec a generated scenario's name stands for; throws a RangeError naming the part that is wrong. */
export function parseGeneratedName(name: string): GenerateSpec {
  const m = NAME.exec(name);
  if (!m) throw new RangeError(`scenario '${name}': expected gen-<gpus>x<models> or gen-<gpus>x<models>-s<seed>`);
  const spec = {
    ...GENERATE_DEFAULTS,
    gpus: Number(m[1]),
    models: Number(m[2]),
    seed: m[3] === undefined ? GENERATE_DEFAULTS.seed : Number(m[3]),
  };
  const why = specProblem(spec);
  if (why !== null) throw new RangeError(`scenario '${name}': ${why}`);
  return spec;
}

/** What is wrong with a spec, naming the field, or null. */
export function specProblem(s: GenerateSpec): string | null {
  if (!Number.isInteger(s.gpus) || s.gpus < 1 || s.gpus > GENERATE_MAX_GPUS)
    return `gpus: expected an integer in [1, ${GENERATE_MAX_GPUS}], got ${s.gpus}`;
  if (!Number.isInteger(s.models) || s.models < 1 || s.models > GENERATE_MAX_MODELS)
    return `models: expected an integer in [1, ${GENERATE_MAX_MODELS}], got ${s.models}`;
  if (!Number.isSafeInteger(s.seed) || s.seed < 0) return `seed: expected a non-negative integer, got ${s.seed}`;
  if (!(s.loadFraction > 0 && s.loadFraction <= 4))
    return `loadFraction: expected a number in (0, 4], got ${s.loadFraction}`;
  if (!(s.durationS > 0 && Number.isFinite(s.durationS)))
    return `durationS: expected a positive number, got ${s.durationS}`;
  return null;
}

/**
 * The scenario: GPUs half rtx2060s, half rtx2060; model i runs network i mod 8 at tier (i div 8) mod 3, named
 * <network>-<tier>, with -<copy> from the 25th model on (a further deployment of the same network and tier,
 * as another tenant's would be). Each model's demand share is its tier's weight times a seeded log-normal
 * popularity (sigma 0.5), normalised; its constant Poisson rate is that share of `loadFraction` x the GPUs,
 * turned into tasks per second by the network's batch-8 time alone on a GPU (the mean of the two types).
 * `profiles`: the GPU profiles by id (GENERATED_GPU_PROFILES).
 */
export function generateScenario(spec: GenerateSpec, profiles: ReadonlyMap<string, Profile>): Scenario {
  const why = specProblem(spec);
  if (why !== null) throw new RangeError(why);
  const gpuProfiles = GENERATED_GPU_PROFILES.map((id) => {
    const p = profiles.get(id);
    if (!p) throw new RangeError(`generateScenario: profile '${id}' not given`);
    return p;
  });
  // Compiled through buildCluster, whose cache the scenario's cluster then reuses (compiling is the slow part).
  const models = buildCluster(gpuProfiles, []).gpus.map((g) => g.model);
  // Tasks per second one whole GPU serves of each network at batch 8, the mean over the two types.
  const perGpuPerS = NETWORKS.map(([net]) => {
    const ms = models.map((lm) => {
      const k = lm.modelIndex(net);
      if (k < 0) throw new RangeError(`generateScenario: a GPU profile lacks network '${net}'`);
      return soloBatchMs(lm, k, CAPACITY_BATCH);
    });
    return (CAPACITY_BATCH * 1000) / (ms.reduce((a, b) => a + b, 0) / ms.length);
  });
  const rng = new Rng(mixSeed(spec.seed, spec.gpus, spec.models, 0x67656e));
  const weights = Array.from({ length: spec.models }, (_, i) => {
    const tier = TIERS[Math.floor(i / NETWORKS.length) % TIERS.length]!;
    return tier[2] * Math.exp(0.5 * normal(rng));
  });
  const totalWeight = weights.reduce((a, b) => a + b, 0);
  const round = NETWORKS.length * TIERS.length;
  const scenario = {
    name: spec.seed === GENERATE_DEFAULTS.seed ? `gen-${spec.gpus}x${spec.models}` : '',
    description:
      `Generated: ${spec.gpus} GPUs (rtx2060s and rtx2060, half each) serving ${spec.models} models, the eight ` +
      `profiled networks at SLO tiers 1x, 1.5x and 2x the paper SLO (profileModel), constant Poisson rates ` +
      `whose batch-8 demand is ${spec.loadFraction} of the GPUs, seeded popularity (seed ${spec.seed}).`,
    gpus: GENERATED_GPU_PROFILES.map((profile, k) => ({
      profile,
      count: k === 0 ? Math.ceil(spec.gpus / 2) : Math.floor(spec.gpus / 2),
    })).filter((g) => g.count > 0),
    models: weights.map((w, i) => {
      const n = i % NETWORKS.length;
      const [net, sloMs] = NETWORKS[n]!;
      const [suffix, multiple] = TIERS[Math.floor(i / NETWORKS.length) % TIERS.length]!;
      const copy = Math.floor(i / round);
      const ratePerS = ((spec.loadFraction * spec.gpus * w) / totalWeight) * perGpuPerS[n]!;
      return {
        name: copy === 0 ? `${net}-${suffix}` : `${net}-${suffix}-${copy}`,
        profileModel: net,
        sloMs: sloMs * multiple,
        arrival: { process: 'poisson' },
        rate: { kind: 'constant', ratePerS: Math.round(ratePerS * 100) / 100 },
      };
    }),
    durationS: spec.durationS,
    seed: spec.seed,
  };
  if (scenario.name === '') scenario.name = `gen-${spec.gpus}x${spec.models}-s${spec.seed}`;
  return ScenarioSchema.parse(scenario);
}

/** A standard normal draw (Box-Muller). */
function normal(rng: Rng): number {
  const u = 1 - rng.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next());
}

// Scenario files (docs/scenarios.md): a cluster (GPUs by profile and count), the models it serves
// with their SLOs and arrival processes, how long to run, the decision epoch and the seed.
// Validated before anything runs; every problem is reported with its field path.
import { z } from 'zod';
import { COST_BATCHING_MODES } from '../model/costDistribution.js';
import { DEFAULT_POOLED_GPU_MODE, POOLED_GPU_MODES } from '../model/pooledGpu.js';
import { MAX_FRONT_DOORS } from '../serving/frontDoors.js';
import { MONITOR_KINDS } from '../serving/monitor.js';
import { POOLED_PREDICTIONS } from '../serving/settings.js';
import { pipelineWiringError } from '../serving/pipeline.js';
import { QueuePolicySchema } from '../serving/queuePolicy.js';

const positive = z.number().finite().positive();
const nonNegative = z.number().finite().nonnegative();

const RateSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('constant'), ratePerS: nonNegative }).strict(),
  z
    .object({
      kind: z.literal('steps'),
      steps: z.array(z.object({ atS: nonNegative, ratePerS: nonNegative }).strict()).min(1),
    })
    .strict(),
  z
    .object({
      kind: z.literal('triangle'),
      minPerS: nonNegative,
      maxPerS: nonNegative,
      stepPerS: positive,
      stepEveryS: positive,
      startPerS: nonNegative.optional(),
    })
    .strict()
    .refine((t) => t.maxPerS >= t.minPerS, { message: 'maxPerS must be >= minPerS', path: ['maxPerS'] })
    .refine((t) => t.startPerS === undefined || (t.startPerS >= t.minPerS && t.startPerS <= t.maxPerS), {
      message: 'startPerS must lie in [minPerS, maxPerS]',
      path: ['startPerS'],
    }),
  z
    .object({
      kind: z.literal('diurnal'),
      meanPerS: nonNegative,
      amplitude: z.number().min(0).max(1),
      periodS: positive,
      phaseS: z.number().finite().optional(),
      resolutionS: positive.optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('trace'),
      /** A file of arrival times, one number (seconds from the start) per line; relative to the scenario file. */
      file: z.string().min(1),
    })
    .strict(),
]);

const NAME = /^[a-z0-9][a-z0-9_-]*$/;
const TENSOR = z.string().min(1).max(64);

/** A pipeline's step (src/serving/pipeline.ts): the served model it runs, and how its tensors are wired. */
const PipelineStepSchema = z
  .object({
    model: z.string().regex(NAME),
    inputMap: z.record(TENSOR, TENSOR).default({}),
    outputMap: z.record(TENSOR, TENSOR).default({}),
  })
  .strict();

const ArrivalSchema = z.discriminatedUnion('process', [
  z.object({ process: z.literal('poisson') }).strict(),
  z.object({ process: z.literal('gamma'), cv: positive }).strict(),
]);

export const ScenarioSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/),
    description: z.string().default(''),
    gpus: z
      .array(
        z
          .object({
            profile: z.string().min(1),
            count: z.number().int().min(1),
            /** What these GPUs do when pooled (src/model/pooledGpu.ts); default: the scenario's `timeshareGpu`. */
            timeshareGpu: z.enum(POOLED_GPU_MODES).optional(),
          })
          .strict(),
      )
      .min(1),
    models: z
      .array(
        z
          .object({
            name: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/),
            /**
             * The profile model whose latency and memory this served model has (default: its name). Lets
             * one network be served under several names, e.g. at several SLO tiers; simulator only
             * (`inss bench`, `inss train`): live workers load a model by its name.
             */
            profileModel: z
              .string()
              .regex(/^[a-z0-9][a-z0-9_-]*$/)
              .optional(),
            sloMs: positive,
            arrival: ArrivalSchema.default({ process: 'poisson' }),
            rate: RateSchema,
            /**
             * What becomes of its tasks that time out, and how many it holds (src/serving/queuePolicy.ts); default:
             * delay.
             */
            queuePolicy: QueuePolicySchema.optional(),
            /**
             * Samples each request carries (the KServe batch dimension k): every arrival is k tasks at once,
             * as a k-sample request is to the live endpoint (scheduler/infer.ts); the rate counts requests.
             */
            samplesPerRequest: z.number().int().min(1).max(64).default(1),
            /**
             * The planner is not given this model's profile (docs/online-profiling.md): it is served from its
             * first request with Clipper's AIMD batching while its profile is fitted from its batches; the
             * simulator's ground truth still times it from its true profile.
             */
            unprofiled: z.boolean().default(false),
            /**
             * Its per-sample cost depends on the input (src/model/costDistribution.ts): classes of a sample's
             * cost relative to the others' (e.g. sequence-length buckets) with their weights, normalised so
             * that the mean cost is the profile's; a batch costs what its most expensive sample costs.
             */
            cost: z
              .object({
                classes: z
                  .array(z.object({ relative: positive, weight: positive }).strict())
                  .min(1)
                  .max(64),
              })
              .strict()
              .optional(),
          })
          .strict(),
      )
      .min(1),
    /**
     * Pipelines (src/serving/pipeline.ts, docs/pipelines.md): requests that run `steps` in order under one
     * end-to-end `sloMs`, arriving at `rate`. A step names a served model of `models`, which then serves that
     * pipeline only (its own rate must be constant 0, its sloMs is unused).
     */
    pipelines: z
      .array(
        z
          .object({
            name: z.string().regex(NAME),
            sloMs: positive,
            arrival: ArrivalSchema.default({ process: 'poisson' }),
            rate: RateSchema,
            steps: z.array(PipelineStepSchema).min(1).max(16),
            /** The pipeline's input and output tensors (names the steps' maps use); empty where unwired. */
            inputs: z.array(TENSOR).default([]),
            outputs: z.array(TENSOR).default([]),
          })
          .strict(),
      )
      .default([]),
    durationS: positive,
    epochS: positive.default(1),
    swapS: nonNegative.default(3),
    monitorWindowS: positive.default(3),
    /**
     * The rate the policy is told (src/serving/monitor.ts): `mean` over the monitor window, or `envelope`, that
     * raised by the tuner where the traffic envelope outgrows the plan's (src/serving/tuner.ts); absent, the default.
     */
    monitor: z.enum(MONITOR_KINDS).optional(),
    /** How the dispatch rule predicts a batch on a pooled overlap GPU (src/serving/settings.ts); absent, `running`. */
    pooledPrediction: z.enum(POOLED_PREDICTIONS).optional(),
    /**
     * Front doors (docs/front-doors.md): each with its own queues over its share of the workers, every model's
     * tasks split over them; absent, one. `inss bench --front-doors` overrides it.
     */
    frontDoors: z.number().int().min(1).max(MAX_FRONT_DOORS).optional(),
    seed: z.number().int().min(0).default(1),
    /**
     * The fraction of tasks the operator wants within SLO, which inss plans for (src/policy/attainment.ts):
     * in (0.5, 1); absent, 0.99. `--attainment-target` and a policy label (`inss@95`) override it.
     */
    attainmentTarget: z
      .number()
      .gt(0.5, 'must be a number in (0.5, 1): at 0.5 or below half the tasks may miss')
      .lt(1, 'must be a number in (0.5, 1): no queue under random arrivals serves every task in time')
      .optional(),
    /**
     * Served names that run one network (`profileModel`) share workers under inss: one worker per placement serves
     * every tier, batching across them earliest deadline first (src/serving/tiers.ts); absent, false (apart).
     * `inss up --share-tiers` sets it.
     */
    shareTiers: z.boolean().optional(),
    /**
     * What a pooled (time-shared) GPU does with different models' batches ready at once (src/model/pooledGpu.ts), for
     * every GPU entry that does not say.
     */
    timeshareGpu: z.enum(POOLED_GPU_MODES).default(DEFAULT_POOLED_GPU_MODE),
    /**
     * How models with a `cost` are batched (docs/bda.md): `tail` against the batch time's quantile at the
     * attainment target, `mean` as if every sample cost the mean (the profile's time as it is).
     */
    costBatching: z.enum(COST_BATCHING_MODES).default('tail'),
    groundTruth: z
      .object({
        systematicErrorPct: nonNegative.default(3),
        noisePct: nonNegative.default(2),
        dramAlpha: nonNegative.default(0.08),
      })
      .strict()
      .default({ systematicErrorPct: 3, noisePct: 2, dramAlpha: 0.08 }),
  })
  .strict()
  .superRefine((s, ctx) => {
    const seen = new Set<string>();
    s.models.forEach((m, i) => {
      if (seen.has(m.name))
        ctx.addIssue({ code: 'custom', path: ['models', i, 'name'], message: `duplicate model '${m.name}'` });
      seen.add(m.name);
      const runs = m.profileModel ?? m.name;
      if (m.unprofiled && s.models.some((o) => !o.unprofiled && (o.profileModel ?? o.name) === runs))
        ctx.addIssue({
          code: 'custom',
          path: ['models', i, 'unprofiled'],
          message:
            `profile model '${runs}' is also run by a profiled model: ` +
            'its profile cannot be hidden from one of them only',
        });
      const timeoutMs = m.queuePolicy?.timeoutMs;
      if (timeoutMs !== undefined && timeoutMs > m.sloMs)
        ctx.addIssue({
          code: 'custom',
          path: ['models', i, 'queuePolicy', 'timeoutMs'],
          message:
            `must not exceed the model's sloMs (${m.sloMs}): ` +
            'a task served after its SLO is late whatever its timeout',
        });
    });
    const stepOf = new Map<string, string>();
    s.pipelines.forEach((p, i) => {
      if (seen.has(p.name))
        ctx.addIssue({ code: 'custom', path: ['pipelines', i, 'name'], message: `name '${p.name}' is already used` });
      seen.add(p.name);
      p.steps.forEach((step, k) => {
        const path = ['pipelines', i, 'steps', k, 'model'];
        const m = s.models.find((x) => x.name === step.model);
        if (m === undefined) {
          ctx.addIssue({ code: 'custom', path, message: `no model '${step.model}' in models` });
          return;
        }
        const other = stepOf.get(step.model);
        if (other !== undefined)
          ctx.addIssue({ code: 'custom', path, message: `model '${step.model}' is already a step of ${other}` });
        stepOf.set(step.model, `pipeline '${p.name}'`);
        if (m.rate.kind !== 'constant' || m.rate.ratePerS !== 0)
          ctx.addIssue({
            code: 'custom',
            path,
            message:
              `model '${step.model}' is a step of pipeline '${p.name}': its own rate must be ` +
              "{ kind: 'constant', ratePerS: 0 } (its tasks come at the pipeline's rate)",
          });
      });
      const wiring = pipelineWiringError(p, p.inputs, p.outputs);
      if (wiring !== undefined) ctx.addIssue({ code: 'custom', path: ['pipelines', i, 'steps'], message: wiring });
    });
    if (s.epochS > s.durationS)
      ctx.addIssue({ code: 'custom', path: ['epochS'], message: 'must not exceed durationS' });
  });

export type Scenario = z.infer<typeof ScenarioSchema>;
export type ScenarioModel = Scenario['models'][number];

// The GPU profile: one GPU type's hardware and, per DNN model, every coefficient of the latency
// model (paper section 4.1) with the samples its LWR runs over. Profiles are files under profiles/,
// validated by this schema wherever they are read; a bad file is rejected with the field path.
import { z } from 'zod';

const positive = z.number().finite().positive();
const nonNegative = z.number().finite().nonnegative();

/** Where a profile's numbers come from (MISSION.md part 9). */
export const ProvenanceSchema = z
  .object({
    kind: z.enum(['measured', 'fitted', 'derived']),
    /**
     * What the numbers rest on: a GPU and tool for `measured`, the publication for `fitted`, the recipe for `derived`.
     */
    source: z.string().min(1),
    /** The command that produced this file, so it can be produced again. */
    command: z.string().min(1),
    notes: z.array(z.string()).default([]),
  })
  .strict();

/** One LWR sample: the GPU running time `o_r` of a batch running alone at an MPS share. */
export const RunSampleSchema = z
  .object({
    batch: z.number().int().min(1),
    pct: z.number().gt(0).max(100),
    runMs: positive,
  })
  .strict();

export const ModelProfileSchema = z
  .object({
    /** `p_d`: input bytes of one task (batch 1), sent over PCIe before the batch runs. */
    inputBytes: nonNegative,
    /** `p_f`: output bytes of one task, sent back after the batch runs. */
    outputBytes: nonNegative,
    /** `n_{i,k}`: kernels launched per batch. */
    kernels: z.number().int().min(1),
    /** `o_i^sch`: scheduling latency of one kernel when the model runs alone (ms). */
    schedPerKernelMs: nonNegative,
    /** `l = alphaU * share + betaU`: L2 utilisation (fraction of peak) at a share (fraction of the GPU). */
    l2: z.object({ alphaU: z.number().finite(), betaU: z.number().finite() }).strict(),
    /** `alpha^cache`: relative running-time increase per unit of co-located L2 utilisation. */
    alphaCache: nonNegative,
    /** `m_i(b) = baseMb + perBatchMb * b`: GPU memory of one worker process at batch b. */
    memory: z.object({ baseMb: nonNegative, perBatchMb: nonNegative }).strict(),
    /** Samples of `o_r` the LWR regresses over (at least 4, spanning two batches and two shares). */
    runSamples: z.array(RunSampleSchema).min(4),
    /** Free text: how this model's numbers were obtained when that differs from the profile's. */
    notes: z.array(z.string()).default([]),
  })
  .strict()
  .superRefine((m, ctx) => {
    const batches = new Set(m.runSamples.map((s) => s.batch));
    const pcts = new Set(m.runSamples.map((s) => s.pct));
    if (batches.size < 2 || pcts.size < 2) {
      ctx.addIssue({
        code: 'custom',
        path: ['runSamples'],
        message: 'must span at least two batch sizes and two shares',
      });
    }
    const seen = new Set<string>();
    m.runSamples.forEach((s, i) => {
      const key = `${s.batch}/${s.pct}`;
      if (seen.has(key))
        ctx.addIssue({
          code: 'custom',
          path: ['runSamples', i],
          message: `duplicate sample at batch ${s.batch}, pct ${s.pct}`,
        });
      seen.add(key);
    });
  });

/** What a GPU type is, as measured or published: shared by profiles and measurement files. */
export const GpuHardwareSchema = z
  .object({
    name: z.string().min(1),
    smCount: z.number().int().min(1),
    memMb: positive,
    l2Mb: positive,
    memBandwidthGBs: positive.optional(),
    /** `B_k`: available host-to-device bandwidth, bytes per ms. */
    pcieBytesPerMs: positive,
    /** Smallest step of MPS active-thread percentage the scheduler hands out. */
    mpsUnitPct: z.number().gt(0).max(100),
  })
  .strict();

export const GpuSchema = GpuHardwareSchema.extend({
  /** `int = alphaS * (models on the GPU) + betaS` per kernel (ms) when more than one model shares the GPU. */
  schedInterference: z.object({ alphaSMs: z.number().finite(), betaSMs: z.number().finite() }).strict(),
  /**
   * Weight of a model's own L2 utilisation in its cache contention when it shares the GPU
   * (docs/latency-model.md, "Cache contention"). 0 is the paper's form exactly.
   */
  cacheSelfWeight: nonNegative.default(0),
}).strict();

/** Bandwidths of the LWR Gaussian kernel, in the log-batch and log-share coordinates it works in. */
export const LwrSettingsSchema = z.object({ bandwidthLogBatch: positive, bandwidthLogPct: positive }).strict();

export const ProfileSchema = z
  .object({
    schemaVersion: z.literal(1),
    id: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be lower-case letters, digits, dot, dash or underscore'),
    gpu: GpuSchema,
    lwr: LwrSettingsSchema,
    provenance: ProvenanceSchema,
    models: z
      .record(z.string().regex(/^[a-z0-9][a-z0-9_-]*$/), ModelProfileSchema)
      .refine((m) => Object.keys(m).length > 0, 'must hold at least one model'),
  })
  .strict();

export type Provenance = z.infer<typeof ProvenanceSchema>;
export type RunSample = z.infer<typeof RunSampleSchema>;
export type ModelProfile = z.infer<typeof ModelProfileSchema>;
export type GpuProfile = z.infer<typeof GpuSchema>;
export type LwrSettings = z.infer<typeof LwrSettingsSchema>;
export type Profile = z.infer<typeof ProfileSchema>;
/** A profile as written by hand or by a fit, before defaults are applied. */
export type ProfileInput = z.input<typeof ProfileSchema>;

/** Thrown when a profile or measurement file does not match its schema. */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
}

/** Formats zod issues as `path: message` lines (`models.resnet50.kernels: ...`). */
export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}

/** Validates a parsed profile; `where` names the source in the error (a file path). */
export function parseProfile(raw: unknown, where: string): Profile {
  const result = ProfileSchema.safeParse(raw);
  if (!result.success) throw new InvalidInputError(`${where}: invalid profile: ${formatIssues(result.error)}`);
  return result.data;
}

// The measurement file format that `inss profile fit` reads (docs/measurement-format.md): what a
// user measures on their own GPU, or what an importer makes of published measurements.
import { z } from 'zod';
import { GpuHardwareSchema } from '../../src/profile/schema.js';

const positive = z.number().finite().positive();
const nonNegative = z.number().finite().nonnegative();
const modelName = z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'must be lower-case letters, digits, dash or underscore');

export const MeasuredRunSchema = z
  .object({
    model: modelName,
    batch: z.number().int().min(1),
    pct: z.number().gt(0).max(100),
    /** Mean GPU execution latency of one batch (upload + compute + feedback), ms. */
    latencyMs: positive,
  })
  .strict();

export const SoloPointSchema = MeasuredRunSchema.extend({
  /** L2 utilisation, fraction of peak (Nsight Compute lts__t_sectors...pct_of_peak / 100), where measured. */
  l2Util: z.number().min(0).max(1).optional(),
}).strict();

export const MeasurementsSchema = z
  .object({
    format: z.literal('inss-measurements/1'),
    gpu: GpuHardwareSchema,
    /** Per-kernel scheduling latency (ms) with 1, 2, 3, ... models on the GPU, where measured (Fig. 10). */
    schedPerKernelByModelCountMs: z.array(nonNegative).min(1).optional(),
    models: z.record(
      modelName,
      z
        .object({
          inputBytes: nonNegative,
          outputBytes: nonNegative,
          kernels: z.number().int().min(1),
          /** Scheduling latency of a whole batch run alone (o_sch * n), ms. */
          schedSoloMs: nonNegative.default(0),
          memory: z.object({ baseMb: nonNegative, perBatchMb: nonNegative }).strict(),
          notes: z.array(z.string()).default([]),
        })
        .strict(),
    ),
    /** Each model alone on the GPU over a grid of batch sizes and shares. */
    solo: z.array(SoloPointSchema).min(1),
    /** Models run together on one GPU; each run lists every model on the GPU with its own latency. */
    colocated: z.array(z.object({ runs: z.array(MeasuredRunSchema).min(2) }).strict()).default([]),
  })
  .strict()
  .superRefine((m, ctx) => {
    const known = new Set(Object.keys(m.models));
    m.solo.forEach((p, i) => {
      if (!known.has(p.model))
        ctx.addIssue({
          code: 'custom',
          path: ['solo', i, 'model'],
          message: `unknown model '${p.model}' (not in models)`,
        });
    });
    m.colocated.forEach((c, i) => {
      let sum = 0;
      c.runs.forEach((r, j) => {
        sum += r.pct;
        if (!known.has(r.model))
          ctx.addIssue({
            code: 'custom',
            path: ['colocated', i, 'runs', j, 'model'],
            message: `unknown model '${r.model}' (not in models)`,
          });
      });
      if (sum > 100 + 1e-9)
        ctx.addIssue({
          code: 'custom',
          path: ['colocated', i, 'runs'],
          message: `shares sum to ${sum}%, more than 100%`,
        });
    });
  });

export type Measurements = z.infer<typeof MeasurementsSchema>;
export type MeasurementsInput = z.input<typeof MeasurementsSchema>;
export type MeasuredRun = z.infer<typeof MeasuredRunSchema>;

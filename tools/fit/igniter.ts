// Importer for the V100 measurements published by the iGniter project (data/v100, see its
// README): solo.json, colocated-calibration.json and model-facts.json, parsed by the caller, become
// inss measurements. Pure: validates the source's shape with zod and converts.
import { z } from 'zod';
import { formatIssues, InvalidInputError } from '../../src/profile/schema.js';
import { MODEL_FACTS, derivedMemory } from './catalog.js';
import type { MeasurementsInput } from './measurements.js';

const table = z.record(z.string(), z.record(z.string(), z.number().finite()));
const SoloSchema = z
  .object({
    gpu: z.string(),
    models: z.record(z.string(), z.object({ latency: table, l2cache: table.optional() }).loose()),
  })
  .loose();
const side = z.object({ model: z.string(), batch: z.number().int(), pct: z.number(), latency_ms: z.number() });
const PairsSchema = z.object({ pairs: z.array(z.object({ a: side, b: side })) }).loose();
const FactsSchema = z
  .object({
    gpu: z.string(),
    hardware: z
      .object({
        sm_count: z.number().int(),
        memory_mb: z.number(),
        pcie_bandwidth_bytes_per_ms: z.number(),
        mps_unit_pct: z.number(),
        idle_time_ms_by_colocated_count_1_to_5: z.array(z.number()),
      })
      .loose(),
    models: z.record(
      z.string(),
      z
        .object({
          kernels: z.number().int(),
          input_bytes: z.number(),
          output_bytes: z.number(),
          idle_time_ms_solo: z.number(),
        })
        .loose(),
    ),
  })
  .loose();

function parse<T>(schema: z.ZodType<T>, raw: unknown, where: string): T {
  const r = schema.safeParse(raw);
  if (!r.success) throw new InvalidInputError(`${where}: ${formatIssues(r.error)}`);
  return r.data;
}

/** V100-SXM2 hardware not in the source files: L2 size and memory bandwidth from NVIDIA's V100 datasheet. */
const V100_L2_MB = 6;
const V100_MEM_BANDWIDTH_GBS = 900;

export function igniterToMeasurements(soloRaw: unknown, pairsRaw: unknown, factsRaw: unknown): MeasurementsInput {
  const solo = parse(SoloSchema, soloRaw, 'solo.json');
  const pairs = parse(PairsSchema, pairsRaw, 'colocated-calibration.json');
  const facts = parse(FactsSchema, factsRaw, 'model-facts.json');
  const models: MeasurementsInput['models'] = {};
  for (const [name, f] of Object.entries(facts.models)) {
    const known = MODEL_FACTS[name];
    if (!known)
      throw new InvalidInputError(
        `model-facts.json: model '${name}' has no entry in the catalog (tools/fit/catalog.ts)`,
      );
    models[name] = {
      inputBytes: f.input_bytes,
      outputBytes: f.output_bytes,
      kernels: f.kernels,
      // The source's per-model "idle time" is read as o_sch * n: divided by the kernel count it is
      // within 2x of the source's per-kernel figure for one model (docs/profiles.md).
      schedSoloMs: f.idle_time_ms_solo,
      memory: derivedMemory(known),
      notes: ['memory: derived from public model facts (tools/fit/catalog.ts); the source publishes none'],
    };
  }
  const soloPoints: MeasurementsInput['solo'] = [];
  for (const [name, m] of Object.entries(solo.models)) {
    for (const [b, row] of Object.entries(m.latency)) {
      for (const [pct, latencyMs] of Object.entries(row)) {
        const l2 = m.l2cache?.[b]?.[pct];
        soloPoints.push({
          model: name,
          batch: Number(b),
          pct: Number(pct),
          latencyMs,
          ...(l2 !== undefined ? { l2Util: l2 / 100 } : {}),
        });
      }
    }
  }
  const toRun = (s: z.infer<typeof side>) => ({ model: s.model, batch: s.batch, pct: s.pct, latencyMs: s.latency_ms });
  return {
    format: 'inss-measurements/1',
    gpu: {
      name: facts.gpu,
      smCount: facts.hardware.sm_count,
      memMb: facts.hardware.memory_mb,
      l2Mb: V100_L2_MB,
      memBandwidthGBs: V100_MEM_BANDWIDTH_GBS,
      pcieBytesPerMs: facts.hardware.pcie_bandwidth_bytes_per_ms,
      mpsUnitPct: facts.hardware.mps_unit_pct,
    },
    schedPerKernelByModelCountMs: facts.hardware.idle_time_ms_by_colocated_count_1_to_5,
    models,
    solo: soloPoints,
    colocated: pairs.pairs.map((p) => ({ runs: [toRun(p.a), toRun(p.b)] })),
  };
}

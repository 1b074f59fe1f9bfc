// The serving settings the simulator and the scheduler's control plane both run by, read from the
// scenario by both (src/scenario/build.ts for the simulator, cli/serve.ts for `inss scheduler` and
// `inss up`); operator flags may override them, validated here. Pure. The scenario builds on these
// settings, not the other way round: `servingSettings` takes the scenario fields it reads as plain
// values, so nothing here imports src/scenario/.
import { z } from 'zod';
import { type MonitorKind, MONITOR_KINDS } from './monitor.js';

/**
 * How the dispatch rule predicts a batch on a pooled `overlap` GPU (src/serving/prediction.ts): `running` (the
 * default), beside the batches running there when it would start, by the pooled rule the ground truth and the
 * planner follow; `solo`, its time alone on the GPU. docs/dispatch.md says what each is worth.
 */
export const POOLED_PREDICTIONS = ['solo', 'running'] as const;
export type PooledPrediction = (typeof POOLED_PREDICTIONS)[number];

export const ServingSettingsSchema = z
  .object({
    /** Decision epoch: the policy is asked every `epochMs`. */
    epochMs: z.number().int().positive(),
    /** Window of the monitor's rate estimate (src/serving/monitor.ts). */
    monitorWindowMs: z.number().int().positive(),
    /** Safety margin of the dispatch rule (c), a fraction of the predicted batch time. */
    dispatchSlack: z.number().nonnegative().max(10),
    /** The rate the policy is told: the window's mean, or that raised by the envelope tuner (src/serving/tuner.ts). */
    monitor: z.enum(MONITOR_KINDS),
    /** How the dispatch rule predicts a batch on a pooled overlap GPU (POOLED_PREDICTIONS). */
    pooledPrediction: z.enum(POOLED_PREDICTIONS),
  })
  .strict();
export type ServingSettings = z.infer<typeof ServingSettingsSchema>;

export const DEFAULT_SERVING_SETTINGS: ServingSettings = {
  epochMs: 1000,
  monitorWindowMs: 3000,
  dispatchSlack: 0.1,
  monitor: 'mean',
  pooledPrediction: 'running',
};

/** The fields of a scenario (src/scenario/schema.ts) that the serving settings read, in seconds. */
export interface ScenarioTiming {
  readonly epochS: number;
  readonly monitorWindowS: number;
  /** Absent: the default (DEFAULT_SERVING_SETTINGS). */
  readonly monitor?: MonitorKind | undefined;
  readonly pooledPrediction?: PooledPrediction | undefined;
}

/** The scenario's settings (epochS, monitorWindowS, monitor, pooledPrediction), with the defaults for the rest. */
export function servingSettings(s: ScenarioTiming): ServingSettings {
  return ServingSettingsSchema.parse({
    ...DEFAULT_SERVING_SETTINGS,
    epochMs: Math.round(s.epochS * 1000),
    monitorWindowMs: Math.round(s.monitorWindowS * 1000),
    ...(s.monitor !== undefined ? { monitor: s.monitor } : {}),
    ...(s.pooledPrediction !== undefined ? { pooledPrediction: s.pooledPrediction } : {}),
  });
}

/**
 * The scenario's settings with an operator's overrides (undefined: keep the scenario's). Throws a
 * RangeError naming the setting when an override is not valid.
 */
export function withOverrides(
  base: ServingSettings,
  overrides: { readonly [K in keyof ServingSettings]?: ServingSettings[K] | undefined },
): ServingSettings {
  const merged: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) merged[k] = v;
  const r = ServingSettingsSchema.safeParse(merged);
  if (!r.success) throw new RangeError(r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  return r.data;
}

// Scenario files for tests that start `inss up` / `inss scheduler`: the cluster and the served models
// (constant Poisson rates), everything else at the values these tests run with (a 10 s scenario, 1 s
// epochs and swaps, a 3 s monitor window, seed 1) unless given. Validated against the scenario schema,
// so a test cannot start the CLI on a file the CLI would refuse.
import { writeFileSync } from 'node:fs';
import { ScenarioSchema } from '../../src/scenario/schema.js';

export interface ScenarioSpec {
  readonly name: string;
  readonly description?: string;
  /** GPU profile id -> count, in order. */
  readonly gpus: Readonly<Record<string, number>>;
  readonly models: readonly {
    readonly name: string;
    readonly sloMs: number;
    readonly ratePerS: number;
    /** The network it runs when another name's (a shared SLO tier, live). */
    readonly profileModel?: string;
  }[];
  readonly durationS?: number;
  readonly epochS?: number;
  readonly swapS?: number;
  readonly monitorWindowS?: number;
  readonly seed?: number;
}

/** The scenario as JSON (parsed by the schema first). */
export function scenarioJson(s: ScenarioSpec): unknown {
  const gpus = Object.entries(s.gpus).map(([profile, count]) => ({ profile, count }));
  const raw = {
    name: s.name,
    description:
      s.description ??
      `${s.models.map((m) => m.name).join(', ')} on ${gpus.map((g) => `${g.count} x ${g.profile}`).join(' + ')}`,
    gpus,
    models: s.models.map((m) => ({
      name: m.name,
      ...(m.profileModel !== undefined ? { profileModel: m.profileModel } : {}),
      sloMs: m.sloMs,
      arrival: { process: 'poisson' },
      rate: { kind: 'constant', ratePerS: m.ratePerS },
    })),
    durationS: s.durationS ?? 10,
    epochS: s.epochS ?? 1,
    swapS: s.swapS ?? 1,
    monitorWindowS: s.monitorWindowS ?? 3,
    seed: s.seed ?? 1,
  };
  ScenarioSchema.parse(raw);
  return raw;
}

/** Writes the scenario to `file`; returns `file`. */
export function writeScenario(file: string, s: ScenarioSpec): string {
  writeFileSync(file, JSON.stringify(scenarioJson(s)));
  return file;
}

// Loading scenarios by built-in name or path, with the profiles and trace files they name.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseTrace } from '../src/scenario/build.js';
import { type Scenario, ScenarioSchema } from '../src/scenario/schema.js';
import {
  GENERATED_GPU_PROFILES,
  generateScenario,
  isGeneratedName,
  parseGeneratedName,
} from '../src/scenario/generate.js';
import { formatIssues, InvalidInputError, type Profile } from '../src/profile/schema.js';
import { loadProfile, PACKAGE_ROOT, readJsonFile } from './profiles.js';

export const BUILTIN_SCENARIO_DIR = join(PACKAGE_ROOT, 'scenarios');

export function listScenarioNames(): string[] {
  return existsSync(BUILTIN_SCENARIO_DIR)
    ? readdirSync(BUILTIN_SCENARIO_DIR)
        .filter((f) => f.endsWith('.json'))
        .map((f) => f.slice(0, -5))
        .sort()
    : [];
}

export interface LoadedScenario {
  readonly scenario: Scenario;
  readonly path: string;
  readonly profiles: ReadonlyMap<string, Profile>;
  readonly traces: ReadonlyMap<string, readonly number[]>;
}

/**
 * A scenario by name (`paper-6`), generated cluster name (`gen-256x128`, `gen-1024x512-s2`:
 * src/scenario/generate.ts) or file path; validates it and everything it names before anything runs.
 */
export function loadScenario(nameOrPath: string): LoadedScenario {
  const isPath = nameOrPath.includes('/') || nameOrPath.endsWith('.json');
  const path = isPath ? resolve(nameOrPath) : join(BUILTIN_SCENARIO_DIR, `${nameOrPath}.json`);
  if (!isPath && !existsSync(path) && nameOrPath.startsWith('gen-')) return loadGenerated(nameOrPath);
  if (!isPath && !existsSync(path))
    throw new InvalidInputError(
      `unknown scenario '${nameOrPath}' (built in: ${listScenarioNames().join(', ')}; generated: ` +
        `gen-<gpus>x<models>[-s<seed>]; or give a path to a scenario file)`,
    );
  const parsed = ScenarioSchema.safeParse(readJsonFile(path));
  if (!parsed.success) throw new InvalidInputError(`${path}: invalid scenario: ${formatIssues(parsed.error)}`);
  const scenario = parsed.data;
  const profiles = new Map<string, Profile>();
  for (const g of scenario.gpus)
    if (!profiles.has(g.profile))
      profiles.set(g.profile, loadProfile(g.profile.includes('/') ? resolve(dirname(path), g.profile) : g.profile));
  const traces = new Map<string, readonly number[]>();
  for (const m of [...scenario.models, ...scenario.pipelines]) {
    if (m.rate.kind !== 'trace' || traces.has(m.rate.file)) continue;
    const f = resolve(dirname(path), m.rate.file);
    let text: string;
    try {
      text = readFileSync(f, 'utf8');
    } catch (err) {
      throw new InvalidInputError(
        `${path}: trace ${m.rate.file}: cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      );
    }
    traces.set(m.rate.file, parseTrace(text, f));
  }
  return { scenario, path, profiles, traces };
}

/** A generated cluster (src/scenario/generate.ts) by name, with the built-in profiles it uses. */
function loadGenerated(name: string): LoadedScenario {
  if (!isGeneratedName(name))
    throw new InvalidInputError(`scenario '${name}': expected gen-<gpus>x<models> or gen-<gpus>x<models>-s<seed>`);
  let spec;
  try {
    spec = parseGeneratedName(name);
  } catch (err) {
    throw new InvalidInputError((err as Error).message);
  }
  const profiles = new Map<string, Profile>(GENERATED_GPU_PROFILES.map((id) => [id, loadProfile(id)]));
  return { scenario: generateScenario(spec, profiles), path: name, profiles, traces: new Map() };
}

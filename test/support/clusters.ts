// Clusters of the built-in scenarios, for tests: profiles read from profiles/, compiled once.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scenarioCluster } from '../../src/scenario/build.js';
import { type Scenario, ScenarioSchema } from '../../src/scenario/schema.js';
import { parseProfile, type Profile } from '../../src/profile/schema.js';
import type { ClusterInfo } from '../../src/policy/types.js';
import { REPO_ROOT } from './paths.js';

const cache = new Map<string, { scenario: Scenario; cluster: ClusterInfo; profiles: Map<string, Profile> }>();

export function loadProfileFile(id: string): Profile {
  const path = join(REPO_ROOT, 'profiles', `${id}.json`);
  return parseProfile(JSON.parse(readFileSync(path, 'utf8')), path);
}

export function builtInScenario(name: string): {
  scenario: Scenario;
  cluster: ClusterInfo;
  profiles: Map<string, Profile>;
} {
  let hit = cache.get(name);
  if (!hit) {
    const scenario = ScenarioSchema.parse(
      JSON.parse(readFileSync(join(REPO_ROOT, 'scenarios', `${name}.json`), 'utf8')),
    );
    const profiles = new Map(scenario.gpus.map((g) => [g.profile, loadProfileFile(g.profile)] as const));
    hit = { scenario, cluster: scenarioCluster(scenario, profiles), profiles };
    cache.set(name, hit);
  }
  return hit;
}

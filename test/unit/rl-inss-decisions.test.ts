// inss's decisions over a fixed observation sequence on every built-in scenario, as a digest of the
// deployments it emits: a change that should only make deciding faster (caching, early cut-offs)
// must leave these unchanged. A change meant to alter what inss decides updates the digests and says
// why in its commit (docs/inss.md).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inssFactory } from '../../rl/inss.js';
import { initialRates } from '../../src/scenario/build.js';
import type { Deployment } from '../../src/policy/types.js';
import { deploymentProblem } from '../../src/policy/util.js';
import { Rng } from '../../src/workload/random.js';
import { observation } from '../support/builders.js';
import { builtInScenario } from '../support/clusters.js';
import { REPO_ROOT } from '../support/paths.js';

/** Decisions per scenario: the policy's own previous deployment in force, and every third one another instance's. */
const DECISIONS = 30;

/** sha256 of inss's deployments (JSON, one per decision) over a seeded sequence of rates on `name`. */
function decisionDigest(name: string, decisions = DECISIONS): { digest: string; problems: string[] } {
  const { scenario, cluster } = builtInScenario(name);
  const file = join(REPO_ROOT, 'policies', `${name}.json`);
  const options = existsSync(file) ? { policyData: JSON.parse(readFileSync(file, 'utf8')) as unknown } : {};
  const policy = inssFactory.create(cluster, options);
  const maker = inssFactory.create(cluster, options);
  const base = initialRates(scenario, new Map()).map((r) => (r > 0 ? r : 50));
  const rng = new Rng(11);
  const hash = createHash('sha256');
  const problems: string[] = [];
  let current: Deployment = { placements: [] };
  for (let k = 0; k < decisions; k++) {
    // Each model's rate uniform on 0.2x-2x its scenario rate.
    const rates = base.map((r) => r * (0.2 + 1.8 * rng.next()));
    if (k % 3 === 2)
      current = maker.decide(
        observation(
          base.map((r) => r * (0.2 + 1.8 * rng.next())),
          { placements: [] },
        ),
      );
    // One decision a second (an epoch), so inss's dwell after a switch (3 s) is exercised too.
    current = policy.decide({ ...observation(rates, current), nowMs: k * 1000 });
    const problem = deploymentProblem(cluster, current);
    if (problem) problems.push(`decision ${k}: ${problem}`);
    hash.update(JSON.stringify(current));
    hash.update('\n');
  }
  return { digest: hash.digest('hex').slice(0, 16), problems };
}

// A change meant to alter what inss decides updates these; the commit says why (git log of this file).
// bursty-6 and surge-6 share a cluster and their rates at time 0 (they differ later in time), so one digest.
const EXPECTED: Record<string, string> = {
  'bursty-6': '5b1d2c2414fe2043',
  'diurnal-6': 'e76aac1472fe9243',
  'mix-5': '0845ed840bada01f',
  'mixed-32x24': 'e96941133bea138b',
  'paper-6': '85ec25db03db97bc',
  'paper-8': '0ba528d969a0effb',
  'paper-8x3': '7057bc52adf274b0',
  'paper-8x5': '5099c27c8cbc6dc6',
  'surge-6': '5b1d2c2414fe2043',
  'v100-2-tight': '8f140fc4e51f1089',
  'v100-4': '19ec27e85e2434c5',
};

describe('inss decisions', () => {
  for (const name of Object.keys(EXPECTED)) {
    it(`are unchanged on ${name}`, () => {
      const { digest, problems } = decisionDigest(name);
      expect(problems).toEqual([]);
      expect(digest).toBe(EXPECTED[name]);
    });
  }
});

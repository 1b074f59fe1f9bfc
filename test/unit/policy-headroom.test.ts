import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RATE_HEADROOM, SLO_FRACTION } from '../../rl/inss.js';
import { buildCluster } from '../../src/policy/cluster.js';
import { INSS_HEADROOM, withHeadroom } from '../../src/policy/headroom.js';
import { igniterFactory, igniterPlan } from '../../src/policy/policies/igniter.js';
import type { ClusterInfo, Observation, Policy, PolicyFactory } from '../../src/policy/types.js';
import { parseProfile } from '../../src/profile/schema.js';

const v100 = parseProfile(JSON.parse(readFileSync('profiles/v100.json', 'utf8')), 'profiles/v100.json');
const cluster = buildCluster(
  [v100, v100],
  [
    { name: 'alexnet', sloMs: 15 },
    { name: 'resnet50', sloMs: 40 },
  ],
);

function obs(ratePerS: number[]): Observation {
  const z = ratePerS.map(() => 0);
  return {
    nowMs: 0,
    ratePerS,
    queued: z,
    lastEpoch: { served: z, violated: z, dropped: z, meanExecMs: z, meanLatencyMs: z },
    current: { placements: [] },
  };
}

describe('withHeadroom: a baseline planning with inss headroom', () => {
  it('is the headroom inss plans with (rl/inssTuning.ts)', () => {
    expect(INSS_HEADROOM.rateX).toBe(RATE_HEADROOM);
    expect(INSS_HEADROOM.sloFraction).toBe(SLO_FRACTION);
  });

  it('the inner policy sees rates x rateX and SLOs x sloFraction', () => {
    const seen: { cluster?: ClusterInfo; asked?: ClusterInfo; rates?: readonly number[] } = {};
    const probe: PolicyFactory = {
      name: 'probe',
      description: '',
      supports(c) {
        seen.asked = c;
        return c.models.some((m) => m.sloMs < 10) ? 'an SLO under 10 ms' : null;
      },
      create(c): Policy {
        seen.cluster = c;
        return { name: 'probe', decide: (o) => ((seen.rates = o.ratePerS), { placements: [] }) };
      },
    };
    const f = withHeadroom(probe, { rateX: 1.5, sloFraction: 0.5 });
    expect(f.name).toBe('probe-h');
    expect(f.supports(cluster, {})).toBe('an SLO under 10 ms'); // asked with the SLOs it plans against
    expect(seen.asked!.models.map((m) => m.sloMs)).toEqual([7.5, 20]);
    f.create(cluster, {}).decide(obs([100, 10]));
    expect(seen.cluster!.models.map((m) => m.sloMs)).toEqual([7.5, 20]);
    expect(seen.rates).toEqual([150, 15]);
    expect(cluster.models.map((m) => m.sloMs)).toEqual([15, 40]); // the real cluster is untouched
  });

  it('iGniter with headroom plans what iGniter plans for the scaled rates and SLOs', () => {
    const d = withHeadroom(igniterFactory)
      .create(cluster, {})
      .decide(obs([400, 300]));
    const scaled = buildCluster(
      [v100, v100],
      [
        { name: 'alexnet', sloMs: 15 * SLO_FRACTION },
        { name: 'resnet50', sloMs: 40 * SLO_FRACTION },
      ],
    );
    expect(d).toEqual(igniterPlan(scaled, [400 * RATE_HEADROOM, 300 * RATE_HEADROOM]));
    // ... and its batches time out earlier than plain iGniter's (SLO x 0.85 / 2).
    const plain = igniterFactory.create(cluster, {}).decide(obs([400, 300]));
    expect(Math.max(...d.placements.map((p) => p.timeoutMs!))).toBeLessThan(
      Math.max(...plain.placements.map((p) => p.timeoutMs!)),
    );
  });

  it('rejects a headroom that loosens the plan', () => {
    expect(() => withHeadroom(igniterFactory, { rateX: 0.9, sloFraction: 0.85 })).toThrow(/rateX/);
    expect(() => withHeadroom(igniterFactory, { rateX: 1.1, sloFraction: 1.2 })).toThrow(/sloFraction/);
  });
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { inssFactory } from '../../rl/inss.js';
import { allowanceScale, inssMargins, marginScale, missAllowance } from '../../rl/inssMargins.js';
import { normalQuantile } from '../../src/workload/normal.js';
import {
  KEEP_MISSED_FRACTION,
  MEETS_MISSED_FRACTION,
  RATE_HEADROOM,
  SLO_FRACTION,
  SWITCH_SAVES_FRACTION,
} from '../../rl/inssTuning.js';
import { labelForTarget, policyOptionsFor } from '../../cli/benchCell.js';
import { attainmentTarget } from '../../cli/flags.js';
import { PolicyRegistry, UnknownPolicyError } from '../../cli/registry.js';
import {
  attainmentLabel,
  attainmentTargetProblem,
  DEFAULT_ATTAINMENT_TARGET,
  parseAttainmentLabel,
} from '../../src/policy/attainment.js';
import { buildCluster } from '../../src/policy/cluster.js';
import type { Deployment, Observation, Policy } from '../../src/policy/types.js';
import { parseProfile } from '../../src/profile/schema.js';
import { ScenarioSchema } from '../../src/scenario/schema.js';
import { REPO_ROOT } from '../support/paths.js';

const v100 = parseProfile(JSON.parse(readFileSync(join(REPO_ROOT, 'profiles', 'v100.json'), 'utf8')), 'v100');
const cluster = buildCluster(
  [v100, v100],
  [
    { name: 'alexnet', sloMs: 15 },
    { name: 'resnet50', sloMs: 40 },
    { name: 'vgg19', sloMs: 60 },
  ],
);

function run(policy: Policy, rates: number[][]): Deployment[] {
  let current: Deployment = { placements: [] };
  const out: Deployment[] = [];
  rates.forEach((ratePerS, k) => {
    const z = ratePerS.map(() => 0);
    const obs: Observation = {
      nowMs: k * 10_000,
      ratePerS,
      queued: z,
      lastEpoch: { served: z, violated: z, dropped: z, meanExecMs: z, meanLatencyMs: z },
      current,
    };
    current = policy.decide(obs);
    out.push(current);
  });
  return out;
}

describe('the attainment target', () => {
  it('is a number in (0.5, 1)', () => {
    expect(attainmentTargetProblem(0.95)).toBeNull();
    expect(attainmentTargetProblem(DEFAULT_ATTAINMENT_TARGET)).toBeNull();
    for (const bad of [0.5, 1, 1.2, 0, NaN, Infinity]) expect(attainmentTargetProblem(bad)).toMatch(/\(0\.5, 1\)/);
  });

  it('labels a policy with its percentage and reads the label back', () => {
    expect(attainmentLabel('inss', 0.95)).toBe('inss@95');
    expect(attainmentLabel('inss', 0.975)).toBe('inss@97.5');
    expect(parseAttainmentLabel('inss@95')).toEqual({ policy: 'inss', target: 0.95 });
    expect(parseAttainmentLabel('inss')).toBeNull();
    expect(() => parseAttainmentLabel('inss@100')).toThrow(/percentage in \(50, 100\)/);
  });

  it('resolves a label of a policy that reads it, and refuses one of a policy that does not', () => {
    const registry = new PolicyRegistry();
    const f = registry.get('inss@95');
    expect(f.name).toBe('inss@95');
    expect(f.create(cluster, {}).name).toBe('inss@95');
    expect(() => registry.get('timeshare@95')).toThrow(/plans the same whatever the attainment target/);
    expect(() => registry.get('inss@40')).toThrow(UnknownPolicyError);
    expect(() => registry.get('nosuch@95')).toThrow(/unknown policy 'nosuch@95'/);
  });

  it('is an inss option the scenario sets, a label overriding it', () => {
    expect(policyOptionsFor(undefined, 0.95)('inss')).toEqual({ attainmentTarget: 0.95 });
    expect(policyOptionsFor(undefined, 0.95)('timeshare')).toEqual({});
    expect(policyOptionsFor(undefined)('inss')).toEqual({});
    expect(labelForTarget(['inss', 'igniter-h', 'timeshare'], 0.95)).toEqual(['inss@95', 'igniter-h', 'timeshare']);
    expect(labelForTarget(['inss'], undefined)).toEqual(['inss']);
  });

  it('is refused by inss outside (0.5, 1)', () => {
    expect(inssFactory.supports(cluster, { attainmentTarget: 1 })).toMatch(/attainmentTarget must be a number/);
    expect(() => inssFactory.create(cluster, { attainmentTarget: 0.3 })).toThrow(RangeError);
  });

  it('is validated in a scenario file, naming the field', () => {
    const paper6 = JSON.parse(readFileSync(join(REPO_ROOT, 'scenarios', 'paper-6.json'), 'utf8')) as object;
    expect(ScenarioSchema.parse({ ...paper6, attainmentTarget: 0.95 }).attainmentTarget).toBe(0.95);
    expect(ScenarioSchema.parse(paper6).attainmentTarget).toBeUndefined();
    for (const bad of [1, 0.5, 'high']) {
      const r = ScenarioSchema.safeParse({ ...paper6, attainmentTarget: bad });
      expect(r.success).toBe(false);
      expect(r.error?.issues[0]?.path).toEqual(['attainmentTarget']);
    }
  });

  it('is parsed by the --attainment-target flag', () => {
    expect(attainmentTarget('0.95')).toBe(0.95);
    for (const bad of ['1', '0.5', '', 'x']) expect(() => attainmentTarget(bad)).toThrow(InvalidArgumentError);
  });
});

describe('inss margins as functions of the target', () => {
  it('are the tuned constants exactly at 0.99', () => {
    expect(inssMargins(0.99)).toEqual({
      rateHeadroom: RATE_HEADROOM,
      sloFraction: SLO_FRACTION,
      meetsMissed: MEETS_MISSED_FRACTION,
      switchSaves: SWITCH_SAVES_FRACTION,
      keepMissed: KEEP_MISSED_FRACTION,
    });
    expect(inssMargins()).toEqual(inssMargins(0.99));
    expect(missAllowance(0.99)).toBe(0.01);
    expect(marginScale(0.99)).toBe(1);
  });

  it('take the normal quantile for the headroom and the SLO margin', () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959964, 5);
    expect(normalQuantile(0.99)).toBeCloseTo(2.326348, 5);
    expect(normalQuantile(0.999)).toBeCloseTo(3.090232, 5);
    expect(normalQuantile(0.05)).toBeCloseTo(-1.644854, 5);
    expect(marginScale(0.999)).toBeCloseTo(3.090232 / 2.326348, 5);
    expect(marginScale(0.95)).toBe(1);
  });

  it('scale with the allowance: in proportion for a stricter target, with its square root for a looser', () => {
    const m = inssMargins(0.95);
    expect(m.meetsMissed).toBeCloseTo(0.01 * Math.sqrt(5), 12);
    expect(m.switchSaves).toBeCloseTo(0.005 * Math.sqrt(5), 12);
    expect(m.keepMissed).toBeCloseTo(0.001 * Math.sqrt(5), 12);
    expect(m.meetsMissed).toBeLessThan(0.05);
    const strict = inssMargins(0.999);
    expect(strict.meetsMissed).toBeCloseTo(0.001, 12);
    expect(strict.switchSaves).toBeCloseTo(0.0005, 12);
    expect(allowanceScale(0.99)).toBe(1);
    // A looser target keeps the 99% line's headroom and SLO margin.
    expect(m.rateHeadroom).toBe(RATE_HEADROOM);
    expect(m.sloFraction).toBe(SLO_FRACTION);
    // A stricter target keeps more margin than the 99% line.
    expect(inssMargins(0.999).rateHeadroom).toBeGreaterThan(RATE_HEADROOM);
    expect(inssMargins(0.999).sloFraction).toBeLessThan(SLO_FRACTION);
  });

  it('change the plans inss makes', () => {
    const rates = Array.from({ length: 30 }, (_, k) => 0.5 + k * 0.12).map((x) => [900 * x, 300 * x, 120 * x]);
    const at99 = run(inssFactory.create(cluster, {}), rates);
    const at90 = run(inssFactory.create(cluster, { attainmentTarget: 0.9 }), rates);
    expect(run(inssFactory.create(cluster, { attainmentTarget: 0.99 }), rates)).toEqual(at99);
    expect(at90).not.toEqual(at99);
  });
});

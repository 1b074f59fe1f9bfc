// Generated clusters (src/scenario/generate.ts): deterministic, validated, and loaded by name.
import { describe, expect, it } from 'vitest';
import {
  GENERATE_DEFAULTS,
  GENERATED_GPU_PROFILES,
  generateScenario,
  parseGeneratedName,
} from '../../src/scenario/generate.js';
import { scenarioCluster } from '../../src/scenario/build.js';
import { modelDemand } from '../../src/policy/decompose.js';
import { loadScenario } from '../../cli/scenarios.js';
import { InvalidInputError } from '../../src/profile/schema.js';
import { loadProfileFile } from '../support/clusters.js';

const profiles = new Map(GENERATED_GPU_PROFILES.map((id) => [id, loadProfileFile(id)] as const));
const spec = (gpus: number, models: number, seed = 1) => ({ ...GENERATE_DEFAULTS, gpus, models, seed });

describe('generateScenario', () => {
  it('is deterministic: the same spec gives the same scenario, another seed other rates', () => {
    const a = generateScenario(spec(64, 40), profiles);
    expect(generateScenario(spec(64, 40), profiles)).toEqual(a);
    const b = generateScenario(spec(64, 40, 2), profiles);
    expect(b.name).toBe('gen-64x40-s2');
    expect(b.models.map((m) => m.name)).toEqual(a.models.map((m) => m.name));
    expect(b.models.map((m) => m.rate)).not.toEqual(a.models.map((m) => m.rate));
  });

  it('makes N GPUs of both types and M uniquely named models over the networks at three SLO tiers', () => {
    const s = generateScenario(spec(33, 50), profiles);
    expect(s.name).toBe('gen-33x50');
    expect(s.gpus).toEqual([
      { profile: 'rtx2060s', count: 17 },
      { profile: 'rtx2060', count: 16 },
    ]);
    expect(s.models).toHaveLength(50);
    expect(new Set(s.models.map((m) => m.name)).size).toBe(50);
    expect(s.models[0]).toMatchObject({ name: 'alexnet-t1', profileModel: 'alexnet', sloMs: 25 });
    expect(s.models[8]).toMatchObject({ name: 'alexnet-t15', sloMs: 37.5 });
    expect(s.models[16]).toMatchObject({ name: 'alexnet-t2', sloMs: 50 });
    expect(s.models[24]).toMatchObject({ name: 'alexnet-t1-1', sloMs: 25 });
    expect(new Set(s.models.map((m) => m.profileModel)).size).toBe(8);
  });

  it('sets rates whose batch-8 demand is the stated fraction of the GPUs', () => {
    for (const loadFraction of [0.4, 1]) {
      const s = generateScenario({ ...spec(48, 30), loadFraction }, profiles);
      const cluster = scenarioCluster(s, profiles);
      const rates = s.models.map((m) => (m.rate.kind === 'constant' ? m.rate.ratePerS : NaN));
      const demand = modelDemand(cluster, rates).reduce((a, b) => a + b, 0);
      expect(demand / 48).toBeCloseTo(loadFraction, 2);
    }
  });

  it('rejects a spec out of bounds, naming the field', () => {
    expect(() => generateScenario(spec(0, 4), profiles)).toThrow(/gpus: expected an integer/);
    expect(() => generateScenario(spec(4, 2.5), profiles)).toThrow(/models: expected an integer/);
    expect(() => generateScenario({ ...spec(4, 4), loadFraction: 0 }, profiles)).toThrow(/loadFraction/);
    expect(() => generateScenario({ ...spec(4, 4), durationS: -1 }, profiles)).toThrow(/durationS/);
    expect(() => generateScenario(spec(4, 4), new Map())).toThrow(/profile 'rtx2060s' not given/);
  });
});

describe('generated scenario names', () => {
  it('parse into a spec', () => {
    expect(parseGeneratedName('gen-256x128')).toEqual(spec(256, 128));
    expect(parseGeneratedName('gen-1024x512-s3')).toEqual(spec(1024, 512, 3));
  });

  it('are validated at the boundary with the part that is wrong', () => {
    expect(() => parseGeneratedName('gen-256')).toThrow(/expected gen-<gpus>x<models>/);
    expect(() => parseGeneratedName('gen-9000x8')).toThrow(/gpus: expected an integer in \[1, 4096\]/);
    expect(() => loadScenario('gen-8x0')).toThrow(InvalidInputError);
    expect(() => loadScenario('gen-8x0')).toThrow(/models: expected an integer/);
    expect(() => loadScenario('gen-8xx')).toThrow(/expected gen-<gpus>x<models>/);
  });

  it('load as a scenario with the profiles they use', () => {
    const loaded = loadScenario('gen-12x10-s4');
    expect(loaded.scenario).toEqual(generateScenario(spec(12, 10, 4), profiles));
    expect([...loaded.profiles.keys()]).toEqual([...GENERATED_GPU_PROFILES]);
  });
});

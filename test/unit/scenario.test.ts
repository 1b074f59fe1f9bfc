import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  initialRates,
  parseTrace,
  ScenarioError,
  scenarioCluster,
  scenarioSettings,
  scenarioStreams,
} from '../../src/scenario/build.js';
import { DEFAULT_MAX_QUEUE_SIZE } from '../../src/serving/queuePolicy.js';
import { simulate } from '../../src/sim/simulator.js';
import { PolicyRegistry } from '../../cli/registry.js';
import { ScenarioSchema } from '../../src/scenario/schema.js';
import { parseProfile, type Profile } from '../../src/profile/schema.js';
import { REPO_ROOT } from '../support/paths.js';

const builtIn = (name: string): unknown =>
  JSON.parse(readFileSync(join(REPO_ROOT, 'scenarios', `${name}.json`), 'utf8'));
const v100 = parseProfile(JSON.parse(readFileSync(join(REPO_ROOT, 'profiles', 'v100.json'), 'utf8')), 'v100');

describe('scenario files', () => {
  it.each([
    'paper-6',
    'paper-8',
    'paper-8x5',
    'v100-4',
    'v100-2-tight',
    'paper-8x3',
    'bursty-6',
    'diurnal-6',
    'surge-6',
    'mix-5',
    'mixed-32x24',
    'text-6',
    'text-6-relaxed',
  ])('built-in %s is valid', (name) => {
    const r = ScenarioSchema.safeParse(builtIn(name));
    expect(r.success, JSON.stringify(r.error?.issues)).toBe(true);
  });

  it(
    'the stress workloads each change one thing: bursty Gamma arrivals, a diurnal rate, one model ' +
      'surging, fewer GPUs, tight SLOs',
    () => {
      const p = (n: string) => ScenarioSchema.parse(builtIn(n));
      expect(p('bursty-6').models.every((m) => m.arrival.process === 'gamma' && m.arrival.cv === 3)).toBe(true);
      expect(p('diurnal-6').models.every((m) => m.rate.kind === 'diurnal')).toBe(true);
      expect(
        p('surge-6')
          .models.filter((m) => m.rate.kind === 'steps')
          .map((m) => m.name),
      ).toEqual(['resnet50']);
      expect(p('paper-8x3').gpus.reduce((a, g) => a + g.count, 0)).toBe(3);
      const tight = p('v100-2-tight');
      const v100x4 = p('v100-4');
      for (const m of tight.models) expect(m.sloMs).toBeLessThan(v100x4.models.find((x) => x.name === m.name)!.sloMs);
      expect(p('paper-6').timeshareGpu).toBe('overlap'); // the default
    },
  );

  it('paper-6 is the paper evaluation: 4 GPUs, six models with the paper SLOs', () => {
    const s = ScenarioSchema.parse(builtIn('paper-6'));
    expect(s.gpus.reduce((a, g) => a + g.count, 0)).toBe(4);
    expect(s.models.map((m) => [m.name, m.sloMs])).toEqual([
      ['alexnet', 25],
      ['resnet50', 80],
      ['vgg16', 150],
      ['mnasnet', 50],
      ['mobilenet', 60],
      ['efficientnet', 40],
    ]);
  });

  it.each([
    [{ gpus: [] }, 'gpus'],
    [{ models: [{ name: 'a', sloMs: -1, rate: { kind: 'constant', ratePerS: 1 } }] }, 'models.0.sloMs'],
    [
      {
        models: [
          { name: 'a', sloMs: 10, rate: { kind: 'triangle', minPerS: 5, maxPerS: 1, stepPerS: 1, stepEveryS: 1 } },
        ],
      },
      'models.0.rate.maxPerS',
    ],
    [{ models: [{ name: 'a', sloMs: 10, rate: { kind: 'nope' } }] }, 'models.0.rate.kind'],
    [
      {
        models: [
          { name: 'a', sloMs: 10, arrival: { process: 'gamma', cv: 0 }, rate: { kind: 'constant', ratePerS: 1 } },
        ],
      },
      'models.0.arrival.cv',
    ],
    [
      {
        models: [
          { name: 'a', sloMs: 10, rate: { kind: 'constant', ratePerS: 1 } },
          { name: 'a', sloMs: 10, rate: { kind: 'constant', ratePerS: 1 } },
        ],
      },
      'models.1.name',
    ],
    [{ durationS: 0 }, 'durationS'],
    [
      { models: [{ name: 'a', profileModel: 'Bad Name', sloMs: 10, rate: { kind: 'constant', ratePerS: 1 } }] },
      'models.0.profileModel',
    ],
    [{ extra: 1 }, ''],
    [
      {
        models: [
          { name: 'a', sloMs: 10, rate: { kind: 'constant', ratePerS: 1 }, queuePolicy: { timeoutAction: 'drop' } },
        ],
      },
      'models.0.queuePolicy.timeoutAction',
    ],
    [
      { models: [{ name: 'a', sloMs: 10, rate: { kind: 'constant', ratePerS: 1 }, queuePolicy: { maxQueueSize: 0 } }] },
      'models.0.queuePolicy.maxQueueSize',
    ],
    [
      { models: [{ name: 'a', sloMs: 10, rate: { kind: 'constant', ratePerS: 1 }, queuePolicy: { timeoutMs: 11 } }] },
      'models.0.queuePolicy.timeoutMs',
    ],
    [
      {
        models: [
          { name: 'a', sloMs: 10, rate: { kind: 'constant', ratePerS: 1 }, queuePolicy: { timeout_action: 'DELAY' } },
        ],
      },
      'models.0.queuePolicy',
    ],
  ])('rejects a bad field with its path (%j)', (patch, path) => {
    const r = ScenarioSchema.safeParse({ ...(builtIn('v100-4') as object), ...patch });
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => i.path.join('.'))).toContain(path);
  });

  it("a model's queue policy reaches the simulator: delay by default, reject or a bound where given", () => {
    const rate = { kind: 'constant', ratePerS: 10 };
    const s = ScenarioSchema.parse({
      ...(builtIn('v100-4') as object),
      models: [
        { name: 'resnet50', sloMs: 60, rate },
        { name: 'vgg19', sloMs: 200, rate, queuePolicy: { timeoutAction: 'reject', timeoutMs: 150, maxQueueSize: 64 } },
      ],
    });
    expect(scenarioSettings(s).queuePolicies).toEqual([
      { delay: true, timeoutMs: Number.NaN, maxQueueSize: DEFAULT_MAX_QUEUE_SIZE },
      { delay: false, timeoutMs: 150, maxQueueSize: 64 },
    ]);
  });

  it(
    'samplesPerRequest: each arrival is k tasks at once in the simulator (the rate counts requests), ' +
      'as a k-sample request is live',
    () => {
      const base = ScenarioSchema.parse({
        ...(builtIn('v100-4') as object),
        durationS: 5,
        models: [{ name: 'resnet50', sloMs: 200, rate: { kind: 'constant', ratePerS: 20 } }],
      });
      const batched = ScenarioSchema.parse({
        ...(builtIn('v100-4') as object),
        durationS: 5,
        models: [{ name: 'resnet50', sloMs: 200, rate: { kind: 'constant', ratePerS: 20 }, samplesPerRequest: 4 }],
      });
      expect(base.models[0]!.samplesPerRequest).toBe(1);
      const run = (s: typeof base) => {
        const cluster = scenarioCluster(s, new Map([['v100', v100]]));
        return simulate({
          cluster,
          streams: scenarioStreams(s, new Map()),
          initialRatePerS: initialRates(s, new Map()),
          policy: new PolicyRegistry().get('static-even').create(cluster, {}),
          settings: scenarioSettings(s),
        });
      };
      const one = run(base);
      const four = run(batched);
      // The same request instants (one seeded stream of requests), four tasks each.
      expect(four.arrivals).toBe(4 * one.arrivals);
      expect(four.served + four.dropped + four.unfinished).toBe(four.arrivals);
      expect(
        ScenarioSchema.safeParse({
          ...(builtIn('v100-4') as object),
          models: [{ name: 'a', sloMs: 10, rate: { kind: 'constant', ratePerS: 1 }, samplesPerRequest: 0 }],
        }).success,
      ).toBe(false);
    },
  );

  it('rejects a model no GPU profile has, before anything runs', () => {
    const s = ScenarioSchema.parse({
      ...(builtIn('v100-4') as object),
      models: [{ name: 'bert', sloMs: 10, rate: { kind: 'constant', ratePerS: 1 } }],
    });
    expect(() => scenarioCluster(s, new Map<string, Profile>([['v100', v100]]))).toThrow(ScenarioError);
    expect(() => scenarioCluster(s, new Map<string, Profile>([['v100', v100]]))).toThrow(/models\[0\]\.name: .*'bert'/);
  });

  it(
    'profileModel: one profile model served under several names, each with its own SLO; an unknown ' + 'one is named',
    () => {
      const rate = { kind: 'constant', ratePerS: 10 };
      const s = ScenarioSchema.parse({
        ...(builtIn('v100-4') as object),
        models: [
          { name: 'resnet50', sloMs: 60, rate },
          { name: 'resnet50-relaxed', profileModel: 'resnet50', sloMs: 120, rate },
          { name: 'vgg', profileModel: 'vgg19', sloMs: 200, rate },
        ],
      });
      const c = scenarioCluster(s, new Map([['v100', v100]]));
      const g = c.gpus[0]!;
      expect(g.profileIndex[0]).toBe(g.model.modelIndex('resnet50'));
      expect(g.profileIndex[1]).toBe(g.model.modelIndex('resnet50'));
      expect(g.profileIndex[2]).toBe(g.model.modelIndex('vgg19'));
      expect(c.models.map((m) => [m.name, m.sloMs, m.profileModel])).toEqual([
        ['resnet50', 60, undefined],
        ['resnet50-relaxed', 120, 'resnet50'],
        ['vgg', 200, 'vgg19'],
      ]);
      const bad = ScenarioSchema.parse({
        ...(builtIn('v100-4') as object),
        models: [{ name: 'x', profileModel: 'bert', sloMs: 10, rate }],
      });
      expect(() => scenarioCluster(bad, new Map([['v100', v100]]))).toThrow(/models\[0\]\.profileModel: .*'bert'/);
    },
  );

  it(
    'mixed-32x24 is the scale scenario: 32 GPUs of two types, 24 served models over the eight ' + 'profiled networks',
    () => {
      const s = ScenarioSchema.parse(builtIn('mixed-32x24'));
      expect(s.gpus.map((g) => [g.profile, g.count])).toEqual([
        ['rtx2060s', 16],
        ['rtx2060', 16],
      ]);
      expect(s.models).toHaveLength(24);
      expect(new Set(s.models.map((m) => m.profileModel)).size).toBe(8);
    },
  );

  it('builds one GPU per count and streams that start at the rate at time 0', () => {
    const s = ScenarioSchema.parse(builtIn('v100-4'));
    const c = scenarioCluster(s, new Map([['v100', v100]]));
    expect(c.gpus).toHaveLength(4);
    expect(initialRates(s, new Map())).toEqual([400, 300, 100, 50]);
    const streams = scenarioStreams(s, new Map());
    expect(streams[0]!.next()).toBeGreaterThan(0);
  });

  it('parses trace files and names the bad line', () => {
    expect(parseTrace('0.5\n# comment\n\n1.25\n', 't')).toEqual([0.5, 1.25]);
    expect(() => parseTrace('0.5\nabc\n', 'trace.txt')).toThrow(/trace.txt:2/);
  });
});

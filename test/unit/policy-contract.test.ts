// The policy contract (src/policy/types.ts), checked over every registered policy (the registry of
// `inss serve` and the bench's variants: headroom baselines and inss ablations) on the paper's
// clusters and on small odd ones: `supports` answers with a reason or null and never throws; on a
// supported cluster every deployment is valid (src/policy/util.ts deploymentProblem: shares per MPS
// GPU <= 100, memory fits, every model on a GPU whose profile has it); the same seed gives the same
// deployments; and no policy reads a clock (Date.now, new Date(), performance.now, process.hrtime
// all throw while it runs).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { benchRegistry } from '../../cli/benchCell.js';
import { buildCluster } from '../../src/policy/cluster.js';
import type { ClusterInfo, Deployment, Observation, PolicyFactory, PolicyOptions } from '../../src/policy/types.js';
import { deploymentProblem } from '../../src/policy/util.js';
import { builtInScenario, loadProfileFile } from '../support/clusters.js';
import { REPO_ROOT } from '../support/paths.js';

const v100 = loadProfileFile('v100');
const rtx2060 = loadProfileFile('rtx2060');
const rtx2060s = loadProfileFile('rtx2060s');

interface Case {
  readonly name: string;
  readonly cluster: ClusterInfo;
  /** The shipped trained policy for the cluster, if any (inss variants load it). */
  readonly policyData?: unknown;
  /**
   * Also an epoch at 20x the load (far past what the cluster serves). Only on the small clusters: on
   * the paper's, the oracle's overload (goodput) search takes 10-30 s (docs/policies/oracle.md).
   */
  readonly overload?: boolean;
  /** Policies left out here, and why. */
  readonly skip?: { readonly names: readonly string[]; readonly why: string };
}

const shipped = (name: string): unknown =>
  JSON.parse(readFileSync(join(REPO_ROOT, 'policies', `${name}.json`), 'utf8'));

const CASES: readonly Case[] = [
  { name: 'paper-6', cluster: builtInScenario('paper-6').cluster, policyData: shipped('paper-6') },
  {
    name: 'paper-8',
    cluster: builtInScenario('paper-8').cluster,
    policyData: shipped('paper-8'),
    skip: {
      names: ['oracle', 'oracle-h'],
      why: 'a search takes 0.25-1.4 s on 8 models (paper-6 and the small clusters cover it)',
    },
  },
  { name: 'v100-4', cluster: builtInScenario('v100-4').cluster },
  { name: 'v100-2-tight (SLOs of 8-80 ms)', cluster: builtInScenario('v100-2-tight').cluster },
  {
    name: 'one V100, two models',
    overload: true,
    cluster: buildCluster(
      [v100],
      [
        { name: 'alexnet', sloMs: 15 },
        { name: 'resnet50', sloMs: 40 },
      ],
    ),
  },
  // Two GPU types, a model each only one of them has, MPS units of 2.5% and 7% (100 is no multiple of 7).
  {
    name: 'V100 + RTX 2060, models on one type only',
    overload: true,
    cluster: buildCluster(
      [v100, rtx2060],
      [
        { name: 'alexnet', sloMs: 25 },
        { name: 'ssd', sloMs: 150 },
        { name: 'mnasnet', sloMs: 50 },
      ],
    ),
  },
  {
    name: 'three 6 GB GPUs, heavy models',
    overload: true,
    cluster: buildCluster(
      [rtx2060, rtx2060, rtx2060s],
      [
        { name: 'vgg19', sloMs: 200 },
        { name: 'vgg16', sloMs: 150 },
      ],
    ),
  },
  // What the scheduler builds when no connected GPU's profile has a served model (it warns and serves the rest).
  {
    name: 'a served model no GPU has',
    overload: true,
    cluster: buildCluster(
      [v100],
      [
        { name: 'alexnet', sloMs: 15 },
        { name: 'mnasnet', sloMs: 50 },
      ],
    ),
  },
];

/**
 * Rates (tasks/s per model) of successive epochs: start, steady, a rise, (overload,) a model going idle,
 * nothing, back.
 */
function rateSchedule(n: number, overload: boolean): number[][] {
  const base = Array.from({ length: n }, (_, i) => 20 + 15 * i);
  return [
    base,
    base.map((r) => r * 1.01),
    base.map((r) => r * 2),
    ...(overload ? [base.map((r) => r * 20)] : []),
    base.map((r, i) => (i === 0 ? 0 : r)),
    base.map(() => 0),
    base,
  ];
}

function observation(nowMs: number, ratePerS: readonly number[], current: Deployment): Observation {
  const zeros = ratePerS.map(() => 0);
  const nan = ratePerS.map(() => Number.NaN);
  return {
    nowMs,
    ratePerS,
    queued: zeros,
    lastEpoch: { served: zeros, violated: zeros, dropped: zeros, meanExecMs: nan, meanLatencyMs: nan },
    current,
  };
}

/** Every deployment the policy emits over the schedule, each epoch seeing the last one in force. */
function run(factory: PolicyFactory, c: Case, options: PolicyOptions): Deployment[] {
  const policy = factory.create(c.cluster, options);
  let current: Deployment = { placements: [] };
  return rateSchedule(c.cluster.models.length, c.overload === true).map((rates, k) => {
    current = policy.decide(observation(k * 1000, rates, current));
    return current;
  });
}

function trapClocks(): void {
  const trap = (what: string) => () => {
    throw new Error(`clock read: ${what}`);
  };
  vi.spyOn(Date, 'now').mockImplementation(trap('Date.now'));
  vi.spyOn(performance, 'now').mockImplementation(trap('performance.now'));
  vi.spyOn(process, 'hrtime').mockImplementation(trap('process.hrtime'));
  vi.spyOn(process.hrtime, 'bigint').mockImplementation(trap('process.hrtime.bigint'));
  const RealDate = Date;
  vi.stubGlobal(
    'Date',
    new Proxy(RealDate, {
      construct(target, args: unknown[]) {
        if (args.length === 0) throw new Error('clock read: new Date()');
        return new (target as unknown as new (...a: unknown[]) => Date)(...args);
      },
    }),
  );
}

const factories = benchRegistry().all();

describe('policy contract: every registered policy', () => {
  beforeEach(trapClocks);
  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllGlobals();
  });

  it('the clock trap catches every clock it names (the checks below can fail)', () => {
    expect(() => Date.now()).toThrow(/Date.now/);
    expect(() => new Date()).toThrow(/new Date\(\)/);
    expect(() => performance.now()).toThrow(/performance.now/);
    expect(() => process.hrtime()).toThrow(/process.hrtime/);
    expect(() => process.hrtime.bigint()).toThrow(/process.hrtime.bigint/);
    expect(new Date(0).getTime()).toBe(0); // a date from a value is no clock read
  });

  it('covers the registry and its bench variants', () => {
    const names = factories.map((f) => f.name);
    for (const n of [
      'inss',
      'inss-ni',
      'inss-paper',
      'inss-nopool',
      'gpulet',
      'gslice',
      'igniter',
      'static-even',
      'timeshare',
      'oracle',
      'gpulet-h',
      'oracle-h',
    ])
      expect(names).toContain(n);
  });

  for (const c of CASES) {
    describe(c.name, () => {
      for (const f of factories) {
        if (c.skip?.names.includes(f.name)) {
          it.skip(`${f.name}: left out, ${c.skip.why}`, () => {});
          continue;
        }
        it(`${f.name}: supports() answers; if supported, valid deployments, same for a seed, no clock read`, () => {
          const options: PolicyOptions = {
            seed: 7,
            ...(c.policyData !== undefined && f.name.startsWith('inss') ? { policyData: c.policyData } : {}),
          };
          const why = f.supports(c.cluster, options);
          if (why !== null) {
            expect(why.length).toBeGreaterThan(10);
            return;
          }
          const first = run(f, c, options);
          first.forEach((d, k) => expect(deploymentProblem(c.cluster, d), `epoch ${k}`).toBeNull());
          expect(run(f, c, options)).toEqual(first);
        });
      }
    });
  }
});

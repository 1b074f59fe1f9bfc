// Runs of slow batches (src/serving/transport.ts): the scheduler measures how a host's slow batches
// follow each other (the lag-1 autocorrelation of the spread's normal scores) and the twin draws its
// spread factors by an AR(1) on the normal scale, which keeps the spread as it is.
import { describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import {
  lag1NormalScores,
  SpreadChain,
  spreadFactor,
  type TransportModel,
  TransportFit,
  transportFields,
  TransportModelSchema,
  transportMsFor,
} from '../../src/serving/transport.js';
import { Requests } from '../../src/sim/requests.js';
import { rateFunction, RenewalStream } from '../../src/workload/arrivals.js';
import { normalCdf, normalQuantile, normalTail } from '../../src/workload/normal.js';
import { mixSeed, Rng } from '../../src/workload/random.js';
import { loadProfileFile } from '../support/clusters.js';

/** n values of a standard normal AR(1) with lag-1 correlation rho, from a seeded stream. */
function ar1(rho: number, n: number, seed: number): number[] {
  const rng = new Rng(mixSeed(seed));
  const out: number[] = [];
  let z = rng.normal();
  for (let t = 0; t < n; t++) {
    out.push(z);
    z = rho * z + Math.sqrt(1 - rho * rho) * rng.normal();
  }
  return out;
}

/** The empirical p-quantile of xs. */
const quantile = (xs: readonly number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};

describe('the standard normal', () => {
  it('its quantile inverts its distribution function, at known points and across the range', () => {
    expect(normalQuantile(0.5)).toBeCloseTo(0, 9);
    expect(normalQuantile(0.975)).toBeCloseTo(1.959964, 5);
    expect(normalQuantile(0.001)).toBeCloseTo(-3.090232, 5);
    expect(normalQuantile(0)).toBe(-Infinity);
    expect(normalQuantile(1)).toBe(Infinity);
    expect(normalCdf(1.959964)).toBeCloseTo(0.975, 6);
    expect(normalCdf(-1) + normalTail(-1)).toBe(1);
    for (let z = -3; z <= 3; z += 0.25) expect(normalQuantile(normalCdf(z))).toBeCloseTo(z, 3);
  });
});

describe('lag1NormalScores', () => {
  // Over 1024 values (the ratios a fit keeps) its standard error is about sqrt((1 - rho^2) / 1024) <=
  // 0.031; the seeds are fixed, and 0.1 is over three standard errors.
  it.each([0, 0.3, 0.6, 0.9, -0.5])('recovers rho %d from an AR(1) of 1024, whatever the marginal', (rho) => {
    const zs = ar1(rho, 1024, 7);
    const r = lag1NormalScores(zs)!;
    expect(Math.abs(r - rho)).toBeLessThan(0.1);
    // Ranks only: a skewed marginal (exp, as transport ratios are) gives the same estimate.
    expect(lag1NormalScores(zs.map((z) => Math.exp(2 * z)))).toBe(r);
  });

  it('is about 0 for independent draws, null for too few values or no variation, within [-1, 1]', () => {
    const rng = new Rng(mixSeed(11));
    const independent = Array.from({ length: 1024 }, () => rng.next());
    expect(Math.abs(lag1NormalScores(independent)!)).toBeLessThan(0.1);
    expect(lag1NormalScores([1, 2, 3])).toBeNull();
    expect(lag1NormalScores(new Array<number>(50).fill(4))).toBeNull();
    const alternating = Array.from({ length: 64 }, (_, i) => (i % 2 === 0 ? 1 : 9));
    expect(lag1NormalScores(alternating)).toBeLessThan(-0.9);
    expect(lag1NormalScores(alternating)).toBeGreaterThanOrEqual(-1);
  });

  it("TransportFit measures its ratios' runs in the order it took them, over its latest 1024", () => {
    const f = new TransportFit();
    for (let i = 0; i < 16; i++) f.add(602112, 4);
    expect(f.spreadLag1()).toBeNull();
    // 3000 batches whose transport is 4 ms times exp(AR(1) at 0.7): the ring wraps twice.
    for (const z of ar1(0.7, 3000, 3)) f.add(602112, 4 * Math.exp(0.5 * z));
    expect(Math.abs(f.spreadLag1()! - 0.7)).toBeLessThan(0.1);
    const independent = new TransportFit();
    const rng = new Rng(mixSeed(5));
    for (let i = 0; i < 3000; i++) independent.add(602112, 4 * Math.exp(0.5 * rng.normal()));
    expect(Math.abs(independent.spreadLag1()!)).toBeLessThan(0.1);
  });

  it("is a field of a host's entry, checked to lie in [-1, 1]", () => {
    const entry = { fixedMs: 1, perMbMs: 0, batches: 40, spread: [0.5, 1.5], spreadLag1: 0.4, wayInSpreadLag1: 0 };
    expect(TransportModelSchema.parse(transportFields(entry))).toEqual({
      fixedMs: 1,
      perMbMs: 0,
      spread: [0.5, 1.5],
      spreadLag1: 0.4,
      wayInSpreadLag1: 0,
    });
    const bad = TransportModelSchema.safeParse({ fixedMs: 1, perMbMs: 0, spreadLag1: 1.2 });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]!.path).toEqual(['spreadLag1']);
  });
});

describe('SpreadChain', () => {
  const spread = [0.3, 0.6, 0.8, 0.9, 1, 1.1, 1.3, 1.8, 2.9];

  it('without a lag (or at 0) is the independent draw itself', () => {
    for (const lag1 of [undefined, 0]) {
      const chain = new SpreadChain(spread, lag1);
      for (const u of [0, 0.1, 0.5, 0.77, 0.999]) expect(chain.factor(u)).toBe(spreadFactor(spread, u));
    }
  });

  it("draws runs of slow factors with the lag asked for, each distributed as the spread's", () => {
    const rng = new Rng(mixSeed(9));
    const chain = new SpreadChain(spread, 0.8);
    const factors = Array.from({ length: 20_000 }, () => chain.factor(rng.next()));
    expect(Math.abs(lag1NormalScores(factors)! - 0.8)).toBeLessThan(0.05);
    // The marginal: the spread's quantiles (20000 draws at lag 0.8 are worth over 2000 independent ones).
    for (const p of [0.1, 0.25, 0.5, 0.75, 0.9]) expect(quantile(factors, p)).toBeCloseTo(spreadFactor(spread, p), 1);
    let mean = 0;
    for (let k = 1; k < spread.length; k++) mean += (spread[k - 1]! + spread[k]!) / 2 / (spread.length - 1);
    expect(factors.reduce((a, x) => a + x, 0) / factors.length).toBeCloseTo(mean, 1);
  });
});

describe("the twin's draws", () => {
  const rtx = loadProfileFile('rtx2060s');
  const cluster = buildCluster([rtx], [{ name: 'resnet50', sloMs: 100 }]);
  const requests = (transport: TransportModel) =>
    new Requests(
      cluster,
      [new RenewalStream(rateFunction({ kind: 'constant', ratePerS: 50 }), new Rng(mixSeed(5)))],
      transport,
      0,
      1,
    );
  const spread = [0.2, 0.5, 0.8, 1, 1.2, 1.6, 2.7];

  it("a host's batches, in the order they are sent, have the spread's runs; without a lag, independent draws", () => {
    const fitted = transportMsFor({ fixedMs: 6, perMbMs: 0 }, 0);
    const independent = requests({ fixedMs: 6, perMbMs: 0, spread });
    const rng = new Rng(mixSeed(1, 0x7370)); // the batches' stream (src/sim/requests.ts)
    for (let i = 0; i < 100; i++)
      expect(independent.batchTransportMs(0, 1)).toBe(fitted * spreadFactor(spread, rng.next()));
    const runs = requests({ fixedMs: 6, perMbMs: 0, spread, spreadLag1: 0.7 });
    const drawn = Array.from({ length: 4000 }, () => runs.batchTransportMs(0, 1));
    expect(Math.abs(lag1NormalScores(drawn)! - 0.7)).toBeLessThan(0.06);
  });

  it("the requests' way in, in the order they are queued, likewise", () => {
    const r = requests({
      fixedMs: 0,
      perMbMs: 0,
      wayIn: { fixedMs: 2, perMbMs: 0 },
      wayInSpread: spread,
      wayInSpreadLag1: 0.5,
    });
    const wayIn: number[] = [];
    for (let i = 0; i < 4000; i++) {
      wayIn.push(r.queuedMs[0]! - r.arrivalMs[0]!);
      r.taken(0, r.queuedMs[0]!);
      r.next(0);
    }
    // 50 requests a second, 20 ms apart: none waits behind the one before (at most 2.7 x 2 ms).
    expect(Math.abs(lag1NormalScores(wayIn)! - 0.5)).toBeLessThan(0.06);
  });
});

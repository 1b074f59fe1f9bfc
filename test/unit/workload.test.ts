import { describe, expect, it } from 'vitest';
import { rateFunction, RenewalStream, TraceStream } from '../../src/workload/arrivals.js';
import { mixSeed, Rng } from '../../src/workload/random.js';

function collect(stream: { next(): number }, untilMs: number): number[] {
  const out: number[] = [];
  for (let t = stream.next(); t <= untilMs; t = stream.next()) out.push(t);
  return out;
}

function cvOf(times: number[]): number {
  const gaps = times.slice(1).map((t, i) => t - times[i]!);
  const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
  const sd = Math.sqrt(gaps.reduce((a, b) => a + (b - mean) ** 2, 0) / gaps.length);
  return sd / mean;
}

describe('arrival processes', () => {
  it('Poisson at a constant rate has the rate and CV 1', () => {
    const t = collect(new RenewalStream(rateFunction({ kind: 'constant', ratePerS: 200 }), new Rng(1)), 500_000);
    expect(t.length / 500).toBeCloseTo(200, -1);
    expect(cvOf(t)).toBeCloseTo(1, 1);
  });

  it.each([0.5, 2, 4])('Gamma with CV %f has that CV and the same mean rate', (cv) => {
    const t = collect(new RenewalStream(rateFunction({ kind: 'constant', ratePerS: 100 }), new Rng(3), cv), 1_000_000);
    expect(t.length / 1000 / 100).toBeGreaterThan(0.95);
    expect(t.length / 1000 / 100).toBeLessThan(1.05);
    expect(cvOf(t) / cv).toBeGreaterThan(0.93);
    expect(cvOf(t) / cv).toBeLessThan(1.07);
  });

  it('the same seed gives the same arrivals; another seed gives others', () => {
    const mk = (seed: number) =>
      collect(new RenewalStream(rateFunction({ kind: 'constant', ratePerS: 50 }), new Rng(mixSeed(seed, 0))), 10_000);
    expect(mk(7)).toEqual(mk(7));
    expect(mk(7)).not.toEqual(mk(8));
  });

  it('steps change the rate at the given times', () => {
    const t = collect(
      new RenewalStream(
        rateFunction({
          kind: 'steps',
          steps: [
            { atS: 0, ratePerS: 100 },
            { atS: 100, ratePerS: 400 },
          ],
        }),
        new Rng(5),
      ),
      200_000,
    );
    const before = t.filter((x) => x < 100_000).length / 100;
    const after = t.filter((x) => x >= 100_000).length / 100;
    expect(before).toBeCloseTo(100, -1);
    expect(after).toBeCloseTo(400, -1.5);
  });

  it('the triangle wave moves by its step every period between min and max (the InSS prototype load)', () => {
    const f = rateFunction({ kind: 'triangle', minPerS: 100, maxPerS: 160, stepPerS: 20, stepEveryS: 10 });
    expect([0, 10, 20, 30, 40, 50, 60, 70].map((s) => f.rateAt(s * 1000))).toEqual([
      100, 120, 140, 160, 140, 120, 100, 120,
    ]);
    expect(f.nextChangeMs(12_000)).toBe(20_000);
  });

  it('the diurnal curve swings around its mean', () => {
    const f = rateFunction({ kind: 'diurnal', meanPerS: 100, amplitude: 0.5, periodS: 100 });
    const rates = Array.from({ length: 100 }, (_, s) => f.rateAt(s * 1000));
    expect(Math.max(...rates)).toBeCloseTo(150, 0);
    expect(Math.min(...rates)).toBeCloseTo(50, 0);
    expect(rates.reduce((a, b) => a + b, 0) / 100).toBeCloseTo(100, 0);
  });

  it('a load scale multiplies every rate', () => {
    expect(rateFunction({ kind: 'constant', ratePerS: 30 }, 2.5).rateAt(0)).toBe(75);
  });

  it('a trace replays its times in order and compresses under a load scale', () => {
    const s = new TraceStream([30, 10, 20], 2);
    expect([s.next(), s.next(), s.next(), s.next()]).toEqual([5, 10, 15, Infinity]);
  });
});

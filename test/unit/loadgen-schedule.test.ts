// `inss loadgen`'s send schedule: rates, seeds, Gamma arrivals with their CV, replayed traces.
import { describe, expect, it } from 'vitest';
import {
  type ModelLoad,
  type ScheduleSettings,
  SendSchedule,
  sendSchedule,
  traceLoad,
} from '../../tools/loadgen/schedule.js';

function gapsCv(times: readonly number[]): number {
  const gaps = times.slice(1).map((t, i) => t - times[i]!);
  const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
  return Math.sqrt(gaps.reduce((a, b) => a + (b - mean) ** 2, 0) / gaps.length) / mean;
}

describe('send schedule', () => {
  const models: ModelLoad[] = [
    { name: 'resnet50', ratePerS: 200 },
    { name: 'vgg16', ratePerS: 50 },
  ];
  const poisson = (seed: number, durationS = 10): ScheduleSettings => ({
    durationS,
    arrival: { kind: 'poisson' },
    seed,
  });

  it('offers each model its rate over a long window (within 4 standard deviations)', () => {
    const sends = sendSchedule(models, poisson(1, 1000));
    for (const [i, m] of models.entries()) {
      const n = sends.filter((s) => s.model === i).length;
      const expected = m.ratePerS * 1000;
      expect(Math.abs(n - expected)).toBeLessThan(4 * Math.sqrt(expected));
    }
  });

  it('is in time order, inside the window, and ends', () => {
    const s = new SendSchedule(models, poisson(3, 5));
    let last = 0;
    let n = 0;
    for (let x = s.next(); x !== undefined; x = s.next()) {
      expect(x.atMs).toBeGreaterThanOrEqual(last);
      expect(x.atMs).toBeLessThan(5000);
      expect([0, 1]).toContain(x.model);
      last = x.atMs;
      n++;
    }
    expect(n).toBeGreaterThan(1000);
    expect(s.next()).toBeUndefined();
  });

  it('the same seed gives the same schedule; another seed another one', () => {
    expect(sendSchedule(models, poisson(7))).toEqual(sendSchedule(models, poisson(7)));
    expect(sendSchedule(models, poisson(7))).not.toEqual(sendSchedule(models, poisson(8)));
  });

  it("a model's send times depend on its name, not on the other --model flags", () => {
    const alone = sendSchedule([models[1]!], poisson(5)).map((s) => s.atMs);
    const withOthers = sendSchedule([models[0]!, models[1]!], poisson(5))
      .filter((s) => s.model === 1)
      .map((s) => s.atMs);
    expect(withOthers).toEqual(alone);
  });

  it.each([1, 0.5, 2, 4])('Gamma arrivals with CV %f have that CV and the rate', (cv) => {
    const times = sendSchedule([{ name: 'm', ratePerS: 100 }], {
      durationS: 1000,
      arrival: { kind: 'gamma', cv },
      seed: 11,
    }).map((s) => s.atMs);
    expect(times.length / 1000 / 100).toBeGreaterThan(0.95);
    expect(times.length / 1000 / 100).toBeLessThan(1.05);
    expect(gapsCv(times) / cv).toBeGreaterThan(0.93);
    expect(gapsCv(times) / cv).toBeLessThan(1.07);
  });

  it('Poisson arrivals have CV 1', () => {
    const times = sendSchedule([{ name: 'm', ratePerS: 100 }], poisson(2, 1000)).map((s) => s.atMs);
    expect(gapsCv(times)).toBeGreaterThan(0.95);
    expect(gapsCv(times)).toBeLessThan(1.05);
  });

  it('rejects settings the CLI must have refused', () => {
    expect(() => new SendSchedule([], poisson(1))).toThrow(RangeError);
    expect(() => new SendSchedule([{ name: 'm', ratePerS: 0 }], poisson(1))).toThrow(/rate of model 'm'/);
    expect(() => new SendSchedule(models, poisson(1, 0))).toThrow(/durationS/);
    expect(() => new SendSchedule(models, { durationS: 1, arrival: { kind: 'gamma', cv: 0 }, seed: 1 })).toThrow(/cv/);
    expect(() => new SendSchedule([{ name: 't', ratePerS: 1, arrivalsMs: [5, -1] }], poisson(1))).toThrow(
      /trace of model 't'.*got -1/,
    );
    expect(() => new SendSchedule([{ name: 't', ratePerS: 1, arrivalsMs: [NaN] }], poisson(1))).toThrow(
      /trace of model 't'/,
    );
  });

  it(
    'a trace is replayed at exactly its instants, in order, merged with drawn models; instants past the window ' +
      'are not sent',
    () => {
      const trace = traceLoad('replayed', [0.5, 0.0125, 1.75, 0.0125, 3.2], 2);
      expect(trace.ratePerS).toBe(2); // 4 arrivals in the 2 s window
      const sends = sendSchedule([models[0]!, trace], poisson(4, 2));
      expect(sends.filter((s) => s.model === 1).map((s) => s.atMs)).toEqual([12.5, 12.5, 500, 1750]);
      // The drawn model is the same with or without the trace beside it.
      expect(sends.filter((s) => s.model === 0).map((s) => s.atMs)).toEqual(
        sendSchedule([models[0]!], poisson(4, 2)).map((s) => s.atMs),
      );
      expect(sends.map((s) => s.atMs)).toEqual([...sends.map((s) => s.atMs)].sort((a, b) => a - b));
      expect(traceLoad('late', [2, 3], 2).ratePerS).toBe(0);
    },
  );
});

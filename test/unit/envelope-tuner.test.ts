// Traffic envelopes (src/serving/envelope.ts) against a brute-force count, the tuner's rule
// (src/serving/tuner.ts) and the envelope monitor (src/serving/monitor.ts) that runs it.
import { afterEach, describe, expect, it } from 'vitest';
import { buildCluster } from '../../src/policy/cluster.js';
import type { Deployment, Observation, Policy } from '../../src/policy/types.js';
import { envelopeWindowsMs, TrafficEnvelope } from '../../src/serving/envelope.js';
import { RateMonitor } from '../../src/serving/monitor.js';
import { DEFAULT_SERVING_SETTINGS, servingSettings, withOverrides } from '../../src/serving/settings.js';
import { simulate } from '../../src/sim/simulator.js';
import {
  allowanceZ,
  envelopeRatePerS,
  HOLD_MS,
  impliedRatePerS,
  plannedCount,
  SHORTEST_WINDOW_EPOCHS,
} from '../../src/serving/tuner.js';
import { Rng } from '../../src/workload/random.js';
import { loadProfileFile } from '../support/clusters.js';
import { controlHarness, type Harness, simGpus } from '../support/control.js';

/** Per window: the most arrivals in (a - W, a] over the arrivals a in [fromMs, toMs). */
function bruteForce(times: readonly number[], windowsMs: readonly number[], fromMs: number, toMs: number): number[] {
  return windowsMs.map((w) => {
    const near = times.filter((x) => x > fromMs - w && x < toMs);
    let best = 0;
    for (const a of near) {
      if (a < fromMs) continue;
      best = Math.max(best, near.filter((x) => x > a - w && x <= a).length);
    }
    return best;
  });
}

/** Poisson arrivals at `ratePerS` over [fromMs, toMs), with bursts of `burst` at once now and then. */
function arrivals(rng: Rng, ratePerS: number, fromMs: number, toMs: number, burst = 1): number[] {
  const out: number[] = [];
  let t = fromMs;
  for (;;) {
    t += (-Math.log(1 - rng.next()) * 1000) / ratePerS;
    if (t >= toMs) return out;
    const k = rng.next() < 0.05 ? burst : 1;
    for (let i = 0; i < k; i++) out.push(t);
  }
}

describe('traffic envelopes (src/serving/envelope.ts)', () => {
  it('window sizes double from the shortest up to the longest', () => {
    expect(envelopeWindowsMs(62.5, 1000)).toEqual([62.5, 125, 250, 500, 1000]);
    expect(envelopeWindowsMs(1000)).toEqual([1000, 2000, 4000, 8000, 16000, 32000]);
    expect(envelopeWindowsMs(5, 3)).toEqual([5]);
    expect(() => envelopeWindowsMs(0)).toThrow(RangeError);
  });

  it('per epoch, the most arrivals in any window ending in it, as a brute-force count finds', () => {
    const windows = envelopeWindowsMs(10, 2500);
    const env = new TrafficEnvelope(2, windows, 4);
    const rng = new Rng(7);
    const slow = arrivals(rng, 40, 0, 8000, 6);
    const fast = arrivals(rng, 700, 0, 8000, 20);
    // A model whose traffic stops and starts again: windows reach back over the quiet epochs.
    expect(slow.length).toBeGreaterThan(200);
    expect(fast.length).toBeGreaterThan(5000);
    for (let e = 0; e < 8; e++) {
      const inEpoch = (t: number) => t >= e * 1000 && t < (e + 1) * 1000;
      for (const t of slow.filter(inEpoch)) env.arrival(0, t);
      for (const t of fast.filter(inEpoch)) env.arrival(1, t);
      env.endEpoch();
      expect(env.max(0)).toEqual(bruteForce(slow, windows, e * 1000, (e + 1) * 1000));
      expect(env.max(1)).toEqual(bruteForce(fast, windows, e * 1000, (e + 1) * 1000));
    }
    // Over the last 4 epochs kept: the most of any of them.
    expect(env.max(1, 4)).toEqual(bruteForce(fast, windows, 4000, 8000));
    expect(env.max(1, 10)).toEqual(env.max(1, 4));
  });

  it('arrivals at one instant all count; zeros in an epoch without any', () => {
    const env = new TrafficEnvelope(1, [1, 100], 2);
    for (let i = 0; i < 5; i++) env.arrival(0, 50);
    env.arrival(0, 51);
    env.endEpoch();
    expect(env.max(0)).toEqual([5, 6]);
    env.endEpoch();
    expect(env.max(0)).toEqual([0, 0]);
    expect(env.max(0, 2)).toEqual([5, 6]);
    expect(() => new TrafficEnvelope(1, [100, 50], 1)).toThrow(RangeError);
  });
});

describe("the tuner's rule (src/serving/tuner.ts)", () => {
  it('the implied rate is the one whose plan envelope just holds the count', () => {
    for (const [count, cv2, w] of [
      [15, 1, 62.5],
      [400, 9, 1000],
      [3, 0.5, 250],
    ] as const) {
      const z = allowanceZ(w, 1000);
      const r = impliedRatePerS(count, cv2, w, z);
      expect(plannedCount(r, cv2, w, z)).toBeCloseTo(count, 6);
    }
    expect(impliedRatePerS(1, 1, 100, 3)).toBe(0); // the arrival that ends the window alone
    // Short windows have more chances per epoch to look bursty by luck: a larger z.
    expect(allowanceZ(62.5, 1000)).toBeGreaterThan(allowanceZ(1000, 1000));
    expect(allowanceZ(4000, 1000)).toBeCloseTo(allowanceZ(2000, 1000), 12);
  });

  it('raises only where a window exceeds the plan, to the highest implied rate', () => {
    const windows = [100, 200, 400];
    const plan = [10, 20, 40].map((_, k) => plannedCount(100, 1, windows[k]!, allowanceZ(windows[k]!, 1000)));
    expect(envelopeRatePerS(plan, windows, 100, 1, 1000)).toBe(0);
    const over = [plan[0]!, plan[1]! + 10, plan[2]! + 12];
    const r = envelopeRatePerS(over, windows, 100, 1, 1000);
    const implied = [1, 2].map((k) => impliedRatePerS(over[k]!, 1, windows[k]!, allowanceZ(windows[k]!, 1000)));
    expect(r).toBe(Math.max(...implied));
    expect(r).toBeGreaterThan(100);
    // Burstier planned traffic allows more before the tuner acts.
    expect(envelopeRatePerS(over, windows, 100, 9, 1000)).toBe(0);
  });
});

describe('the envelope monitor (src/serving/monitor.ts)', () => {
  /** Feeds `perEpoch` Poisson arrivals per 1 s epoch (a burst of `burst` at once in `burstEpoch`). */
  function feed(mon: RateMonitor, rng: Rng, epochs: number, from: number, perS: number, burstAt = -1, burst = 0) {
    for (let e = from; e < from + epochs; e++) {
      for (const t of arrivals(rng, perS, e * 1000, (e + 1) * 1000)) mon.arrival(0, t);
      if (e === burstAt) for (let i = 0; i < burst; i++) mon.arrival(0, e * 1000 + 999);
      mon.endEpoch();
    }
  }

  it('reports the mean under steady Poisson traffic, as the mean monitor does', () => {
    const mean = new RateMonitor(1, 1000, 3000, 'mean');
    const env = new RateMonitor(1, 1000, 3000, 'envelope');
    const a = new Rng(11);
    const b = new Rng(11);
    let raised = 0;
    for (let e = 0; e < 30; e++) {
      feed(mean, a, 1, e, 200);
      feed(env, b, 1, e, 200);
      if (env.ratesPerS([200])[0]! > mean.ratesPerS([200])[0]! * 1.05) raised++;
    }
    expect(raised).toBeLessThanOrEqual(1);
  });

  it('a burst raises the rate at the epoch it ends, held for the hold time, then the mean again', () => {
    const mean = new RateMonitor(1, 1000, 3000, 'mean');
    const env = new RateMonitor(1, 1000, 3000, 'envelope');
    feed(mean, new Rng(5), 10, 0, 100, 9, 60);
    feed(env, new Rng(5), 10, 0, 100, 9, 60);
    // 60 tasks at once over ~100/s: the shortest window's count implies far more than the mean's rise.
    const m = mean.ratesPerS([100])[0]!;
    const r = env.ratesPerS([100])[0]!;
    expect(m).toBeLessThan(130);
    expect(r).toBeGreaterThan(1000 / (1000 * SHORTEST_WINDOW_EPOCHS)); // > 16 tasks/s per 62.5 ms window
    expect(r).toBeGreaterThan(2 * m);
    const holdEpochs = HOLD_MS / 1000;
    const rng = new Rng(6);
    feed(env, rng, holdEpochs - 1, 10, 100);
    expect(env.ratesPerS([100])[0]).toBe(r);
    feed(env, rng, 1, 10 + holdEpochs - 1, 100);
    expect(env.ratesPerS([100])[0]).toBeLessThan(130);
  });

  it('a step up in rate is told at the first epoch, less its burst allowance; the mean only a third of it', () => {
    const mean = new RateMonitor(1, 1000, 3000, 'mean');
    const env = new RateMonitor(1, 1000, 3000, 'envelope');
    for (const mon of [mean, env]) {
      const rng = new Rng(9);
      feed(mon, rng, 10, 0, 100);
      feed(mon, rng, 1, 10, 300);
    }
    const m = mean.ratesPerS([100])[0]!;
    const r = env.ratesPerS([100])[0]!;
    expect(m).toBeLessThan(180);
    expect(r).toBeGreaterThan(m + 40);
    expect(r).toBeLessThan(300);
  });

  it('the serving setting: mean by default, envelope from the scenario or an override, else an error', () => {
    expect(servingSettings({ epochS: 1, monitorWindowS: 3 }).monitor).toBe('mean');
    const env = servingSettings({ epochS: 1, monitorWindowS: 3, monitor: 'envelope' });
    expect(env.monitor).toBe('envelope');
    expect(withOverrides(env, { monitor: 'mean' }).monitor).toBe('mean');
    expect(() => withOverrides(env, { monitor: 'peak' as 'mean' })).toThrow(/monitor/);
  });
});

describe('the simulator and the control plane run one tuner', () => {
  const harnesses: Harness[] = [];
  afterEach(() => {
    for (const h of harnesses.splice(0)) h.control.stop();
  });

  /** Records every observation's rates and deploys `d`. */
  class Recorder implements Policy {
    readonly name = 'recorder';
    readonly rates: number[] = [];
    constructor(private readonly d: Deployment) {}
    decide(obs: Observation): Deployment {
      this.rates.push(obs.ratePerS[0]!);
      return this.d;
    }
  }

  it('a burst raises the rate both tell the policy, the same at every epoch, and only with the envelope', () => {
    // 20/s evenly spaced, and 40 more at once at 4.5 s.
    const times = Array.from({ length: 120 }, (_, k) => 25 + 50 * k);
    times.splice(90, 0, ...new Array<number>(40).fill(4510));
    const rtx = loadProfileFile('rtx2060s');
    const d: Deployment = { placements: [{ model: 0, gpu: 0, pct: 100, batch: 8 }] };
    const cluster = buildCluster([rtx], [{ name: 'resnet50', sloMs: 100 }]);
    const run = (monitor: 'mean' | 'envelope') => {
      const simPolicy = new Recorder(d);
      let i = 0;
      simulate({
        cluster,
        streams: [{ next: () => times[i++] ?? Infinity }],
        initialRatePerS: [20],
        policy: simPolicy,
        settings: {
          ...DEFAULT_SERVING_SETTINGS,
          monitor,
          swapMs: 1000,
          durationMs: 6500,
          groundTruth: { seed: 1, systematicErrorPct: 0, noisePct: 0, dramAlpha: 0 },
        },
      });
      const livePolicy = new Recorder(d);
      const h = controlHarness({
        models: [{ name: 'resnet50', sloMs: 100 }],
        profiles: new Map([[rtx.id, rtx]]),
        policy: () => livePolicy,
        gpus: simGpus('rtx2060s', 1),
        settings: { monitor },
        initialRatePerS: { resnet50: 20 },
      });
      harnesses.push(h);
      let next = 0;
      for (let e = 1; e <= 6; e++) {
        for (; next < times.length && times[next]! < e * 1000; next++) {
          h.now = times[next]!;
          h.submit(0);
        }
        h.now = e * 1000;
        h.control.epoch();
      }
      expect(livePolicy.rates).toEqual(simPolicy.rates);
      return simPolicy.rates;
    };
    const mean = run('mean');
    const env = run('envelope');
    expect(env.slice(0, 5)).toEqual(mean.slice(0, 5));
    // The decision at 5 s: the mean has risen by 40 / 3 s; the tuner tells far more.
    expect(mean[5]).toBeCloseTo(20 + 40 / 3, 6);
    expect(env[5]).toBeGreaterThan(100);
    expect(env[6]).toBe(env[5]); // held
  });
});

// Arrival processes (pure, seeded, reproducible): a rate that changes over time and a renewal
// process run in "operational time". Every rate function is piecewise constant, so the cumulative
// rate Lambda(t) is piecewise linear and can be inverted exactly (the time-rescaling theorem): draw
// an inter-arrival x with mean 1 in operational time, then advance real time until Lambda grows by x.
// - Poisson: x ~ Exp(1) (exact for any piecewise-constant rate).
// - Gamma with coefficient of variation CV: x ~ Gamma(shape 1/CV^2, mean 1). CV is the standard
//   deviation of the inter-arrival times divided by their mean, at a constant rate; CV = 1 is Poisson,
//   CV > 1 is burstier, CV < 1 smoother.
// - Trace: the given arrival times, as they are.
import type { Rng } from './random.js';

/** A piecewise-constant rate: `rateAt(t)` and the time of its next change after t (Infinity if none). */
export interface RateFunction {
  rateAt(tMs: number): number;
  nextChangeMs(tMs: number): number;
}

export type RateSpec =
  | { readonly kind: 'constant'; readonly ratePerS: number }
  | { readonly kind: 'steps'; readonly steps: readonly { readonly atS: number; readonly ratePerS: number }[] }
  | {
      readonly kind: 'triangle';
      readonly minPerS: number;
      readonly maxPerS: number;
      readonly stepPerS: number;
      readonly stepEveryS: number;
      readonly startPerS?: number | undefined;
    }
  | {
      readonly kind: 'diurnal';
      readonly meanPerS: number;
      readonly amplitude: number;
      readonly periodS: number;
      readonly phaseS?: number | undefined;
      readonly resolutionS?: number | undefined;
    };

/** Builds a RateFunction; `scale` multiplies every rate (the load multiplier of `inss bench --sweep` and `--suite`). */
export function rateFunction(spec: RateSpec, scale = 1): RateFunction {
  switch (spec.kind) {
    case 'constant':
      return { rateAt: () => spec.ratePerS * scale, nextChangeMs: () => Infinity };
    case 'steps': {
      const steps = [...spec.steps].sort((a, b) => a.atS - b.atS);
      return {
        rateAt: (t) => {
          let r = 0;
          for (const s of steps) if (s.atS * 1000 <= t) r = s.ratePerS;
          return r * scale;
        },
        nextChangeMs: (t) => {
          for (const s of steps) if (s.atS * 1000 > t) return s.atS * 1000;
          return Infinity;
        },
      };
    }
    case 'triangle': {
      // The InSS prototype's training workload: the rate moves by `stepPerS` every `stepEveryS`,
      // bouncing between min and max (starting at `startPerS`, default min, going up).
      const span = spec.maxPerS - spec.minPerS;
      const stepsPerLeg = spec.stepPerS > 0 ? Math.max(1, Math.round(span / spec.stepPerS)) : 1;
      const start = spec.startPerS ?? spec.minPerS;
      const offset = spec.stepPerS > 0 ? Math.round((start - spec.minPerS) / spec.stepPerS) : 0;
      const everyMs = spec.stepEveryS * 1000;
      return {
        rateAt: (t) => {
          const k = (Math.floor(t / everyMs) + offset) % (2 * stepsPerLeg);
          const up = k <= stepsPerLeg ? k : 2 * stepsPerLeg - k;
          return Math.min(spec.maxPerS, spec.minPerS + up * spec.stepPerS) * scale;
        },
        nextChangeMs: (t) => (Math.floor(t / everyMs) + 1) * everyMs,
      };
    }
    case 'diurnal': {
      // mean * (1 + amplitude * sin(2 pi (t + phase) / period)), held constant over each
      // `resolutionS` (default 1 s) so that the process stays piecewise constant.
      const resMs = (spec.resolutionS ?? 1) * 1000;
      const phaseMs = (spec.phaseS ?? 0) * 1000;
      return {
        rateAt: (t) => {
          const mid = (Math.floor(t / resMs) + 0.5) * resMs;
          return (
            Math.max(
              0,
              spec.meanPerS * (1 + spec.amplitude * Math.sin((2 * Math.PI * (mid + phaseMs)) / (spec.periodS * 1000))),
            ) * scale
          );
        },
        nextChangeMs: (t) => (Math.floor(t / resMs) + 1) * resMs,
      };
    }
  }
}

/** A stream of arrival times in ms, increasing; Infinity when it ends. */
export interface ArrivalStream {
  next(): number;
}

/** Renewal process in operational time over a piecewise-constant rate (see the file comment). */
export class RenewalStream implements ArrivalStream {
  private tMs: number;
  private readonly shape: number;

  constructor(
    private readonly rate: RateFunction,
    private readonly rng: Rng,
    cv = 1,
    startMs = 0,
  ) {
    if (!(cv > 0)) throw new RangeError('cv must be > 0');
    this.shape = 1 / (cv * cv);
    this.tMs = startMs;
  }

  next(): number {
    let x = this.shape === 1 ? this.rng.exponential() : this.rng.gammaMeanOne(this.shape); // operational time, mean 1
    let t = this.tMs;
    for (;;) {
      const perMs = this.rate.rateAt(t) / 1000;
      const change = this.rate.nextChangeMs(t);
      if (perMs > 0) {
        const dt = x / perMs;
        if (t + dt <= change) {
          this.tMs = t + dt;
          return this.tMs;
        }
        x -= (change - t) * perMs;
      }
      if (change === Infinity) {
        this.tMs = Infinity;
        return Infinity;
      }
      t = change;
    }
  }
}

/** Replays given arrival times (ms, sorted on construction). */
export class TraceStream implements ArrivalStream {
  private i = 0;
  private readonly times: Float64Array;

  constructor(timesMs: readonly number[], scale = 1) {
    // A load multiplier on a trace compresses time (scale 2 = twice the rate).
    this.times = Float64Array.from(timesMs, (t) => t / scale).sort();
  }

  next(): number {
    return this.i < this.times.length ? this.times[this.i++]! : Infinity;
  }
}

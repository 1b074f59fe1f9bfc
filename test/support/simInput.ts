// Pieces of a simulator run for tests: a seeded constant-rate Poisson stream, and the simulator's default
// settings over a run of `durationMs` with the given ground truth's errors.
import { DEFAULT_SIM_SETTINGS, type SimSettings } from '../../src/sim/simulator.js';
import { rateFunction, RenewalStream } from '../../src/workload/arrivals.js';
import { mixSeed, Rng } from '../../src/workload/random.js';

/** Poisson arrivals at a constant `ratePerS`, seeded. */
export function constantPoisson(ratePerS: number, seed: number): RenewalStream {
  return new RenewalStream(rateFunction({ kind: 'constant', ratePerS }), new Rng(mixSeed(seed)));
}

/** The default settings for a run of `durationMs`, the ground truth's errors in percent, and `over`. */
export function simSettings(durationMs: number, errorPct: number, over: Partial<SimSettings> = {}): SimSettings {
  const groundTruth = { systematicErrorPct: errorPct, noisePct: errorPct, dramAlpha: 0, seed: 1 };
  return { ...DEFAULT_SIM_SETTINGS, durationMs, groundTruth, ...over };
}

// Seeded pseudo-random numbers for workloads and the simulator's ground truth. Pure: the state is
// in the object; the same seed gives the same sequence on every machine.

/** Mixes a seed and stream ids into one 32-bit seed (so each model gets its own stream). */
export function mixSeed(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** sfc32: a small, fast generator with a 128-bit state; good enough for simulation. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.next();
  }

  /** Uniform in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** Uniform in (0, 1]: safe under a logarithm. */
  nextOpen(): number {
    return 1 - this.next();
  }

  /** Exponential with mean 1. */
  exponential(): number {
    return -Math.log(this.nextOpen());
  }

  /** Standard normal (Box-Muller, one of the pair). */
  normal(): number {
    return Math.sqrt(-2 * Math.log(this.nextOpen())) * Math.cos(2 * Math.PI * this.next());
  }

  /** Gamma with shape k and mean 1 (scale 1/k): Marsaglia and Tsang, boosted for k < 1. */
  gammaMeanOne(shape: number): number {
    if (shape === 1) return this.exponential();
    if (shape < 1) return this.gammaMeanOne(shape + 1) * ((shape + 1) / shape) * this.nextOpen() ** (1 / shape);
    const d = shape - 1 / 3;
    const c = 1 / Math.sqrt(9 * d);
    for (;;) {
      let x: number;
      let v: number;
      do {
        x = this.normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const u = this.nextOpen();
      if (u < 1 - 0.0331 * x * x * x * x || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v)))
        return (d * v) / shape;
    }
  }
}

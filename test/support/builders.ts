// Builders for test objects: a small synthetic profile whose running time is an exact power law,
// so expected values can be computed by hand.
import type { ProfileInput } from '../../src/profile/schema.js';
import type { Deployment, Observation } from '../../src/policy/types.js';

export interface SyntheticModel {
  /** o_r(b, pct) = runAtB1Full * b^batchExp * (100 / pct)^pctExp */
  runAtB1Full: number;
  batchExp: number;
  pctExp: number;
  kernels?: number;
  schedPerKernelMs?: number;
  alphaCache?: number;
  alphaU?: number;
  betaU?: number;
}

export function syntheticRunMs(m: SyntheticModel, batch: number, pct: number): number {
  return m.runAtB1Full * batch ** m.batchExp * (100 / pct) ** m.pctExp;
}

export class ProfileBuilder {
  private readonly models: Record<string, SyntheticModel> = {};
  private alphaS = 0.001;
  private betaS = 0.0005;
  private selfWeight = 0;

  model(name: string, m: SyntheticModel): this {
    this.models[name] = m;
    return this;
  }

  schedInterference(alphaS: number, betaS: number): this {
    this.alphaS = alphaS;
    this.betaS = betaS;
    return this;
  }

  cacheSelfWeight(w: number): this {
    this.selfWeight = w;
    return this;
  }

  build(): ProfileInput {
    const batches = [1, 2, 4, 8, 16, 32];
    const pcts = [10, 20, 40, 60, 80, 100];
    return {
      schemaVersion: 1,
      id: 'synthetic',
      gpu: {
        name: 'Synthetic GPU',
        smCount: 40,
        memMb: 8000,
        l2Mb: 4,
        pcieBytesPerMs: 1e7,
        mpsUnitPct: 5,
        schedInterference: { alphaSMs: this.alphaS, betaSMs: this.betaS },
        cacheSelfWeight: this.selfWeight,
      },
      lwr: { bandwidthLogBatch: 0.3, bandwidthLogPct: 0.3 },
      provenance: { kind: 'derived', source: 'test builder', command: 'test' },
      models: Object.fromEntries(
        Object.entries(this.models).map(([name, m]) => [
          name,
          {
            inputBytes: 602112,
            outputBytes: 4000,
            kernels: m.kernels ?? 10,
            schedPerKernelMs: m.schedPerKernelMs ?? 0.002,
            l2: { alphaU: m.alphaU ?? 0.2, betaU: m.betaU ?? 0.05 },
            alphaCache: m.alphaCache ?? 0.3,
            memory: { baseMb: 1000, perBatchMb: 10 },
            runSamples: batches.flatMap((b) => pcts.map((p) => ({ batch: b, pct: p, runMs: syntheticRunMs(m, b, p) }))),
          },
        ]),
      ),
    };
  }
}

export const makeProfile = () => new ProfileBuilder();

/** An observation with the given rates and deployment in force, nothing queued, no last-epoch measurements. */
export function observation(ratePerS: readonly number[], current: Deployment): Observation {
  return {
    nowMs: 0,
    ratePerS,
    queued: ratePerS.map(() => 0),
    lastEpoch: { served: [], violated: [], dropped: [], meanExecMs: [], meanLatencyMs: [] },
    current,
  };
}

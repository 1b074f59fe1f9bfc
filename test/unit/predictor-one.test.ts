import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LatencyModel } from '../../src/model/predictor.js';
import { ProfileSchema } from '../../src/profile/schema.js';
import { Rng } from '../../src/workload/random.js';

// predictOne is predictGpu for one model of a GPU (the batch decision's hot path): it must give the
// same number to the last bit, whatever the others' batches, with and without interference.
describe('LatencyModel.predictOne', () => {
  for (const id of ['rtx2060s', 'v100']) {
    it(`equals predictGpu's t_inf for that model exactly (${id}, random co-locations)`, () => {
      const profile = ProfileSchema.parse(
        JSON.parse(readFileSync(new URL(`../../profiles/${id}.json`, import.meta.url), 'utf8')),
      );
      const model = LatencyModel.compile(profile);
      const names = model.modelNames.length;
      const rng = new Rng(11);
      let compared = 0;
      for (let trial = 0; trial < 400; trial++) {
        const n = 1 + Math.floor(rng.next() * Math.min(4, names));
        const models = Array.from({ length: n }, () => Math.floor(rng.next() * names));
        // Shares on the 0.5% grid, between grid points, and batches past the compiled table (40).
        const pcts = models.map(() =>
          trial % 3 === 0 ? 2.5 * (1 + Math.floor(rng.next() * 12)) : 1 + rng.next() * 30,
        );
        const batches = models.map(() => (trial % 7 === 0 ? 40 : 1 + Math.floor(rng.next() * 32)));
        for (const interference of [true, false]) {
          const out = new Array<number>(n).fill(0);
          model.predictGpu(models, batches, pcts, n, out, interference);
          for (let k = 0; k < n; k++) {
            expect(model.predictOne(models, pcts, n, k, batches[k]!, interference)).toBe(out[k]);
            compared++;
          }
        }
      }
      expect(compared).toBeGreaterThan(1000);
    });
  }
});

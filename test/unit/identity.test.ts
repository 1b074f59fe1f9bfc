// Worker identity (src/protocol/agent.ts) and the simulated worker's model-keyed stand-in output
// (src/serving/standIn.ts): the pure rules that keep an answer from coming from another model's worker.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeWorker, sameWorker, workerKey, type WorkerIdentity } from '../../src/protocol/agent.js';
import { modelOffset, standInForward } from '../../src/serving/standIn.js';
import { REPO_ROOT } from '../support/paths.js';

const w: WorkerIdentity = { workerId: 'w2', model: 'mobilenet', gpu: 0, pct: 50, generation: 7 };

describe('worker identity', () => {
  it('two workers are the same only when id, model, GPU, share and generation all agree', () => {
    expect(sameWorker(w, { ...w })).toBe(true);
    expect(workerKey(w)).toBe(workerKey({ ...w }));
    const others: WorkerIdentity[] = [
      { ...w, workerId: 'w3' },
      { ...w, model: 'resnet50' },
      { ...w, gpu: 3 },
      { ...w, pct: 30 },
      { ...w, generation: 8 },
    ];
    for (const o of others) {
      expect(sameWorker(w, o), JSON.stringify(o)).toBe(false);
      expect(workerKey(o)).not.toBe(workerKey(w));
    }
  });

  it('describes a worker by everything it is', () => {
    expect(describeWorker(w)).toBe('w2 (mobilenet on GPU 0 at 50%, generation 7)');
  });
});

describe("the simulated worker's stand-in output", () => {
  const models = new Set<string>();
  for (const f of readdirSync(join(REPO_ROOT, 'profiles')).filter((x) => x.endsWith('.json'))) {
    const p = JSON.parse(readFileSync(join(REPO_ROOT, 'profiles', f), 'utf8')) as { models?: Record<string, unknown> };
    for (const m of Object.keys(p.models ?? {})) models.add(m);
  }

  it('gives every profiled model its own offset, a whole number in [1, 1000]', () => {
    expect(models.size).toBeGreaterThanOrEqual(8);
    const offsets = [...models].map(modelOffset);
    for (const o of offsets) expect(Number.isInteger(o) && o >= 1 && o <= 1000).toBe(true);
    expect(new Set(offsets).size).toBe(models.size);
  });

  it('is input[k] + input[N-1-k] + the model offset, per sample, and differs between models', () => {
    const x = Float32Array.from([0.5, 1, 2, 4, 8, 16]); // two samples of 3
    const y = standInForward('resnet50', x, 2, 3, 4);
    const c = modelOffset('resnet50');
    expect(Array.from(y)).toEqual([
      0.5 + 2 + c,
      1 + 1 + c,
      2 + 0.5 + c,
      0.5 + 2 + c,
      4 + 16 + c,
      8 + 8 + c,
      16 + 4 + c,
      4 + 16 + c,
    ]);
    expect(Array.from(standInForward('mobilenet', x, 2, 3, 4))).not.toEqual(Array.from(y));
  });
});

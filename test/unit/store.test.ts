// The SQLite store on a real file.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../scheduler/store.js';

describe('Store', () => {
  it('records a training run across reopenings of the same file', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'inss-store-')), 'sub', 'inss.db');
    const a = new Store(path);
    const id = a.startTrainingRun({
      scenario: 'paper-6',
      seed: 3,
      settings: { hidden: [8] },
      outDir: '/x',
      nowIso: '2026-01-01T00:00:00.000Z',
    });
    a.updateTrainingProgress(id, 7);
    a.close();
    const b = new Store(path); // migrations are not re-applied
    expect(b.trainingRun(id)).toMatchObject({
      scenario: 'paper-6',
      seed: 3,
      status: 'running',
      episodesDone: 7,
      settings: { hidden: [8] },
    });
    b.finishTrainingRun(id, {
      status: 'finished',
      final: { reward: 1 },
      policyPath: '/x/policy.json',
      nowIso: '2026-01-01T01:00:00.000Z',
    });
    expect(b.trainingRuns()).toHaveLength(1);
    expect(b.trainingRun(id)).toMatchObject({
      status: 'finished',
      final: { reward: 1 },
      policyPath: '/x/policy.json',
      finishedAt: '2026-01-01T01:00:00.000Z',
    });
    expect(b.trainingRun(999)).toBeNull();
    b.close();
  });
});

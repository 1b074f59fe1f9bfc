// Every capacity recorded in docs/results (each suite.json's cells, any policy, either pooled-GPU mode, and
// the oracle's best fixed plans) is at most its scenario's ceiling at that seed (tools/bench/ceiling.ts):
// a recorded capacity above it would mean the bound is wrong.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadScenario } from '../../cli/scenarios.js';
import type { PooledGpuMode } from '../../src/model/pooledGpu.js';
import { scenarioCluster } from '../../src/scenario/build.js';
import { ATTAINMENTS, capacityOf, type CurvePoint } from '../../tools/bench/capacity.js';
import { scenarioCeiling } from '../../tools/bench/ceiling.js';

const RESULTS = 'docs/results';

function files(dir: string, name: (f: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name), name) : name(e.name) ? [join(dir, e.name)] : [],
  );
}

/** A scenario by name: built in, or a scenario file of that name under docs/results. */
function scenarioPath(name: string): string {
  const written = files(RESULTS, (f) => f === `${name}.json`).filter((f) => !f.includes('/oracle/'));
  return written[0] ?? name;
}

interface Recorded {
  readonly where: string;
  readonly scenario: string;
  readonly mode: PooledGpuMode | undefined;
  readonly seed: number;
  readonly capacity: Readonly<Record<string, number>>;
}

function recorded(): Recorded[] {
  const out: Recorded[] = [];
  for (const f of files(RESULTS, (n) => n === 'suite.json')) {
    const j = JSON.parse(readFileSync(f, 'utf8')) as {
      suite: { timeshareGpu: string };
      cells: { scenario: string; policy: string; seed: number; runnable: boolean; curve: CurvePoint[] }[];
    };
    const mode = ['overlap', 'serial'].includes(j.suite.timeshareGpu)
      ? (j.suite.timeshareGpu as PooledGpuMode)
      : undefined;
    for (const c of j.cells.filter((x) => x.runnable)) {
      const capacity: Record<string, number> = {};
      for (const a of ATTAINMENTS) capacity[String(Math.round(a * 100))] = capacityOf(c.curve, a);
      out.push({ where: `${f} ${c.policy}`, scenario: c.scenario, mode, seed: c.seed, capacity });
    }
  }
  // The oracle's best fixed plans: capacity at 99% per seed, under the default mode (overlap), or under serial
  // for the sweeps in oracle/serial (of scenario copies with `timeshareGpu: serial`, kept beside them).
  for (const f of files(join(RESULTS, 'oracle'), (n) => n.endsWith('.json'))) {
    const j = JSON.parse(readFileSync(f, 'utf8')) as { scenario: string; seeds?: number[]; capacityBySeed: number[] };
    if (!j.seeds) continue; // a scenario file the sweeps ran on
    const scenario = j.scenario.replace(/^.*\//, '').replace(/\.json$/, '');
    const mode: PooledGpuMode | undefined = f.includes(join('oracle', 'serial')) ? 'serial' : undefined;
    j.seeds.forEach((seed, i) =>
      out.push({ where: `${f} oracle`, scenario, mode, seed, capacity: { 99: j.capacityBySeed[i]! } }),
    );
  }
  return out;
}

describe('the capacity ceiling against every recorded capacity', () => {
  it('no recorded capacity is above its ceiling', async () => {
    const all = recorded();
    expect(all.length).toBeGreaterThan(1000);
    const keys = [...new Set(all.map((r) => `${r.scenario}|${r.mode ?? ''}`))];
    const over: string[] = [];
    for (const key of keys) {
      const [name, mode] = key.split('|') as [string, string];
      const loaded = loadScenario(scenarioPath(name));
      const s = mode
        ? {
            ...loaded.scenario,
            timeshareGpu: mode as PooledGpuMode,
            gpus: loaded.scenario.gpus.map((g) => ({ ...g, timeshareGpu: mode as PooledGpuMode })),
          }
        : loaded.scenario;
      const mine = all.filter((r) => `${r.scenario}|${r.mode ?? ''}` === key);
      const seeds = [...new Set(mine.map((r) => r.seed))];
      const cluster = scenarioCluster(s, loaded.profiles);
      // The 99% ceiling is at most the 95% one: the 95% LP is solved only for a 95% capacity above the 99% ceiling.
      const c99 = await scenarioCeiling(s, cluster, seeds, [0.99]);
      const at = (c: typeof c99, seed: number, a: string) => c.find((x) => x.seed === seed)!.ceiling[a]!;
      const above99 = mine.filter((r) => (r.capacity['95'] ?? 0) > at(c99, r.seed, '99'));
      const c95 = above99.length > 0 ? await scenarioCeiling(s, cluster, seeds, [0.95]) : [];
      for (const r of mine)
        for (const [a, cap] of Object.entries(r.capacity)) {
          const ceiling = a === '95' && above99.includes(r) ? at(c95, r.seed, '95') : at(c99, r.seed, '99');
          if (cap > ceiling) over.push(`${r.where}: ${name} seed ${r.seed} at ${a}%: ${cap} > ${ceiling.toFixed(2)}`);
        }
    }
    expect(over).toEqual([]);
  }, 600_000);
});

// bench:twin's calibration of the client's own leg (docs/serving.md, "The client's leg"): the bare
// server (benchmarks/bareServer.ts, built to dist/) in its own process, driven by `inss loadgen` with
// replayed arrivals. It must answer every request with a response loadgen judges well-formed (the
// scheduler's own codec) and time every request it answered, each for less than its client saw, or the
// leg it yields (client mean - server mean) means nothing.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelMetadata } from '../../scheduler/kserve.js';
import { modelSignature } from '../../src/protocol/tensor.js';
import { LoadgenReportSchema } from '../../tools/loadgen/report.js';
import { runLoadgen } from '../support/loadgen.js';
import { REPO_ROOT } from '../support/paths.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-bare-'));
let server: ChildProcess;
let url: string;

beforeAll(async () => {
  const metadata = [modelMetadata({ name: 'resnet50', signature: modelSignature(4 * 3 * 224 * 224, 4000), sloMs: 80 }), modelMetadata({ name: 'small', signature: modelSignature(64, 40), sloMs: 20 })];
  writeFileSync(join(dir, 'metadata.json'), JSON.stringify(metadata));
  server = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'benchmarks', 'bareServer.js'), join(dir, 'metadata.json')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    let out = '';
    server.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /port (\d+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    server.on('exit', (code) => reject(new Error(`bareServer exited with ${code}`)));
  });
  url = `http://127.0.0.1:${port}`;
});

afterAll(() => {
  server.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

describe("bench:twin's bare server", () => {
  it('answers every replayed request well-formed, and times each for less than its client saw', async () => {
    writeFileSync(join(dir, 'resnet50.txt'), Array.from({ length: 40 }, (_, i) => (i * 0.02).toFixed(3)).join('\n'));
    writeFileSync(join(dir, 'small.txt'), Array.from({ length: 25 }, (_, i) => (0.005 + i * 0.03).toFixed(3)).join('\n'));
    const r = await runLoadgen(['--url', url, '--trace', `resnet50=${join(dir, 'resnet50.txt')}`, '--trace', `small=${join(dir, 'small.txt')}`, '--duration', '1', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const report = LoadgenReportSchema.parse(JSON.parse(r.stdout));
    const stats = (await (await fetch(`${url}/stats`)).json()) as Record<string, { count: number; serverMs: number }>;
    for (const [name, sent] of [
      ['resnet50', 40],
      ['small', 25],
    ] as const) {
      const m = report.models.find((x) => x.model === name)!;
      expect(m.sent).toBe(sent);
      expect(m.ok).toBe(sent);
      expect(stats[name]!.count).toBe(sent);
      expect(stats[name]!.serverMs).toBeGreaterThan(0);
      // The server's span of a request lies inside the client's.
      expect(stats[name]!.serverMs).toBeLessThan(m.latency.meanMs! * m.ok);
    }
  });
});

// The scheduler's shared-memory region (scheduler/shmRegion.ts) on real files: made exclusively with
// mode 0600, stale regions of dead processes removed, unlinked at close, slots placed and freed, and
// the bytes written through the scheduler's mapping seen through a second, read-only one (a worker's).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ShmRegion } from '../../scheduler/shmRegion.js';
import { SLOT_ALIGN } from '../../src/protocol/shm.js';
import { loadShmAddon } from '../../src/protocol/shmMap.js';

const addon = loadShmAddon();
const dir = mkdtempSync(join(tmpdir(), 'inss-shm-region-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function open(mb: number): ShmRegion {
  const r = ShmRegion.open(mb, dir);
  if (!(r instanceof ShmRegion)) throw new Error(r.why);
  return r;
}

it('is off, saying why, with --shm-mb 0 (and without the addon)', () => {
  expect(ShmRegion.open(0, dir)).toEqual({ why: '--shm-mb 0' });
  if (!addon.ok) expect(ShmRegion.open(1, dir)).toEqual({ why: `the shared-memory addon is ${addon.why}` });
});

describe.runIf(addon.ok)(
  addon.ok ? 'with the addon' : `skipped: the shared-memory addon is ${addon.ok ? '' : addon.why}`,
  () => {
    it('makes its file with mode 0600, named by pid, and unlinks it at close', () => {
      const r = open(1);
      expect(r.path).toMatch(new RegExp(`/inss-${process.pid}-\\d+\\.shm$`));
      expect(statSync(r.path).mode & 0o777).toBe(0o600);
      expect(r.bytes).toBe(1 << 20);
      r.close();
      expect(existsSync(r.path)).toBe(false);
    });

    it(
      'removes regions of processes that no longer run, and of this pid that it did not make; keeps a live ' +
        "process's",
      () => {
        const dead = spawnSync(process.execPath, ['-e', '0']).pid;
        const deadFile = join(dir, `inss-${dead}-0.shm`);
        const liveFile = join(dir, `inss-${process.ppid}-0.shm`);
        const mineFile = join(dir, `inss-${process.pid}-9999.shm`);
        for (const f of [deadFile, liveFile, mineFile]) writeFileSync(f, 'x');
        const r = open(1);
        expect([existsSync(deadFile), existsSync(liveFile), existsSync(mineFile)]).toEqual([false, true, false]);
        r.close();
      },
    );

    it(
      'places a body so the byte at alignAt is on a cache line, ' + 'frees it by its view, and says when it is full',
      () => {
        const r = open(1);
        const a = r.take(602_112, 171)!;
        expect((a.byteOffset + 171) % SLOT_ALIGN).toBe(0);
        expect(r.holds(a)).toBe(true);
        expect(r.holds(Buffer.alloc(10))).toBe(false);
        expect(r.take(600_000)).toBeNull(); // 1 MB: no room for a second
        r.release(a.subarray(1)); // not the body's own view: ignored
        expect(r.inUse.slots).toBe(1);
        r.release(a);
        expect(r.inUse).toEqual({ slots: 0, bytes: 0 });
        expect(r.take(600_000)).not.toBeNull();
        r.close();
      },
    );

    it("a read-only mapping of the file (a worker's) sees the bytes written into a slot", () => {
      const r = open(1);
      const body = r.take(100_000)!;
      body.fill(7);
      body[99_999] = 42;
      const seen = Buffer.from(addon.ok ? addon.map(r.path, false) : new ArrayBuffer(0));
      expect(seen[body.byteOffset]).toBe(7);
      expect(seen[body.byteOffset + 99_999]).toBe(42);
      r.close();
    });
  },
);

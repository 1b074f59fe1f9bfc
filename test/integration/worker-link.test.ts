// The scheduler's direct connections to workers (scheduler/workerLink.ts), over real Unix sockets to a
// worker-side listener in this test, both ways it runs: on the link thread (the compiled build, as the
// service runs it) and on the event loop (from sources). Batches arrive whole and byte-exact, shared
// memory and ordinary buffers alike; answers come back whole; every connection's end is reported once.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type DirectEvents, DirectLinks } from '../../scheduler/workerLink.js';
import { encodeFrame, FrameDecoder } from '../../src/protocol/frames.js';
import { REPO_ROOT } from '../support/paths.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-link-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Received {
  header: Record<string, unknown>;
  payload: Buffer;
}

/** A worker's data socket: records the frames each connection sends; `answer` writes one back. */
async function fakeWorker(
  path: string,
): Promise<{ server: Server; frames: Received[]; sockets: Socket[]; got: (n: number) => Promise<void> }> {
  const frames: Received[] = [];
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    sockets.push(s);
    const d = new FrameDecoder();
    s.on('data', (c: Buffer) => {
      for (const f of d.push(c))
        frames.push({ header: f.header as Record<string, unknown>, payload: Buffer.from(f.payload) });
    });
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(path, r));
  const got = async (n: number) => {
    for (let i = 0; i < 3000 && frames.length < n; i++) await new Promise((r) => setTimeout(r, 10));
    if (frames.length < n) throw new Error(`expected ${n} frames, got ${frames.length}`);
  };
  return { server, frames, sockets, got };
}

function recorder(): DirectEvents & { frames: Received[]; closes: string[] } {
  const frames: Received[] = [];
  const closes: string[] = [];
  return {
    frames,
    closes,
    frame: (header, payload) =>
      frames.push({ header: header as Record<string, unknown>, payload: Buffer.from(payload) }),
    closed: (why) => closes.push(why),
  };
}

/** Polls `f` (called until it first returns true, and not after) every 10 ms, for up to 30 s. */
async function until(f: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 3000; i++) {
    if (f()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const quiet = {
  warns: [] as string[],
  warn(o: object, msg: string) {
    this.warns.push(msg);
  },
  info() {},
  debug() {},
};

describe.each([
  [
    'on the link thread',
    (log: typeof quiet) =>
      new DirectLinks(log, { threadFile: join(REPO_ROOT, 'dist', 'scheduler', 'workerLinkThread.js') }),
    true,
  ],
  ['on the event loop', (log: typeof quiet) => new DirectLinks(log, { threadFile: null }), false],
] as const)('direct links %s', (_name, make, threaded) => {
  it(
    'attaches with the secret, carries a batch byte-exact from ' + 'shared and ordinary memory, and hands back answers',
    async () => {
      const path = join(dir, `w-${threaded}.sock`);
      const w = await fakeWorker(path);
      const links = make(quiet);
      expect(links.threaded).toBe(threaded);
      const ev = recorder();
      expect(links.send('k', { type: 'batch' }, [])).toBe(false); // nothing open
      links.open('k', { address: `unix:${path}`, secret: 's3cret' }, ev);
      expect(links.has('k')).toBe(true);
      await w.got(1);
      expect(w.frames[0]!.header).toMatchObject({ type: 'attach', secret: 's3cret' });
      await until(() => links.send('k', { type: 'probe' }, []), 'the connection to be up');
      // A body read into shared memory (as bodyReader.ts reads large ones), and a view into the middle of
      // a larger ordinary buffer.
      const shared = Buffer.from(new SharedArrayBuffer(300_000));
      for (let i = 0; i < shared.length; i++) shared[i] = (i * 7) & 255;
      const big = Buffer.alloc(1_000_000);
      for (let i = 0; i < big.length; i++) big[i] = (i * 13) & 255;
      const middle = big.subarray(400_000, 470_000);
      expect(links.send('k', { type: 'batch', id: 'b1' }, [shared, middle])).toBe(true);
      await w.got(3);
      expect(w.frames[2]!.header).toEqual({ type: 'batch', id: 'b1' });
      expect(w.frames[2]!.payload.equals(Buffer.concat([shared, middle]))).toBe(true);
      // Answers, one spanning many socket reads and one small, in order.
      const answer = Buffer.alloc(2_000_000, 5);
      w.sockets[0]!.write(
        Buffer.concat([
          encodeFrame({ type: 'result', id: 'b1' }, answer),
          encodeFrame({ type: 'result', id: 'b2' }, Buffer.from([1, 2, 3])),
        ]),
      );
      await until(() => ev.frames.length === 2, 'two answers');
      expect(ev.frames.map((f) => f.header.id)).toEqual(['b1', 'b2']);
      expect(ev.frames[0]!.payload.equals(answer)).toBe(true);
      expect([...ev.frames[1]!.payload]).toEqual([1, 2, 3]);
      // The worker goes: the end is reported once, the key is free, a new open connects again.
      for (const s of w.sockets) s.destroy();
      await until(() => ev.closes.length === 1, 'the close');
      expect(links.has('k')).toBe(false);
      expect(links.send('k', { type: 'batch' }, [])).toBe(false);
      const again = recorder();
      links.open('k', { address: `unix:${path}`, secret: 's3cret' }, again);
      await w.got(4);
      expect(w.frames[3]!.header).toMatchObject({ type: 'attach' });
      links.close('k');
      await until(() => again.closes.length === 1, 'the second close');
      expect(ev.closes).toHaveLength(1);
      await links.stop();
      await new Promise<void>((r) => w.server.close(() => r()));
    },
  );

  it('an address that cannot be reached is reported once, warned about, and not tried again', async () => {
    const log = { ...quiet, warns: [] as string[] };
    const links = make(log);
    const ev = recorder();
    const address = `unix:${join(dir, 'nobody-listens.sock')}`;
    links.open('k', { address, secret: 'x' }, ev);
    await until(() => ev.closes.length === 1, 'the refusal');
    expect(log.warns).toContain('cannot reach a worker data socket; its batches go through the agent');
    links.open('k', { address, secret: 'x' }, recorder());
    expect(links.has('k')).toBe(false);
    links.open('k2', { address: 'not-an-address', secret: 'x' }, recorder());
    expect(links.has('k2')).toBe(false);
    expect(log.warns).toContain('worker data endpoint is not an address; its batches go through the agent');
  });
});

it('stop ends the link thread, so a process with open connections exits', async () => {
  const path = join(dir, 'exit.sock');
  const w = await fakeWorker(path);
  const script = `
    import { DirectLinks } from ${JSON.stringify(join(REPO_ROOT, 'dist', 'scheduler', 'workerLink.js'))};
    const links = new DirectLinks({ warn() {}, debug() {} });
    if (!links.threaded) throw new Error('no link thread');
    links.open('k', { address: ${JSON.stringify(`unix:${path}`)}, secret: 's' }, { frame() {}, closed() {} });
    const up = setInterval(() => {
      if (!links.send('k', { type: 'probe' }, [])) return; // connected: the thread and its socket are up
      clearInterval(up);
      if (process.argv[1] === 'stop') void links.stop();
    }, 20);`;
  /**
   * The child's exit code, or 'running' when it has not exited `ms` after `ready` resolved (then it is
   * killed): the timer starts only once the child is where the test wants it, however slow the machine.
   */
  const run = (how: string, ready: () => Promise<void>, ms: number) =>
    new Promise<number | 'running'>((resolve, reject) => {
      // As a script given on the command line: its --input-type flag is not the link thread's.
      const child = spawn(process.execPath, ['--input-type=module', '-e', script, how], { stdio: 'ignore' });
      let timer: NodeJS.Timeout | undefined;
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve(code ?? 'running');
      });
      ready().then(() => {
        timer = setTimeout(() => {
          child.kill('SIGKILL');
          resolve('running');
        }, ms);
      }, reject);
    });
  expect(await run('stop', () => Promise.resolve(), 60_000)).toBe(0);
  await w.got(1); // it did connect (its attach; the probe may go with the thread)
  // Without stop the thread keeps it alive: still running 3 s after it connected (attach and probe).
  expect(await run('keep', () => w.got(3), 3_000)).toBe('running');
  w.server.close();
});

// Two front doors in the cluster of network namespaces (benchmarks/netnsTls.ts): the scheduler (door 0) and
// `inss frontdoor` on a host of its own, two GPU hosts and a client host, over TLS with per-host tokens, batches
// over TCP. The scheduler gives each door a GPU host's workers and pushes the tables (docs/front-doors.md). A
// client load split across the two doors is answered in full, each task once, by the right model: the doors'
// counts add up to the tasks sent. Then the door host is killed mid-load: every task the client sent is answered
// or fails where the client sees it (an error status, a reset or refused connection; none answered by the wrong
// model), and afterwards the scheduler serves both models on both GPU hosts itself.
// Skipped, saying why, unless run as root with `ip netns` usable, openssl and a build (dist/).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Outcome, TlsCluster, wrongAnswers } from '../../benchmarks/netnsTls.js';
import { netnsSkipReason } from '../support/netnsSkip.js';
import { writeScenario } from '../support/scenario.js';
import { waitFor } from '../support/system.js';

const PREFIX = 'inssnd';
const MODELS = ['resnet50', 'mobilenet'];

const SKIP = netnsSkipReason('netns-doors', PREFIX);

/** The failures among `out`, by status and error. */
const failures = (out: readonly Outcome[]) => out.filter((o) => o.status !== 200);

describe.skipIf(SKIP !== null)('two front doors in a cluster of network namespaces', () => {
  const dir = mkdtempSync(join(tmpdir(), 'inss-netns-doors-'));
  let c: TlsCluster;
  let door: string;

  beforeAll(async () => {
    const scenario = writeScenario(join(dir, 'duo.json'), {
      name: 'duo',
      gpus: { rtx2060s: 2 },
      models: MODELS.map((name) => ({ name, sloMs: 10_000, ratePerS: 20 })),
    });
    c = new TlsCluster({
      prefix: PREFIX,
      subnet: '10.213.99',
      scenario,
      models: MODELS,
      policy: 'timeshare',
      doors: ['door1'],
    });
    door = c.url('door1');
    await waitFor(c.startScheduler(), /endpoint (https:\/\/[^ ]+)\/v2/);
    for (const a of ['gpu1', 'gpu2']) c.startAgent(a);
    await c.until('both GPU hosts serving both models', () => c.serving(['gpu1', 'gpu2']), 90_000);
    c.startDoor('door1');
    // The door answers only once it holds a GPU host's workers (its table pushed) and has opened their data links.
    await c.until(
      'the door serving',
      async () => (await c.load(2, 50, 10_000, door)).every((o) => o.status === 200),
      90_000,
    );
  });

  afterAll(() => {
    c?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a load split across the two doors: every task answered 200, once, by the model it was sent to', async () => {
    const before = [await c.answered(), await c.answered(door)];
    const [atScheduler, atDoor] = await Promise.all([c.load(150, 20), c.load(150, 20, 60_000, door)]);
    const out = [...atScheduler, ...atDoor];
    expect(out).toHaveLength(300);
    expect(failures(out)).toEqual([]);
    expect(wrongAnswers(out)).toEqual([]);
    // Each task answered by one door: what the two counted adds up to what was sent.
    await c.until('the answers counted', async () => {
      const after = [await c.answered(), await c.answered(door)];
      return after[0]! - before[0]! + (after[1]! - before[1]!) === 300;
    });
  });

  const killed = 'the door host killed mid-load: every task answered or failed where the client sees it';
  it(`${killed}, then the scheduler serves`, async () => {
    const sent = Promise.all([c.load(300, 20, 30_000), c.load(300, 20, 30_000, door)]);
    await new Promise((r) => setTimeout(r, 2000));
    c.cluster.killHost('door1');
    const out = (await sent).flat();
    expect(out).toHaveLength(600);
    expect(wrongAnswers(out)).toEqual([]);
    // Nothing failed silently: every failure has a status the client got, or the error it saw.
    expect(failures(out).filter((o) => o.status === 0 && !o.error)).toEqual([]);
    const toScheduler = out.slice(0, 300);
    expect(toScheduler.filter((o) => o.status === 200).length).toBeGreaterThan(0);
    console.log(
      `netns-doors kill: at the scheduler ${toScheduler.filter((o) => o.status === 200).length}/300 answered; ` +
        `at the door ${out.slice(300).filter((o) => o.status === 200).length}/300 answered before and errors after`,
    );
    // The dead door's GPU host is the scheduler's again: every task to the scheduler answered.
    await c.until('the scheduler serving every model', async () =>
      (await c.load(20, 25, 10_000)).every((o) => o.status === 200),
    );
    const after = await c.load(40, 25);
    expect(failures(after)).toEqual([]);
    expect(wrongAnswers(after)).toEqual([]);
  });
});

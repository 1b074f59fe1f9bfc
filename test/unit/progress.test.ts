// The progress reporter (cli/progress.ts): one line per step on a stream that is not a terminal, with
// elapsed time and time left from the steps done in this run; nothing when quiet.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { formatDuration, progressLine, startProgress } from '../../cli/progress.js';

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.setEncoding('utf8').on('data', (d: string) => (text += d));
  return { stream, text: () => text };
}

describe('progress lines', () => {
  it('formats durations and lines', () => {
    expect(formatDuration(4.4)).toBe('4 s');
    expect(formatDuration(185)).toBe('3 min 05 s');
    expect(formatDuration(7620)).toBe('2 h 07 min');
    expect(progressLine(3, 10, 'episode 3: reward 5', 12, 28)).toBe(
      '[3/10] episode 3: reward 5 (12 s elapsed, about 28 s left)',
    );
    expect(progressLine(10, 10, 'x', 40, 0)).toBe('[10/10] x (40 s elapsed, done)');
    expect(progressLine(0, 10, 'x', 0, null)).toBe('[0/10] x (0 s elapsed)');
  });

  it(
    'writes one line per step off a terminal, the time left from the pace of this run (a resumed job counts from ' +
      'where it resumed)',
    async () => {
      const out = capture();
      let t = 1000;
      const p = startProgress({ total: 6, start: 2, stream: out.stream, now: () => t });
      t += 10_000;
      p.update(3, 'episode 3');
      t += 10_000;
      p.increment('episode 4');
      p.increment('episode 5');
      p.update(6, 'episode 6');
      p.stop();
      await new Promise((r) => setImmediate(r));
      expect(out.text().split('\n')).toEqual([
        '[3/6] episode 3 (10 s elapsed, about 30 s left)',
        '[4/6] episode 4 (20 s elapsed, about 20 s left)',
        '[5/6] episode 5 (20 s elapsed, about 7 s left)',
        '[6/6] episode 6 (20 s elapsed, done)',
        '',
      ]);
    },
  );

  it('writes nothing when quiet', async () => {
    const out = capture();
    const p = startProgress({ total: 2, stream: out.stream, quiet: true });
    p.increment('a');
    p.stop();
    await new Promise((r) => setImmediate(r));
    expect(out.text()).toBe('');
  });
});

// `inss loadgen`'s flags: their validation (exit status 2 with a line naming the flag) and what they
// become. The schedule, requests and report have their own files (test/unit/loadgen-*.test.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { describe, expect, it, vi } from 'vitest';
import { type LoadgenOptions, registerLoadgen } from '../../cli/loadgen.js';
import { main } from '../../cli/main.js';
import { TextSink } from '../support/loadgen.js';

async function parseFlags(args: string[]): Promise<{ opts?: LoadgenOptions; code?: number; stderr: string }> {
  const stderr = new TextSink();
  let opts: LoadgenOptions | undefined;
  const program = new Command('inss').exitOverride();
  registerLoadgen(program, {
    stdout: new TextSink(),
    stderr,
    setExitCode: () => undefined,
    run: (o) => {
      opts = o;
      return Promise.resolve(0);
    },
  });
  try {
    await program.parseAsync(['node', 'inss', 'loadgen', ...args]);
    return { ...(opts ? { opts } : {}), stderr: stderr.text };
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    return { code: err.exitCode, stderr: stderr.text };
  }
}

describe('flags', () => {
  const base = ['--url', 'http://127.0.0.1:8000/', '--model', 'resnet50=100'];

  it('has the documented defaults', async () => {
    const r = await parseFlags(base);
    expect(r.opts).toEqual({
      url: 'http://127.0.0.1:8000',
      protocol: 'http',
      models: [{ name: 'resnet50', ratePerS: 100 }],
      traces: new Map(),
      durationS: 10,
      arrival: { kind: 'poisson' },
      seed: 1,
      encoding: 'binary',
      input: 'fp32',
      sloMs: new Map(),
      timeoutMs: 30_000,
      json: false,
      out: undefined,
      connections: 256,
    });
  });

  it('--protocol grpc: the gRPC service, on 4 HTTP/2 channels unless --connections says', async () => {
    expect((await parseFlags([...base, '--protocol', 'grpc'])).opts).toMatchObject({
      protocol: 'grpc',
      connections: 4,
    });
    expect((await parseFlags([...base, '--protocol', 'grpc', '--connections', '2'])).opts).toMatchObject({
      protocol: 'grpc',
      connections: 2,
    });
    expect((await parseFlags([...base, '--protocol', 'soap'])).code).toBe(2);
  });

  it('takes every flag', async () => {
    const r = await parseFlags([
      ...base,
      '--model',
      'vgg16=12.5',
      '--duration',
      '2.5',
      '--arrival',
      'gamma',
      '--cv',
      '2',
      '--seed',
      '42',
      '--encoding',
      'json',
      '--slo',
      'vgg16=120',
      '--timeout',
      '5000',
      '--json',
      '--out',
      'r.json',
      '--connections',
      '8',
    ]);
    expect(r.opts).toMatchObject({
      models: [
        { name: 'resnet50', ratePerS: 100 },
        { name: 'vgg16', ratePerS: 12.5 },
      ],
      durationS: 2.5,
      arrival: { kind: 'gamma', cv: 2 },
      seed: 42,
      encoding: 'json',
      sloMs: new Map([['vgg16', 120]]),
      timeoutMs: 5000,
      json: true,
      out: 'r.json',
      connections: 8,
    });
  });

  it(
    'reads the bearer token from --token-file or INSS_CLIENT_TOKEN ' + '(never needed on argv), and the CA from --ca',
    async () => {
      const d = mkdtempSync(join(tmpdir(), 'inss-loadgen-flags-'));
      try {
        writeFileSync(join(d, 't'), 'tok-0123456789abcdef\n');
        writeFileSync(join(d, 'bad'), 'two words\n');
        writeFileSync(join(d, 'ca.pem'), 'PEM');
        const https = ['--url', 'https://h:1', '--model', 'a=1'];
        expect(
          (await parseFlags([...https, '--token-file', join(d, 't'), '--ca', join(d, 'ca.pem')])).opts,
        ).toMatchObject({ token: 'tok-0123456789abcdef', ca: Buffer.from('PEM') });
        expect((await parseFlags([...https, '--token-file', join(d, 'bad')])).stderr).toMatch(
          /--token-file .*bad: expected one token/,
        );
        vi.stubEnv('INSS_CLIENT_TOKEN', 'env-tok-0123456789');
        expect((await parseFlags(https)).opts?.token).toBe('env-tok-0123456789');
        const both = await parseFlags([...https, '--token-file', join(d, 't')]);
        expect(both.code).toBe(2);
        expect(both.stderr).toMatch(/--token-file and INSS_CLIENT_TOKEN: give one/);
      } finally {
        vi.unstubAllEnvs();
        rmSync(d, { recursive: true, force: true });
      }
    },
  );

  it('--trace: a model replayed from a trace file (the scenario trace format), beside drawn models', async () => {
    const d = mkdtempSync(join(tmpdir(), 'inss-loadgen-trace-'));
    try {
      writeFileSync(join(d, 'vgg.txt'), '# vgg16 arrivals\n0.25\n\n0.1 # first\n1.5\n12\n');
      const r = await parseFlags([
        ...base,
        '--trace',
        `vgg16=${join(d, 'vgg.txt')}`,
        '--duration',
        '2',
        '--slo',
        'vgg16=150',
      ]);
      expect(r.stderr).toBe('');
      expect(r.opts?.models).toEqual([
        { name: 'resnet50', ratePerS: 100 },
        { name: 'vgg16', ratePerS: 1.5, arrivalsMs: [250, 100, 1500, 12000] },
      ]);
      expect(r.opts?.traces).toEqual(new Map([['vgg16', join(d, 'vgg.txt')]]));
      // A trace alone is enough.
      expect(
        (await parseFlags(['--url', 'http://h:1', '--trace', `vgg16=${join(d, 'vgg.txt')}`])).opts?.models.map(
          (m) => m.name,
        ),
      ).toEqual(['vgg16']);
      writeFileSync(join(d, 'bad.txt'), '0.1\nsoon\n');
      writeFileSync(join(d, 'late.txt'), '30\n');
      const refused: [string[], RegExp][] = [
        [
          ['--trace', `vgg16=${join(d, 'bad.txt')}`],
          /--trace vgg16=.*bad\.txt: .*bad\.txt:2: not a non-negative number of seconds: 'soon'/,
        ],
        [
          ['--trace', `vgg16=${join(d, 'late.txt')}`],
          new RegExp(
            String.raw`--trace vgg16=.*late\.txt: no arrival before the end of the send window ` +
              String.raw`\(--duration 10 s; the trace has 1 arrival\)`,
          ),
        ],
        [['--trace', 'vgg16=/nonexistent/t.txt'], /--trace vgg16=\/nonexistent\/t\.txt: cannot read: ENOENT/],
        [
          ['--trace', `resnet50=${join(d, 'vgg.txt')}`],
          /--trace resnet50=\.\.\.: model 'resnet50' is also given by --model/,
        ],
        [['--trace', 'vgg16'], /--trace.*not <name>=<file>/],
        [
          ['--trace', `vgg16=${join(d, 'vgg.txt')}`, '--trace', `vgg16=${join(d, 'vgg.txt')}`],
          /--trace.*'vgg16' is given twice/,
        ],
      ];
      for (const [args, message] of refused) {
        const x = await parseFlags([...base, ...args]);
        expect(x.code).toBe(2);
        expect(x.stderr).toMatch(message);
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it.each([
    [['--model', 'resnet50=100'], /--url/],
    [['--url', 'http://h:1'], /give at least one --model <name=ratePerS> or --trace <name=file>/],
    [['--url', 'localhost:8000', '--model', 'a=1'], /--url.*only http:\/\/ and https:\/\//],
    [[...base, '--ca', 'cert.pem'], /--ca: only for an https:\/\/ --url/],
    [
      ['--url', 'https://h:1', '--model', 'a=1', '--ca', '/nonexistent/cert.pem'],
      /--ca \/nonexistent\/cert\.pem: cannot read: ENOENT/,
    ],
    [[...base, '--token-file', '/nonexistent/t'], /--token-file \/nonexistent\/t: cannot read: ENOENT/],
    [['--url', 'not a url', '--model', 'a=1'], /--url.*is not a URL/],
    [['--url', 'http://h:1?x=1', '--model', 'a=1'], /--url.*without a query/],
    [[...base.slice(0, 2), '--model', 'resnet50'], /--model.*not <name>=<ratePerS>/],
    [[...base.slice(0, 2), '--model', 'resnet50=0'], /--model.*ratePerS must be a number > 0/],
    [[...base.slice(0, 2), '--model', '=5'], /--model.*not <name>=<ratePerS>/],
    [[...base, '--model', 'resnet50=3'], /--model.*'resnet50' is given twice/],
    [[...base, '--duration', '0'], /--duration.*must be a number > 0/],
    [[...base, '--duration', 'ten'], /--duration.*must be a number > 0/],
    [[...base, '--arrival', 'uniform'], /--arrival.*poisson, gamma/],
    [[...base, '--arrival', 'gamma'], /--cv <x> is required with --arrival gamma/],
    [[...base, '--cv', '2'], /--cv is only for --arrival gamma/],
    [[...base, '--arrival', 'gamma', '--cv', '-1'], /--cv.*must be a number > 0/],
    [[...base, '--seed', '-1'], /--seed.*0\.\.4294967295/],
    [[...base, '--seed', '1.5'], /--seed/],
    [[...base, '--encoding', 'xml'], /--encoding.*binary, json/],
    [[...base, '--slo', 'vgg16=80'], /--slo vgg16=...: 'vgg16' is not one of the --model models/],
    [[...base, '--slo', 'resnet50=fast'], /--slo.*ms must be a number > 0/],
    [[...base, '--timeout', '0'], /--timeout.*integer >= 1/],
    [[...base, '--connections', '0'], /--connections.*integer >= 1/],
    [[...base, '--connections', ''], /--connections.*integer >= 1/],
  ])('%j is refused with exit status 2, naming the flag', async (args, message) => {
    const r = await parseFlags(args);
    expect(r.code).toBe(2);
    expect(r.opts).toBeUndefined();
    expect(r.stderr).toMatch(message);
  });

  it('inss main returns 2 for a bad loadgen flag', async () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(await main(['node', 'inss', 'loadgen', '--url', 'http://127.0.0.1:1', '--model', 'resnet50=0'])).toBe(2);
      expect(write.mock.calls.map((c) => String(c[0])).join('')).toContain('--model');
    } finally {
      write.mockRestore();
    }
  });
});

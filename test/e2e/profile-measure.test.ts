// `inss profile measure --model` end to end on this machine, through the stand-ins for nvidia-smi and
// nvidia-cuda-mps-control (test/support/bin/): it finds the "GPU" (an RTX 2060 Super), picks its built-in
// profile, runs the model's PyTorch workers under the stand-in MPS daemon (on the CPU: shares have no
// effect and the times are CPU times, which is all this checks the path with), fits the model into the
// profile, and the file it writes is what `inss predict` and `inss bench` use. A small grid: 2 shares x 3
// batches alone, one pair. Needs dist/ (npm run build); skipped where the interpreter has no torch.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolvePython, torchAvailable } from '../../agent/torchWorker.js';
import { loadProfile } from '../../cli/profiles.js';
import { LatencyModel } from '../../src/model/predictor.js';
import { type CliResult, runCli } from '../support/cli.js';
import { REPO_ROOT } from '../support/paths.js';
import { scenarioJson } from '../support/scenario.js';

const torchOk = await torchAvailable();
const dir = mkdtempSync(join(tmpdir(), 'inss-profile-measure-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const bin = join(REPO_ROOT, 'test', 'support', 'bin');
const STAND_INS = {
  INSS_NVIDIA_SMI: join(bin, 'fake-nvidia-smi'),
  FAKE_SMI_FIXTURE: 'rtx2060s.csv',
  INSS_MPS_CONTROL: join(bin, 'fake-nvidia-cuda-mps-control'),
};
const SMALL_GRID = ['--pcts', '50,100', '--batches', '1,2,4', '--splits', '50', '--pair-batches', '2'];
const FEW_BATCHES = ['--warmup', '1', '--repeats', '3', '--quiet'];

function inss(args: readonly string[], stdin = ''): Promise<CliResult> {
  return runCli(args, stdin, dir, STAND_INS);
}

describe('inss profile measure --model: refusals, before anything runs', () => {
  it('names the flag at fault', async () => {
    const cases: [string[], RegExp][] = [
      [
        ['--model', 'resnet18', '--profile', 'v100'],
        /--profile v100: it describes a NVIDIA Tesla V100-SXM2-16GB, but GPU 0 is a NVIDIA GeForce RTX 2060 SUPER/,
      ],
      [['--model', 'resnet18', '--pcts', '50'], /--pcts, --batches: a profile needs at least two of each/],
      [['--model', 'resnet18', '--batches', '1,2,2'], /--batches: 2 is given twice/],
      [['--model', 'resnet18', '--peers', 'nosuchnet'], /--peers: profile rtx2060s has no model 'nosuchnet'/],
      [['--model', 'ResNet', '--peers', ''], /--model ResNet: a profile's model names are lower-case/],
      [['--model', 'resnet18', '--gpu', '3'], /--gpu 3: this machine has GPUs 0/],
      [['--model-repository', dir, '--id', 'x', '--out', 'x.json'], /--model-repository: only with --model/],
    ];
    for (const [args, message] of cases) {
      const r = await inss(['profile', 'measure', ...args, '--work-dir', join(dir, 'refused')]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
    expect(existsSync(join(dir, 'rtx2060s-resnet18.json'))).toBe(false);
  });

  it('refuses a repository model with a variable input dimension, naming the input', async () => {
    const model = join(dir, 'varrepo', 'text');
    mkdirSync(join(model, '1'), { recursive: true });
    writeFileSync(join(model, '1', 'model.pt'), 'not read: refused before');
    writeFileSync(
      join(model, 'config.pbtxt'),
      'backend: "pytorch"\nmax_batch_size: 8\n' +
        'input [ { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] } ]\n' +
        'output [ { name: "logits" data_type: TYPE_FP32 dims: [ 4 ] } ]\n',
    );
    const args = ['--model-repository', join(dir, 'varrepo'), '--model', 'text', '--work-dir', join(dir, 'refused')];
    const r = await inss(['profile', 'measure', ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--model text: input 'input_ids' has a variable dimension \(-1\); measure times fixed/);
  });
});

const noTorch = torchOk ? '' : ` (skipped: ${resolvePython()} cannot import torch)`;

describe.skipIf(!torchOk)(`inss profile measure --model, predict and bench${noTorch}`, () => {
  it('measures a zoo model through its PyTorch worker into the profile, which predict and bench use', async () => {
    const r = await inss([
      'profile',
      'measure',
      '--model',
      'resnet18',
      '--peers',
      'alexnet',
      ...SMALL_GRID,
      ...FEW_BATCHES,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/warning: the worker ran on cpu, not a GPU: this profile measures CPU time/);
    expect(r.stderr).toMatch(/resnet18: LWR leave-one-out error mean [\d.]+%/);
    const file = join(dir, 'rtx2060s-resnet18.json');
    const p = loadProfile(file);
    const base = loadProfile('rtx2060s');
    expect(p.id).toBe('rtx2060s');
    expect(p.provenance.kind).toBe('measured');
    expect(p.provenance.command).toMatch(/^inss profile measure --model resnet18 --peers alexnet/);
    expect(p.gpu).toEqual(base.gpu);
    for (const n of Object.keys(base.models)) if (n !== 'resnet18') expect(p.models[n]).toEqual(base.models[n]);
    const m = p.models['resnet18']!;
    expect(m.runSamples.map((s) => [s.batch, s.pct])).toEqual([
      [1, 50],
      [1, 100],
      [2, 50],
      [2, 100],
      [4, 50],
      [4, 100],
    ]);
    expect(m.inputBytes).toBe(602112);
    expect(m.notes.join(' ')).toMatch(/ran on cpu/);
    // CPU times of resnet18 are milliseconds to seconds, nothing like the profile's GPU figures.
    expect(m.runSamples.every((s) => s.runMs > 1 && s.runMs < 60_000)).toBe(true);

    const line = '{"models":[{"model":"resnet18","batch":2,"pct":100}]}\n';
    const predicted = await inss(['predict', '--profile', file], line);
    expect(predicted.code, predicted.stderr).toBe(0);
    const want = LatencyModel.compile(p).predict([{ model: 'resnet18', batch: 2, pct: 100 }]).latencyMs[0]!;
    expect((JSON.parse(predicted.stdout) as { latencyMs: number[] }).latencyMs[0]).toBeCloseTo(want, 4);

    const sloMs = Math.ceil(4 * Math.max(...m.runSamples.map((s) => s.runMs)));
    const scenario = scenarioJson({
      name: 'measured',
      gpus: { './rtx2060s-resnet18.json': 1 },
      // An SLO a few times the slowest batch, and a run many SLOs long: a lone request may wait up to half the
      // SLO for its batch to fill (static-even), so a short run with a long SLO would serve nothing.
      models: [{ name: 'resnet18', sloMs, ratePerS: 1 }],
      durationS: Math.max(30, (10 * sloMs) / 1000),
    });
    writeFileSync(join(dir, 'measured.json'), JSON.stringify(scenario));
    // iGniter plans with the latency model (shares and batches from predicted latencies); static-even does not.
    const bench = await inss([
      'bench',
      '--scenario',
      './measured.json',
      '--policies',
      'igniter,static-even',
      '--json',
      '--jobs',
      '1',
    ]);
    expect(bench.code, bench.stderr).toBe(0);
    const results = (JSON.parse(bench.stdout) as { results: { policy: string; served: number }[] }).results;
    expect(results.map((x) => x.policy).sort()).toEqual(['igniter', 'static-even']);
    for (const x of results) expect(x.served, x.policy).toBeGreaterThan(0);
  }, 480_000); // four PyTorch workers start (seconds each) and time CPU batches: minutes on a loaded machine
});

// A TorchScript model of a model repository, beside a zoo model.
describe.skipIf(!torchOk)(`inss profile measure --model-repository${noTorch}`, () => {
  it('measures a TorchScript model of a repository and fits it into the profile', async () => {
    const model = join(dir, 'repo', 'tinynet');
    mkdirSync(join(model, '1'), { recursive: true });
    const traced = spawn(resolvePython(), [
      '-c',
      'import sys, torch\n' +
        'net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), ' +
        'torch.nn.Flatten(), torch.nn.Linear(8, 10)).eval()\n' +
        'torch.jit.trace(net, torch.zeros(1, 3, 32, 32)).save(sys.argv[1])\n',
      join(model, '1', 'model.pt'),
    ]);
    expect(await new Promise((res) => traced.on('close', res))).toBe(0);
    writeFileSync(
      join(model, 'config.pbtxt'),
      'name: "tinynet"\nplatform: "pytorch_libtorch"\nmax_batch_size: 8\n' +
        'input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 3, 32, 32 ] } ]\n' +
        'output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 10 ] } ]\n',
    );
    const args = ['--model-repository', join(dir, 'repo'), '--model', 'tinynet', '--peers', 'alexnet'];
    const r = await inss(['profile', 'measure', ...args, ...SMALL_GRID, ...FEW_BATCHES, '--out', 'tiny.json']);
    expect(r.code, r.stderr).toBe(0);
    const m = loadProfile(join(dir, 'tiny.json')).models['tinynet']!;
    expect(m.inputBytes).toBe(4 * 3 * 32 * 32);
    expect(m.outputBytes).toBe(40);
    expect(m.notes.join(' ')).toMatch(/PyTorch \(TorchScript\)/);
    const predicted = await inss(
      ['predict', '--profile', 'tiny.json'],
      '{"models":[{"model":"tinynet","batch":4,"pct":50}]}\n',
    );
    expect(predicted.code, predicted.stderr).toBe(0);
  }, 480_000);
});

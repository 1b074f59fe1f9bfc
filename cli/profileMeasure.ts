// `inss profile measure`: measures this machine's NVIDIA GPU under MPS with native/gpu_measure.py
// (each model alone over a grid of batch sizes and shares, then co-located pairs), with inss's own
// MPS control daemon for that GPU, progress with the time left (a bar on a terminal, a line per
// measured point elsewhere: cli/progress.ts), and returns the merged
// measurements (inss-measurements/1) for `inss profile fit`'s fitting. Needs a GPU, PyTorch with CUDA
// and the MPS control daemon; on a machine without them it says which is missing.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { MpsDaemon } from '../agent/mps.js';
import { queryGpus } from '../agent/nvidiaSmi.js';
import { resolvePython } from '../agent/torchWorker.js';
import { InvalidInputError } from '../src/profile/schema.js';
import { PACKAGE_ROOT } from './profiles.js';
import { type Progress, startProgress } from './progress.js';

export interface MeasureOptions {
  gpu: number;
  models: string[];
  pcts: number[];
  batches: number[];
  pairs: string[];
  splits: number[];
  pairBatches: number[];
  workDir: string;
  mps: boolean;
  quiet?: boolean;
}

/** Runs one gpu_measure.py step, advancing the progress on each measured point it logs. */
async function step(args: string[], env: Record<string, string>, progress: Progress): Promise<void> {
  const script = join(PACKAGE_ROOT, 'native', 'gpu_measure.py');
  const p = execa(resolvePython(), [script, ...args], {
    env,
    extendEnv: true,
    reject: false,
    buffer: { stderr: false },
    stdout: 'inherit',
    stderr: 'pipe',
  });
  let tail = '';
  p.stderr.setEncoding('utf8').on('data', (d: string) => {
    tail = (tail + d).slice(-4000);
    for (const line of d.split('\n'))
      if (/ batch \d+: [\d.]+ ms|^\s+pair \[/.test(line)) progress.increment(line.trim());
  });
  const r = await p;
  if (r.exitCode !== 0)
    throw new InvalidInputError(
      `gpu_measure.py ${args[0]} failed (exit ${String(r.exitCode)}): ${tail.trim().split('\n').slice(-5).join(' | ')}`,
    );
}

/** Measures and returns the merged measurement document (not yet validated). */
export async function measureGpu(o: MeasureOptions): Promise<unknown> {
  const smi = process.env['INSS_NVIDIA_SMI'];
  const found = await queryGpus(smi ? { command: smi } : {});
  if (found.kind !== 'ok')
    throw new InvalidInputError(
      `inss profile measure needs an NVIDIA GPU: ${'reason' in found ? found.reason : found.error}`,
    );
  const gpu = found.gpus.find((g) => g.index === o.gpu);
  if (!gpu)
    throw new InvalidInputError(`--gpu ${o.gpu}: this machine has GPUs ${found.gpus.map((g) => g.index).join(', ')}`);
  mkdirSync(o.workDir, { recursive: true });
  const daemon = new MpsDaemon({
    pipeDir: join(o.workDir, 'mps-pipe'),
    logDir: join(o.workDir, 'mps-log'),
    gpu: String(o.gpu),
    ...(process.env['INSS_MPS_CONTROL'] ? { controlCommand: process.env['INSS_MPS_CONTROL'] } : {}),
  });
  let env: Record<string, string> = { CUDA_VISIBLE_DEVICES: String(o.gpu) };
  if (o.mps) {
    const started = await daemon.start();
    if (!started.ok)
      throw new InvalidInputError(
        `MPS control daemon: ${started.message} (use --no-mps to measure without MPS, shares then have no effect)`,
      );
    const { CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: _pct, ...clientEnv } = daemon.clientEnv(100);
    env = clientEnv;
  }
  const total =
    o.models.length * o.pcts.length * o.batches.length + o.pairs.length * o.splits.length * o.pairBatches.length;
  if (!o.quiet) console.error(`${gpu.name}: measuring ${total} points`);
  const progress = startProgress({ total, etaBuffer: 30, ...(o.quiet ? { quiet: true } : {}) });
  const soloFile = join(o.workDir, 'solo.json');
  const pairsFile = join(o.workDir, 'pairs.json');
  try {
    await step(
      [
        'solo',
        '--out',
        soloFile,
        '--models',
        o.models.join(','),
        '--pcts',
        o.pcts.join(','),
        '--batches',
        o.batches.join(','),
      ],
      env,
      progress,
    );
    if (o.pairs.length > 0)
      await step(
        [
          'pairs',
          '--out',
          pairsFile,
          '--pairs',
          o.pairs.join(','),
          '--splits',
          o.splits.join(','),
          '--batches',
          o.pairBatches.join(','),
        ],
        env,
        progress,
      );
  } finally {
    progress.stop();
    if (o.mps) await daemon.stop();
  }
  const solo = JSON.parse(readFileSync(soloFile, 'utf8')) as { colocated: unknown[] };
  if (o.pairs.length > 0)
    solo.colocated.push(...(JSON.parse(readFileSync(pairsFile, 'utf8')) as { colocated: unknown[] }).colocated);
  return solo;
}

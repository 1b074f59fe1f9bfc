// `inss profile measure --model NAME [--model-repository DIR]`: one model measured through inss's own
// workers on this machine's NVIDIA GPU, under inss's MPS control daemon for it, and fitted into the GPU's
// profile (cli/measure/driver.ts measures, cli/measure/fitInto.ts fits). The profile: --profile, else the
// built-in profile whose GPU name is this GPU's (agent/nvidiaSmi.ts matchProfile, as the agent picks
// one). The file written holds the profile's models and the new one (replacing one of the same name).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MpsDaemon } from '../../agent/mps.js';
import { matchProfile, normaliseGpuName, queryGpus, type SmiGpu } from '../../agent/nvidiaSmi.js';
import { resolvePython, torchAvailable } from '../../agent/torchWorker.js';
import type { WorkerLaunch } from '../../agent/workerProcess.js';
import { InvalidInputError, type Profile } from '../../src/profile/schema.js';
import { hasVariableDim } from '../../src/protocol/tensor.js';
import { listProfileIds, loadProfile } from '../profiles.js';
import { startProgress } from '../progress.js';
import { type MeasuredModel, measureModel, pointCount } from './driver.js';
import { fitIntoProfile, memoryLine } from './fitInto.js';
import { sampleBytes } from './inputs.js';
import { loadRepositoryModels, type ModelWorker, repositoryWorker, zooWorker } from './workers.js';

export interface ModelMeasureOptions {
  readonly model: string;
  readonly modelRepository?: string;
  readonly profile?: string;
  readonly id?: string;
  readonly out?: string;
  readonly gpu: number;
  readonly pcts: number[];
  readonly batches: number[];
  /** Peers to pair with; undefined: every model of the profile. */
  readonly peers?: string[];
  readonly splits: number[];
  readonly pairBatches: number[];
  readonly warmup: number;
  readonly repeats: number;
  readonly kernels: number;
  readonly workDir: string;
  readonly mps: boolean;
  readonly quiet: boolean;
}

const PROFILE_MODEL_NAME = /^[a-z0-9][a-z0-9_-]*$/;

async function findGpu(index: number): Promise<SmiGpu> {
  const smi = process.env['INSS_NVIDIA_SMI'];
  const found = await queryGpus(smi ? { command: smi } : {});
  if (found.kind !== 'ok')
    throw new InvalidInputError(
      `inss profile measure needs an NVIDIA GPU: ${'reason' in found ? found.reason : found.error}`,
    );
  const gpu = found.gpus.find((g) => g.index === index);
  if (!gpu)
    throw new InvalidInputError(`--gpu ${index}: this machine has GPUs ${found.gpus.map((g) => g.index).join(', ')}`);
  return gpu;
}

function gpuProfile(gpu: SmiGpu, given: string | undefined): Profile {
  if (given === undefined) {
    const known = listProfileIds().map((id) => ({ id, gpuName: loadProfile(id).gpu.name }));
    const id = matchProfile(gpu.name, known);
    if (id === null)
      throw new InvalidInputError(
        `no built-in profile describes GPU ${gpu.index} (${gpu.name}): give --profile FILE, a profile of this GPU ` +
          `type (inss profile measure --id ID --out FILE measures one)`,
      );
    return loadProfile(id);
  }
  const p = loadProfile(given);
  if (normaliseGpuName(p.gpu.name) !== normaliseGpuName(gpu.name))
    throw new InvalidInputError(
      `--profile ${given}: it describes a ${p.gpu.name}, but GPU ${gpu.index} is a ${gpu.name}`,
    );
  return p;
}

async function targetAndPeers(
  o: ModelMeasureOptions,
  profile: Profile,
): Promise<{ target: ModelWorker; peers: ModelWorker[] }> {
  const repo = o.modelRepository === undefined ? [] : loadRepositoryModels(o.modelRepository, o.model);
  const byName = new Map(repo.map((m) => [m.name, m]));
  let target: ModelWorker;
  if (o.modelRepository !== undefined) {
    const m = byName.get(o.model);
    if (!m)
      throw new InvalidInputError(
        `--model ${o.model}: no such model in ${o.modelRepository} (it has ${[...byName.keys()].join(', ') || 'none'})`,
      );
    if (m.maxBatchSize === 0)
      throw new InvalidInputError(
        `--model ${o.model}: max_batch_size is 0 (no batch dimension); a profile needs two batch sizes`,
      );
    const variable = m.signature.inputs.find((i) => hasVariableDim(i.shape));
    if (variable)
      throw new InvalidInputError(
        `--model ${o.model}: input '${variable.name}' has a variable dimension (-1); measure times fixed shapes, ` +
          'and such a model is profiled while it serves (docs/online-profiling.md)',
      );
    target = repositoryWorker(m);
  } else target = zooWorker(o.model);
  if (!PROFILE_MODEL_NAME.test(o.model))
    throw new InvalidInputError(
      `--model ${o.model}: a profile's model names are lower-case letters, digits, dash or underscore`,
    );
  const names = o.peers ?? Object.keys(profile.models).filter((n) => n !== o.model);
  const peers = names.map((n) => {
    if (n === o.model) throw new InvalidInputError(`--peers: ${n} is the model measured`);
    if (!profile.models[n])
      throw new InvalidInputError(
        `--peers: profile ${profile.id} has no model '${n}' (it has ` + `${Object.keys(profile.models).join(', ')})`,
      );
    const m = byName.get(n);
    if (m?.signature.inputs.some((i) => hasVariableDim(i.shape)))
      throw new InvalidInputError(`--peers: ${n} has a variable input dimension (-1); measure times fixed shapes`);
    return m ? repositoryWorker(m) : zooWorker(n);
  });
  if ([target, ...peers].some((w) => w.worker.startsWith('PyTorch')) && !(await torchAvailable()))
    throw new InvalidInputError(
      `the PyTorch worker needs torch: ${resolvePython()} cannot import torch and torchvision (INSS_PYTHON ` +
        'names another interpreter)',
    );
  return { target, peers };
}

/** Measures, fits and writes the profile; prints the fit's figures on stderr. */
export async function measureModelIntoProfile(o: ModelMeasureOptions, command: string): Promise<void> {
  const gpu = await findGpu(o.gpu);
  const base = gpuProfile(gpu, o.profile);
  const { target, peers } = await targetAndPeers(o, base);
  const batches = o.batches.filter((b) => b <= target.maxBatch);
  if (batches.length < 2)
    throw new InvalidInputError(
      `--batches: ${o.model} takes batches up to ${target.maxBatch}; a profile needs two batch sizes within it`,
    );
  const pairBatches = o.pairBatches.filter((b) => peers.every((p) => b <= p.maxBatch) && b <= target.maxBatch);
  if (peers.length > 0 && pairBatches.length === 0)
    throw new InvalidInputError(`--pair-batches: none is within every paired model's largest batch`);
  const maxBatch = Math.max(...batches, ...pairBatches);

  mkdirSync(o.workDir, { recursive: true });
  const control = process.env['INSS_MPS_CONTROL'];
  const daemon = new MpsDaemon({
    pipeDir: join(o.workDir, 'mps-pipe'),
    logDir: join(o.workDir, 'mps-log'),
    gpu: gpu.uuid,
    ...(control ? { controlCommand: control } : {}),
  });
  const env = (pct: number): Record<string, string> =>
    o.mps ? daemon.clientEnv(pct) : { CUDA_VISIBLE_DEVICES: gpu.uuid, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(pct) };
  const measured = (w: ModelWorker): MeasuredModel => ({
    name: w.name,
    signature: w.signature,
    launch: (pct): WorkerLaunch => ({ ...w.command(Math.min(maxBatch, w.maxBatch)), env: env(pct) }),
  });
  const grid = { peers: peers.map(measured), pcts: o.pcts, batches, splits: o.splits, pairBatches };
  const total = pointCount(grid);
  if (!o.quiet) console.error(`${gpu.name} (profile ${base.id}): measuring ${o.model}, ${total} points`);
  if (o.mps) {
    await daemon.stop(); // one left by an interrupted run in the same work directory
    const started = await daemon.start();
    if (!started.ok)
      throw new InvalidInputError(
        `MPS control daemon: ${started.message} (use --no-mps to measure without MPS, shares then have no effect)`,
      );
  }
  const progress = startProgress({ total, etaBuffer: 30, ...(o.quiet ? { quiet: true } : {}) });
  let result;
  try {
    result = await measureModel({
      ...grid,
      target: measured(target),
      warmup: o.warmup,
      repeats: o.repeats,
      memoryMb: async () => (await findGpu(o.gpu)).memUsedMb,
      onPoint: (d) => progress.increment(d),
    });
  } finally {
    progress.stop();
    if (o.mps) await daemon.stop();
  }

  const warnings: string[] = [];
  const notes = [
    `measured through inss's ${target.worker} worker: the median of the worker's latencyMs over ${o.repeats} ` +
      `batches after ${o.warmup} warm-up batches, inputs of deterministic pseudo-random values`,
    `kernels per batch: ${o.kernels} (--kernels; the worker does not count them); the per-kernel scheduling ` +
      'time is 0, the solo running time carries it',
  ];
  if (result.devices.some((d) => !d.startsWith('cuda'))) {
    const on = result.devices.join(', ');
    notes.push(`the worker ran on ${on}: these are not GPU times and MPS shares had no effect (tests only)`);
    warnings.push(`the worker ran on ${on}, not a GPU: this profile measures CPU time, for testing the path only`);
  }
  let memory = { baseMb: 0, perBatchMb: 0 };
  if (result.memory === null) warnings.push('nvidia-smi gave no memory reading: memory set to 0');
  else {
    memory = memoryLine(result.memory);
    if (memory.baseMb === 0 && memory.perBatchMb === 0)
      warnings.push('GPU memory in use did not change while the worker ran: memory is 0');
  }
  const provenance = {
    kind: 'measured' as const,
    source:
      `profile ${base.id} (${base.provenance.kind}) with ${o.model} measured by inss profile measure on ` +
      `GPU ${gpu.index} (${gpu.name}) through inss's ${target.worker} worker`,
    command,
    notes: [
      ...base.provenance.notes,
      `models other than ${o.model}: from profile ${base.id}: ${base.provenance.source} (${base.provenance.command})`,
    ],
  };
  const { profile, report } = fitIntoProfile(
    base,
    {
      name: o.model,
      inputBytes: sampleBytes(target.signature.inputs),
      outputBytes: sampleBytes(target.signature.outputs),
      kernels: o.kernels,
      memory,
      notes,
      solo: result.solo,
      colocated: result.colocated,
    },
    provenance,
    o.id ?? base.id,
  );
  const out = o.out ?? `${profile.id}-${o.model}.json`;
  writeFileSync(out, `${JSON.stringify(profile, null, 1)}\n`);
  const pct = (x: number) => `${(x * 100).toFixed(2)}%`;
  console.error(
    `${o.model}: LWR leave-one-out error mean ${pct(report.lwr.meanRelErr)}, max ${pct(report.lwr.maxRelErr)} ` +
      `over ${report.lwr.samples} samples`,
  );
  if (report.colocatedMeanRelErr !== null)
    console.error(`co-located runs: the profile predicts them within ${pct(report.colocatedMeanRelErr)} (mean)`);
  for (const w of [...warnings, ...report.warnings]) console.error(`warning: ${w}`);
  console.error(`wrote ${out}`);
}

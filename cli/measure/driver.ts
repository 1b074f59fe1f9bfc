// The measurement driver of `inss profile measure --model`: times a model through inss's own worker
// processes (agent/workerProcess.ts, the agent's client of the worker protocol), as gpu_measure.py does
// for the zoo with its own PyTorch code. One worker per (model, share), since CUDA fixes a process's MPS
// share when it creates its context: the caller's `launch(pct)` gives the command line and the MPS
// client environment, as the agent builds them. What is timed is the worker's own `latencyMs` of each
// batch (t_inf: upload, forward, download, synchronised), the median of `repeats` batches after `warmup`.
// - Alone: the model over every share in `pcts` and every batch in `batches`; GPU memory (nvidia-smi's
//   reading less the one before the worker started) after each batch size at the largest share.
// - Beside each peer: the model at split% and the peer at (100 - split)%, both started and warmed up,
//   then both sending batches back to back until each has timed `repeats` (the faster one keeps running
//   while the slower finishes, so every timed batch overlaps the other model's); each one's median.
import type { WorkerSignature } from '../../src/repository/types.js';
import { InvalidInputError } from '../../src/profile/schema.js';
import type { MeasuredRun } from '../../tools/fit/measurements.js';
import { type WorkerLaunch, WorkerProcess } from '../../agent/workerProcess.js';
import { batchInputs } from './inputs.js';

/** A model the driver can start workers of. */
export interface MeasuredModel {
  readonly name: string;
  readonly signature: WorkerSignature;
  /** The worker's command line and environment at an MPS share (percent). */
  readonly launch: (pct: number) => WorkerLaunch;
}

export interface DriverOptions {
  readonly target: MeasuredModel;
  readonly peers: readonly MeasuredModel[];
  readonly pcts: readonly number[];
  readonly batches: readonly number[];
  /** The target's share in each pair; the peer gets the rest. */
  readonly splits: readonly number[];
  readonly pairBatches: readonly number[];
  readonly warmup: number;
  readonly repeats: number;
  /** GPU memory in use now (MiB), or null where it cannot be read. */
  readonly memoryMb: () => Promise<number | null>;
  /** Called once per measured point with a line saying what it was. */
  readonly onPoint: (detail: string) => void;
  /** How long a worker may take to load and warm up (ms). */
  readonly readyTimeoutMs?: number;
}

export interface DriverResult {
  readonly solo: { batch: number; pct: number; latencyMs: number }[];
  readonly colocated: { runs: MeasuredRun[] }[];
  /** GPU memory the worker added at each batch size (largest share), null where nvidia-smi gave none. */
  readonly memory: { batch: number; mb: number }[] | null;
  /** The devices the target's workers said they run on (`ready`'s device: cuda:0, cpu). */
  readonly devices: string[];
}

/** The number of points `measureModel` reports through onPoint (for a progress bar). */
export function pointCount(o: Pick<DriverOptions, 'peers' | 'pcts' | 'batches' | 'splits' | 'pairBatches'>): number {
  return o.pcts.length * o.batches.length + o.peers.length * o.splits.length * o.pairBatches.length;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

class Worker {
  private seq = 0;
  constructor(
    private readonly proc: WorkerProcess,
    readonly model: MeasuredModel,
    readonly pct: number,
    readonly device: string,
  ) {}

  static async start(model: MeasuredModel, pct: number, timeoutMs: number): Promise<Worker> {
    const proc = new WorkerProcess(model.launch(pct));
    proc.start();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`not ready after ${timeoutMs / 1000} s`)), timeoutMs);
    });
    let device = '';
    try {
      device = (await Promise.race([proc.ready, timeout])).device;
    } catch (e) {
      await proc.stop(1000);
      throw new InvalidInputError(`worker of ${model.name} at ${pct}%: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
    return new Worker(proc, model, pct, device);
  }

  /** Runs one batch of `size` and returns its latencyMs; throws naming the model, share and batch. */
  async batch(size: number): Promise<number> {
    const id = String(++this.seq);
    const { inputs, payload } = batchInputs(this.model.signature, size, this.seq);
    const o = await this.proc.run(id, this.model.name, size, inputs, payload);
    if (o.kind !== 'result')
      throw new InvalidInputError(
        `worker of ${this.model.name} at ${this.pct}%, batch ${size}: ${o.kind === 'error' ? 'error: ' : ''}` +
          o.message,
      );
    return o.latencyMs;
  }

  stop(): Promise<void> {
    return this.proc.stop();
  }
}

async function withWorkers<T>(starts: Promise<Worker>[], body: (ws: Worker[]) => Promise<T>): Promise<T> {
  const settled = await Promise.allSettled(starts);
  const ok = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  try {
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    return await body(ok);
  } finally {
    await Promise.all(ok.map((w) => w.stop()));
  }
}

async function timeAlone(w: Worker, size: number, warmup: number, repeats: number): Promise<number> {
  for (let i = 0; i < warmup; i++) await w.batch(size);
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) times.push(await w.batch(size));
  return median(times);
}

/** Both workers run batches of `size` back to back until each has `warmup + repeats`; medians of the timed. */
async function timeTogether(ws: Worker[], size: number, warmup: number, repeats: number): Promise<number[]> {
  const times = ws.map(() => [] as number[]);
  const enough = () => times.every((t) => t.length >= warmup + repeats);
  await Promise.all(
    ws.map(async (w, i) => {
      while (times[i]!.length < warmup + repeats || !enough()) times[i]!.push(await w.batch(size));
    }),
  );
  return times.map((t) => median(t.slice(warmup)));
}

/** Measures the target alone and beside each peer (see the file header). */
export async function measureModel(o: DriverOptions): Promise<DriverResult> {
  const timeoutMs = o.readyTimeoutMs ?? 180_000;
  const name = o.target.name;
  const solo: DriverResult['solo'] = [];
  const topPct = Math.max(...o.pcts);
  let memory: DriverResult['memory'] = [];
  const devices = new Set<string>();
  for (const pct of o.pcts) {
    const before = pct === topPct ? await o.memoryMb() : null;
    await withWorkers([Worker.start(o.target, pct, timeoutMs)], async ([w]) => {
      devices.add(w!.device);
      for (const b of o.batches) {
        const latencyMs = await timeAlone(w!, b, o.warmup, o.repeats);
        solo.push({ batch: b, pct, latencyMs });
        o.onPoint(`${name} ${pct}% batch ${b}: ${latencyMs.toFixed(3)} ms`);
        if (pct !== topPct) continue;
        const now = await o.memoryMb();
        if (before === null || now === null || memory === null) memory = null;
        else memory.push({ batch: b, mb: Math.max(0, now - before) });
      }
    });
  }
  const colocated: DriverResult['colocated'] = [];
  for (const peer of o.peers)
    for (const split of o.splits)
      await withWorkers(
        [Worker.start(o.target, split, timeoutMs), Worker.start(peer, 100 - split, timeoutMs)],
        async (ws) => {
          for (const b of o.pairBatches) {
            const [a, p] = await timeTogether(ws, b, o.warmup, o.repeats);
            colocated.push({
              runs: [
                { model: name, batch: b, pct: split, latencyMs: a! },
                { model: peer.name, batch: b, pct: 100 - split, latencyMs: p! },
              ],
            });
            o.onPoint(
              `${name} ${split}% beside ${peer.name} ${100 - split}%, batch ${b}: ` +
                `${a!.toFixed(3)} ms and ${p!.toFixed(3)} ms`,
            );
          }
        },
      );
  return { solo, colocated, memory, devices: [...devices] };
}

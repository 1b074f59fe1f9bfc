// GPU discovery and telemetry from nvidia-smi, and which inss profile describes a GPU.
// `parseGpuQuery` and `matchProfile` are pure (tested on recorded outputs in
// test/fixtures/nvidia-smi/); `queryGpus` is the one function here that runs a process.
import { execa } from 'execa';

/** The fields asked for, in this order (`nvidia-smi --help-query-gpu` documents each). */
export const GPU_QUERY_FIELDS = ['index', 'uuid', 'name', 'memory.total', 'memory.used', 'utilization.gpu'] as const;

/** The arguments of the one nvidia-smi command inss runs: CSV, no header, numbers without units. */
export const GPU_QUERY_ARGS: readonly string[] = [
  `--query-gpu=${GPU_QUERY_FIELDS.join(',')}`,
  '--format=csv,noheader,nounits',
];

/** One GPU as nvidia-smi lists it. Memory in MiB, as nvidia-smi counts it. */
export interface SmiGpu {
  /** nvidia-smi's index (PCI bus order), not necessarily CUDA's device ordinal. */
  readonly index: number;
  /** `GPU-xxxxxxxx-...`: stable across reboots; the unambiguous way to name the GPU to CUDA. */
  readonly uuid: string;
  readonly name: string;
  readonly memTotalMb: number;
  /** null where the driver reports no value (`[N/A]`, `[Not Supported]`, ...). */
  readonly memUsedMb: number | null;
  /** Percent of the last sample period in which a kernel ran; null where the driver has no value (e.g. MIG mode). */
  readonly utilPct: number | null;
}

export type GpuQueryResult =
  { readonly kind: 'ok'; readonly gpus: readonly SmiGpu[] } | { readonly kind: 'malformed'; readonly error: string };

/**
 * What running nvidia-smi found. The agent acts on the kind:
 * - `ok`: the GPUs, sorted by index (never empty: an empty list is `no-driver`);
 * - `no-driver`: no usable NVIDIA GPU (no nvidia-smi, no driver, no device); the agent serves
 *   simulated GPUs only when asked to (`--simulate`), otherwise it stops with this reason;
 * - `malformed`: nvidia-smi answered with something inss cannot read (names the line and field);
 * - `failed`: nvidia-smi is there but did not answer in time or exited with an error (a broken
 *   driver install, e.g. a driver/library version mismatch, lands here, not in `no-driver`).
 */
export type GpuDiscovery =
  | { readonly kind: 'ok'; readonly gpus: readonly SmiGpu[] }
  | { readonly kind: 'no-driver'; readonly reason: string }
  | { readonly kind: 'malformed'; readonly error: string }
  | { readonly kind: 'failed'; readonly reason: string };

/** nvidia-smi's markers for a value it cannot give: `[N/A]`, `[Not Supported]`, `[Unknown Error]`, ... */
const NO_VALUE = /^(\[[A-Za-z][A-Za-z /-]*\]|N\/A)$/;
const NUMBER = /^\d+(\.\d+)?$/;

/** A non-negative number, null for a no-value marker, undefined for anything else. */
function numberOrNull(v: string): number | null | undefined {
  if (NO_VALUE.test(v)) return null;
  return NUMBER.test(v) ? Number(v) : undefined;
}

/**
 * Parses what nvidia-smi prints for GPU_QUERY_ARGS. Tolerates CRLF, spaces around commas, blank
 * lines and names with spaces; a name containing a comma cannot be told from a wrong field count
 * (nvidia-smi does not quote) and is refused, as no NVIDIA GPU name has one. Refuses a wrong field
 * count, a non-numeric index or memory, a utilisation outside 0..100, a duplicate index and an
 * unknown total memory, naming the line (1-based, as in the input) and the field.
 */
export function parseGpuQuery(stdout: string): GpuQueryResult {
  const gpus: SmiGpu[] = [];
  const seen = new Set<number>();
  const lines = stdout.split('\n');
  for (const [i, raw] of lines.entries()) {
    const line = raw.replace(/\r$/, '').trim();
    if (line === '') continue;
    const bad = (what: string): GpuQueryResult => ({ kind: 'malformed', error: `line ${i + 1}: ${what}` });
    const f = line.split(',').map((x) => x.trim());
    if (f.length !== GPU_QUERY_FIELDS.length)
      return bad(
        `${f.length} fields, expected ${GPU_QUERY_FIELDS.length} (${GPU_QUERY_FIELDS.join(', ')}): ` +
          `'${line.slice(0, 120)}'`,
      );
    const [idx, uuid, name, total, used, util] = f as [string, string, string, string, string, string];
    if (!/^\d+$/.test(idx)) return bad(`index '${idx}' is not a non-negative integer`);
    const index = Number(idx);
    if (seen.has(index)) return bad(`index ${index} appears twice`);
    seen.add(index);
    if (!/^(GPU|MIG)-[0-9a-fA-F][0-9a-fA-F-]*$/.test(uuid)) return bad(`uuid '${uuid}' is not a GPU UUID (GPU-...)`);
    if (name === '' || NO_VALUE.test(name)) return bad(`name '${name}' is empty or unknown`);
    const memTotalMb = numberOrNull(total);
    if (memTotalMb === undefined || memTotalMb === null || memTotalMb <= 0)
      return bad(`memory.total '${total}' is not a positive number of MiB`);
    const memUsedMb = numberOrNull(used);
    if (memUsedMb === undefined) return bad(`memory.used '${used}' is not a number of MiB`);
    const utilPct = numberOrNull(util);
    if (utilPct === undefined || (utilPct !== null && utilPct > 100))
      return bad(`utilization.gpu '${util}' is not a percentage`);
    gpus.push({ index, uuid, name, memTotalMb, memUsedMb, utilPct });
  }
  return { kind: 'ok', gpus: gpus.sort((a, b) => a.index - b.index) };
}

/**
 * What nvidia-smi prints when there is no usable GPU: no driver loaded (exit 9), no device
 * (exit 6), or the NVML library missing (an nvidia-smi without a driver, as in a container that
 * was not given the GPU).
 */
const NO_DRIVER: readonly RegExp[] = [
  /couldn't communicate with the NVIDIA driver/i,
  /No devices were found/i,
  /couldn't find libnvidia-ml\.so/i,
  /Driver Not Loaded/i,
];

/** The first non-blank line of a command's output, shortened for a reason string. */
function firstLine(text: string): string {
  return (text.split(/\r?\n/).find((l) => l.trim() !== '') ?? '').trim().slice(0, 300);
}

/** The spawn error code (ENOENT, EACCES) of an execa result, if it never started. */
function spawnCode(r: object): string | undefined {
  const code = (r as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

export interface QueryGpusOptions {
  /** The nvidia-smi executable. Default `nvidia-smi` on the PATH; tests pass a stand-in. */
  readonly command?: string;
  /** How long nvidia-smi may take before the result is `failed`. Default 10 s. */
  readonly timeoutMs?: number;
  /** Added to this process's environment for the command. */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * Runs `nvidia-smi GPU_QUERY_ARGS` and classifies the outcome (see GpuDiscovery). Never throws for
 * an outcome of the command; resolves within about `timeoutMs` + 2 s even when nvidia-smi cannot
 * be killed (a process stuck in the driver ignores SIGKILL until it leaves it). Called by the agent
 * at start (discovery) and once per telemetry tick.
 */
export async function queryGpus(opts: QueryGpusOptions = {}): Promise<GpuDiscovery> {
  const command = opts.command ?? 'nvidia-smi';
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const child = execa(command, GPU_QUERY_ARGS, {
    reject: false,
    stdin: 'ignore',
    timeout: timeoutMs,
    forceKillAfterDelay: 1000,
    ...(opts.env ? { env: opts.env } : {}),
  });
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<'stuck'>((resolve) => {
    timer = setTimeout(() => resolve('stuck'), timeoutMs + 2000);
  });
  const r = await Promise.race([child, stuck]);
  clearTimeout(timer);
  if (r === 'stuck') {
    child.kill('SIGKILL');
    return { kind: 'failed', reason: `${command} did not answer within ${timeoutMs} ms and could not be stopped` };
  }
  const code = spawnCode(r);
  if (code === 'ENOENT')
    return { kind: 'no-driver', reason: `${command} is not installed (no NVIDIA driver on this machine)` };
  if (code !== undefined) return { kind: 'failed', reason: `${command} could not be run: ${code}` };
  if (r.timedOut) return { kind: 'failed', reason: `${command} did not answer within ${timeoutMs} ms` };
  const stdout = String(r.stdout);
  const stderr = String(r.stderr);
  const said = `${stdout}\n${stderr}`;
  if (r.exitCode !== 0) {
    if (NO_DRIVER.some((re) => re.test(said))) return { kind: 'no-driver', reason: firstLine(said) };
    return {
      kind: 'failed',
      reason:
        `${command} exited with ${String(r.exitCode ?? r.signal)}: ` +
        `${firstLine(stderr) || firstLine(stdout) || '(no output)'}`,
    };
  }
  const parsed = parseGpuQuery(stdout);
  if (parsed.kind === 'malformed')
    return NO_DRIVER.some((re) => re.test(said)) ? { kind: 'no-driver', reason: firstLine(said) } : parsed;
  if (parsed.gpus.length === 0) return { kind: 'no-driver', reason: `${command} lists no GPU` };
  return parsed;
}

/** Case, runs of spaces and a leading "NVIDIA " do not distinguish GPU models; everything else does. */
export function normaliseGpuName(name: string): string {
  return name
    .trim()
    .replace(/\s+/g, ' ')
    .toLowerCase()
    .replace(/^nvidia /, '');
}

/**
 * The id of the profile that describes a GPU, or null. A profile matches when its GPU name
 * (`gpu.name` in profiles/*.json) equals the GPU's name after `normaliseGpuName` on both: so
 * "Tesla V100-SXM2-16GB" takes the profile named "NVIDIA Tesla V100-SXM2-16GB", and "NVIDIA GeForce
 * RTX 2060 SUPER" the one named "... RTX 2060 Super". Nothing looser (no prefix or substring match):
 * an "RTX 2060" never takes the "RTX 2060 Super" profile, nor an "A100-SXM4-40GB" the 80 GB one,
 * because their SM counts and memory differ and the latency model would be wrong. Where two
 * profiles match, the first in `profiles` wins.
 */
export function matchProfile(
  gpuName: string,
  profiles: readonly { readonly id: string; readonly gpuName: string }[],
): string | null {
  const n = normaliseGpuName(gpuName);
  return profiles.find((p) => normaliseGpuName(p.gpuName) === n)?.id ?? null;
}

// GPU discovery and telemetry from nvidia-smi. The parser is pure (tested on recorded outputs in
// test/fixtures/nvidia-smi/); `queryGpus` is the one place that runs the command.
import { execa } from 'execa';

/** The fields asked for, in order (`nvidia-smi --help-query-gpu` documents them). */
export const GPU_QUERY_FIELDS = ['index', 'uuid', 'name', 'memory.total', 'memory.used', 'utilization.gpu'] as const;
export const GPU_QUERY_ARGS = [`--query-gpu=${GPU_QUERY_FIELDS.join(',')}`, '--format=csv,noheader,nounits'];

export interface SmiGpu {
  readonly index: number;
  readonly uuid: string;
  readonly name: string;
  readonly memTotalMb: number;
  /** null where the driver reports [N/A]. */
  readonly memUsedMb: number | null;
  readonly utilPct: number | null;
}

export type GpuQueryResult = { readonly kind: 'ok'; readonly gpus: readonly SmiGpu[] } | { readonly kind: 'malformed'; readonly error: string };

export type GpuDiscovery =
  | { readonly kind: 'ok'; readonly gpus: readonly SmiGpu[] }
  /** No NVIDIA driver or no GPU: the machine runs simulated GPUs only (`--simulate`). */
  | { readonly kind: 'no-driver'; readonly reason: string }
  | { readonly kind: 'malformed'; readonly error: string }
  | { readonly kind: 'failed'; readonly reason: string };

const NOT_AVAILABLE = /^\[(N\/A|Not Supported|Unknown Error|Insufficient Permissions)\]$|^N\/A$/i;

function numberOrNull(v: string): number | null | undefined {
  if (NOT_AVAILABLE.test(v)) return null;
  if (!/^-?\d+(\.\d+)?$/.test(v)) return undefined;
  return Number(v);
}

/** Parses the CSV nvidia-smi prints for GPU_QUERY_ARGS; names the line and field of what is wrong. */
export function parseGpuQuery(stdout: string): GpuQueryResult {
  const lines = stdout.replace(/\r/g, '').split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const gpus: SmiGpu[] = [];
  const seen = new Set<number>();
  for (const [i, line] of lines.entries()) {
    const where = `line ${i + 1}`;
    const f = line.split(',').map((x) => x.trim());
    if (f.length !== GPU_QUERY_FIELDS.length) return { kind: 'malformed', error: `${where}: ${f.length} fields, expected ${GPU_QUERY_FIELDS.length} (${GPU_QUERY_FIELDS.join(', ')}): '${line.slice(0, 120)}'` };
    const [idx, uuid, name, total, used, util] = f as [string, string, string, string, string, string];
    if (!/^\d+$/.test(idx)) return { kind: 'malformed', error: `${where}: index '${idx}' is not a non-negative integer` };
    const index = Number(idx);
    if (seen.has(index)) return { kind: 'malformed', error: `${where}: GPU index ${index} appears twice` };
    seen.add(index);
    if (!/^(GPU|MIG)-[0-9a-fA-F-]+$/.test(uuid)) return { kind: 'malformed', error: `${where}: uuid '${uuid}' is not a GPU UUID` };
    if (name === '') return { kind: 'malformed', error: `${where}: empty name` };
    const memTotalMb = numberOrNull(total);
    if (memTotalMb === undefined || memTotalMb === null || memTotalMb <= 0) return { kind: 'malformed', error: `${where}: memory.total '${total}' is not a positive number of MiB` };
    const memUsedMb = numberOrNull(used);
    if (memUsedMb === undefined) return { kind: 'malformed', error: `${where}: memory.used '${used}' is not a number of MiB` };
    const utilPct = numberOrNull(util);
    if (utilPct === undefined || (utilPct !== null && (utilPct < 0 || utilPct > 100))) return { kind: 'malformed', error: `${where}: utilization.gpu '${util}' is not a percentage` };
    gpus.push({ index, uuid, name, memTotalMb, memUsedMb, utilPct });
  }
  return { kind: 'ok', gpus: gpus.sort((a, b) => a.index - b.index) };
}

/** What nvidia-smi prints when there is a driver problem or nothing to show: no usable GPU. */
const NO_DRIVER = [/couldn't communicate with the NVIDIA driver/i, /No devices were found/i, /NVIDIA-SMI has failed/i, /Driver Not Loaded/i];

/** Runs nvidia-smi (or `command`, for tests) and classifies the outcome. Never throws. */
export async function queryGpus(opts: { command?: string; timeoutMs?: number; env?: Record<string, string> } = {}): Promise<GpuDiscovery> {
  const command = opts.command ?? 'nvidia-smi';
  const r = await execa(command, GPU_QUERY_ARGS, { reject: false, timeout: opts.timeoutMs ?? 10_000, ...(opts.env ? { env: opts.env } : {}) });
  const out = `${String(r.stdout)}\n${String(r.stderr)}`;
  if ((r as { code?: string }).code === 'ENOENT' || /ENOENT/.test(String(r.message ?? ''))) return { kind: 'no-driver', reason: `${command} is not installed (no NVIDIA driver)` };
  if (r.timedOut) return { kind: 'failed', reason: `${command} did not answer within ${opts.timeoutMs ?? 10_000} ms` };
  const noDriver = NO_DRIVER.find((re) => re.test(out));
  if (noDriver) return { kind: 'no-driver', reason: out.trim().split('\n')[0]!.slice(0, 300) };
  if (r.exitCode !== 0) return { kind: 'failed', reason: `${command} exited with ${String(r.exitCode)}: ${String(r.stderr).trim().slice(0, 300)}` };
  const parsed = parseGpuQuery(String(r.stdout));
  return parsed.kind === 'ok' && parsed.gpus.length === 0 ? { kind: 'no-driver', reason: `${command} lists no GPU` } : parsed;
}

function normalise(name: string): string {
  return name
    .toLowerCase()
    .replace(/^nvidia\s+/, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The profile that describes a GPU: the one whose `gpu.name` equals the GPU's name after
 * normalising case, spaces and a leading "NVIDIA" (an exact match only: "RTX 2060" must not take
 * the profile of an "RTX 2060 SUPER"). null when none matches.
 */
export function matchProfile(gpuName: string, profiles: readonly { id: string; gpuName: string }[]): string | null {
  const n = normalise(gpuName);
  return profiles.find((p) => normalise(p.gpuName) === n)?.id ?? null;
}

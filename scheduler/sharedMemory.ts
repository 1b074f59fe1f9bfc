// Triton's system shared-memory extension: a client on the scheduler's host puts
// its input tensors in a POSIX shared-memory object, registers it under a name, and sends infer
// requests that name the region, offset and size instead of carrying the bytes; outputs may be
// written into a region too, and the answer then carries no data. The formats are Triton's
// (docs/protocol/extension_shared_memory.md) and what tritonclient.http's register_system_shared_memory,
// get_system_shared_memory_status and unregister_system_shared_memory send and read, with regions made
// by tritonclient.utils.shared_memory (shm_open: the key "/inss_in" is the file /dev/shm/inss_in).
//
// The one effect here is file I/O on the region's descriptor (pread/pwrite: Node has no mmap, so each
// tensor is copied once between the page cache and the process, never over a socket). The service
// calls register/status/unregister from its routes (scheduler/sharedMemoryRoutes.ts), read() once per input in a
// region before the task is submitted, and write() once per output in a region before answering.
//
// What is checked, and why:
// - registration comes only from loopback addresses (the region is on this host; a remote caller
//   must not make the scheduler read or write this host's files), and the access rules of any
//   inference route apply (tokens where required: scheduler/auth.ts);
// - the key is one POSIX shm name: "/" then [A-Za-z0-9_.-], no other "/" and not "." or "..", so it
//   can only name a file directly in /dev/shm;
// - the file is opened without following links, must be a regular file owned by the scheduler's own
//   user (another user's shared memory is not the caller's to hand over), and offset + byte_size must
//   lie inside it;
// - at most MAX_REGIONS regions, each at most MAX_REGION_BYTES; a name is registered once;
// - reads and writes stay inside the registered range; a region shrunk since (ftruncate) is an error
//   for that request.
import { closeSync, constants, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { type InferInput, type InferRequest, REGION_NAME, type RegionRef, resolveRegionInput } from './kserve.js';

/** Regions registered at once. Each holds an open descriptor. */
export const MAX_REGIONS = 256;
/** Largest region a client may register. */
export const MAX_REGION_BYTES = 1 << 30;

/** A registered region as the status route shows it (Triton's `$system_shared_memory_status` entry). */
export interface RegionStatus {
  readonly name: string;
  readonly key: string;
  readonly offset: number;
  readonly byte_size: number;
}

interface Region extends RegionStatus {
  readonly fd: number;
}

/** A refusal and its HTTP status: 400 bad request, 403 not from this host, 404 unknown region, 409 name taken. */
export type ShmResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly status: 400 | 403 | 404 | 409; readonly error: string };

const KEY = /^\/[A-Za-z0-9_.-]{1,255}$/;

const RegisterBody = z
  .object(
    {
      key: z.string({ error: 'expected a string (the shared-memory key, e.g. "/inss_in")' }),
      offset: z
        .number({ error: 'expected a number' })
        .int({ error: 'expected an integer' })
        .nonnegative({ error: 'expected >= 0' }),
      byte_size: z
        .number({ error: 'expected a number' })
        .int({ error: 'expected an integer' })
        .positive({ error: 'expected > 0' }),
    },
    { error: 'expected a JSON object {key, offset, byte_size}' },
  )
  .strict();

/** The register route's body, validated; the error names the field. Pure. */
export function parseRegisterBody(body: Buffer): ShmResult<z.infer<typeof RegisterBody>> {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch (e) {
    return { ok: false, status: 400, error: `register request: malformed JSON: ${(e as Error).message}` };
  }
  const r = RegisterBody.safeParse(json);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`);
    return { ok: false, status: 400, error: `register request: ${issues.join('; ')}` };
  }
  return { ok: true, value: r.data };
}

/** What a key must be; undefined when it is one. Pure. */
export function keyProblem(key: string): string | undefined {
  if (!KEY.test(key) || key === '/.' || key === '/..') {
    return (
      `key ${JSON.stringify(key.slice(0, 64))}: expected a POSIX shared-memory name, "/" then letters, digits, ` +
      `'_', '.' or '-' (at most 255, no other "/")`
    );
  }
  return undefined;
}

export class SharedMemoryRegistry {
  private readonly regions = new Map<string, Region>();

  /** `dir`: where POSIX shared memory lives (/dev/shm on Linux). `uid`: the owner regions must have. */
  constructor(
    private readonly dir = '/dev/shm',
    private readonly uid: number | undefined = process.getuid?.(),
  ) {}

  register(name: string, key: string, offset: number, byteSize: number): ShmResult<RegionStatus> {
    if (!REGION_NAME.test(name))
      return {
        ok: false,
        status: 400,
        error:
          `region name ${JSON.stringify(name.slice(0, 64))}: ` +
          `expected letters, digits, '_', '.' or '-' (at most 128)`,
      };
    const bad = keyProblem(key);
    if (bad) return { ok: false, status: 400, error: bad };
    if (this.regions.has(name))
      return {
        ok: false,
        status: 409,
        error: `shared memory region '${name}' is already registered (unregister it first)`,
      };
    if (this.regions.size >= MAX_REGIONS)
      return { ok: false, status: 400, error: `${MAX_REGIONS} regions are registered already; unregister one first` };
    if (byteSize > MAX_REGION_BYTES)
      return { ok: false, status: 400, error: `byte_size ${byteSize} is over the limit of ${MAX_REGION_BYTES}` };
    let fd: number;
    try {
      fd = openSync(join(this.dir, key.slice(1)), constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const why =
        code === 'ENOENT'
          ? 'no such shared-memory object (create it first: shm_open, or ' +
            'tritonclient.utils.shared_memory.create_shared_memory_region)'
          : code === 'ELOOP'
            ? 'it is a symbolic link'
            : code === 'EACCES'
              ? 'permission denied'
              : (code ?? 'cannot open');
      return { ok: false, status: 400, error: `key '${key}': ${why}` };
    }
    const st = fstatSync(fd);
    const problem = !st.isFile()
      ? 'is not a regular file'
      : this.uid !== undefined && st.uid !== this.uid
        ? `belongs to another user (uid ${st.uid}; the scheduler runs as ${this.uid})`
        : offset + byteSize > st.size
          ? `is ${st.size} bytes: offset ${offset} + byte_size ${byteSize} runs past its end`
          : undefined;
    if (problem) {
      closeSync(fd);
      return { ok: false, status: 400, error: `key '${key}' ${problem}` };
    }
    const region: Region = { name, key, offset, byte_size: byteSize, fd };
    this.regions.set(name, region);
    return { ok: true, value: statusOf(region) };
  }

  /** Every region (no name), or the one named; 404 for a name not registered. */
  status(name?: string): ShmResult<RegionStatus[]> {
    if (name === undefined) return { ok: true, value: [...this.regions.values()].map(statusOf) };
    const r = this.regions.get(name);
    return r
      ? { ok: true, value: [statusOf(r)] }
      : { ok: false, status: 404, error: `no shared memory region '${name}' is registered` };
  }

  /** Unregisters every region (no name) or the one named (none by that name: nothing to do, as Triton does). */
  unregister(name?: string): void {
    for (const r of name === undefined
      ? [...this.regions.values()]
      : [this.regions.get(name)].filter((x) => x !== undefined)) {
      this.regions.delete(r.name);
      closeSync(r.fd);
    }
  }

  /** Where a tensor lies in a file, or why it does not fit its region (400). */
  private locate(ref: RegionRef, what: string): ShmResult<{ region: Region; position: number }> {
    const region = this.regions.get(ref.name);
    if (!region)
      return { ok: false, status: 400, error: `${what}: no shared memory region '${ref.name}' is registered` };
    if (ref.offset + ref.byteSize > region.byte_size) {
      return {
        ok: false,
        status: 400,
        error:
          `${what}: shared_memory_offset ${ref.offset} + shared_memory_byte_size ${ref.byteSize} runs past ` +
          `region '${ref.name}' (${region.byte_size} bytes)`,
      };
    }
    return { ok: true, value: { region, position: region.offset + ref.offset } };
  }

  /** The tensor bytes an input names (a copy). `what` names the input in errors. */
  read(ref: RegionRef, what: string): ShmResult<Buffer> {
    const at = this.locate(ref, what);
    if (!at.ok) return at;
    const out = Buffer.allocUnsafe(ref.byteSize);
    let got = 0;
    while (got < out.length) {
      const n = readSync(at.value.region.fd, out, got, out.length - got, at.value.position + got);
      if (n === 0)
        return {
          ok: false,
          status: 400,
          error:
            `${what}: region '${ref.name}' ends before offset ${ref.offset} + ${ref.byteSize} ` +
            `(its file was shrunk)`,
        };
      got += n;
    }
    return { ok: true, value: out };
  }

  /**
   * Writes an output's bytes where `ref` says (data.length <= ref.byteSize: checked by the codec against the output's
   * size).
   */
  write(ref: RegionRef, data: Uint8Array, what: string): ShmResult<void> {
    const at = this.locate({ ...ref, byteSize: data.length }, what);
    if (!at.ok) return at;
    let put = 0;
    while (put < data.length)
      put += writeSync(at.value.region.fd, data, put, data.length - put, at.value.position + put);
    return { ok: true, value: undefined };
  }

  /** Closes every descriptor (the service's close). */
  close(): void {
    this.unregister();
  }
}

function statusOf(r: Region): RegionStatus {
  return { name: r.name, key: r.key, offset: r.offset, byte_size: r.byte_size };
}

// ---------------------------------------------------------------------------------------------------
// The service's use of the registry: one call per infer request before its task, one per answer.

/** Whether a peer address is this host (127.0.0.0/8, ::1, or IPv4-mapped 127.x). */
export function isLocalPeer(address: string | undefined): boolean {
  if (address === undefined) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || /^127\.\d+\.\d+\.\d+$/.test(a);
}

export const NOT_LOCAL =
  "the shared memory extension is only for clients on the scheduler's host (this request came from another address)";

/**
 * The request with every input that names a region read from it and checked (resolveRegionInput),
 * and every output region checked to exist and hold its output; a request that uses no region comes
 * back as it is. `local`: whether the client is on this host (a region may be used from there only).
 */
export function resolveRegions(
  registry: SharedMemoryRegistry,
  request: InferRequest,
  outputBytes: (name: string) => number,
  local: boolean,
): ShmResult<InferRequest> {
  const uses = request.inputs.some((i) => i.region) || request.outputs.some((o) => o.region);
  if (!uses) return { ok: true, value: request };
  if (!local) return { ok: false, status: 403, error: NOT_LOCAL };
  const inputs: InferInput[] = [];
  for (const [k, input] of request.inputs.entries()) {
    if (!input.region) {
      inputs.push(input);
      continue;
    }
    const bytes = registry.read(input.region, `inputs[${k}] ('${input.name}')`);
    if (!bytes.ok) return bytes;
    const r = resolveRegionInput(k, input, bytes.value);
    if (!r.ok) return { ok: false, status: 400, error: r.error };
    inputs.push(r.input);
  }
  for (const o of request.outputs) {
    if (!o.region) continue;
    const found = registry.status(o.region.name);
    if (!found.ok)
      return {
        ok: false,
        status: 400,
        error: `output '${o.name}': no shared memory region '${o.region.name}' is registered`,
      };
    const room = found.value[0]!.byte_size - o.region.offset;
    if (outputBytes(o.name) > Math.min(room, o.region.byteSize)) {
      return {
        ok: false,
        status: 400,
        error:
          `output '${o.name}': ${outputBytes(o.name)} bytes do not fit at offset ${o.region.offset} of region ` +
          `'${o.region.name}' (${found.value[0]!.byte_size} bytes)`,
      };
    }
  }
  return { ok: true, value: { ...request, inputs } };
}

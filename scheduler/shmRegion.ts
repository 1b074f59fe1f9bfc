// The scheduler's shared-memory region (docs/serving.md "Shared memory between the scheduler
// and its workers"): one file per scheduler service in /dev/shm, `inss-PID-N.shm`, created exclusively
// with mode 0600 (only this user's processes map it), mapped read-write through the addon
// (src/protocol/shmMap.ts) and unlinked when the service closes or the process exits. Request bodies of
// 64 KB or more are read into its slots (bodyReader.ts); a worker on this host that mapped it gets
// their descriptors instead of their bytes (workerLink.ts). Wraps one external effect: the file.
// Contract: `open` never throws: without the addon, with --shm-mb 0, or when the file cannot be made,
// it returns why (the service logs it once and reads bodies into pooled buffers). `take` returns null
// when no slot is free (that body takes a pooled buffer). `release` frees the slot a view came from
// (others are ignored); its caller frees a slot once nothing will read it for an answer anyone takes
// (bodyReader.ts; grpcHandlers.ts for gRPC tensors).
import { closeSync, ftruncateSync, openSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SLOT_ALIGN, SlotAllocator } from '../src/protocol/shm.js';
import { loadShmAddon } from '../src/protocol/shmMap.js';

/** `inss up --shm-mb`'s default: 167 bodies of 602 KB (a 224x224x3 FP32 image), 128 with a quarter to spare. */
export const DEFAULT_SHM_MB = 96;
/** Largest --shm-mb accepted (a region is memory of the host's, counted against /dev/shm's size). */
export const MAX_SHM_MB = 16384;

const NAME = /^inss-(\d+)-(\d+)\.shm$/;
let instances = 0;

/** Whether process `pid` runs (a signal 0 probe: EPERM means it runs as another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes regions left by scheduler processes that no longer run (killed before they could unlink
 * theirs), and any of this pid this process did not make (a restarted container's scheduler is pid 1 again).
 */
function removeStale(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const n of names) {
    const m = NAME.exec(n);
    if (!m) continue;
    const pid = Number(m[1]);
    const stale = pid === process.pid ? Number(m[2]) >= instances : !alive(pid);
    if (stale) rmSync(join(dir, n), { force: true });
  }
}

export class ShmRegion {
  private readonly slots: SlotAllocator;
  /** Each body's start -> the start of the slot it lies in (a body starts where its tensor lands aligned). */
  private readonly bodyToSlot = new Map<number, number>();
  private readonly onExit = () => rmSync(this.path, { force: true });
  private closed = false;

  private constructor(
    readonly path: string,
    private readonly buffer: ArrayBuffer,
  ) {
    this.slots = new SlotAllocator(buffer.byteLength);
    process.once('exit', this.onExit);
  }

  /** A region of `mb` MB in `dir`, or why there is none. */
  static open(mb: number, dir = '/dev/shm'): ShmRegion | { why: string } {
    if (mb === 0) return { why: '--shm-mb 0' };
    const addon = loadShmAddon();
    if (!addon.ok) return { why: `the shared-memory addon is ${addon.why}` };
    removeStale(dir);
    const path = join(dir, `inss-${process.pid}-${instances++}.shm`);
    try {
      const fd = openSync(path, 'wx', 0o600);
      try {
        ftruncateSync(fd, mb * 1024 * 1024);
      } finally {
        closeSync(fd);
      }
      return new ShmRegion(path, addon.map(path, true));
    } catch (e) {
      rmSync(path, { force: true });
      return { why: `cannot make ${path}: ${(e as Error).message}` };
    }
  }

  get bytes(): number {
    return this.buffer.byteLength;
  }

  /**
   * A view of `bytes` in a free slot, placed so that the byte at `alignAt` within it (a binary
   * request's tensor, after its JSON header) starts at a multiple of SLOT_ALIGN; null when full.
   */
  take(bytes: number, alignAt = 0): Buffer | null {
    if (this.closed) return null;
    const pad = (SLOT_ALIGN - (alignAt % SLOT_ALIGN)) % SLOT_ALIGN;
    const slot = this.slots.alloc(bytes + pad);
    if (slot === null) return null;
    this.bodyToSlot.set(slot + pad, slot);
    return Buffer.from(this.buffer, slot + pad, bytes);
  }

  /** Whether `view` lies in this region (a worker that mapped it can be given its offset). */
  holds(view: Uint8Array): boolean {
    return view.buffer === this.buffer;
  }

  /** Frees the slot of a body `take` gave (the whole body view); anything else is ignored. */
  release(body: Uint8Array): void {
    if (body.buffer !== this.buffer) return;
    const slot = this.bodyToSlot.get(body.byteOffset);
    if (slot === undefined) return;
    this.bodyToSlot.delete(body.byteOffset);
    this.slots.free(slot);
  }

  /** Bodies in slots now, and their bytes (for /metrics and the tests). */
  get inUse(): { slots: number; bytes: number } {
    return { slots: this.slots.count, bytes: this.slots.used };
  }

  /** Unlinks the file (workers that mapped it keep their mapping; no new one can map it). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    process.removeListener('exit', this.onExit);
    rmSync(this.path, { force: true });
  }
}

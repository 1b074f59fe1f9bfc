// The shared-memory data path between the scheduler and a worker on its host
// (docs/worker-protocol.md, "Shared memory"): the scheduler reads large request bodies straight into
// slots of one /dev/shm region per scheduler process, and a batch to a worker that mapped the region
// carries, per sample, a descriptor (offset, byte length) instead of the bytes. Pure: the slot
// allocator the scheduler's region (scheduler/shmRegion.ts) runs, and the rule by which a worker
// finds each sample's bytes (agent/simWorker.ts; native/torch_worker.py follows the same rule).

/** Slots start at multiples of this (a cache line: FP32 views of a sample's bytes need 4). */
export const SLOT_ALIGN = 64;

/**
 * First-fit allocation of byte ranges of a region of `bytes`, each starting at a multiple of
 * SLOT_ALIGN, freed ranges merged with their free neighbours. Bodies of any size share the region:
 * a 602 KB image and a 150 KB one take what they need. Called on the scheduler's event loop once per
 * request body of 64 KB or more and once per body freed: O(free ranges), a handful in practice.
 * `alloc` returns null when no free range is large enough (the caller reads that body the old way).
 */
export class SlotAllocator {
  /** Free ranges, sorted by start, none touching another. */
  private readonly freeList: { start: number; bytes: number }[];
  private readonly taken = new Map<number, number>();
  private usedBytes = 0;

  constructor(readonly bytes: number) {
    if (!Number.isInteger(bytes) || bytes < SLOT_ALIGN)
      throw new RangeError(`a region of ${bytes} bytes: expected an integer of at least ${SLOT_ALIGN}`);
    this.freeList = [{ start: 0, bytes: bytes - (bytes % SLOT_ALIGN) }];
  }

  /** The start of a range of at least `bytes` (rounded up to SLOT_ALIGN), or null when the region is full. */
  alloc(bytes: number): number | null {
    if (!Number.isInteger(bytes) || bytes <= 0) throw new RangeError(`alloc(${bytes}): expected a positive integer`);
    const size = Math.ceil(bytes / SLOT_ALIGN) * SLOT_ALIGN;
    const i = this.freeList.findIndex((r) => r.bytes >= size);
    if (i < 0) return null;
    const r = this.freeList[i]!;
    const start = r.start;
    if (r.bytes === size) this.freeList.splice(i, 1);
    else {
      r.start += size;
      r.bytes -= size;
    }
    this.taken.set(start, size);
    this.usedBytes += size;
    return start;
  }

  /** Frees the range `alloc` returned at `start`; false (nothing changes) for any other value. */
  free(start: number): boolean {
    const size = this.taken.get(start);
    if (size === undefined) return false;
    this.taken.delete(start);
    this.usedBytes -= size;
    const list = this.freeList;
    let i = 0;
    while (i < list.length && list[i]!.start < start) i++;
    const before = i > 0 ? list[i - 1]! : null;
    const after = i < list.length ? list[i]! : null;
    if (before && before.start + before.bytes === start) {
      before.bytes += size;
      if (after && before.start + before.bytes === after.start) {
        before.bytes += after.bytes;
        list.splice(i, 1);
      }
    } else if (after && start + size === after.start) {
      after.start = start;
      after.bytes += size;
    } else {
      list.splice(i, 0, { start, bytes: size });
    }
    return true;
  }

  /** Bytes in ranges handed out (rounded up to SLOT_ALIGN each). */
  get used(): number {
    return this.usedBytes;
  }

  /** Ranges handed out and not freed. */
  get count(): number {
    return this.taken.size;
  }
}

/** A batch sample's place: `[offset, byteLength]` in the region, or null when its bytes are in the frame's payload. */
export type SampleSlot = readonly [number, number] | null;

/**
 * Each sample's bytes of a batch whose frame carries `slots` (one per sample, docs/worker-protocol.md):
 * a descriptor's range of `region`, or the payload's next `sampleBytes[k]` bytes, in order. Views, no
 * copies. A string says what is wrong (the batch is refused): a descriptor whose length is not the
 * sample's, one outside the region, a payload of another length than its inline samples add up to.
 */
export function sampleViews<B extends Uint8Array>(
  slots: readonly SampleSlot[],
  sampleBytes: readonly number[],
  payload: B,
  region: B | null,
): B[] | string {
  if (slots.length !== sampleBytes.length) return `${slots.length} slots for ${sampleBytes.length} samples`;
  const out: B[] = [];
  let at = 0;
  for (const [k, s] of slots.entries()) {
    const n = sampleBytes[k]!;
    if (s === null) {
      if (at + n > payload.length) return `the payload has ${payload.length} bytes, fewer than its inline samples need`;
      out.push(payload.subarray(at, at + n) as B);
      at += n;
      continue;
    }
    if (region === null) return `sample ${k} is in shared memory, but this worker has not mapped a region`;
    const [offset, bytes] = s;
    if (bytes !== n) return `sample ${k}: its slot holds ${bytes} bytes, the input says ${n}`;
    if (!Number.isInteger(offset) || offset < 0 || offset + bytes > region.length)
      return `sample ${k}: slot [${offset}, ${bytes}] is outside the region of ${region.length} bytes`;
    out.push(region.subarray(offset, offset + bytes) as B);
  }
  if (at !== payload.length) return `the payload has ${payload.length} bytes, its inline samples add up to ${at}`;
  return out;
}

import { describe, expect, it } from 'vitest';
import { SLOT_ALIGN, SlotAllocator, sampleViews } from '../../src/protocol/shm.js';

describe('SlotAllocator', () => {
  it('hands out aligned, disjoint ranges first fit until the region is full, then null', () => {
    const a = new SlotAllocator(10 * SLOT_ALIGN);
    const x = a.alloc(1)!;
    const y = a.alloc(SLOT_ALIGN + 1)!;
    const z = a.alloc(3 * SLOT_ALIGN)!;
    expect([x, y, z]).toEqual([0, SLOT_ALIGN, 3 * SLOT_ALIGN]);
    expect(a.used).toBe(6 * SLOT_ALIGN);
    expect(a.alloc(5 * SLOT_ALIGN)).toBeNull(); // 4 lines left
    expect(a.alloc(4 * SLOT_ALIGN)).toBe(6 * SLOT_ALIGN);
    expect(a.alloc(1)).toBeNull();
    expect(a.count).toBe(4);
  });

  it('merges a freed range with free neighbours on both sides, so a large body fits again', () => {
    const a = new SlotAllocator(6 * SLOT_ALIGN);
    const r = [0, 1, 2, 3, 4, 5].map(() => a.alloc(SLOT_ALIGN)!);
    expect(a.alloc(1)).toBeNull();
    expect(a.free(r[1]!)).toBe(true);
    expect(a.free(r[3]!)).toBe(true);
    expect(a.alloc(2 * SLOT_ALIGN)).toBeNull(); // two holes of one line each
    expect(a.free(r[2]!)).toBe(true); // joins 1..3
    expect(a.alloc(3 * SLOT_ALIGN)).toBe(r[1]);
    for (const s of [r[0]!, r[1]!, r[4]!, r[5]!]) a.free(s);
    expect(a.used).toBe(0);
    expect(a.alloc(6 * SLOT_ALIGN)).toBe(0);
  });

  it('ignores a free of anything it did not hand out, or handed out and freed already', () => {
    const a = new SlotAllocator(4 * SLOT_ALIGN);
    const x = a.alloc(10)!;
    expect(a.free(x + 1)).toBe(false);
    expect(a.free(x)).toBe(true);
    expect(a.free(x)).toBe(false);
    expect(a.used).toBe(0);
    expect(a.alloc(4 * SLOT_ALIGN)).toBe(0);
  });

  it('keeps its books straight through many random allocations and frees', () => {
    const a = new SlotAllocator(1000 * SLOT_ALIGN);
    const held = new Map<number, number>();
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 5000; i++) {
      if (held.size > 0 && rnd() < 0.45) {
        const keys = [...held.keys()];
        const k = keys[Math.floor(rnd() * keys.length)]!;
        expect(a.free(k)).toBe(true);
        held.delete(k);
      } else {
        const bytes = 1 + Math.floor(rnd() * 40 * SLOT_ALIGN);
        const at = a.alloc(bytes);
        if (at === null) continue;
        expect(at % SLOT_ALIGN).toBe(0);
        for (const [s, n] of held) expect(at + bytes <= s || s + n <= at).toBe(true); // disjoint
        held.set(at, bytes);
      }
    }
    expect(a.count).toBe(held.size);
    for (const k of held.keys()) a.free(k);
    expect(a.alloc(1000 * SLOT_ALIGN)).toBe(0); // all merged back into one range
  });

  it('refuses a region or a request that is not a positive integer', () => {
    expect(() => new SlotAllocator(10)).toThrow(RangeError);
    expect(() => new SlotAllocator(4 * SLOT_ALIGN).alloc(0)).toThrow(RangeError);
    expect(() => new SlotAllocator(4 * SLOT_ALIGN).alloc(1.5)).toThrow(RangeError);
  });
});

describe('sampleViews', () => {
  const region = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const payload = Buffer.from([200, 201, 202, 203, 204, 205]);

  it("finds each sample in the region or in the payload's next bytes, in order", () => {
    const v = sampleViews([[10, 3], null, [100, 3], null], [3, 3, 3, 3], payload, region);
    expect(Array.isArray(v) && v.map((b) => [...b])).toEqual([
      [10, 11, 12],
      [200, 201, 202],
      [100, 101, 102],
      [203, 204, 205],
    ]);
    expect(Array.isArray(v) && v[0]!.buffer).toBe(region.buffer); // a view, not a copy
  });

  it('says what is wrong with a batch it cannot place', () => {
    expect(sampleViews([[10, 3]], [3], Buffer.alloc(0), null)).toMatch(/has not mapped a region/);
    expect(sampleViews([[10, 4]], [3], Buffer.alloc(0), region)).toMatch(/holds 4 bytes, the input says 3/);
    expect(sampleViews([[254, 3]], [3], Buffer.alloc(0), region)).toMatch(/outside the region/);
    expect(sampleViews([null], [3], payload, region)).toMatch(/add up to 3/);
    expect(sampleViews([null, null, null], [3, 3, 3], payload, region)).toMatch(/fewer than its inline samples need/);
    expect(sampleViews([null], [3, 3], payload, region)).toMatch(/1 slots for 2 samples/);
  });
});

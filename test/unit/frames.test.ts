import { describe, expect, it } from 'vitest';
import {
  BufferPool,
  sizeClass,
  decodeFrame,
  encodeFrame,
  FrameDecoder,
  FrameError,
  framePieces,
} from '../../src/protocol/frames.js';
import { FromAgentSchema, ToAgentSchema } from '../../src/protocol/agent.js';
import { ToWorkerSchema } from '../../src/protocol/worker.js';

describe('frames', () => {
  it('round-trips a header and payload, with the payload 8-byte aligned in the frame', () => {
    for (const header of [{ a: 1 }, { type: 'batch', id: 'b1234567' }, { x: 'é'.repeat(13) }]) {
      const payload = Buffer.from([1, 2, 3, 4, 5]);
      const f = encodeFrame(header, payload);
      const d = decodeFrame(f);
      expect(d.header).toEqual(header);
      expect([...d.payload]).toEqual([1, 2, 3, 4, 5]);
      expect(d.payload.byteOffset - f.byteOffset).toBe(f.length - 5);
      expect((f.length - 5) % 8).toBe(0);
    }
  });

  it('pieces concatenated are the same frame', () => {
    const parts = [Buffer.from([1, 2]), Buffer.from([3])];
    expect(Buffer.concat(framePieces({ k: 'v' }, parts))).toEqual(encodeFrame({ k: 'v' }, Buffer.from([1, 2, 3])));
  });

  it('the stream decoder reassembles frames split at every byte and glued together', () => {
    const frames = [
      encodeFrame({ n: 1 }, Buffer.alloc(10, 7)),
      encodeFrame({ n: 2 }),
      encodeFrame({ n: 3 }, Buffer.alloc(3, 9)),
    ];
    const all = Buffer.concat(frames);
    for (const step of [1, 3, 7, all.length]) {
      const dec = new FrameDecoder();
      const got: unknown[] = [];
      for (let i = 0; i < all.length; i += step)
        for (const f of dec.push(all.subarray(i, i + step))) got.push([f.header, f.payload.length]);
      expect(got).toEqual([
        [{ n: 1 }, 10],
        [{ n: 2 }, 0],
        [{ n: 3 }, 3],
      ]);
      expect(dec.pendingBytes).toBe(0);
    }
  });

  it('reads a frame that spans chunks straight into one buffer of its size, its payload 8-byte aligned', () => {
    const payload = Buffer.alloc(200_003);
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 7) % 251;
    const all = Buffer.concat([
      encodeFrame({ n: 1 }, Buffer.alloc(5, 1)),
      encodeFrame({ type: 'batch', id: 'b9' }, payload),
      encodeFrame({ n: 3 }),
    ]);
    const sizes: number[] = [];
    const dec = new FrameDecoder((n) => {
      sizes.push(n);
      return Buffer.allocUnsafeSlow(n);
    });
    const got: { header: unknown; payload: Buffer }[] = [];
    // 64 KB pieces as a socket gives them, and an odd cut inside the second frame's prefix.
    const cuts = [3, 20, 65_536 + 20, 2 * 65_536 + 20, 3 * 65_536 + 20, all.length];
    let from = 0;
    for (const c of cuts) {
      got.push(...dec.push(all.subarray(from, c)));
      from = c;
    }
    expect(got.map((f) => f.header)).toEqual([{ n: 1 }, { type: 'batch', id: 'b9' }, { n: 3 }]);
    expect(got[1]!.payload.equals(payload)).toBe(true);
    expect(got[1]!.payload.byteOffset % 8).toBe(0);
    expect(dec.pendingBytes).toBe(0);
    // One allocation for the frame cut at byte 3 and one for the big frame, each of header + payload bytes.
    const bigHead = encodeFrame({ type: 'batch', id: 'b9' }).length - 8;
    expect(sizes).toEqual([encodeFrame({ n: 1 }, Buffer.alloc(5)).length - 8, bigHead + payload.length]);
  });

  it('size classes: 64 KB at least, then at most 12.5% over the size asked', () => {
    expect(sizeClass(1)).toBe(65_536);
    expect(sizeClass(65_536)).toBe(65_536);
    for (const n of [65_537, 602_112, 602_400, 19_267_584, 19_300_000, 2 ** 24]) {
      expect(sizeClass(n)).toBeGreaterThanOrEqual(n);
      expect(sizeClass(n)).toBeLessThanOrEqual(n * 1.125);
      expect(sizeClass(sizeClass(n))).toBe(sizeClass(n));
    }
    expect(sizeClass(602_112)).toBe(sizeClass(602_400)); // a body with a slightly longer JSON header reuses the buffer
  });

  it('a buffer pool gives back a buffer it was given, and no other', () => {
    const pool = new BufferPool(1);
    const a = pool.take(100_000);
    expect(a.length).toBe(100_000);
    pool.give(a.subarray(10)); // a view of it: the whole buffer returns
    const b = pool.take(99_000); // the same size class
    expect(b.buffer).toBe(a.buffer);
    expect(b.length).toBe(99_000);
    expect(pool.take(99_000).buffer).not.toBe(a.buffer); // given out already
    pool.give(Buffer.alloc(131_072)); // not the pool's: ignored
    const c = pool.take(131_072);
    expect(c.buffer).not.toBe(a.buffer);
    pool.give(b);
    pool.give(b); // twice: kept once
    expect(pool.take(100_000).buffer).toBe(a.buffer);
    expect(pool.take(100_000).buffer).not.toBe(a.buffer);
  });

  it('a shared buffer pool hands out shared memory and recycles it', () => {
    const pool = new BufferPool(1, 1 << 20, true);
    const a = pool.take(70_000);
    expect(a.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(new BufferPool(1).take(70_000).buffer).toBeInstanceOf(ArrayBuffer);
    pool.give(a);
    expect(pool.take(70_000).buffer).toBe(a.buffer);
    pool.give(Buffer.from(new SharedArrayBuffer(70_000))); // shared, but not the pool's: ignored
    expect(pool.heldBytes).toBe(0);
  });

  it('a buffer pool holds at most its byte cap of free buffers', () => {
    const pool = new BufferPool(10, 3 * 65_536);
    const bufs = Array.from({ length: 5 }, () => pool.take(65_536));
    for (const b of bufs) pool.give(b);
    expect(pool.heldBytes).toBe(3 * 65_536); // the other two are left to the garbage collector
    const again = Array.from({ length: 5 }, () => pool.take(65_536).buffer);
    expect(again.filter((ab) => bufs.some((b) => b.buffer === ab))).toHaveLength(3);
    expect(pool.heldBytes).toBe(0);
  });

  it('rejects what is not a frame', () => {
    expect(() => decodeFrame(Buffer.alloc(3))).toThrow(FrameError);
    const f = encodeFrame({ a: 1 }, Buffer.alloc(4));
    expect(() => decodeFrame(f.subarray(0, f.length - 1))).toThrow(/says .* bytes but has/);
    const bad = Buffer.alloc(12);
    bad.writeUInt32BE(4, 0);
    bad.write('nope', 8);
    expect(() => decodeFrame(bad)).toThrow(/not JSON/);
    const huge = Buffer.alloc(8);
    huge.writeUInt32BE(0xffffffff, 0);
    expect(() => new FrameDecoder().push(huge)).toThrow(/over/);
  });

  it('message schemas refuse a wrong version, type or field', () => {
    expect(FromAgentSchema.safeParse({ v: 2, type: 'workers', workers: [] }).success).toBe(false);
    expect(FromAgentSchema.safeParse({ v: 1, type: 'nope' }).success).toBe(false);
    expect(FromAgentSchema.safeParse({ v: 1, type: 'workers', workers: [], extra: 1 }).success).toBe(false);
    expect(ToWorkerSchema.safeParse({ v: 1, type: 'batch', id: 'b', size: 0, inputs: [] }).success).toBe(false);
    expect(
      ToWorkerSchema.safeParse({ v: 1, type: 'batch', id: 'b', model: 'resnet50', size: 2, inputs: [] }).success,
    ).toBe(true);
    // A batch names its model (a worker refuses one for another); an agent batch names the whole worker identity.
    expect(ToWorkerSchema.safeParse({ v: 1, type: 'batch', id: 'b', size: 2, inputs: [] }).success).toBe(false);
    const identity = { workerId: 'w1', model: 'resnet50', gpu: 0, pct: 50, generation: 7 };
    expect(
      ToAgentSchema.safeParse({ v: 1, type: 'batch', batchId: 'b1', ...identity, size: 1, inputs: [] }).success,
    ).toBe(true);
    for (const k of Object.keys(identity)) {
      const partial: Record<string, unknown> = { v: 1, type: 'batch', batchId: 'b1', ...identity, size: 1, inputs: [] };
      delete partial[k];
      expect(ToAgentSchema.safeParse(partial).success, `batch without ${k}`).toBe(false);
    }
    expect(
      ToAgentSchema.safeParse({
        v: 1,
        type: 'desired',
        generation: 1,
        workers: [{ workerId: 'w1', model: 'resnet50', gpu: 0, pct: 50 }],
      }).success,
    ).toBe(false);
  });
});

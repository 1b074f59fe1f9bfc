// The one wire format of inss's process boundaries (scheduler <-> agent over WebSocket binary
// messages, agent <-> worker over the worker's stdin/stdout): a frame is
//
//   u32 big-endian  H = byte length of the header
//   u32 big-endian  P = byte length of the payload
//   H bytes         the header: one UTF-8 JSON object (a message of protocol/agent.ts or protocol/worker.ts)
//   P bytes         the payload: raw tensor bytes (batch inputs, batch outputs), often empty
//
// Language-neutral on purpose: a Python worker reads it with struct.unpack('>II', ...) and json.loads
// (docs/worker-protocol.md). Pure: encoding and decoding only, no I/O.

/** Largest header accepted; a bigger one means the stream is not speaking this protocol. */
export const MAX_HEADER_BYTES = 1 << 20;
/** Largest payload accepted (a batch of 32 images of 224x224x3 FP32 is 19 MB). */
export const MAX_PAYLOAD_BYTES = 1 << 30;

export interface Frame {
  readonly header: unknown;
  readonly payload: Buffer;
}

/** A stream that does not follow the frame format (a bug or a foreign process on the pipe). */
export class FrameError extends Error {
  override readonly name = 'FrameError';
}

const EMPTY = Buffer.alloc(0);

/**
 * The 8-byte prefix and the header of a frame, the header padded with spaces (valid JSON whitespace)
 * so that the payload starts at a multiple of 8 bytes: a reader that receives the frame into a fresh
 * buffer can view the payload as a Float32Array or Float64Array without copying it.
 */
export function frameHead(header: object, payloadBytes: number): Buffer {
  const json = JSON.stringify(header);
  const jsonBytes = Buffer.byteLength(json, 'utf8');
  const padded = jsonBytes + ((8 - ((8 + jsonBytes) % 8)) % 8);
  const out = Buffer.alloc(8 + padded, 0x20);
  out.writeUInt32BE(padded, 0);
  out.writeUInt32BE(payloadBytes, 4);
  out.write(json, 8, 'utf8');
  return out;
}

/** A whole frame in one buffer (one copy of the payload; for small payloads and tests). */
export function encodeFrame(header: object, payload: Uint8Array = EMPTY): Buffer {
  const head = frameHead(header, payload.length);
  return payload.length === 0 ? head : Buffer.concat([head, payload]);
}

/**
 * A frame as the pieces to write one after another (prefix and header, then each payload part), so a
 * batch of task inputs goes onto a socket or pipe without being copied into one buffer first.
 */
export function framePieces(header: object, parts: readonly Uint8Array[]): Uint8Array[] {
  const total = parts.reduce((a, p) => a + p.length, 0);
  return [frameHead(header, total), ...parts];
}

/** Decodes one whole frame (a WebSocket message). Throws FrameError when it is not one. */
export function decodeFrame(buf: Buffer): Frame {
  if (buf.length < 8) throw new FrameError(`frame of ${buf.length} bytes is shorter than its 8-byte prefix`);
  const h = buf.readUInt32BE(0);
  const p = buf.readUInt32BE(4);
  if (h > MAX_HEADER_BYTES) throw new FrameError(`frame header of ${h} bytes is over ${MAX_HEADER_BYTES}`);
  if (8 + h + p !== buf.length) throw new FrameError(`frame says ${8 + h + p} bytes but has ${buf.length}`);
  return { header: parseHeader(buf.subarray(8, 8 + h)), payload: buf.subarray(8 + h) };
}

function parseHeader(b: Buffer): unknown {
  try {
    return JSON.parse(b.toString('utf8'));
  } catch (e) {
    throw new FrameError(`frame header is not JSON: ${(e as Error).message}`);
  }
}

/** Where a stream decoder puts a frame that spans chunks (header and payload, `bytes` in all). */
export type FrameAlloc = (bytes: number) => Buffer;

/**
 * Reassembles frames from a byte stream (a pipe or socket delivers them in pieces of up to 64 KB).
 * Feed it every chunk; it returns the frames completed so far. A frame inside one chunk is a view of
 * that chunk (no copy); a frame that spans chunks is read straight into one buffer of its size,
 * allocated once its 8-byte prefix has arrived (`alloc`; default Buffer.allocUnsafeSlow: the payload
 * then starts 8-byte aligned), each chunk copied in as it arrives, so a 19 MB batch is neither kept as
 * 300 chunks nor concatenated at the end. Throws FrameError on a stream that is not frames; after that
 * the stream cannot be trusted and the caller closes it.
 */
export class FrameDecoder {
  private readonly prefix = Buffer.alloc(8);
  private prefixFill = 0;
  /** The frame being filled (header and payload, without the prefix), and how far. */
  private frame: Buffer | null = null;
  private frameFill = 0;
  private headerBytes = 0;

  constructor(private readonly alloc: FrameAlloc = (n) => Buffer.allocUnsafeSlow(n)) {}

  push(chunk: Buffer): Frame[] {
    const out: Frame[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.frame === null) {
        // A whole frame in what is left of this chunk: a view of it.
        if (this.prefixFill === 0 && chunk.length - at >= 8) {
          const h = chunk.readUInt32BE(at);
          const p = chunk.readUInt32BE(at + 4);
          checkSizes(h, p);
          if (chunk.length - at >= 8 + h + p) {
            out.push({
              header: parseHeader(chunk.subarray(at + 8, at + 8 + h)),
              payload: chunk.subarray(at + 8 + h, at + 8 + h + p),
            });
            at += 8 + h + p;
            continue;
          }
        }
        const n = Math.min(8 - this.prefixFill, chunk.length - at);
        chunk.copy(this.prefix, this.prefixFill, at, at + n);
        this.prefixFill += n;
        at += n;
        if (this.prefixFill < 8) break;
        const h = this.prefix.readUInt32BE(0);
        const p = this.prefix.readUInt32BE(4);
        checkSizes(h, p);
        this.headerBytes = h;
        this.frame = h + p === 0 ? EMPTY : this.alloc(h + p);
        this.frameFill = 0;
      }
      const frame = this.frame;
      const n = Math.min(frame.length - this.frameFill, chunk.length - at);
      chunk.copy(frame, this.frameFill, at, at + n);
      this.frameFill += n;
      at += n;
      if (this.frameFill < frame.length) break;
      this.frame = null;
      this.prefixFill = 0;
      out.push({ header: parseHeader(frame.subarray(0, this.headerBytes)), payload: frame.subarray(this.headerBytes) });
    }
    return out;
  }

  /** Bytes received that do not yet make a whole frame. */
  get pendingBytes(): number {
    return this.prefixFill + (this.frame === null ? 0 : this.frameFill);
  }
}

/** A size rounded up to 64 KB at least, then to the next eighth of a power of two (2^k x 9/8, 10/8, ..). */
export function sizeClass(bytes: number): number {
  if (bytes <= 1 << 16) return 1 << 16;
  const step = 2 ** (Math.floor(Math.log2(bytes)) - 3);
  return Math.ceil(bytes / step) * step;
}

function checkSizes(h: number, p: number): void {
  if (h > MAX_HEADER_BYTES) throw new FrameError(`frame header of ${h} bytes is over ${MAX_HEADER_BYTES}`);
  if (p > MAX_PAYLOAD_BYTES) throw new FrameError(`frame payload of ${p} bytes is over ${MAX_PAYLOAD_BYTES}`);
}

/**
 * Buffers for frames that come back when their frame is done with (a worker's batches: a 19 MB batch
 * read into a buffer used before, not a new one). Node counts every new Buffer's bytes toward the
 * heap's limit, so a process that takes 19 MB a batch in fresh buffers runs a full garbage collection
 * every few batches; a recycled buffer costs none. Sizes are rounded up to a class (`sizeClass`: at
 * most 12.5% more) so that batches of a size near another's reuse its buffer; at most `keep` free
 * per class and `maxFreeBytes` free in all (what is given back beyond is left to the garbage
 * collector), so the pool holds bounded memory whatever sizes come.
 * `give` takes the payload (or any view) of a buffer `take` gave, once nothing reads it any more;
 * anything else is ignored.
 */
export class BufferPool {
  private readonly free = new Map<number, ArrayBufferLike[]>();
  private readonly mine = new WeakSet<ArrayBufferLike>();
  private freeBytes = 0;

  /**
   * `shared`: buffers of shared memory (SharedArrayBuffer), which another thread reads without a copy
   * (the scheduler's request bodies, read by its link thread: scheduler/workerLink.ts).
   */
  constructor(
    private readonly keep = 4,
    private readonly maxFreeBytes = 128 << 20,
    private readonly shared = false,
  ) {}

  readonly take: FrameAlloc = (bytes) => {
    const size = sizeClass(bytes);
    const reused = this.free.get(size)?.pop();
    if (reused) this.freeBytes -= size;
    return Buffer.from(reused ?? this.fresh(size), 0, bytes);
  };

  give(view: Uint8Array): void {
    const ab = view.buffer;
    if (!this.mine.has(ab)) return;
    const list = this.free.get(ab.byteLength) ?? [];
    if (list.length >= this.keep || this.freeBytes + ab.byteLength > this.maxFreeBytes || list.includes(ab)) return;
    list.push(ab);
    this.freeBytes += ab.byteLength;
    this.free.set(ab.byteLength, list);
  }

  /** Bytes of the free buffers held (at most `maxFreeBytes`). */
  get heldBytes(): number {
    return this.freeBytes;
  }

  private fresh(size: number): ArrayBufferLike {
    const ab = this.shared ? new SharedArrayBuffer(size) : new ArrayBuffer(size);
    this.mine.add(ab);
    return ab;
  }
}

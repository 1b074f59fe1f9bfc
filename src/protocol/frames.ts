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

/**
 * Reassembles frames from a byte stream (a pipe delivers them in arbitrary pieces). Feed it every
 * chunk; it returns the frames completed so far. Throws FrameError on a stream that is not frames;
 * after that the stream cannot be trusted and the caller closes it.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;

  push(chunk: Buffer): Frame[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const out: Frame[] = [];
    for (;;) {
      if (this.buffered < 8) break;
      const head = this.peek(8);
      const h = head.readUInt32BE(0);
      const p = head.readUInt32BE(4);
      if (h > MAX_HEADER_BYTES) throw new FrameError(`frame header of ${h} bytes is over ${MAX_HEADER_BYTES}`);
      if (p > MAX_PAYLOAD_BYTES) throw new FrameError(`frame payload of ${p} bytes is over ${MAX_PAYLOAD_BYTES}`);
      if (this.buffered < 8 + h + p) break;
      const whole = this.take(8 + h + p);
      out.push({ header: parseHeader(whole.subarray(8, 8 + h)), payload: whole.subarray(8 + h) });
    }
    return out;
  }

  /** Bytes received that do not yet make a whole frame. */
  get pendingBytes(): number {
    return this.buffered;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length >= n) return this.chunks[0]!;
    this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!;
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return all.subarray(0, n);
  }
}

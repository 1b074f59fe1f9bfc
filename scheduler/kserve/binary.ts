// Triton's binary tensor data extension, request side: the body's framing (a JSON header, then raw
// tensors) and the cursor that hands each binary input its bytes, in request order.
import { clip, show } from './text.js';

/** The body split into the JSON header and the binary tensors after it (binary tensor data extension). */
export function splitBody(
  body: Buffer,
  inferenceHeaderLength: string | undefined,
): { ok: true; json: Buffer; binary: Buffer | undefined } | { ok: false; error: string } {
  if (inferenceHeaderLength === undefined) return { ok: true, json: body, binary: undefined };
  const raw = inferenceHeaderLength.trim();
  if (!/^\d+$/.test(raw))
    return {
      ok: false,
      error: `Inference-Header-Content-Length ${show(inferenceHeaderLength)} is not a non-negative integer`,
    };
  const n = Number(raw);
  if (n > body.length)
    return {
      ok: false,
      error: `Inference-Header-Content-Length ${clip(raw)} is larger than the body (${body.length} bytes)`,
    };
  return { ok: true, json: body.subarray(0, n), binary: body.subarray(n) };
}

export const EMPTY = Buffer.alloc(0);

/** Reads the binary tensors of the inputs that carry binary_data_size, in request order. */
export class BinaryCursor {
  private offset = 0;
  constructor(readonly bytes: Buffer | undefined) {}

  take(where: string, size: number): { ok: true; data: Buffer } | { ok: false; error: string } {
    if (this.bytes === undefined)
      return {
        ok: false,
        error:
          `${where}.parameters.binary_data_size is set, but the request has no Inference-Header-Content-Length ` +
          `header`,
      };
    const end = this.offset + size;
    if (end > this.bytes.length) {
      return {
        ok: false,
        error:
          `${where}.parameters.binary_data_size: the binary data runs past the end of the body (the binary ` +
          `inputs so far need ${end} bytes after the JSON header; there are ${this.bytes.length})`,
      };
    }
    const data = this.bytes.subarray(this.offset, end);
    this.offset = end;
    return { ok: true, data };
  }

  /** An error text when bytes are left over after the last binary input. */
  leftover(): string | undefined {
    const n = this.bytes?.length ?? 0;
    if (this.offset === n) return undefined;
    return (
      `the binary data after the JSON header is ${n} bytes, but the inputs' binary_data_size add up to ` +
      `${this.offset}`
    );
  }
}

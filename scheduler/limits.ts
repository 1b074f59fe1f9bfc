// Limits on client input, derived from what a model can legitimately be sent.
//
// Pure: numbers and bytes in, numbers and error texts out. The HTTP layer (scheduler/guard.ts) applies
// the body limit and the timeouts; the codec (scheduler/kserve.ts) runs scanJson before JSON.parse, so
// a body of nested brackets or millions of values is refused after one cheap pass over its bytes,
// before any object is built. docs/reliability.md explains the numbers.
import { elementCount, longestShape, type ModelSignature } from '../src/protocol/tensor.js';
import { MAX_IMAGE_BYTES } from '../src/serving/image.js';

export interface InputLimits {
  /** A model's body limit is its largest legitimate request times this (and its JSON budget likewise). */
  readonly bodyLimitFactor: number;
  /** Connections open at once, over all clients (beyond: refused with 503). */
  readonly maxConnections: number;
  /** Connections open at once from one client address (beyond: refused with 503). */
  readonly maxConnectionsPerClient: number;
  /** A request's headers must arrive within this (408 beyond). */
  readonly headersTimeoutMs: number;
  /** A request's body must arrive within bodyTimeoutBaseMs + its size / minBodyBytesPerS (408 beyond). */
  readonly bodyTimeoutBaseMs: number;
  readonly minBodyBytesPerS: number;
  /**
   * Bytes of request bodies (by Content-Length) being read at once; a body that would go beyond is answered 503 before
   * it is read.
   */
  readonly maxBodyBytesInFlight: number;
  /** Threads that parse large JSON bodies off the event loop (0: parse on it). */
  readonly parseThreads: number;
  /** Bytes of JSON waiting for or in a parse thread; a body that would go beyond is answered 503. */
  readonly maxParseQueueBytes: number;
}

export const DEFAULT_LIMITS: InputLimits = {
  bodyLimitFactor: 2,
  maxConnections: 2048,
  // `inss loadgen` opens 256 keep-alive sockets by default; a load balancer in front is one address too.
  maxConnectionsPerClient: 512,
  headersTimeoutMs: 10_000,
  bodyTimeoutBaseMs: 10_000,
  minBodyBytesPerS: 256 * 1024,
  maxBodyBytesInFlight: 256 * 1024 * 1024,
  parseThreads: 1,
  maxParseQueueBytes: 32 * 1024 * 1024,
};

/**
 * The most bytes one value of a JSON tensor takes as clients write it: Python's json.dumps of a
 * float64 (`-1.2345678901234567e-308`, 24 characters) and its `, ` separator.
 */
const JSON_BYTES_PER_VALUE = 26;
/** The most bytes of encoded images one request may carry, whatever its batch dimension (4 large photos). */
export const IMAGE_BYTES_PER_REQUEST = 4 * MAX_IMAGE_BYTES;
/** Room for the JSON around the tensors: id, parameters, output names. */
const JSON_OVERHEAD_BYTES = 16 * 1024;
/** Room for values and containers outside the tensors' data (shape, parameters, outputs). */
const SLACK_TOKENS = 1024;
/** Depth outside a tensor's data: body { inputs [ { data, and a parameters object or two. */
const SLACK_DEPTH = 8;

/** What a request's JSON may hold before it is parsed: counts are of the raw text. */
export interface JsonBudget {
  /** Values (commas + 1 in arrays and objects, outside strings). */
  readonly maxValues: number;
  /** Arrays and objects. */
  readonly maxContainers: number;
  /** Nesting depth of arrays and objects. */
  readonly maxDepth: number;
}

export interface RequestBudget {
  /**
   * The largest legitimate request body: all inputs as JSON (FP32 values are the longest; UINT8 ones
   * are shorter), or, for an image input, an encoded image of MAX_IMAGE_BYTES a sample as binary data.
   */
  readonly largestBytes: number;
  /**
   * Larger bodies are refused (413) before they are read: the JSON size x the factor (JSON's layout
   * varies by client), or the encoded image's size plus room for the JSON header (binary sizes are
   * exact), whichever is larger.
   */
  readonly bodyLimitBytes: number;
  readonly json: JsonBudget;
}

/** Arrays in the nested JSON form of a tensor of this shape (`[[1,2],[3,4]]` for [2,2]: 3). */
function nestedArrays(shape: readonly number[]): number {
  let arrays = 1;
  let level = 1;
  for (const d of shape.slice(0, -1)) {
    level *= d;
    arrays += level;
  }
  return arrays;
}

/**
 * The limits of one model's infer requests, from its signature and the largest batch dimension a
 * request may carry (`maxBatch` samples: the model's max_batch_size).
 */
export function requestBudget(signature: ModelSignature, factor: number, maxBatch = 1): RequestBudget {
  const json = (k: number) => {
    let values = 0;
    let containers = 0;
    let rank = 0;
    let bytes = JSON_OVERHEAD_BYTES;
    for (const s of signature.inputs) {
      // A variable dimension (a text model's sequence) at its longest: the largest legitimate request.
      const shape = [k, ...longestShape(s)];
      const n = elementCount(shape);
      values += n;
      containers += nestedArrays(shape);
      rank = Math.max(rank, shape.length);
      bytes += n * JSON_BYTES_PER_VALUE + 2 * nestedArrays(shape);
    }
    return { values, containers, rank, bytes };
  };
  const one = json(1);
  const all = json(maxBatch);
  // BYTES images: a 4-byte length, then the image; the images of one request add up to at most
  // IMAGE_BYTES_PER_REQUEST (a batch of large photos is split into requests).
  const images = signature.inputs.some((s) => s.image)
    ? JSON_OVERHEAD_BYTES + 4 * maxBatch + Math.min(maxBatch * MAX_IMAGE_BYTES, IMAGE_BYTES_PER_REQUEST)
    : 0;
  const scale = (x: number) => Math.ceil(x * factor);
  // The factor covers JSON layouts longer than Python's (whitespace) for one sample; a batch's JSON
  // is allowed the worst-case length of Python's json.dumps (JSON_BYTES_PER_VALUE), not more: a
  // request of many samples is better sent as binary data.
  const largestBytes = Math.max(all.bytes, images);
  return {
    largestBytes,
    bodyLimitBytes: Math.max(scale(one.bytes), largestBytes),
    json: {
      maxValues: Math.max(scale(one.values + SLACK_TOKENS), all.values + SLACK_TOKENS),
      maxContainers: Math.max(scale(one.containers + SLACK_TOKENS), all.containers + SLACK_TOKENS),
      maxDepth: all.rank + SLACK_DEPTH,
    },
  };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * One pass over JSON text, outside strings, counting values, containers and depth; stops at the first
 * count over the budget. Returns the refusal's text, or undefined when the text is within it (the
 * text may still be malformed: JSON.parse says so next). Linear in the bytes, and it allocates nothing.
 */
export function scanJson(text: Uint8Array, budget: JsonBudget): string | undefined {
  let depth = 0;
  let values = 1;
  let containers = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const b = text[i]!;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
      continue;
    }
    if (b === QUOTE) inString = true;
    else if (b === COMMA) {
      if (++values > budget.maxValues)
        return `request JSON has more than ${budget.maxValues} values, more than this model's inputs can hold`;
    } else if (b === OPEN_ARRAY || b === OPEN_OBJECT) {
      if (++depth > budget.maxDepth)
        return `request JSON is nested deeper than ${budget.maxDepth} levels, deeper than this model's inputs can be`;
      if (++containers > budget.maxContainers)
        return (
          `request JSON has more than ${budget.maxContainers} arrays and objects, more than this model's inputs ` +
          `can hold`
        );
    } else if (b === CLOSE_ARRAY || b === CLOSE_OBJECT) depth--;
  }
  return undefined;
}

/** How long a body of `bytes` may take to arrive. */
export function bodyTimeoutMs(
  bytes: number,
  limits: Pick<InputLimits, 'bodyTimeoutBaseMs' | 'minBodyBytesPerS'>,
): number {
  return limits.bodyTimeoutBaseMs + Math.ceil((bytes / limits.minBodyBytesPerS) * 1000);
}

/** A client-sent path as an error text may show it: without its query, at most 64 characters. */
export function shownPath(url: string): string {
  const path = url.split('?')[0] ?? '';
  return path.length > 64 ? `${path.slice(0, 64)}...` : path;
}

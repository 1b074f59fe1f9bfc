// HTTP compression as Triton does it: request bodies with Content-Encoding gzip or deflate are
// decompressed (held to the body limit), and only inference answers are compressed.
import { promisify } from 'node:util';
import { deflate, gzip, gunzip, inflate } from 'node:zlib';

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);
export const gzipAsync = promisify(gzip);
export const deflateAsync = promisify(deflate);

export type Coding = 'gzip' | 'deflate';

/** The request's Content-Encoding: identity (none), a supported coding, or an error naming it. */
export function requestCoding(
  header: string | undefined,
): { ok: true; coding: Coding | null } | { ok: false; error: string } {
  const v = (header ?? '').trim().toLowerCase();
  if (v === '' || v === 'identity') return { ok: true, coding: null };
  if (v === 'gzip' || v === 'x-gzip') return { ok: true, coding: 'gzip' };
  if (v === 'deflate') return { ok: true, coding: 'deflate' };
  return { ok: false, error: `Content-Encoding '${v.slice(0, 40)}' is not supported (gzip, deflate or identity)` };
}

/**
 * The coding to answer with for an Accept-Encoding header: gzip before deflate, skipping codings
 * with q=0; null for none (identity).
 */
export function responseCoding(header: string | undefined): Coding | null {
  if (!header) return null;
  const q = new Map<string, number>();
  for (const part of header.toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    if (!name) continue;
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const value = qp ? Number(qp.slice(2)) : 1;
    q.set(name.trim(), Number.isFinite(value) ? value : 0);
  }
  const wants = (c: string) => (q.get(c) ?? q.get('*') ?? 0) > 0;
  if (wants('gzip')) return 'gzip';
  if (wants('deflate')) return 'deflate';
  return null;
}

/**
 * Decompresses a request body, refusing to produce more than `limit` bytes (the body limit holds for
 * the decompressed body too: a few KB of gzip can expand to gigabytes).
 */
export async function decompress(
  body: Buffer,
  coding: Coding,
  limit: number,
): Promise<{ ok: true; body: Buffer } | { ok: false; status: 400 | 413; error: string }> {
  try {
    const out =
      coding === 'gzip'
        ? await gunzipAsync(body, { maxOutputLength: limit })
        : await inflateAsync(body, { maxOutputLength: limit });
    return { ok: true, body: out };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError)
      return { ok: false, status: 413, error: `request body decompresses to more than the limit of ${limit} bytes` };
    return {
      ok: false,
      status: 400,
      error: `request body is not valid ${coding} data (Content-Encoding: ${coding}): ${err.message}`,
    };
  }
}

/**
 * Whether answers on a route (its pattern) may be compressed. On the protocol's routes (`/v2/...`) only
 * inference answers, as Triton compresses only those: tritonclient.http.aio reads every other answer
 * as plain JSON (it turns aiohttp's decompression off and decompresses inference answers itself), so
 * a gzip'd metadata, config, statistics or index answer fails there. Routes outside the protocol
 * (`/metrics`, the dashboard) are read by Prometheus and browsers, which decode what they ask for.
 */
export function compressedRoute(pattern: string | undefined): boolean {
  if (pattern === undefined || !pattern.startsWith('/v2')) return true;
  return pattern.endsWith('/infer');
}

// Access control of the scheduler's HTTP routes and its agents' hub.
//
// Pure: header values and token lists in, decisions out; the composition root (cli/serve.ts) reads
// the token files and the environment. Routes fall in three classes:
// - health (`/v2/health/*`): always open (probes carry no credentials);
// - inference (every other `/v2/...` route of the protocol): open unless client tokens are set;
// - page (`/dashboard` and its assets): always open. They hold no data: the page reads everything
//   from `/v2/inss/dashboard` (introspection) with the token it is given in its address
//   (`/dashboard/#token=...`), and a browser cannot send a Bearer header to open a page;
// - introspection (`/v2/inss/*`, `/metrics`): needs a token when `introspection` lists some (the CLI
//   does so whenever it binds beyond loopback, unless the operator opts out).
// Agents: a shared token lets an agent take any id; a per-agent token (agent id -> token) only its own.
import { timingSafeEqual } from 'node:crypto';

export interface AccessOptions {
  /** Bearer tokens accepted on inference routes; empty: they are open. */
  readonly clientTokens: readonly string[];
  /** Bearer tokens accepted on introspection routes; null: they are open. */
  readonly introspectionTokens: readonly string[] | null;
}

export const OPEN_ACCESS: AccessOptions = { clientTokens: [], introspectionTokens: null };

export type RouteClass = 'health' | 'page' | 'inference' | 'introspection';

export function routeClass(path: string): RouteClass {
  if (path.startsWith('/v2/health/')) return 'health';
  if (path === '/dashboard' || path.startsWith('/dashboard/')) return 'page';
  if (path.startsWith('/v2/inss/') || path === '/v2/inss' || path === '/metrics') return 'introspection';
  return 'inference';
}

/** Compares in constant time (for equal lengths): a token's bytes do not leak through timing. */
function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearer(header: string | undefined): string | undefined {
  const m = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return m?.[1];
}

/** Whether the header carries one of the tokens (each compared in constant time). */
export function presents(header: string | undefined, tokens: readonly string[]): boolean {
  const got = bearer(header);
  if (got === undefined) return false;
  let ok = false;
  for (const t of tokens) ok = sameSecret(got, t) || ok; // no early exit
  return ok;
}

/** undefined: allowed; else the 401's error text (which never says which tokens exist). */
export function refusal(access: AccessOptions, path: string, authorization: string | undefined): string | undefined {
  const cls = routeClass(path);
  if (cls === 'health' || cls === 'page') return undefined;
  if (cls === 'introspection') {
    if (access.introspectionTokens === null) return undefined;
    if (presents(authorization, [...access.introspectionTokens, ...access.clientTokens])) return undefined;
    return 'this route needs a token: send Authorization: Bearer <token> (the scheduler is bound beyond loopback)';
  }
  if (access.clientTokens.length === 0 || presents(authorization, access.clientTokens)) return undefined;
  return 'this route needs a token: send Authorization: Bearer <token>';
}

/** Which agent ids a hub upgrade's token may register as: any (the shared token), one, or none. */
export function agentIdentity(
  authorization: string | undefined,
  shared: string | null,
  perAgent: ReadonlyMap<string, string>,
): { any: true } | { agentId: string } | null {
  const got = bearer(authorization);
  if (got === undefined) return null;
  let found: string | null = null;
  for (const [id, t] of perAgent) if (sameSecret(got, t)) found = id;
  if (found !== null) return { agentId: found };
  return shared !== null && sameSecret(got, shared) ? { any: true } : null;
}

export class TokenFileError extends Error {}

const TOKEN = /^[\x21-\x7e]{16,}$/;

/** A tokens file: one token a line (printable ASCII, no spaces, at least 16 characters); `#` starts a comment. */
export function parseTokens(text: string, what: string): string[] {
  const out: string[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*/, '').trim();
    if (line === '') return;
    if (!TOKEN.test(line))
      throw new TokenFileError(`${what}, line ${i + 1}: a token is one word of at least 16 printable ASCII characters`);
    out.push(line);
  });
  if (out.length === 0) throw new TokenFileError(`${what}: no token in it`);
  return out;
}

/** An agent tokens file: `<agent-id> <token>` a line; each id and each token once. */
export function parseAgentTokens(text: string, what: string): Map<string, string> {
  const out = new Map<string, string>();
  const seen = new Set<string>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*/, '').trim();
    if (line === '') return;
    const parts = line.split(/\s+/);
    if (parts.length !== 2 || !TOKEN.test(parts[1]!))
      throw new TokenFileError(
        `${what}, line ${i + 1}: expected '<agent-id> <token>' (a token of at least 16 printable ASCII characters)`,
      );
    const [id, token] = parts as [string, string];
    if (out.has(id)) throw new TokenFileError(`${what}, line ${i + 1}: agent '${id}' is listed twice`);
    if (seen.has(token)) throw new TokenFileError(`${what}, line ${i + 1}: the same token is given to two agents`);
    out.set(id, token);
    seen.add(token);
  });
  if (out.size === 0) throw new TokenFileError(`${what}: no agent in it`);
  return out;
}

/** Whether binding this host keeps the endpoint to this machine. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

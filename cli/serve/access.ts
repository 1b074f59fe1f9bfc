// What the flags name outside the command line: files (tokens, TLS certificate and key) read whole with
// one-line errors naming the flag, who may use which routes, and the warning when bound beyond loopback.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { type AccessOptions, isLoopback, parseTokens, TokenFileError } from '../../scheduler/auth.js';
import { InvalidInputError } from '../../src/profile/schema.js';
import type { ServeOptions } from './options.js';

/** A file a flag names, read whole; a one-line error naming the flag when it cannot be. */
export function readFlagFile(flag: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new InvalidInputError(`${flag}: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

export function tokensFrom<T>(flag: string, file: string, parse: (text: string, what: string) => T): T {
  try {
    return parse(readFlagFile(flag, file).toString('utf8'), `${flag} ${file}`);
  } catch (e) {
    throw e instanceof TokenFileError ? new InvalidInputError(e.message) : e;
  }
}

/** The certificate and key of --tls-cert/--tls-key (both or neither). */
export function tlsFiles(opts: ServeOptions): { cert: Buffer; key: Buffer } | undefined {
  if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined))
    throw new InvalidInputError(
      '--tls-cert and --tls-key: give both (a PEM certificate and its private key) or neither',
    );
  if (opts.tlsCert === undefined || opts.tlsKey === undefined) return undefined;
  return { cert: readFlagFile('--tls-cert', opts.tlsCert), key: readFlagFile('--tls-key', opts.tlsKey) };
}

/**
 * Who may use which routes (scheduler/auth.ts): client tokens from --auth-tokens-file or
 * INSS_AUTH_TOKENS (comma-separated); bound beyond loopback, introspection needs one of them (a
 * random one, printed once, when none is given) unless --insecure-introspection.
 */
export function accessFrom(opts: ServeOptions & { host: string }): { access: AccessOptions; generated?: string } {
  const clientTokens =
    opts.authTokensFile !== undefined
      ? tokensFrom('--auth-tokens-file', opts.authTokensFile, parseTokens)
      : opts.authTokens !== undefined
        ? parseTokensOrFail(opts.authTokens.split(',').join('\n'), 'INSS_AUTH_TOKENS')
        : [];
  if (isLoopback(opts.host) || opts.insecureIntrospection)
    return { access: { clientTokens, introspectionTokens: null } };
  if (clientTokens.length > 0) return { access: { clientTokens, introspectionTokens: [] } };
  const generated = randomBytes(16).toString('hex');
  return { access: { clientTokens, introspectionTokens: [generated] }, generated };
}

function parseTokensOrFail(text: string, what: string): string[] {
  try {
    return parseTokens(text, what);
  } catch (e) {
    throw e instanceof TokenFileError ? new InvalidInputError(e.message) : e;
  }
}

/** Bound beyond loopback: the addresses it can be reached at, and what is open there (stderr). */
export function warnIfExposed(
  prefix: string,
  host: string,
  port: string,
  tls: boolean,
  access: AccessOptions,
  generated: string | undefined,
): void {
  if (isLoopback(host)) return;
  const all = host === '0.0.0.0' || host === '::';
  const addrs = all
    ? Object.values(networkInterfaces())
        .flat()
        .filter((a) => a !== undefined && !a.internal && (host === '::' || a.family === 'IPv4'))
        .map((a) => a!.address)
    : [host];
  console.log(
    `${prefix}: listening on ${host}:${port}` +
      (all ? ` (this machine's addresses: ${addrs.join(', ') || 'none found'})` : ''),
  );
  const open = [
    access.clientTokens.length === 0
      ? 'inference (anyone who can reach the port may send tasks: --auth-tokens-file)'
      : '',
    access.introspectionTokens === null
      ? 'introspection (/metrics, /v2/inss/*: --insecure-introspection was given)'
      : '',
    tls ? '' : 'no TLS (tokens and tensors cross the network in clear: --tls-cert/--tls-key)',
  ].filter(Boolean);
  process.stderr.write(
    `${prefix}: warning: bound beyond loopback (${host}); ` +
      `${open.length > 0 ? `open: ${open.join('; ')}` : 'every route but health needs a token'}\n`,
  );
  if (generated !== undefined)
    console.log(`${prefix}: introspection token ${generated} (give --auth-tokens-file to choose the tokens)`);
}

/** The token of --token (or INSS_TOKEN) or --token-file (one line); undefined when neither is given. */
export function sharedToken(opts: { token?: string; tokenFile?: string }): string | undefined {
  if (opts.token !== undefined && opts.tokenFile !== undefined)
    throw new InvalidInputError('--token (or INSS_TOKEN) and --token-file: give one');
  if (opts.tokenFile === undefined) return opts.token;
  const t = readFlagFile('--token-file', opts.tokenFile).toString('utf8').trim();
  if (!/^[\x21-\x7e]+$/.test(t))
    throw new InvalidInputError(
      `--token-file ${opts.tokenFile}: expected one token (printable ASCII, no spaces) on one line`,
    );
  return t;
}

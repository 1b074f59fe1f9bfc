// Why a test of the network-namespace cluster cannot run here (benchmarks/netns.ts), or null: it needs a
// build (dist/, for the client host's script), openssl (the TLS recipe) and `ip netns` as root.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { netnsUnusable } from '../../benchmarks/netns.js';
import { opensslWorks } from '../../benchmarks/tls.js';
import { REPO_ROOT } from './paths.js';

/** The reason a cluster of prefix `prefix` cannot be made, or null; logged as `<name>: skipped: ...`. */
export function netnsSkipReason(name: string, prefix: string): string | null {
  const why = !existsSync(join(REPO_ROOT, 'dist', 'benchmarks', 'netnsClient.js'))
    ? 'no build: run npm run build'
    : !opensslWorks()
      ? 'no openssl'
      : netnsUnusable(prefix);
  if (why) console.log(`${name}: skipped: ${why}`);
  return why;
}

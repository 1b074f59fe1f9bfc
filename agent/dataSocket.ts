// A worker's data socket (docs/serving.md, "The path of a batch"): the environment that tells a new
// worker where to listen, with its secret and identity, and the endpoint the agent reports to the
// scheduler once the worker listens. Pure; the caller makes the socket directory.
import { join } from 'node:path';
import type { DataEndpoint, DesiredWorker } from '../src/protocol/agent.js';
import { formatDataAddress, parseDataAddress, WORKER_ENV } from '../src/protocol/worker.js';

/** AgentOptions.dataPath: a Unix socket per worker, a TCP port per worker, or no data socket. */
export type DataPath = 'unix' | 'off' | { readonly tcpHost: string; readonly advertise: string };

/**
 * The environment that gives a worker its data socket, secret and identity (none for 'off').
 * `socketDir` returns the private directory of the Unix sockets, made on first use.
 */
export function workerDataEnv(
  path: DataPath,
  socketDir: () => string,
  spec: DesiredWorker,
  secret: string,
): Record<string, string> {
  if (path === 'off') return {};
  // One path per process (a restarted worker gets a new one): the scheduler never mistakes a stale one for it.
  const listen =
    path === 'unix'
      ? formatDataAddress({
          kind: 'unix',
          path: join(socketDir(), `${spec.workerId}-${spec.generation}-${secret.slice(0, 8)}.sock`),
        })
      : formatDataAddress({ kind: 'tcp', host: path.tcpHost, port: 0 });
  return {
    [WORKER_ENV.listen]: listen,
    [WORKER_ENV.secret]: secret,
    [WORKER_ENV.identity]: JSON.stringify({
      workerId: spec.workerId,
      model: spec.model,
      gpu: spec.gpu,
      pct: spec.pct,
      generation: spec.generation,
    }),
  };
}

/**
 * The endpoint to report for the address a worker's `ready` gives (a TCP wildcard host becomes the
 * advertised one), or why that address is not one (the agent then relays the worker's batches).
 */
export function reportedEndpoint(path: DataPath, listen: string, secret: string): DataEndpoint | string {
  const a = parseDataAddress(listen);
  if (typeof a === 'string') return a;
  if (a.kind === 'tcp' && typeof path === 'object')
    return { address: formatDataAddress({ ...a, host: path.advertise }), secret };
  return { address: listen, secret };
}

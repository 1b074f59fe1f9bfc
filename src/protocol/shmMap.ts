// Loading inss's shared-memory addon (native/shm/shm.c, built at install by `npm run build:shm`) for
// the scheduler and the simulated worker, which both map the scheduler's region and may not import
// each other (.dependency-cruiser.cjs): the one module of src/ that loads native code. It reads no
// file and opens nothing itself; `map` (the addon's) does, when its caller calls it.
// Contract: `loadShmAddon()` never throws; absent (not built: no compiler, running from a copy
// without it) or failing to load, it says why, and the caller keeps its sockets.
import { createRequire } from 'node:module';

/** Maps the whole file at `path` MAP_SHARED (read-only unless `writable`); throws with the failing call and errno. */
export type MapFile = (path: string, writable: boolean) => ArrayBuffer;

export type ShmAddon = { readonly ok: true; readonly map: MapFile } | { readonly ok: false; readonly why: string };

/** From src/protocol/ (vitest, tsx) or dist/src/protocol/ (compiled): the first that loads wins. */
const CANDIDATES = ['../../native/shm/build/Release/inss_shm.node', '../../../native/shm/build/Release/inss_shm.node'];

let loaded: ShmAddon | undefined;

export function loadShmAddon(): ShmAddon {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  let why = 'not built (npm run build:shm)';
  for (const c of CANDIDATES) {
    try {
      const m = require(new URL(c, import.meta.url).pathname) as { map?: unknown };
      if (typeof m.map !== 'function') {
        why = `${c} has no map()`;
        continue;
      }
      loaded = { ok: true, map: m.map as MapFile };
      return loaded;
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code !== 'MODULE_NOT_FOUND') why = `it does not load: ${err.message}`;
    }
  }
  loaded = { ok: false, why };
  return loaded;
}

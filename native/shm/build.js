// Builds native/shm (inss's shared-memory addon, shm.c) at install: `npm run build:shm`, run by the
// `prepare` step after `npm run build`. Optional: it never fails the install. Without a C compiler,
// Node's headers or npm's node-gyp it prints one line saying the shared-memory path is off and why,
// and the scheduler and workers use their sockets (docs/serving.md). Never downloads anything: it
// builds only against headers on this machine (npm's `nodedir` setting, else the include/node beside
// this node, else /usr/include/node).
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const off = (why) => {
  console.log(`inss: the shared-memory data path is off (${why}); batches go over sockets`);
  process.exit(0);
};

try {
  // npm sets npm_config_node_gyp in lifecycle scripts; else the node-gyp npm bundles beside this node.
  const bundled = join(
    dirname(process.execPath),
    '..',
    'lib',
    'node_modules',
    'npm',
    'node_modules',
    'node-gyp',
    'bin',
    'node-gyp.js',
  );
  const gyp = process.env.npm_config_node_gyp || bundled;
  if (!existsSync(gyp)) off(`no node-gyp at ${gyp}`);
  // Headers: npm's nodedir, else beside this node (the official and nvm installs ship include/node),
  // else Debian's /usr/include/node.
  const prefix = join(dirname(process.execPath), '..');
  const nodedir =
    process.env.npm_config_nodedir ||
    [prefix, '/usr'].find((d) => existsSync(join(d, 'include', 'node', 'node_api.h'))) ||
    '';
  if (!nodedir || !existsSync(join(nodedir, 'include', 'node', 'node_api.h')))
    off("Node's headers are not on this machine (set npm's nodedir)");
  const r = spawnSync(process.execPath, [gyp, 'rebuild', `--nodedir=${nodedir}`], {
    cwd: here,
    stdio: 'pipe',
    timeout: 300_000,
    env: { ...process.env, npm_config_nodedir: nodedir },
  });
  if (r.error) off(`node-gyp did not run: ${r.error.message}`);
  if (r.status !== 0) {
    const last =
      String(r.stderr)
        .trim()
        .split('\n')
        .filter((l) => /error/i.test(l))
        .slice(-1)[0] ?? `exit ${r.status}`;
    rmSync(join(here, 'build'), { recursive: true, force: true });
    off(`the addon did not build: ${last.trim().slice(0, 200)}`);
  }
  if (!existsSync(join(here, 'build', 'Release', 'inss_shm.node'))) off('node-gyp built no inss_shm.node');
} catch (e) {
  off(String(e && e.message ? e.message : e));
}

#!/usr/bin/env node
// `npm run lint:py`: flake8 over the Python in native/ with native/.flake8. flake8 is taken from PATH,
// else as the module of the worker's interpreters (INSS_PYTHON, /usr/bin/python3, python3), since
// Debian's python3-flake8 installs only the module for /usr/bin/python3. Where none has it, says so
// and exits 0: the Python is optional to inss. Otherwise exits with flake8's status.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ARGS = ['--config', join('native', '.flake8'), 'native'];

/** The flake8 command lines to try, in order. */
function candidates() {
  const pythons = [process.env['INSS_PYTHON'], '/usr/bin/python3', 'python3'].filter(Boolean);
  return [['flake8'], ...[...new Set(pythons)].map((py) => [py, '-m', 'flake8'])];
}

/** Whether `cmd --version` runs and exits 0 (a pyenv shim without the module exits non-zero). */
function works([cmd, ...args]) {
  const r = spawnSync(cmd, [...args, '--version'], { stdio: 'ignore' });
  return r.error === undefined && r.status === 0;
}

const found = candidates().find(works);
if (found === undefined) {
  console.log('lint:py skipped: flake8 not found (apt-get install python3-flake8)');
  process.exit(0);
}
const [cmd, ...pre] = found;
const r = spawnSync(cmd, [...pre, ...ARGS], { cwd: ROOT, stdio: 'inherit' });
if (r.error !== undefined) throw r.error;
if (r.status === 0) console.log(`lint:py: flake8 (${found.join(' ')}) found no problems in native/`);
process.exit(r.status ?? 1);

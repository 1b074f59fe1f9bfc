// Loading profiles by id or path: the one place that reads profile files.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidInputError, type Profile, parseProfile } from '../src/profile/schema.js';

/** The package root: the nearest directory above this module with a package.json (works from cli/ and dist/cli/). */
export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

/** Trained policies shipped for the built-in scenarios. */
export const BUILTIN_POLICY_DIR = join(PACKAGE_ROOT, 'policies');

/** profiles/ of the installed package. */
export const BUILTIN_PROFILE_DIR = join(PACKAGE_ROOT, 'profiles');

function findPackageRoot(start: string): string {
  let dir = start;
  while (!existsSync(join(dir, 'package.json'))) {
    const up = resolve(dir, '..');
    if (up === dir) throw new Error(`no package.json above ${start}`);
    dir = up;
  }
  return dir;
}

/** Reads and validates a JSON file; errors name the file. */
export function readJsonFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InvalidInputError(`${path}: cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new InvalidInputError(`${path}: not valid JSON: ${(err as Error).message}`);
  }
}

/** A profile by built-in id (`rtx2060s`) or by a path to a JSON file (anything with a slash or ending in .json). */
export function loadProfile(idOrPath: string): Profile {
  const isPath = idOrPath.includes('/') || idOrPath.endsWith('.json');
  const path = isPath ? idOrPath : join(BUILTIN_PROFILE_DIR, `${idOrPath}.json`);
  if (!isPath && !existsSync(path)) {
    throw new InvalidInputError(
      `unknown profile '${idOrPath}' (built in: ${listProfileIds().join(', ') || 'none'}; or give a path to a ` +
        `profile file)`,
    );
  }
  return parseProfile(readJsonFile(path), path);
}

export function listProfileIds(dir = BUILTIN_PROFILE_DIR): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length))
    .sort();
}

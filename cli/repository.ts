// Reads a model repository in Triton's layout from disk (`--model-repository DIR`): DIR/<name>/config.pbtxt
// and DIR/<name>/<version>/<model file>. Each model loads or fails on its own, as in Triton: a broken
// model is reported with its reason and not served, the others are (docs/model-repository.md).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InvalidInputError } from '../src/profile/schema.js';
import { policyVersions, readModelConfig, RepositoryConfigError, repositoryModel } from '../src/repository/config.js';
import type { RepositoryModel } from '../src/repository/types.js';

/** A model of the repository that is not served, and why (GET /v2/repository/index lists it UNAVAILABLE). */
export interface RepositoryFailure {
  readonly name: string;
  readonly reason: string;
}

export interface LoadedRepository {
  /** The absolute path of the repository. */
  readonly dir: string;
  /** The models served, by name. */
  readonly models: readonly RepositoryModel[];
  readonly failures: readonly RepositoryFailure[];
}

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();
const isFile = (p: string) => existsSync(p) && statSync(p).isFile();

/** Triton's version directories: positive integers without a leading zero (others are ignored). */
const VERSION_DIR = /^[1-9][0-9]*$/;

function loadModel(root: string, name: string): RepositoryModel {
  const dir = join(root, name);
  const configPath = join(dir, 'config.pbtxt');
  if (!isFile(configPath))
    throw new InvalidInputError(
      `${configPath}: missing (inss needs each model's configuration; it does not derive one)`,
    );
  const read = readModelConfig(readFileSync(configPath, 'utf8'), name, `${name}/config.pbtxt`);
  for (const label of read.labelFiles) {
    const p = join(dir, label);
    if (!isFile(p)) throw new InvalidInputError(`${p}: missing (an output's label_filename)`);
  }
  const present = readdirSync(dir)
    .filter((e) => VERSION_DIR.test(e) && isDir(join(dir, e)))
    .map(Number);
  if (present.length === 0)
    throw new InvalidInputError(`${dir}: no version directory (a numbered directory, e.g. ${join(dir, '1')})`);
  const chosen = policyVersions(read.versionPolicy, present);
  if ('missing' in chosen)
    throw new InvalidInputError(
      `${name}/config.pbtxt: version_policy.specific.versions: no directory for version ` +
        `${chosen.missing.join(', ')} (present: ${present.sort((a, b) => a - b).join(', ')})`,
    );
  const version = chosen.versions[chosen.versions.length - 1]!;
  const file = join(dir, String(version), read.modelFilename);
  if (!isFile(file)) {
    const byDefault = read.modelFilename === (read.backend === 'onnxruntime' ? 'model.onnx' : 'model.pt');
    const why = byDefault ? 'the default name' : 'default_model_filename';
    throw new InvalidInputError(`${file}: missing (the model file of version ${version}: ${why})`);
  }
  return repositoryModel(read, version, chosen.versions, file);
}

/**
 * Every model of the repository at `dir`: each subdirectory (but hidden ones) is a model. Throws when
 * `dir` is not a directory or holds no model; a model that cannot be served is one of `failures`.
 */
export function loadRepository(dir: string): LoadedRepository {
  const root = resolve(dir);
  if (!isDir(root)) throw new InvalidInputError(`--model-repository ${dir}: not a directory`);
  const names = readdirSync(root)
    .filter((e) => !e.startsWith('.') && isDir(join(root, e)))
    .sort();
  if (names.length === 0)
    throw new InvalidInputError(
      `--model-repository ${dir}: no model in it (a directory per model: <name>/config.pbtxt)`,
    );
  const models: RepositoryModel[] = [];
  const failures: RepositoryFailure[] = [];
  for (const name of names) {
    try {
      models.push(loadModel(root, name));
    } catch (e) {
      if (!(e instanceof InvalidInputError)) throw e;
      const reason = e instanceof RepositoryConfigError ? e.problems.join('; ') : e.message;
      failures.push({ name, reason });
    }
  }
  return { dir: root, models, failures };
}

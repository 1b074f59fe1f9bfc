// Reads a model repository in Triton's layout from disk (`--model-repository DIR`): DIR/<name>/config.pbtxt
// and DIR/<name>/<version>/<model file>. Each model loads or fails on its own, as in Triton: a broken
// model is reported with its reason and not served, the others are (docs/model-repository.md). An ensemble
// (`platform: "ensemble"`) is checked against the models loaded: one that cannot run fails alone.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InvalidInputError } from '../src/profile/schema.js';
import { policyVersions, readModelConfig, RepositoryConfigError, repositoryModel } from '../src/repository/config.js';
import {
  type EnsembleConfigRead,
  ensembleProblems,
  isEnsembleConfig,
  readEnsembleConfig,
} from '../src/repository/ensemble.js';
import type { RepositoryEnsemble, RepositoryModel } from '../src/repository/types.js';

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
  /** The ensembles served (as pipelines of the models), by name. */
  readonly ensembles: readonly RepositoryEnsemble[];
  readonly failures: readonly RepositoryFailure[];
}

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();
const isFile = (p: string) => existsSync(p) && statSync(p).isFile();

/** Triton's version directories: positive integers without a leading zero (others are ignored). */
const VERSION_DIR = /^[1-9][0-9]*$/;

function configText(root: string, name: string): string {
  const configPath = join(root, name, 'config.pbtxt');
  if (!isFile(configPath))
    throw new InvalidInputError(
      `${configPath}: missing (inss needs each model's configuration; it does not derive one)`,
    );
  return readFileSync(configPath, 'utf8');
}

/**
 * The versions a model's policy serves from its version directories (an ensemble has them too, empty, as in
 * Triton), the served one last.
 */
function servedVersions(dir: string, name: string, policy: EnsembleConfigRead['versionPolicy']): number[] {
  const present = readdirSync(dir)
    .filter((e) => VERSION_DIR.test(e) && isDir(join(dir, e)))
    .map(Number);
  if (present.length === 0)
    throw new InvalidInputError(`${dir}: no version directory (a numbered directory, e.g. ${join(dir, '1')})`);
  const chosen = policyVersions(policy, present);
  if ('missing' in chosen)
    throw new InvalidInputError(
      `${name}/config.pbtxt: version_policy.specific.versions: no directory for version ` +
        `${chosen.missing.join(', ')} (present: ${present.sort((a, b) => a - b).join(', ')})`,
    );
  return chosen.versions;
}

function loadModel(root: string, name: string, text: string): RepositoryModel {
  const dir = join(root, name);
  const read = readModelConfig(text, name, `${name}/config.pbtxt`);
  for (const label of read.labelFiles) {
    const p = join(dir, label);
    if (!isFile(p)) throw new InvalidInputError(`${p}: missing (an output's label_filename)`);
  }
  const versions = servedVersions(dir, name, read.versionPolicy);
  const version = versions[versions.length - 1]!;
  const file = join(dir, String(version), read.modelFilename);
  if (!isFile(file)) {
    const byDefault = read.modelFilename === (read.backend === 'onnxruntime' ? 'model.onnx' : 'model.pt');
    const why = byDefault ? 'the default name' : 'default_model_filename';
    throw new InvalidInputError(`${file}: missing (the model file of version ${version}: ${why})`);
  }
  return repositoryModel(read, version, versions, file);
}

/** A failure's reason: a configuration's problems, or the one error. */
function reasonOf(e: unknown): string {
  if (!(e instanceof InvalidInputError)) throw e;
  return e instanceof RepositoryConfigError ? e.problems.join('; ') : e.message;
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
  const ensembleNames = new Set<string>();
  const read: { name: string; config: EnsembleConfigRead; versions: number[] }[] = [];
  for (const name of names) {
    try {
      const text = configText(root, name);
      if (!isEnsembleConfig(text)) {
        models.push(loadModel(root, name, text));
        continue;
      }
      ensembleNames.add(name);
      const config = readEnsembleConfig(text, name, `${name}/config.pbtxt`);
      read.push({ name, config, versions: servedVersions(join(root, name), name, config.versionPolicy) });
    } catch (e) {
      failures.push({ name, reason: reasonOf(e) });
    }
  }
  // Checked against the models loaded; a step model serves one ensemble (the first, by name), as in a scenario.
  const ctx = {
    models: new Map(models.map((m) => [m.name, m])),
    ensembles: ensembleNames,
    failed: new Map(failures.map((f) => [f.name, f.reason])),
  };
  const ensembles: RepositoryEnsemble[] = [];
  const stepOf = new Map<string, string>();
  for (const { name, config, versions } of read) {
    const problems = ensembleProblems(config, ctx);
    config.steps.forEach((s, i) => {
      const other = config.steps.findIndex((x) => x.model === s.model) < i ? name : stepOf.get(s.model);
      if (other !== undefined)
        problems.push(
          `ensemble_scheduling.step[${i}].model_name: "${s.model}" is already a step of ensemble '${other}'`,
        );
    });
    if (problems.length > 0) {
      failures.push({ name, reason: problems.map((p) => `${name}/config.pbtxt: ${p}`).join('; ') });
      continue;
    }
    for (const s of config.steps) stepOf.set(s.model, name);
    const { versionPolicy: _policy, ...rest } = config;
    ensembles.push({ ...rest, version: String(versions[versions.length - 1]), versions: versions.map(String) });
  }
  return { dir: root, models, ensembles, failures };
}

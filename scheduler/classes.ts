// The classification extension's shell (Triton's, src/serving/classification.ts is the rule): reads
// the label files a model's outputs use, once at start, and turns the outputs of an answer that the
// request asked classes of into their BYTES classes. The infer route calls classifyAnswer once per
// answered request; it never blocks (the labels are in memory).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { classify, LABEL_FILES, type LabelSet, outputLabelSet } from '../src/serving/classification.js';
import type { ModelSignature } from '../src/protocol/tensor.js';
import type { RequestedOutput, ResponseOutput } from './kserve.js';

/** The package root: the nearest directory above this module with a package.json (scheduler/ and dist/scheduler/). */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = resolve(dir, '..');
    if (up === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  return dir;
}

const loaded = new Map<LabelSet, readonly string[]>();

/** One label file's names, one a line (index order); read once. Throws naming the file when it cannot be read. */
export function labelFile(set: LabelSet, root = packageRoot()): readonly string[] {
  const have = loaded.get(set);
  if (have) return have;
  const path = join(root, LABEL_FILES[set]);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`label file ${path}: cannot read: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  const names = text.split('\n');
  if (names[names.length - 1] === '') names.pop();
  loaded.set(set, names);
  return names;
}

/** The labels of each of a model's outputs that has a label set (read now: call at start). */
export function modelLabels(signature: ModelSignature): ReadonlyMap<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  for (const o of signature.outputs) {
    const set = outputLabelSet(signature, o.name);
    if (set) out.set(o.name, labelFile(set));
  }
  return out;
}

/**
 * An answer's outputs with those the request asked classes of (RequestedOutput.classCount) replaced by
 * their classes; the others as they are. An error only when a worker's output does not fill its shape
 * (request parsing has checked the count and the datatype): the caller answers it as a server error.
 */
export function classifyAnswer(
  outputs: readonly ResponseOutput[],
  requested: readonly RequestedOutput[],
  labels: ReadonlyMap<string, readonly string[]>,
  batched = true,
): { ok: true; outputs: ResponseOutput[] } | { ok: false; error: string } {
  const result: ResponseOutput[] = [];
  for (const o of outputs) {
    const count = requested.find((r) => r.name === o.name)?.classCount;
    if (count === undefined || o.datatype === 'BYTES') {
      result.push(o);
      continue;
    }
    // `batched` false: a model of max_batch_size 0, whose outputs have no batch dimension.
    const c = classify(
      { datatype: o.datatype, shape: o.shape, data: o.data },
      count,
      labels.get(o.name) ?? null,
      batched,
    );
    if (!c.ok) return { ok: false, error: `output '${o.name}': ${c.error}` };
    result.push({ ...o, datatype: 'BYTES', shape: c.tensor.shape, data: c.tensor.data });
  }
  return { ok: true, outputs: result };
}

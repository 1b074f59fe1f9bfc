// Reading a parsed text-format message (src/repository/pbtxt.ts) field by field, with every problem
// recorded against the field's path (`input[1].dims[0]`), and the protobuf JSON form of a message whose
// fields inss passes through unread. Pure.
import type { PbField, PbMessage, PbValue } from './pbtxt.js';

/** How often a field may appear: once (a singular field or message) or any number of times (repeated, map). */
export type Arity = 'one' | 'many';

/** Problems found, each `path: what is wrong`, in the order found. */
export class Problems {
  readonly list: string[] = [];
  add(path: string, detail: string): void {
    this.list.push(`${path}: ${detail}`);
  }
}

function show(v: PbValue): string {
  if (v.kind === 'message') return 'a message';
  if (v.kind === 'string') return JSON.stringify(v.value);
  if (v.kind === 'number') return v.text;
  return v.value;
}

/** One message being read; `path` is its own path ('' at the top, else ending in '.'). */
export class Fields {
  constructor(
    readonly msg: PbMessage,
    readonly path: string,
    readonly problems: Problems,
  ) {}

  /**
   * Records each field not in `known` ("unknown field", with the message's known fields) and each
   * singular field given more than once. `what` names the message type (Triton's, e.g. ModelInput).
   */
  check(what: string, known: Readonly<Record<string, Arity>>): void {
    const seen = new Set<string>();
    for (const f of this.msg.fields) {
      const arity = known[f.name];
      if (arity === undefined) {
        this.problems.add(
          this.path + f.name,
          `unknown field (line ${f.at.line}; ${what} has ${Object.keys(known).sort().join(', ')})`,
        );
      } else if (arity === 'one' && seen.has(f.name)) {
        this.problems.add(this.path + f.name, `given more than once (line ${f.at.line}; it is not repeated)`);
      }
      seen.add(f.name);
    }
  }

  all(name: string): readonly PbField[] {
    return this.msg.fields.filter((f) => f.name === name);
  }

  has(name: string): boolean {
    return this.msg.fields.some((f) => f.name === name);
  }

  /** The last value given (protobuf's rule for a singular field; check() reports the repetition). */
  one(name: string): PbField | undefined {
    const all = this.all(name);
    return all[all.length - 1];
  }

  private bad(path: string, v: PbValue, expected: string): undefined {
    this.problems.add(path, `${show(v)} (line ${v.at.line}; expected ${expected})`);
    return undefined;
  }

  /** An integer field (or element `index` of a repeated one) in [min, max]. */
  int(name: string, opts: { min?: number; max?: number } = {}, field?: PbField, index?: number): number | undefined {
    const f = field ?? this.one(name);
    if (!f) return undefined;
    const path = this.path + name + (index !== undefined ? `[${index}]` : '');
    const v = f.value;
    if (v.kind !== 'number' || !v.integer) return this.bad(path, v, 'an integer');
    const min = opts.min ?? -Number.MAX_SAFE_INTEGER;
    const max = opts.max ?? Number.MAX_SAFE_INTEGER;
    if (v.value < min || v.value > max)
      return this.bad(path, v, max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `${min}..${max}`);
    return v.value;
  }

  /** Every element of a repeated integer field. */
  ints(name: string, opts: { min?: number; max?: number } = {}): (number | undefined)[] {
    return this.all(name).map((f, i) => this.int(name, opts, f, i));
  }

  str(name: string): string | undefined {
    const f = this.one(name);
    if (!f) return undefined;
    if (f.value.kind !== 'string') return this.bad(this.path + name, f.value, 'a string in quotes');
    return f.value.value;
  }

  bool(name: string): boolean | undefined {
    const f = this.one(name);
    if (!f) return undefined;
    const v = f.value;
    if (v.kind === 'identifier' && ['true', 'True', 't'].includes(v.value)) return true;
    if (v.kind === 'identifier' && ['false', 'False', 'f'].includes(v.value)) return false;
    if (v.kind === 'number' && v.integer && (v.value === 0 || v.value === 1)) return v.value === 1;
    return this.bad(this.path + name, v, 'true or false');
  }

  enumValue<T extends string>(name: string, values: readonly T[]): T | undefined {
    const f = this.one(name);
    if (!f) return undefined;
    const v = f.value;
    if (v.kind === 'identifier' && (values as readonly string[]).includes(v.value)) return v.value as T;
    return this.bad(this.path + name, v, `one of ${values.join(', ')}`);
  }

  /** A message-valued field (or element `index` of a repeated one), to read in turn. */
  sub(name: string, field?: PbField, index?: number): Fields | undefined {
    const f = field ?? this.one(name);
    if (!f) return undefined;
    const path = this.path + name + (index !== undefined ? `[${index}]` : '');
    if (f.value.kind !== 'message') return this.bad(path, f.value, 'a message in { }');
    return new Fields(f.value, `${path}.`, this.problems);
  }

  /** Every element of a repeated message field. */
  subs(name: string): Fields[] {
    return this.all(name).flatMap((f, i) => this.sub(name, f, i) ?? []);
  }
}

/** Repeated fields of the messages inss passes through (model_config.proto), which JSON writes as arrays. */
const REPEATED = new Set([
  'instance_group',
  'gpus',
  'profile',
  'secondary_devices',
  'resources',
  'model_warmup',
  'dims',
  'gpu_execution_accelerator',
  'cpu_execution_accelerator',
  'graph_spec',
  'op_library_filename',
  'agents',
  'metric_control',
  'buckets',
  'shape',
]);

/** Map fields (`{ key: .. value: .. }` entries in the text format), which JSON writes as objects. */
const MAPS = new Set(['cc_model_filenames', 'metric_tags', 'parameters', 'inputs']);

function scalarJson(v: PbValue): unknown {
  if (v.kind === 'message') return messageJson(v);
  if (v.kind === 'identifier') return v.value === 'true' ? true : v.value === 'false' ? false : v.value;
  return v.value;
}

/**
 * A message as protobuf's JSON writes it with the proto's own field names (as Triton answers
 * GET /v2/models/{name}/config): repeated fields as arrays, maps as objects, enums by name, and int64
 * as numbers (Triton rewrites protobuf's int64 strings as numbers).
 */
export function messageJson(m: PbMessage): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of new Set(m.fields.map((f) => f.name))) {
    const values = m.fields.filter((f) => f.name === name).map((f) => f.value);
    const isMap = MAPS.has(name) && values.every((v) => v.kind === 'message' && v.fields.some((f) => f.name === 'key'));
    if (isMap) {
      out[name] = Object.fromEntries(
        values.map((v) => {
          const entry = v as PbMessage;
          const key = entry.fields.find((f) => f.name === 'key')!.value;
          const value = entry.fields.find((f) => f.name === 'value')?.value;
          return [String(scalarJson(key)), value === undefined ? '' : scalarJson(value)];
        }),
      );
    } else if (REPEATED.has(name) || values.length > 1) out[name] = values.map(scalarJson);
    else out[name] = scalarJson(values[0]!);
  }
  return out;
}

// inss's own keys of a config.pbtxt's `parameters` (Triton's map<string, {string_value}>), read and
// validated: the SLO, the longest a variable input dimension may be, and the model's input-dependent
// cost (docs/model-repository.md, "inss's parameters"). Other keys are backend options: kept in the
// configuration as loaded, with no effect. Pure.
import type { CostClass } from '../model/costDistribution.js';
import type { Fields } from './fields.js';

/** The longest a variable (-1) input dimension may be when `max_variable_dim` is not given. */
export const DEFAULT_MAX_VARIABLE_DIM = 4096;

export interface ModelParameters {
  /** `slo_ms`: the latency SLO in ms. */
  readonly sloMs?: number;
  /** `max_variable_dim`: the longest every variable input dimension may be in a request. */
  readonly maxVariableDim?: number;
  /** `cost_classes`: a sample's cost relative to the others', with weights (src/model/costDistribution.ts). */
  readonly costClasses?: readonly CostClass[];
  /** Every parameter as Triton's JSON writes it. */
  readonly json: Record<string, { string_value: string }>;
}

/** `16:0.22 32:0.28 64:0.5`: relative cost and weight pairs, separated by spaces or commas. */
export function parseCostClasses(text: string): CostClass[] | string {
  const items = text.split(/[\s,]+/).filter((s) => s !== '');
  if (items.length === 0) return 'no class (give relative:weight pairs, e.g. "16:0.3 32:0.5 64:0.2")';
  const classes: CostClass[] = [];
  for (const [i, item] of items.entries()) {
    const m = /^([^:]+):([^:]+)$/.exec(item);
    const relative = m ? Number(m[1]) : NaN;
    const weight = m ? Number(m[2]) : NaN;
    if (!(Number.isFinite(relative) && relative > 0 && Number.isFinite(weight) && weight > 0))
      return `class ${i} ${JSON.stringify(item)}: expected relative:weight, both positive numbers`;
    classes.push({ relative, weight });
  }
  return classes;
}

/** Reads `parameters`, adding a problem naming the parameter for each value inss cannot take. */
export function parametersOf(top: Fields): ModelParameters {
  const json: Record<string, { string_value: string }> = {};
  let sloMs: number | undefined;
  let maxVariableDim: number | undefined;
  let costClasses: CostClass[] | undefined;
  top.subs('parameters').forEach((entry, i) => {
    entry.check('ModelConfig.ParametersEntry', { key: 'one', value: 'one' });
    const key = entry.str('key');
    if (key === undefined) return entry.problems.add(`parameters[${i}].key`, 'missing');
    const value = entry.sub('value');
    value?.check('ModelParameter', { string_value: 'one' });
    const text = value?.str('string_value') ?? '';
    json[key] = { string_value: text };
    const where = `parameters[${JSON.stringify(key)}].value.string_value`;
    if (key === 'slo_ms') {
      const ms = Number(text);
      if (text.trim() === '' || !Number.isFinite(ms) || ms <= 0)
        entry.problems.add(where, `${JSON.stringify(text)} (a positive number of ms)`);
      else sloMs = ms;
    } else if (key === 'max_variable_dim') {
      const n = Number(text);
      if (text.trim() === '' || !Number.isInteger(n) || n < 1)
        entry.problems.add(where, `${JSON.stringify(text)} (a positive integer: the longest a -1 dimension may be)`);
      else maxVariableDim = n;
    } else if (key === 'cost_classes') {
      const parsed = parseCostClasses(text);
      if (typeof parsed === 'string') entry.problems.add(where, parsed);
      else costClasses = parsed;
    }
  });
  return {
    ...(sloMs !== undefined ? { sloMs } : {}),
    ...(maxVariableDim !== undefined ? { maxVariableDim } : {}),
    ...(costClasses !== undefined ? { costClasses } : {}),
    json,
  };
}

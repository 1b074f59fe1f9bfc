// How far each scenario's capacities sit below its ceiling, and whose the gap is (docs/results.md, "How
// far below the ceiling"): the planner's, up to the best capacity any other policy or a fixed plan
// reached above inss's, and the GPUs', from that best to the ceiling (queueing, batching delay, the SLO's
// tail, and what the bound leaves out: docs/ceiling.md). Pure: the recorded suites come in parsed.
import { ATTAINMENTS, capacityOf, type CurvePoint } from './capacity.js';

/** The parts of a recorded suite.json this reads. */
export interface RecordedSuite {
  readonly cells: readonly {
    scenario: string;
    policy: string;
    runnable: boolean;
    curve: readonly CurvePoint[];
  }[];
}

/** One scenario under one mode, at one attainment. */
export interface GapRow {
  readonly scenario: string;
  readonly inss: number;
  readonly bestOther: { readonly policy: string; readonly capacity: number } | null;
  /** The oracle's best fixed plan, where one is recorded. */
  readonly fixedPlan: number | null;
  readonly ceiling: number;
  /** Of the gap ceiling - inss: the part above inss that another policy or a fixed plan reached. */
  readonly plannerPart: number;
  /** The rest: ceiling - the best capacity recorded. */
  readonly gpuPart: number;
}

/** Mean capacity over the seeds of each runnable policy on `scenario` in `suite`. */
export function meanCapacities(suite: RecordedSuite, scenario: string, attainment: number): Map<string, number> {
  const by = new Map<string, number[]>();
  for (const c of suite.cells)
    if (c.scenario === scenario && c.runnable)
      by.set(c.policy, [...(by.get(c.policy) ?? []), capacityOf(c.curve, attainment)]);
  return new Map([...by].map(([p, v]) => [p, v.reduce((s, x) => s + x, 0) / v.length]));
}

/**
 * The row of one scenario: inss's capacity from `inssFrom`, every other policy's from the first suite
 * of `othersFrom` that has it (in order), and the gap split.
 */
export function gapRow(
  scenario: string,
  inssFrom: RecordedSuite,
  othersFrom: readonly RecordedSuite[],
  fixedPlan: number | null,
  ceiling: number,
  attainment = ATTAINMENTS[0],
): GapRow {
  const inss = meanCapacities(inssFrom, scenario, attainment).get('inss');
  if (inss === undefined) throw new RangeError(`${scenario}: no inss cells`);
  const others = new Map<string, number>();
  for (const s of [inssFrom, ...othersFrom])
    for (const [p, v] of meanCapacities(s, scenario, attainment))
      if (!p.startsWith('inss') && !others.has(p)) others.set(p, v);
  const best = [...others].reduce<[string, number] | null>((b, o) => (!b || o[1] > b[1] ? o : b), null);
  const top = Math.max(inss, best?.[1] ?? 0, fixedPlan ?? 0);
  return {
    scenario,
    inss,
    bestOther: best ? { policy: best[0], capacity: best[1] } : null,
    fixedPlan,
    ceiling,
    plannerPart: top - inss,
    gpuPart: ceiling - top,
  };
}

/** The rows as a Markdown table (capacities as load x; the parts as shares of the gap ceiling - inss). */
export function formatGapTable(rows: readonly GapRow[]): string {
  const head = ['scenario', 'inss', 'best other', 'best fixed plan', 'ceiling', "planner's part", "GPUs' part"];
  const pct = (part: number, r: GapRow) => {
    const gap = r.ceiling - r.inss;
    return gap > 0 ? `${part.toFixed(2)} (${Math.round((100 * part) / gap)}%)` : part.toFixed(2);
  };
  const body = rows.map((r) => [
    r.scenario,
    r.inss.toFixed(2),
    r.bestOther ? `${r.bestOther.capacity.toFixed(2)} ${r.bestOther.policy}` : '-',
    r.fixedPlan !== null ? r.fixedPlan.toFixed(2) : '-',
    r.ceiling.toFixed(2),
    pct(r.plannerPart, r),
    pct(r.gpuPart, r),
  ]);
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...body.map(line)].join('\n');
}

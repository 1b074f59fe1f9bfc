// `inss bench --suite`: scenarios x seeds x policies, each cell a violation-versus-load curve on the
// load grid (capacity.ts), summarised as capacity per policy per scenario (mean and range over the
// seeds) and inss's ratio to the best other policy. Pure: the CLI runs the cells and writes files.
import { ATTAINMENTS, capacityOf, type CurvePoint, type Spread, spread } from './capacity.js';

/** One cell of the suite: one policy on one scenario at one seed. */
export interface SuiteCell {
  readonly scenario: string;
  readonly policy: string;
  readonly seed: number;
  /** False when the policy cannot run on the scenario (e.g. inss without a trained policy for it). */
  readonly runnable: boolean;
  readonly reason?: string;
  /** What the policy decided with, where it says (Policy.note: inss's trained actor or model-based planner). */
  readonly note?: string;
  readonly curve: readonly CurvePoint[];
  /** Wall time of the cell's runs, ms (0 when not timed). */
  readonly wallMs: number;
}

export interface PolicySummary {
  readonly policy: string;
  readonly runnable: boolean;
  readonly reason?: string;
  /** Capacity (load multiplier) per attainment, keyed '99' and '95', over the seeds. */
  readonly capacity: Readonly<Record<string, Spread>>;
}

export interface ScenarioSummary {
  readonly scenario: string;
  readonly policies: readonly PolicySummary[];
  /**
   * Per attainment: inss's mean capacity over the best mean capacity of any policy whose name does
   * not start with 'inss', and which policy that is; null when inss did not run.
   */
  readonly inssRatio: Readonly<Record<string, { ratio: number; best: string } | null>>;
  /**
   * The scenario's capacity ceiling per attainment over the seeds (tools/bench/ceiling.ts); null where it has
   * none (a trace); absent where not computed.
   */
  readonly ceiling?: Readonly<Record<string, Spread>> | null;
}

export const attainmentKey = (a: number): string => String(Math.round(a * 100));

/** Summarises cells into one row per scenario, in the order scenarios and policies are given. */
export function summarizeSuite(
  cells: readonly SuiteCell[],
  scenarios: readonly string[],
  policies: readonly string[],
  inssName = 'inss',
): ScenarioSummary[] {
  return scenarios.map((scenario) => {
    const rows: PolicySummary[] = policies.map((policy) => {
      const mine = cells.filter((c) => c.scenario === scenario && c.policy === policy);
      const ran = mine.filter((c) => c.runnable);
      const capacity: Record<string, Spread> = {};
      for (const a of ATTAINMENTS) capacity[attainmentKey(a)] = spread(ran.map((c) => capacityOf(c.curve, a)));
      const notRun = mine.find((c) => !c.runnable);
      return {
        policy,
        runnable: ran.length > 0,
        ...(ran.length === 0 && notRun?.reason !== undefined ? { reason: notRun.reason } : {}),
        capacity,
      };
    });
    const inssRatio: Record<string, { ratio: number; best: string } | null> = {};
    for (const a of ATTAINMENTS) {
      const k = attainmentKey(a);
      const inss = rows.find((r) => r.policy === inssName && r.runnable);
      const others = rows.filter((r) => !r.policy.startsWith('inss') && r.runnable);
      if (!inss || others.length === 0) {
        inssRatio[k] = null;
        continue;
      }
      const best = others.reduce((b, r) => (r.capacity[k]!.mean > b.capacity[k]!.mean ? r : b));
      const bestCap = best.capacity[k]!.mean;
      inssRatio[k] = {
        ratio: bestCap > 0 ? inss.capacity[k]!.mean / bestCap : inss.capacity[k]!.mean > 0 ? Infinity : NaN,
        best: best.policy,
      };
    }
    return { scenario, policies: rows, inssRatio };
  });
}

/** A capacity over seeds as the tables print it: `mean (min-max)`, or the one value, or '-'. */
export function formatSpread(s: Spread | undefined): string {
  if (!s) return '-';
  if (s.n === 0) return '-';
  return s.n === 1 || s.min === s.max
    ? s.mean.toFixed(2)
    : `${s.mean.toFixed(2)} (${s.min.toFixed(2)}-${s.max.toFixed(2)})`;
}

/**
 * The summary table (Markdown) at one attainment: a row per scenario, a column per policy with the
 * mean capacity and its range over the seeds, 'n/r' where the policy cannot run, inss's ratio
 * to the best other policy, and the scenario's ceiling where the summary has one ('-': none).
 */
export function formatSuiteTable(summary: readonly ScenarioSummary[], attainment: number): string {
  const k = attainmentKey(attainment);
  const policies = summary[0]?.policies.map((p) => p.policy) ?? [];
  const withCeiling = summary.some((s) => s.ceiling !== undefined);
  const head = ['scenario', ...policies, 'inss / best other', ...(withCeiling ? ['ceiling'] : [])];
  const rows = summary.map((s) => {
    const r = s.inssRatio[k];
    return [
      s.scenario,
      ...s.policies.map((p) => (p.runnable ? formatSpread(p.capacity[k]) : 'n/r')),
      r ? `${Number.isFinite(r.ratio) ? r.ratio.toFixed(2) : String(r.ratio)} (vs ${r.best})` : 'n/r',
      ...(withCeiling ? [s.ceiling ? formatSpread(s.ceiling[k]) : '-'] : []),
    ];
  });
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** The mean violation at each load over the seeds that reached it (for the violation-versus-load plot). */
export function meanCurve(cells: readonly SuiteCell[]): [number, number][] {
  const byLoad = new Map<number, number[]>();
  for (const c of cells)
    for (const p of c.curve) byLoad.set(p.loadScale, [...(byLoad.get(p.loadScale) ?? []), p.sloViolationPct]);
  return [...byLoad.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([x, v]) => [x, v.reduce((s, y) => s + y, 0) / v.length]);
}

// The Grafana dashboard (deploy/grafana/inss.json) graphs metrics that exist: every metric its PromQL
// queries (panel targets and template variables) name is served by the scheduler's registry
// (scheduler/metrics.ts, the same Metrics object GET /metrics serves).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Metrics } from '../../scheduler/metrics.js';
import { REPO_ROOT } from '../support/paths.js';

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression reads (functions, keywords, labels, strings, ranges and Grafana variables left
 * out).
 */
function metricNamesIn(expr: string): string[] {
  const e = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/label_values\(\s*([a-zA-Z_:][\w:]*)\s*,\s*\w+\s*\)/g, '$1');
  const out: string[] = [];
  for (const m of e.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    if (m.index > 0 && e[m.index - 1] === '$') continue;
    if (
      KEYWORDS.has(m[0]) ||
      e
        .slice(m.index + m[0].length)
        .trimStart()
        .startsWith('(')
    )
      continue;
    out.push(m[0]);
  }
  return out;
}

const Target = z.object({ expr: z.string().min(1), refId: z.string() });
const Panel = z.object({ type: z.string(), title: z.string().min(1), targets: z.array(Target).optional() });
const Dashboard = z.object({
  title: z.string(),
  uid: z.string(),
  panels: z.array(Panel).min(1),
  templating: z.object({
    list: z.array(
      z.object({
        name: z.string(),
        type: z.string(),
        query: z.union([z.string(), z.object({ query: z.string() })]).optional(),
      }),
    ),
  }),
});

describe('metricNamesIn', () => {
  it('finds metric names, not functions, labels or variables', () => {
    expect(
      metricNamesIn(
        'sum by (model) (rate(nv_inference_count{model=~"$model"}[$__rate_interval])) / sum by (model) ' +
          '(rate(nope_total[5m]))',
      ),
    ).toEqual(['nv_inference_count', 'nope_total']);
    expect(metricNamesIn('histogram_quantile(0.99, sum by (le, model) (rate(x_bucket[1m])))')).toEqual(['x_bucket']);
    expect(metricNamesIn('label_values(nv_inference_request_success, model)')).toEqual([
      'nv_inference_request_success',
    ]);
    expect(metricNamesIn('a * 1048576 and on (gpu) b')).toEqual(['a', 'b']);
  });
});

describe('deploy/grafana/inss.json', () => {
  const dash = Dashboard.parse(JSON.parse(readFileSync(join(REPO_ROOT, 'deploy', 'grafana', 'inss.json'), 'utf8')));
  const exprs = [
    ...dash.panels.flatMap((p) =>
      (p.targets ?? []).map((t) => ({ where: `panel '${p.title}' ${t.refId}`, expr: t.expr })),
    ),
    ...dash.templating.list.flatMap((v) =>
      v.type === 'query' && v.query !== undefined
        ? [{ where: `variable $${v.name}`, expr: typeof v.query === 'string' ? v.query : v.query.query }]
        : [],
    ),
  ];

  it('every graph panel has a query', () => {
    for (const p of dash.panels) if (p.type !== 'row') expect(p.targets?.length ?? 0, p.title).toBeGreaterThan(0);
  });

  it("every metric a query names is in the scheduler's registry", () => {
    const served = new Set(new Metrics().metricNames());
    const named = new Set<string>();
    for (const { where, expr } of exprs) {
      for (const name of metricNamesIn(expr)) {
        named.add(name);
        expect(served.has(name), `${where}: ${name} is not a metric the scheduler serves`).toBe(true);
      }
    }
    // It graphs Triton's request metrics and inss's own (shares, SLO, swaps).
    for (const n of [
      'nv_inference_request_success',
      'nv_inference_request_failure',
      'nv_inference_queue_duration_us',
      'nv_inference_compute_infer_duration_us',
      'nv_inference_pending_request_count',
      'nv_gpu_utilization',
      'inss_model_share_percent',
      'inss_slo_attainment_ratio',
      'inss_shadow_swaps_total',
    ]) {
      expect(named.has(n), n).toBe(true);
    }
  });
});

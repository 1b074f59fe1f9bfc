// Prints the evidence tables of docs/pooled-gpu.md: what two models' batches gain by running at once
// on one GPU (a pooled GPU in `overlap` mode) over running one after the other on the whole GPU
// (`serial`), measured on the V100 and predicted by the latency model for each profile.
//
//   npm run build && npm run bench:pooled-evidence
//
// The overlap gain of a pair: both models run continuously side by side, each batch taking t_a and
// t_b; in the same time one after the other at 100% of the GPU (solo times s_a, s_b) would do
// s_a / t_a + s_b / t_b times as much. > 1: running at once beats running in series; 1 is series.
// Deterministic; reads data/v100 and profiles/ of the package root, needs no GPU, runs in about a second.
import { join } from 'node:path';
import { LatencyModel } from '../src/model/predictor.js';
import { pooledMs } from '../src/model/pooledGpu.js';
import { loadProfile, PACKAGE_ROOT, readJsonFile } from '../cli/profiles.js';
import { igniterToMeasurements } from '../tools/fit/igniter.js';

/** Models of the profiles and of the V100 data that are heavy (>= 4 GFLOPs a sample); the rest are light. */
const HEAVY = new Set(['resnet50', 'vgg16', 'vgg19', 'ssd']);
const PREDICT_BATCHES = [1, 4, 8, 16] as const;
const PROFILES = ['v100', 'rtx2060s', 'rtx2060'] as const;
/**
 * How far (summed relative throughput) a profile's heavy-pair gain may sit from the V100's measured one and still
 * reproduce it.
 */
const VERDICT_TOLERANCE = 0.05;

type PairClass = 'heavy' | 'mixed' | 'light';
const pairClass = (a: string, b: string): PairClass => {
  const n = Number(HEAVY.has(a)) + Number(HEAVY.has(b));
  return n === 2 ? 'heavy' : n === 1 ? 'mixed' : 'light';
};

/** s_a / t_a + s_b / t_b: the pair's throughput running at once over running in series at 100%. */
function overlapGain(soloMs: readonly [number, number], pairMs: readonly [number, number]): number {
  return soloMs[0] / pairMs[0] + soloMs[1] / pairMs[1];
}

const f2 = (x: number): string => x.toFixed(2);
const span = (xs: readonly number[]): string =>
  xs.length === 0 ? '-' : `${f2(Math.min(...xs))}-${f2(Math.max(...xs))}`;
const mean = (xs: readonly number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;

const v100Dir = join(PACKAGE_ROOT, 'data', 'v100');
const measured = igniterToMeasurements(
  readJsonFile(join(v100Dir, 'solo.json')),
  readJsonFile(join(v100Dir, 'colocated-calibration.json')),
  readJsonFile(join(v100Dir, 'model-facts.json')),
);
const colocated = measured.colocated ?? [];
if (colocated.length === 0) throw new Error('data/v100/colocated-calibration.json: no co-located pairs');
const models = new Map(PROFILES.map((id) => [id, LatencyModel.compile(loadProfile(id))] as const));
const v100 = models.get('v100')!;

/** The measured solo latency (ms), or undefined where the V100 table has no such point. */
function measuredSoloMs(model: string, batch: number, pct: number): number | undefined {
  return measured.solo.find((p) => p.model === model && p.batch === batch && p.pct === pct)?.latencyMs;
}
const predictSoloMs = (lm: LatencyModel, model: string, batch: number): number =>
  lm.predict([{ model, batch, pct: 100 }]).latencyMs[0]!;

// --- The denominators: the V100 solo table has 100% at batch 1 only. -----------------------------
console.log('## V100 solo latency at 100% of the GPU (the series denominator)\n');
console.log('Measured 100% exists at batch 1 only; elsewhere the nearest measured share is 80%.\n');
console.log(
  '| model | batch | measured 80% (ms) | measured 100% (ms) | v100 profile 100% (ms) | profile vs measured ' +
    '100% | measured 80% / profile 100% |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const model of v100.modelNames) {
  for (const batch of [1, 4, 16]) {
    const t80 = measuredSoloMs(model, batch, 80)!;
    const t100 = measuredSoloMs(model, batch, 100);
    const fit = predictSoloMs(v100, model, batch);
    const err = t100 === undefined ? '-' : `${((fit / t100 - 1) * 100).toFixed(1)}%`;
    console.log(
      `| ${model} | ${batch} | ${t80.toFixed(3)} | ${t100?.toFixed(3) ?? '-'} | ${fit.toFixed(3)} | ${err} | ` +
        `${f2(t80 / fit)} |`,
    );
  }
}

// --- (a) Measured overlap gain on the V100. ------------------------------------------------------
interface MeasuredGain {
  readonly a: string;
  readonly b: string;
  readonly cls: PairClass;
  readonly batch: number;
  readonly pctA: number;
  readonly pctB: number;
  /** Solo at 80% (the nearest measured share): an upper bound, as a 100% batch is no slower. */
  readonly upper: number;
  /** Solo at 100% by the fitted v100 profile: the central estimate. */
  readonly fitted: number;
  /** Solo at 80% x 0.8, as if time fell in proportion to the SMs from 80% to 100%: a lower bound. */
  readonly lower: number;
  /** The latency model's gain at the same shares and batches (its co-located t_inf over the same fitted solo). */
  readonly predicted: number;
}

const gains: MeasuredGain[] = colocated.map((c) => {
  const [ra, rb] = c.runs as [(typeof c.runs)[0], (typeof c.runs)[0]];
  const s80: [number, number] = [measuredSoloMs(ra.model, ra.batch, 80)!, measuredSoloMs(rb.model, rb.batch, 80)!];
  const fit: [number, number] = [predictSoloMs(v100, ra.model, ra.batch), predictSoloMs(v100, rb.model, rb.batch)];
  const pair: [number, number] = [ra.latencyMs, rb.latencyMs];
  const pred = v100.predict([ra, rb].map((r) => ({ model: r.model, batch: r.batch, pct: r.pct }))).latencyMs;
  return {
    a: ra.model,
    b: rb.model,
    cls: pairClass(ra.model, rb.model),
    batch: ra.batch,
    pctA: ra.pct,
    pctB: rb.pct,
    upper: overlapGain(s80, pair),
    fitted: overlapGain(fit, pair),
    lower: overlapGain([0.8 * s80[0], 0.8 * s80[1]], pair),
    predicted: overlapGain(fit, [pred[0]!, pred[1]!]),
  };
});

console.log('\n## (a) Measured overlap gain on the V100 (MPS, shares summing to 100%)\n');
console.log('Gain = s_a / t_a + s_b / t_b: t measured side by side, s solo on the whole GPU. Columns: s at 80% (upper');
console.log('bound), s at 100% by the fitted v100 profile (central), s = 0.8 x the 80% time (lower bound); and what');
console.log('the latency model predicts at the same point (its own t over the same s).\n');
console.log(
  '| pair | class | batch | shares | t_a / t_b (ms) | gain, s at 80% | gain, s at 100% fitted | gain, lower ' +
    'bound | predicted |',
);
console.log('| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: |');
for (const g of gains) {
  const c = colocated.find(
    (x) =>
      x.runs[0]!.model === g.a && x.runs[1]!.model === g.b && x.runs[0]!.batch === g.batch && x.runs[0]!.pct === g.pctA,
  )!;
  const ms = `${c.runs[0]!.latencyMs.toFixed(2)} / ${c.runs[1]!.latencyMs.toFixed(2)}`;
  console.log(
    `| ${g.a}+${g.b} | ${g.cls} | ${g.batch} | ${g.pctA}/${g.pctB} | ${ms} | ${f2(g.upper)} | ` +
      `${f2(g.fitted)} | ${f2(g.lower)} | ${f2(g.predicted)} |`,
  );
}

console.log('\nSummary by class and shares (min-max over pairs and batches 4 and 16):\n');
console.log(
  '| class | shares | pairs | gain, s at 80% | gain, s at 100% fitted | gain, lower bound | predicted | mean ' +
    'predicted - measured (fitted s) |',
);
console.log('| --- | --- | ---: | --- | --- | --- | --- | ---: |');
const splits = [...new Set(gains.map((g) => `${Math.min(g.pctA, g.pctB)}/${Math.max(g.pctA, g.pctB)}`))];
for (const cls of ['mixed', 'heavy'] as const) {
  for (const split of splits) {
    const xs = gains.filter(
      (g) => g.cls === cls && `${Math.min(g.pctA, g.pctB)}/${Math.max(g.pctA, g.pctB)}` === split,
    );
    if (xs.length === 0) continue;
    const pairs = new Set(xs.map((g) => `${g.a}+${g.b}`)).size;
    const bias = mean(xs.map((g) => g.predicted - g.fitted));
    const fmt = (k: 'upper' | 'fitted' | 'lower' | 'predicted'): string => span(xs.map((g) => g[k]));
    console.log(
      `| ${cls} | ${split} | ${pairs} | ${fmt('upper')} | ${fmt('fitted')} | ${fmt('lower')} | ` +
        `${fmt('predicted')} | ${bias >= 0 ? '+' : ''}${f2(bias)} |`,
    );
  }
}

// Batch 1 has no co-located measurement, but the solo table has 50% and 100% there: without
// interference (which only slows a batch), a pair at 50/50 would gain s100_a / s50_a + s100_b / s50_b.
console.log('\nBatch 1, no co-located measurement: the solo table bounds the 50/50 gain from above (interference');
console.log('only slows a batch): s_a(100%) / s_a(50%) + s_b(100%) / s_b(50%), measured.\n');
console.log('| pair | class | upper bound at batch 1 | v100 profile, even split with interference |');
console.log('| --- | --- | ---: | ---: |');
for (let i = 0; i < v100.modelNames.length; i++) {
  for (let j = i + 1; j < v100.modelNames.length; j++) {
    const [a, b] = [v100.modelNames[i]!, v100.modelNames[j]!];
    const ratio = (m: string): number => measuredSoloMs(m, 1, 100)! / measuredSoloMs(m, 1, 50)!;
    const [ta, tb] = v100.predict([
      { model: a, batch: 1, pct: 50 },
      { model: b, batch: 1, pct: 50 },
    ]).latencyMs as [number, number];
    const even = overlapGain([predictSoloMs(v100, a, 1), predictSoloMs(v100, b, 1)], [ta, tb]);
    console.log(`| ${a}+${b} | ${pairClass(a, b)} | ${f2(ratio(a) + ratio(b))} | ${f2(even)} |`);
  }
}

// --- (b) Predicted overlap gain per profile at 50/50. -------------------------------------------
interface PredictedGain {
  readonly profile: string;
  readonly a: string;
  readonly b: string;
  readonly cls: PairClass;
  readonly batch: number;
  /** Each batch at an even split (50%) with interference, over solo at 100%. */
  readonly even: number;
  /** The overlap rule: each batch's time min(even split, 2 x its solo, its solo + the other's), both models busy. */
  readonly rule: number;
}

const predicted: PredictedGain[] = [];
for (const [id, lm] of models) {
  const names = lm.modelNames;
  for (let i = 0; i < names.length; i++) {
    for (let j = i + 1; j < names.length; j++) {
      const [a, b] = [names[i]!, names[j]!];
      for (const batch of PREDICT_BATCHES) {
        const solo: [number, number] = [predictSoloMs(lm, a, batch), predictSoloMs(lm, b, batch)];
        const [ta, tb] = lm.predict([
          { model: a, batch, pct: 50 },
          { model: b, batch, pct: 50 },
        ]).latencyMs as [number, number];
        const rule: [number, number] = [
          pooledMs('overlap', ta, solo[0], 2, solo[0] + solo[1]),
          pooledMs('overlap', tb, solo[1], 2, solo[1] + solo[0]),
        ];
        predicted.push({
          profile: id,
          a,
          b,
          cls: pairClass(a, b),
          batch,
          even: overlapGain(solo, [ta, tb]),
          rule: overlapGain(solo, rule),
        });
      }
    }
  }
}

console.log('\n## (b) Predicted overlap gain at 50/50, per profile\n');
console.log('even: both batches at 50% with interference, over solo at 100% (both by the profile). rule: the overlap');
console.log(
  "rule's time, min(even split, 2 x own solo, own solo + the other's), both models kept busy (every batch starts",
);
console.log('beside a running batch of the other); it never falls below series (1.00).\n');
console.log(`| profile | pair | class | ${PREDICT_BATCHES.map((b) => `b${b} even | b${b} rule`).join(' | ')} |`);
console.log(`| --- | --- | --- | ${PREDICT_BATCHES.map(() => '---: | ---:').join(' | ')} |`);
for (let k = 0; k < predicted.length; k += PREDICT_BATCHES.length) {
  const row = predicted.slice(k, k + PREDICT_BATCHES.length);
  const p = row[0]!;
  console.log(
    `| ${p.profile} | ${p.a}+${p.b} | ${p.cls} | ${row.map((g) => `${f2(g.even)} | ${f2(g.rule)}`).join(' | ')} |`,
  );
}

console.log('\nSummary by class (min-max over pairs; even split, then the rule):\n');
console.log(`| profile | class | pairs | ${PREDICT_BATCHES.map((b) => `b${b} even | b${b} rule`).join(' | ')} |`);
console.log(`| --- | --- | ---: | ${PREDICT_BATCHES.map(() => '--- | ---').join(' | ')} |`);
for (const id of PROFILES) {
  for (const cls of ['heavy', 'mixed', 'light'] as const) {
    const xs = predicted.filter((g) => g.profile === id && g.cls === cls);
    if (xs.length === 0) continue;
    const pairs = xs.length / PREDICT_BATCHES.length;
    const cells = PREDICT_BATCHES.map((b) => {
      const at = xs.filter((g) => g.batch === b);
      return `${span(at.map((g) => g.even))} | ${span(at.map((g) => g.rule))}`;
    });
    console.log(`| ${id} | ${cls} | ${pairs} | ${cells.join(' | ')} |`);
  }
}

// --- (c) Verdict: does each profile reproduce the V100's measured heavy-pair gain? ---------------
// The reference: the measured heavy pairs at 50/50, batches 4 and 16, over the fitted 100% solo time.
// A profile reproduces it when its own heavy pairs' mean even-split gain at the same batches lies
// within VERDICT_TOLERANCE of the reference's mean.
const reference = gains.filter((g) => g.cls === 'heavy' && g.pctA === 50 && g.pctB === 50);
const referenceMean = mean(reference.map((g) => g.fitted));
const measuredBatches = [...new Set(reference.map((g) => g.batch))];
console.log('\n## (c) Verdict: the heavy-pair overlap gain at 50/50\n');
console.log(
  `V100 measured heavy pairs (${[...new Set(reference.map((g) => `${g.a}+${g.b}`))].join(', ')}), batches ` +
    `${measuredBatches.join(', ')}:`,
);
const lowerMean = mean(reference.map((g) => g.lower));
const upperMean = mean(reference.map((g) => g.upper));
console.log(
  `mean ${f2(referenceMean)} (${span(reference.map((g) => g.fitted))}) with the fitted 100% solo time; ` +
    `mean bounds ${f2(lowerMean)} (solo 0.8 x 80%) to ${f2(upperMean)} (solo at 80%).\n`,
);
for (const id of PROFILES) {
  const xs = predicted.filter((g) => g.profile === id && g.cls === 'heavy' && measuredBatches.includes(g.batch));
  const m = mean(xs.map((g) => g.even));
  const ok = Math.abs(m - referenceMean) <= VERDICT_TOLERANCE;
  const where =
    m < lowerMean
      ? 'below the measured lower bound'
      : m > upperMean
        ? 'above the measured upper bound'
        : 'within the measured bounds';
  const rule = mean(xs.map((g) => g.rule));
  const pairs = [...new Set(xs.map((g) => `${g.a}+${g.b}`))].join(', ');
  console.log(
    `- ${id}: heavy pairs (${pairs}) predict ${f2(m)} (${span(xs.map((g) => g.even))}) at an even split, ` +
      `${f2(rule)} under the overlap rule: ${ok ? 'reproduces' : 'does NOT reproduce'} ` +
      `the measured ${f2(referenceMean)} ` +
      `(${m - referenceMean >= 0 ? '+' : ''}${f2(m - referenceMean)}, tolerance ${VERDICT_TOLERANCE}); ` +
      `${where}.`,
  );
}

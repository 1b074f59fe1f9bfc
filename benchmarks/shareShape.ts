// Prints the share-curve comparison of docs/profiles-paper-cluster.md:
//   node dist/benchmarks/shareShape.js [repository root]
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { LatencyModel } from '../src/model/predictor.js';
import { parseProfile } from '../src/profile/schema.js';
import {
  allPairGains,
  measuredPairGains,
  measuredSoloShape,
  type PairGain,
  profileSoloShape,
  SHAPE_BATCHES,
  type SoloShape,
} from '../tools/fit/paperCluster/shareShape.js';

const root = process.argv[2] ?? '.';
const json = (p: string): unknown => JSON.parse(readFileSync(join(root, p), 'utf8'));
const load = (gpu: string): LatencyModel => LatencyModel.compile(parseProfile(json(`profiles/${gpu}.json`), gpu));
const v100 = load('v100');
const derived = ['rtx2060s', 'rtx2060'].map((g) => [g, load(g)] as const);
const f = (x: number): string => x.toFixed(2);

const shapes: SoloShape[] = [];
for (const m of ['alexnet', 'resnet50', 'vgg19'])
  for (const b of SHAPE_BATCHES) shapes.push(measuredSoloShape(json('data/v100/solo.json'), m, b));
for (const [g, lm] of derived)
  for (const m of lm.modelNames) for (const b of SHAPE_BATCHES) shapes.push(profileSoloShape(g, lm, m, b));
console.log(
  '| gpu | model | t20/t80 b1 | b4 | b16 | t50/t80 b1 | b4 | b16 |\n| --- | --- | ---: | ---: | ---: | ---: ' +
    '| ---: | ---: |',
);
const keys = [...new Set(shapes.map((s) => `${s.gpu}|${s.model}`))];
for (const k of keys) {
  const row = shapes.filter((s) => `${s.gpu}|${s.model}` === k);
  console.log(
    `| ${k.replace('|', ' | ')} | ${row.map((s) => f(s.t20)).join(' | ')} | ${row.map((s) => f(s.t50)).join(' | ')} |`,
  );
}
const pairs: PairGain[] = [...measuredPairGains(json('data/v100/colocated-calibration.json'), v100)];
const heavy = new Set(['alexnet', 'resnet50', 'vgg16', 'vgg19']);
console.log('\n| gpu | pairs | b1 min-max | b4 min-max | b16 min-max |\n| --- | --- | --- | --- | --- |');
const span = (xs: PairGain[], b: number): string => {
  const g = xs.filter((p) => p.batch === b).map((p) => p.gain);
  return g.length === 0 ? '-' : `${f(Math.min(...g))}-${f(Math.max(...g))}`;
};
console.log(
  `| v100 (measured) | alexnet, resnet50, vgg19, ssd | ${SHAPE_BATCHES.map((b) => span(pairs, b)).join(' | ')} |`,
);
for (const [g, lm] of derived) {
  const all = allPairGains(g, lm);
  const h = all.filter((p) => heavy.has(p.a) && heavy.has(p.b));
  const light = all.filter((p) => !heavy.has(p.a) && !heavy.has(p.b));
  console.log(
    `| ${g} | heavy (alexnet, resnet50, vgg16, vgg19) | ${SHAPE_BATCHES.map((b) => span(h, b)).join(' | ')} |`,
  );
  console.log(
    `| ${g} | light (mnasnet, mobilenet, efficientnet, resnet18) | ` +
      `${SHAPE_BATCHES.map((b) => span(light, b)).join(' | ')} |`,
  );
  console.log(`| ${g} | all 28 | ${SHAPE_BATCHES.map((b) => span(all, b)).join(' | ')} |`);
}

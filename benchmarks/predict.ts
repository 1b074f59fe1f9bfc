// Benchmark: latency-model predictions per second for one GPU holding four models.
// One prediction = t_inf of all four co-located models (interference included), the unit the batch
// decision and the RL environment call. Runs on one core (Node's main thread).
//
//   npm run bench:predict [-- --profile v100 --seconds 2 --rounds 5]
import { parseArgs } from 'node:util';
import { LatencyModel } from '../src/model/predictor.js';
import { loadProfile } from '../cli/profiles.js';

const { values } = parseArgs({
  options: {
    profile: { type: 'string', default: 'v100' },
    seconds: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '5' },
  },
});
const profile = loadProfile(values.profile);
const model = LatencyModel.compile(profile);
const names = Object.keys(profile.models).slice(0, 4);
if (names.length < 4) throw new Error(`profile ${profile.id} has fewer than four models`);
const idx = Int32Array.from(names.map((n) => model.modelIndex(n)));

// A pool of random configurations (batches 1..32, shares in MPS units summing to <= 100%), made
// before timing so that only the prediction is measured.
const POOL = 4096;
const batches = new Int32Array(POOL * 4);
const pcts = new Float64Array(POOL * 4);
let seed = 12345;
const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
const unit = profile.gpu.mpsUnitPct;
const units = Math.floor(100 / unit);
for (let c = 0; c < POOL; c++) {
  let left = units;
  for (let i = 0; i < 4; i++) {
    const u = i === 3 ? Math.max(1, left) : Math.max(1, Math.floor(rand() * (left - (3 - i))));
    left -= u;
    batches[c * 4 + i] = 1 + Math.floor(rand() * 32);
    pcts[c * 4 + i] = Math.min(100, u * unit);
  }
}

const out = new Float64Array(4);
const b4 = new Int32Array(4);
const p4 = new Float64Array(4);
function run(iterations: number): number {
  let sink = 0;
  for (let k = 0; k < iterations; k++) {
    const c = (k & (POOL - 1)) * 4;
    b4[0] = batches[c]!;
    b4[1] = batches[c + 1]!;
    b4[2] = batches[c + 2]!;
    b4[3] = batches[c + 3]!;
    p4[0] = pcts[c]!;
    p4[1] = pcts[c + 1]!;
    p4[2] = pcts[c + 2]!;
    p4[3] = pcts[c + 3]!;
    model.predictGpu(idx, b4, p4, 4, out);
    sink += out[0]!;
  }
  return sink;
}

run(200_000); // warm-up: let the JIT compile the hot path
const seconds = Number(values.seconds);
const rates: number[] = [];
for (let r = 0; r < Number(values.rounds); r++) {
  let n = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  while (elapsed < seconds) {
    run(100_000);
    n += 100_000;
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  }
  rates.push(n / elapsed);
}
rates.sort((a, b) => a - b);
const median = rates[Math.floor(rates.length / 2)]!;
console.log(
  JSON.stringify({
    benchmark: 'predict',
    profile: profile.id,
    models: names,
    predictionsPerS: Math.round(median),
    roundsPerS: rates.map(Math.round),
    node: process.version,
  }),
);

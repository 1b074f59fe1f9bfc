// The live system against its twin: `inss up` on a scenario (default: its default,
// paper-6, with its default policy), `inss loadgen` at a fraction of the scenario's rates, then the
// simulator on the same scenario, policy and arrivals, given the transport the scheduler fitted during
// the run (fixed + per MB, its spread and runs, GET /v2/inss/cluster `transport`; docs/serving.md "The
// path in the twin"). Prints, per model, SLO attainment and mean latency at the client and in the twin; per
// pipeline of the scenario (driven at its own rate, its step models at none), its attainment end to end
// (benchmarks/twinPipelines.ts).
//
// npm run bench:twin [-- --scenario paper-6 --policy inss --scale 0.25 --seconds 60 --shape constant|scenario
// --client-leg others|calibrate (default others) --calibrate-seconds S (default: --seconds) --repeat N (default 1)]
//
// Same arrivals: each model's arrivals are drawn once, seeded by the scenario, by the scenario's
// arrival process (Poisson or Gamma) at `--scale` x its rate at time 0 (`--shape constant`, the
// default: the rates `inss up` starts from, held for the whole run) or at `--scale` x its rate shape
// (`--shape scenario`: paper-6's triangle waves climb from there), written as one trace file per model
// (the scenario trace format), replayed by `inss loadgen --trace`, and given to the simulator as the
// scenario with each model's rate `{kind: "trace"}`. Both start from the scenario's full rates as the
// monitor's floor, as `inss up` does.
//
// The client's own leg (what the client sees beyond the scheduler's span of a task, from inss's
// Server-Timing answers) is added to the twin's latencies (TransportModel.clientMs). With `--client-leg
// others` each model's and pipeline's twin takes the leg the client measured in the same run on the others'
// tasks (none: no leg): a property of the client and the host, as the scheduler's transport is, never from
// its own latencies (overloaded, they hold the client's waits for a socket its backlog keeps busy).
// With `--client-leg calibrate` it comes from calibration runs of
// `--calibrate-seconds` with other arrivals at the same rates (the next seed), one before the measured
// run and one after it, the smaller of the two. `--repeat N` measures N runs (with calibrations, each
// between two: N + 1 in all) and prints per model the median gap over them: the host's speed drifts
// from minute to minute, and one run's gap says as much about that as about the twin (docs/serving.md
// "The client's leg").
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { benchRegistry, inssPolicyData, policyOptionsFor } from '../cli/benchCell.js';
import { loadScenario } from '../cli/scenarios.js';
import { initialRates, parseTrace, scenarioCluster, scenarioSettings, scenarioStreams } from '../src/scenario/build.js';
import { spreadFactor, type TransportModel, TransportModelSchema, transportFields } from '../src/serving/transport.js';
import { simulate } from '../src/sim/simulator.js';
import { LoadgenReportSchema } from '../tools/loadgen/report.js';
import { waitFor } from './processes.js';
import { clientLegOf, type LiveRun } from './twinLeg.js';
import * as pipes from './twinPipelines.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'inss.js');
const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'paper-6' },
    policy: { type: 'string', default: 'inss' },
    scale: { type: 'string', default: '0.25' },
    seconds: { type: 'string', default: '60' },
    shape: { type: 'string', default: 'constant' },
    'client-leg': { type: 'string', default: 'others' },
    'calibrate-seconds': { type: 'string' },
    repeat: { type: 'string', default: '1' },
  },
});
const SCALE = Number(values.scale);
const SECONDS = Number(values.seconds);
const CALIBRATE_S = Math.min(SECONDS, Number(values['calibrate-seconds'] ?? SECONDS));
const REPEAT = Number(values.repeat);
if (!Number.isInteger(REPEAT) || REPEAT < 1)
  throw new Error(`--repeat: a whole number of at least 1, got '${values.repeat}'`);
if (!(SCALE > 0) || !(SECONDS > 0) || !(CALIBRATE_S > 0))
  throw new Error('--scale, --seconds and --calibrate-seconds: positive numbers');
const CALIBRATE = values['client-leg'] === 'calibrate';
if (!CALIBRATE && values['client-leg'] !== 'others')
  throw new Error(`--client-leg: others or calibrate, got '${values['client-leg']}'`);
if (values.shape !== 'constant' && values.shape !== 'scenario')
  throw new Error(`--shape: constant or scenario, got '${values.shape}'`);

function start(args: string[]): { child: ChildProcess; out: () => string } {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', () => undefined);
  return { child, out: () => out };
}

/** The transport model of one host's entry at GET /v2/inss/cluster (`inss bench --transport` reads the same). */
function transportOf(entry: unknown): TransportModel {
  return TransportModelSchema.parse(transportFields(entry));
}

const loaded = loadScenario(values.scenario);
const s = loaded.scenario;
const state = mkdtempSync(join(tmpdir(), 'inss-twin-'));
const entries = pipes.withPipelineEntries(s);
const entryNames = entries.models.map((m) => m.name);
// The arrivals of a run, drawn with `seed`: one trace file per model and pipeline (the scenario trace format).
// Each entry at its own rate: a step model's own is 0 (initialRates gives it its pipeline's, the monitor's floor).
const atZero = initialRates({ ...entries, pipelines: [] }, loaded.traces, SCALE);
const drawn =
  values.shape === 'scenario'
    ? entries
    : {
        ...entries,
        models: entries.models.map((m, i) => ({ ...m, rate: { kind: 'constant' as const, ratePerS: atZero[i]! } })),
      };
function drawArrivals(seed: number, seconds: number, tag: string): { arrivalsMs: number[][]; files: string[] } {
  const arrivalsMs = scenarioStreams(drawn, loaded.traces, values.shape === 'scenario' ? SCALE : 1, seed).map(
    (stream) => {
      const out: number[] = [];
      for (let t = stream.next(); t < seconds * 1000; t = stream.next()) out.push(t);
      return out;
    },
  );
  const files = entries.models.map((m, i) => {
    const file = join(state, `${m.name}-${tag}-arrivals.txt`);
    writeFileSync(
      file,
      `# ${s.name} x ${SCALE}, seed ${seed}: ${m.name}'s arrivals in seconds ` +
        `(bench:twin)\n${arrivalsMs[i]!.map((t) => (t / 1000).toFixed(6)).join('\n')}\n`,
    );
    return file;
  });
  return { arrivalsMs, files };
}
// The arrivals of the run, the same for the live system and the twin.
const { arrivalsMs, files: traceFiles } = drawArrivals(s.seed, SECONDS, 'run');
// The simulator reads the same files as the scenario's traces (the scenario trace format, as loadgen).
const replayed = pipes.replayedScenario(s, traceFiles);
const replayedTraces = new Map(traceFiles.map((f) => [f, parseTrace(readFileSync(f, 'utf8'), f)]));
console.log(
  `machine: ${cpus().length} x ${cpus()[0]?.model ?? '?'}, node ${process.version}, load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
console.log(
  `scenario ${s.name}, policy ${values.policy}, ${SCALE} x its rates ` +
    `(${values.shape === 'scenario' ? 'its rate shapes' : 'at time 0, constant'}), ${SECONDS} s, the same ` +
    `arrivals live and in the twin ` +
    `(${entries.models
      .map((m, i) => `${m.name} ${arrivalsMs[i]!.length} = ${(arrivalsMs[i]!.length / SECONDS).toFixed(1)}/s`)
      .join(', ')})`,
);

/**
 * `inss up` on the scenario (a state directory of its own), driven by `inss loadgen` replaying `files` for `seconds`.
 */
async function liveRun(files: readonly string[], seconds: number, tag: string): Promise<LiveRun> {
  const dir = join(state, tag);
  const up = start([
    BIN,
    'up',
    '--port',
    '0',
    '--scenario',
    values.scenario,
    '--policy',
    values.policy,
    '--state-dir',
    dir,
    '--log-level',
    'warn',
  ]);
  const base = await waitFor(up.out, /endpoint (http:\/\/[^ ]+)\/v2/);
  const ready = () =>
    fetch(`${base}/v2/health/ready`)
      .then((r) => r.status === 200)
      .catch(() => false);
  for (let i = 0; i < 600 && !(await ready()); i++) await new Promise((r) => setTimeout(r, 100));
  const lg = start([
    BIN,
    'loadgen',
    '--url',
    base,
    // A pipeline's step models get no requests of their own (their rate is 0): their trace is empty.
    ...entries.models.flatMap((m, i) => (arrivalsMs[i]!.length > 0 ? ['--trace', `${m.name}=${files[i]!}`] : [])),
    '--duration',
    String(seconds),
    '--json',
  ]);
  await new Promise((r) => lg.child.on('exit', r));
  const report = LoadgenReportSchema.parse(JSON.parse(lg.out()));
  const clusterView = (await (await fetch(`${base}/v2/inss/cluster`)).json()) as {
    transport: Record<string, unknown>;
    eventLoopDelayMs?: { p50: number; p99: number; max: number };
  };
  // The scheduler's own view of each task (from its request's arrival to its answer): what the path
  // inside the scheduler's host costs, against what the client sees on top (its own HTTP stack).
  const metricsText = await (await fetch(`${base}/metrics`)).text();
  up.child.kill('SIGINT');
  await new Promise((r) => up.child.on('exit', r));
  return {
    report,
    transport: transportOf(clusterView.transport.local),
    eventLoopDelayMs: clusterView.eventLoopDelayMs,
    metricsText,
  };
}

// The client's leg for the twin comes from calibration runs: inss on the same scenario, policy, rates
// and client, other arrivals (the next seed), for CALIBRATE_S seconds, one before the first measured
// run and one after each; a run's leg is the smaller of the calibrations just before and just after it:
// it describes the host as it was around that run (its speed drifts from one minute to the next), never
// comes from the measured run's own client latencies, and a stall can only lengthen a calibration's leg,
// so the smaller is the one a stall spoiled less (docs/serving.md "The client's leg").
const calibrationFiles = drawArrivals(s.seed + 1, CALIBRATE_S, 'calibration').files;
async function calibrate(k: number): Promise<number> {
  const cal = await liveRun(calibrationFiles, CALIBRATE_S, `calibration-${k}`);
  const leg = clientLegOf(cal, `calibration ${k}`, entryNames);
  console.log(
    `calibration ${k} (${CALIBRATE_S} s of other arrivals at the same rates, seed ${s.seed + 1}): the client's ` +
      `leg ${leg.ms} ms a task (${leg.perModel}), of it way out ${cal.transport.wayOutMs ?? '-'} ms removed; ` +
      `transport fitted ${cal.transport.fixedMs} ms + ${cal.transport.perMbMs} ms/MB; ` +
      `within SLO ${cal.report.total.sloAttainmentPct?.toFixed(2) ?? '-'}%; ` +
      `send lag p99 ${cal.report.sendLagMs?.p99Ms.toFixed(2) ?? '-'} ms; load average ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
  );
  return leg.ms;
}

const quantiles = (spread: Parameters<typeof spreadFactor>[0] | undefined) =>
  spread ? [0, 0.5, 0.9, 0.99, 1].map((p) => spreadFactor(spread, p).toFixed(2)).join('/') : '-';
const cluster = scenarioCluster(s, loaded.profiles);
const registry = benchRegistry();

/** Per model, one repeat's relative gaps (live against twin): at the client, at the scheduler, attainment. */
interface Gaps {
  readonly client: number;
  readonly sched: number;
  readonly attainment: number;
}

/** One measured run, its twin and their comparison, printed; its gaps per model (none for a step model). */
function compare(run: LiveRun, calibrated: number | null, k: number): (Gaps | undefined)[] {
  const { report, transport, metricsText } = run;
  const metric = (name: string, labels: string) =>
    Number(new RegExp(`^${name}\\{${labels}\\} ([0-9.e+-]+)$`, 'm').exec(metricsText)?.[1] ?? 0);
  const elDelay = run.eventLoopDelayMs;
  const wayIn = transport.wayIn ? `${transport.wayIn.fixedMs} ms + ${transport.wayIn.perMbMs} ms/MB` : '-';
  console.log(
    `run ${k}: load average after: ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}; ` +
      `transport the scheduler fitted: ${transport.fixedMs} ms + ${transport.perMbMs} ms/MB a batch; ` +
      `way in ${wayIn} (spread 0/50/90/99/100% ${quantiles(transport.wayInSpread)}); ` +
      `way out ${transport.wayOutMs ?? '-'} ms; ` +
      `batches' spread around the fit (quantiles 0/50/90/99/100%) ${quantiles(transport.spread)}, ` +
      `its runs (lag-1 of normal scores) ${transport.spreadLag1 ?? '-'}, ` +
      `the way in's ${transport.wayInSpreadLag1 ?? '-'}; ` +
      `each model's own factor on the fit ${
        transport.modelFactors
          ? Object.entries(transport.modelFactors)
              .map(([m, f]) => `${m} ${f}`)
              .join(', ')
          : '-'
      }; ` +
      `the scheduler's event-loop delay p50/p99/max ` +
      `${elDelay ? `${elDelay.p50}/${elDelay.p99}/${elDelay.max}` : '-'} ms`,
  );
  // Per model, then pipeline, the client's leg its twin takes: the calibrations' or the others' in this run.
  const ownLeg = clientLegOf(run, `run ${k}`, entryNames);
  const legs = calibrated !== null ? entryNames.map(() => calibrated) : ownLeg.others;
  console.log(
    `run ${k}: the client's leg the twin takes ` +
      (calibrated !== null
        ? `${calibrated} ms a task (the smaller of the calibrations around it)`
        : `per entry, the others' in this run: ${entryNames.map((m, i) => `${m} ${legs[i]}`).join(', ')}`) +
      `; this run's own, over all its tasks, ${ownLeg.ms} ms (${ownLeg.perModel})`,
  );

  // The twin: the same scenario, policy and arrivals, the path the scheduler fitted and the client's leg.
  // Its pooled GPUs follow each GPU's mode, the scenario's, as the live agent's simulated GPUs do
  // (src/model/pooledGpu.ts). The leg moves no dispatch decision, so one run per distinct leg.
  const twinWith = (path: TransportModel) =>
    simulate({
      cluster,
      streams: scenarioStreams(replayed, replayedTraces),
      ...pipes.twinPipelineInput(replayed, replayedTraces),
      // As `inss up`: the scenario's full rates are the monitor's floor until a window of epochs is seen.
      initialRatePerS: initialRates(s, loaded.traces),
      policy: registry
        .get(values.policy)
        .create(cluster, { seed: s.seed, ...policyOptionsFor(inssPolicyData(s.name))(values.policy) }),
      settings: { ...scenarioSettings(s), durationMs: SECONDS * 1000, transport: path },
    });
  const twins = new Map<number, ReturnType<typeof simulate>>();
  const twinAt = (i: number) => {
    const leg = legs[i]!;
    return twins.get(leg) ?? twins.set(leg, twinWith({ ...transport, clientMs: leg })).get(leg)!;
  };
  const twinOf = (i: number) => twinAt(i).models[i]!;
  // The same twin with each batch's and request's draw independent: what the runs of slow ones add.
  const { spreadLag1: _b, wayInSpreadLag1: _w, ...independent } = transport;
  const twinIndependent = twinWith(independent);

  console.log(
    'model          live SLO%  sched SLO%  twin SLO%   live mean ms  sched mean ms  twin mean ms  gap %  ' +
      'sched/twin gap %',
  );
  const gaps: (Gaps | undefined)[] = [];
  let worst = 0;
  for (const [i, m] of s.models.entries()) {
    const live = report.models.find((x) => x.model === m.name);
    if (!live) continue; // a pipeline's step model: its tasks are the pipeline's (below)
    const t = twinOf(i);
    const clientMs = legs[i]!;
    const twinAtt = t.arrivals > 0 ? (100 * t.good) / t.arrivals : NaN;
    const liveAtt = live?.sloAttainmentPct ?? NaN;
    const liveMean = live?.latency.meanMs ?? NaN;
    const meanGap = Math.abs(liveMean - t.latencyMs.mean) / t.latencyMs.mean;
    const attGap = Math.abs(liveAtt - twinAtt) / Math.max(twinAtt, 1e-9);
    worst = Math.max(worst, attGap, meanGap);
    // At the scheduler: answered within the SLO of all its tasks; mean latency plus the measured way out.
    const outcomes = (o: string) => metric('inss_requests_total', `model="${m.name}",outcome="${o}"`);
    const schedTotal = ['ok', 'late', 'dropped_slo', 'not_deployed', 'worker_failed', 'shutdown', 'bad_input'].reduce(
      (a, o) => a + outcomes(o),
      0,
    );
    const schedAtt = (100 * outcomes('ok')) / schedTotal;
    const schedMean =
      (1000 * metric('inss_task_latency_seconds_sum', `model="${m.name}"`)) /
        metric('inss_task_latency_seconds_count', `model="${m.name}"`) +
      (transport.wayOutMs ?? 0);
    const schedGap = Math.abs(schedMean - (t.latencyMs.mean - clientMs)) / (t.latencyMs.mean - clientMs);
    gaps[i] = { client: meanGap, sched: schedGap, attainment: attGap };
    console.log(
      `${m.name.padEnd(14)} ${liveAtt.toFixed(2).padStart(8)}  ${schedAtt.toFixed(2).padStart(10)}  ` +
        `${twinAtt.toFixed(2).padStart(9)}   ${liveMean.toFixed(1).padStart(12)}  ` +
        `${schedMean.toFixed(1).padStart(13)}  ${t.latencyMs.mean.toFixed(1).padStart(12)}  ` +
        `${(100 * meanGap).toFixed(1).padStart(5)}  ${(100 * schedGap).toFixed(1).padStart(16)}`,
    );
  }
  // A pipeline's line (end to end), against the twin with its client leg (the others' tasks'), as a model's, and
  // that twin with no way in (withoutWayIn).
  for (const [j, p] of s.pipelines.entries()) {
    const noWayIn = twinWith({ ...pipes.withoutWayIn(transport), clientMs: legs[s.models.length + j]! });
    console.log(pipes.pipelineLine(p, report, metric, twinAt(s.models.length + j), noWayIn));
  }
  // Where the time goes, per model (means): the task's wait for its batch (live: request arrival at the
  // scheduler -> batch sent; twin: arrival -> batch sent, the way in included), the batch's GPU time
  // (live: what the worker reports), its transport (live: per batch, inss_batch_transport_seconds; twin:
  // per task, its latency less the way out, the client's leg, its wait and its GPU time) and its size.
  const histMean = (name: string, model: string) =>
    metric(`${name}_sum`, `model="${model}"`) / metric(`${name}_count`, `model="${model}"`);
  console.log(
    'model          queue ms live / twin (independent draws)   GPU ms live / twin   transport ms live / twin   ' +
      'batch live / twin',
  );
  for (const [i, m] of s.models.entries()) {
    if (!report.models.some((x) => x.model === m.name)) continue;
    const t = twinOf(i);
    const clientMs = legs[i]!;
    const cells = (live: number, x: number) => `${live.toFixed(2)} / ${x.toFixed(2)}`;
    const twinTransportMs = t.latencyMs.mean - (transport.wayOutMs ?? 0) - clientMs - t.queueMs.mean - t.execMs.mean;
    console.log(
      `${m.name.padEnd(14)} ` +
        `${cells(1000 * histMean('inss_task_queue_seconds', m.name), t.queueMs.mean).padStart(16)} ` +
        `(${twinIndependent.models[i]!.queueMs.mean.toFixed(2)})`.padStart(10) +
        '   ' +
        `${cells(1000 * histMean('inss_batch_compute_seconds', m.name), t.execMs.mean).padStart(18)}   ` +
        `${cells(1000 * histMean('inss_batch_transport_seconds', m.name), twinTransportMs).padStart(24)}   ` +
        `${cells(histMean('inss_batch_size', m.name), t.meanBatch).padStart(17)}`,
    );
  }
  console.log(
    `run ${k}: loadgen's send lag behind the arrivals: p99 ${report.sendLagMs?.p99Ms.toFixed(2) ?? '-'} ms, max ` +
      `${report.sendLagMs?.maxMs.toFixed(2) ?? '-'} ms; total within SLO at the client: ` +
      `${(report.total.sloAttainmentPct ?? NaN).toFixed(2)}%; largest live/twin gap (attainment or mean ` +
      `latency, relative): ${(100 * worst).toFixed(1)}%`,
  );
  return gaps;
}

const median = (xs: readonly number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 === 1 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};
const repeats: (Gaps | undefined)[][] = [];
let before = CALIBRATE ? await calibrate(0) : null;
for (let k = 1; k <= REPEAT; k++) {
  const run = await liveRun(traceFiles, SECONDS, `run-${k}`);
  const after = CALIBRATE ? await calibrate(k) : null;
  repeats.push(compare(run, before !== null && after !== null ? Math.min(before, after) : null, k));
  before = after;
}
// Over repeats, per model, the median of each gap: a run on a host that stalled for a while, or a
// calibration that did, moves one repeat's gaps, not the median.
console.log(
  `over ${REPEAT} repeat(s), per model the median gap %: mean latency at the client / at the scheduler / ` +
    'SLO attainment',
);
let worstMedian = 0;
for (const [i, m] of s.models.entries()) {
  if (repeats[0]![i] === undefined) continue;
  const med = (g: keyof Gaps) => 100 * median(repeats.map((r) => r[i]![g]));
  worstMedian = Math.max(worstMedian, med('client'), med('attainment'));
  console.log(
    `${m.name.padEnd(14)} ${med('client').toFixed(1).padStart(6)} / ${med('sched').toFixed(1).padStart(6)} / ` +
      `${med('attainment').toFixed(1).padStart(6)}`,
  );
}
console.log(`largest median live/twin gap (attainment or mean latency at the client): ${worstMedian.toFixed(1)}%`);
rmSync(state, { recursive: true, force: true });

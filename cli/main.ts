// The `inss` command: the composition root, the one module that may import every layer.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { POOLED_GPU_MODES, type PooledGpuMode } from '../src/model/pooledGpu.js';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { fitProfile, type FitReport } from '../tools/fit/fit.js';
import { igniterToMeasurements } from '../tools/fit/igniter.js';
import { MeasurementsSchema } from '../tools/fit/measurements.js';
import { LatencyModel } from '../src/model/predictor.js';
import { formatIssues, InvalidInputError, type Profile } from '../src/profile/schema.js';
import { PolicyRegistry, UnknownPolicyError } from './registry.js';
import { ScenarioError } from '../src/scenario/build.js';
import { InvalidSacSettingsError, InvalidSerializedAgentError } from '../rl/settings.js';
import { runBench, runSuite } from './bench.js';
import { benchRegistry } from './benchCell.js';
import { parseGrid, parseSeeds } from '../tools/bench/capacity.js';
import type { BackendName } from '../rl/backend.js';
import { registerDerive } from './derive.js';
import { registerServe } from './serve.js';
import { registerLoadgen } from './loadgen.js';
import { measureGpu } from './profileMeasure.js';
import { runPredict } from './predict.js';
import { listProfileIds, loadProfile, readJsonFile } from './profiles.js';
import { type TransportModel, TransportModelSchema, transportFields } from '../src/serving/transport.js';

/** --transport FILE: a transport model (extra keys, such as the scheduler's `batches`, are ignored). */
function transportFile(path: string): TransportModel {
  const parsed = TransportModelSchema.safeParse(transportFields(readJsonFile(path)));
  if (!parsed.success)
    throw new InvalidInputError(
      `--transport ${path}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

function commandLine(argv: readonly string[]): string {
  return ['inss', ...argv.slice(2)].join(' ');
}

function writeProfile(profile: Profile, out: string): void {
  writeFileSync(out, `${JSON.stringify(profile, null, 1)}\n`);
}

function printReport(report: FitReport): void {
  const pct = (x: number) => `${(x * 100).toFixed(2)}%`;
  console.error(`LWR leave-one-out error: mean ${pct(report.lwrMeanRelErr)}`);
  for (const [m, e] of Object.entries(report.lwrLeaveOneOut))
    console.error(`  ${m}: mean ${pct(e.meanRelErr)}, max ${pct(e.maxRelErr)} over ${e.samples} samples`);
  if (report.colocated) {
    const c = report.colocated;
    console.error(
      `co-located runs (${c.count} latencies): in-sample ${pct(c.inSampleMeanRelErr)}, leave-one-run-out ${pct(c.leaveOneOutMeanRelErr)}, ignoring interference ${pct(c.ignoringInterferenceMeanRelErr)}; cache self weight ${report.cacheSelfWeight}`,
    );
  }
  for (const w of report.warnings) console.error(`warning: ${w}`);
}

function nonNegativeInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be an integer >= 0');
  return n;
}

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be an integer >= 1');
  return n;
}

export function buildProgram(argv: readonly string[]): Command {
  const program = new Command('inss')
    .description('Spatio-temporal GPU sharing for DNN inference serving (InSS)')
    .showHelpAfterError()
    .exitOverride();

  program
    .command('predict')
    .description('Predict GPU execution latency and throughput: JSON lines on stdin, one answer line each on stdout')
    .requiredOption('--profile <id|path>', 'GPU profile: a built-in id or a profile file')
    .addHelpText(
      'after',
      '\nInput line:  {"models":[{"model":"resnet50","batch":8,"pct":60},{"model":"vgg19","batch":8,"pct":40}]}\nOutput line: {"latencyMs":[...],"throughputPerS":[...]}  or  {"error":"..."}\nExit status is 1 if any line was answered with an error.',
    )
    .action(async (opts: { profile: string }) => {
      const model = LatencyModel.compile(loadProfile(opts.profile));
      process.exitCode = await runPredict(model, process.stdin, process.stdout);
    });

  const profile = program.command('profile').description('GPU profiles: list, show, fit from measurements');
  profile
    .command('list')
    .description('List the built-in profiles with their provenance')
    .action(() => {
      for (const id of listProfileIds()) {
        const p = loadProfile(id);
        console.log(`${id}\t${p.gpu.name}\t${p.provenance.kind}\t${Object.keys(p.models).join(',')}`);
      }
    });
  profile
    .command('show')
    .description('Validate a profile and print it')
    .argument('<id|path>', 'built-in id or profile file')
    .action((idOrPath: string) => {
      console.log(JSON.stringify(loadProfile(idOrPath), null, 1));
    });
  profile
    .command('fit')
    .description('Fit a profile from measurement files (docs/measurement-format.md), or from the iGniter V100 data')
    .option('--measurements <files...>', 'measurement files (inss-measurements/1); several are merged')
    .option(
      '--igniter-dir <dir>',
      'a directory with iGniter-format solo.json, colocated-calibration.json, model-facts.json',
    )
    .requiredOption('--id <id>', 'id of the profile to write')
    .requiredOption('--out <file>', 'where to write the profile')
    .option('--kind <kind>', 'provenance kind: measured | fitted | derived', 'measured')
    .option('--source <text>', 'what the measurements are (GPU, tool, publication)')
    .action(
      (opts: {
        measurements?: string[];
        igniterDir?: string;
        id: string;
        out: string;
        kind: string;
        source?: string;
      }) => {
        if (!!opts.measurements === !!opts.igniterDir)
          throw new InvalidInputError('give exactly one of --measurements and --igniter-dir');
        if (!['measured', 'fitted', 'derived'].includes(opts.kind))
          throw new InvalidInputError(`--kind: must be measured, fitted or derived, got '${opts.kind}'`);
        let raw: unknown;
        if (opts.igniterDir) {
          const d = opts.igniterDir;
          raw = igniterToMeasurements(
            readJsonFile(join(d, 'solo.json')),
            readJsonFile(join(d, 'colocated-calibration.json')),
            readJsonFile(join(d, 'model-facts.json')),
          );
        } else {
          raw = mergeMeasurements(opts.measurements!.map((f) => ({ file: f, data: readJsonFile(f) })));
        }
        const source =
          opts.source ??
          (opts.igniterDir
            ? `iGniter's published V100 measurements (${opts.igniterDir})`
            : `measurement files ${opts.measurements!.join(', ')}`);
        fitAndWrite(raw, opts.id, opts.kind as 'measured', source, opts.out, commandLine(argv));
      },
    );

  profile
    .command('measure')
    .description(
      "Measure this machine's NVIDIA GPU under MPS (models alone over batch sizes and shares, then co-located pairs) and fit a profile from it",
    )
    .requiredOption('--id <id>', 'id of the profile to write (e.g. h200)')
    .requiredOption('--out <file>', 'where to write the profile')
    .option('--gpu <index>', 'which GPU (nvidia-smi index)', nonNegativeInt, 0)
    .option(
      '--models <list>',
      'models to measure',
      'alexnet,resnet50,vgg16,mnasnet,mobilenet,efficientnet,resnet18,vgg19',
    )
    .option('--pcts <list>', 'MPS active-thread percentages', '10,25,50,100')
    .option('--batches <list>', 'batch sizes', '1,2,4,8,16,32')
    .option(
      '--pairs <list>',
      'co-located pairs a:b (empty: none)',
      'resnet50:vgg16,alexnet:resnet50,mobilenet:efficientnet,resnet18:vgg19',
    )
    .option('--splits <list>', "share of a pair's first model", '30,50,70')
    .option('--pair-batches <list>', 'batch sizes of the pairs', '4,16')
    .option('--work-dir <dir>', 'where the measurement files and the MPS pipe and log go', 'inss-measure')
    .option('--no-mps', 'measure without starting an MPS control daemon (shares then have no effect)')
    .option('--quiet', 'no progress bar')
    .action(
      async (opts: {
        id: string;
        out: string;
        gpu: number;
        models: string;
        pcts: string;
        batches: string;
        pairs: string;
        splits: string;
        pairBatches: string;
        workDir: string;
        mps: boolean;
        quiet?: boolean;
      }) => {
        const ints = (flag: string, v: string, min: number, max: number) =>
          v.split(',').map((x) => {
            const n = Number(x);
            if (!Number.isInteger(n) || n < min || n > max)
              throw new InvalidInputError(`--${flag}: '${x}' is not an integer in [${min}, ${max}]`);
            return n;
          });
        const list = (v: string) =>
          v
            .split(',')
            .map((x) => x.trim())
            .filter((x) => x !== '');
        const raw = await measureGpu({
          gpu: opts.gpu,
          models: list(opts.models),
          pcts: ints('pcts', opts.pcts, 1, 100),
          batches: ints('batches', opts.batches, 1, 256),
          pairs: list(opts.pairs),
          splits: ints('splits', opts.splits, 1, 99),
          pairBatches: ints('pair-batches', opts.pairBatches, 1, 256),
          workDir: opts.workDir,
          mps: opts.mps,
          ...(opts.quiet ? { quiet: true } : {}),
        });
        fitAndWrite(
          raw,
          opts.id,
          'measured',
          `measured by inss profile measure on this machine's GPU ${opts.gpu} (files in ${opts.workDir})`,
          opts.out,
          commandLine(argv),
        );
      },
    );

  registerDerive(profile, argv);

  program
    .command('bench')
    .description('Run scheduling policies side by side on the simulator over the same seeded workload')
    .option('--scenario <name|file>', 'built-in scenario (see docs/scenarios.md) or a scenario file')
    .option(
      '--suite [list]',
      'run many scenarios (comma-separated names or files; default every built-in one) x --seeds x policies, one capacity table',
    )
    .option(
      '--policies <list>',
      'comma-separated policy names (default: all registered; with --suite, the suite set); <baseline>-h plans with inss headroom',
    )
    .option('--json', 'print one JSON object instead of the table')
    .option(
      '--sweep',
      "also measure each policy's capacity on the load grid: the highest load x at which it and every lower one keep >= 99% (95%) within SLO",
    )
    .option('--grid <from:to:step>', 'load grid of --sweep and --suite (default 0.25:3:0.25)')
    .option(
      '--seeds <list>',
      'seeds of --sweep and --suite, e.g. 1,2,3: capacity as mean and range (default: the scenario seed; --suite: 1,2,3)',
    )
    .option(
      '--jobs <n>',
      "worker threads: the suite's cells, or the policies of one scenario side by side (each thread times its own decisions; 1 for decision times on a quiet core)",
      positiveInt,
      2,
    )
    .option(
      '--timeshare-gpu <mode>',
      "what every pooled (time-shared) GPU does with different models' batches: overlap | serial; with --suite also both (the suite under each, in <out>/overlap and <out>/serial) (default: each GPU's own in its scenario, overlap)",
    )
    .option('--out <dir>', 'write results.json (suite.json) and SVG plots to this folder')
    .option(
      '--policy-file <file>',
      'trained policy for inss and inss-ni (default: the one shipped for the scenario, policies/<scenario name>.json, used only where its GPUs, models and SLOs match)',
    )
    .option(
      '--skip-unsupported',
      'skip (and report) a policy that cannot run on a scenario, e.g. inss-paper without a trained policy; without it that is an error (exit 2)',
    )
    .option(
      '--transport <file>',
      "a host's measured path (one agent's entry of `transport` at GET /v2/inss/cluster: fixedMs, perMbMs, and optionally wayIn, wayOutMs, spread): every task pays it, as on that host (docs/serving.md)",
    )
    .action(
      async (opts: {
        scenario?: string;
        suite?: string | boolean;
        policies?: string;
        json?: boolean;
        sweep?: boolean;
        grid?: string;
        seeds?: string;
        jobs: number;
        timeshareGpu?: string;
        out?: string;
        policyFile?: string;
        skipUnsupported?: boolean;
        transport?: string;
      }) => {
        const grid = opts.grid !== undefined ? parseGrid(opts.grid, '--grid') : undefined;
        const seeds = opts.seeds !== undefined ? parseSeeds(opts.seeds) : undefined;
        const modes = opts.timeshareGpu === 'both' ? POOLED_GPU_MODES : opts.timeshareGpu;
        if (
          modes !== undefined &&
          typeof modes === 'string' &&
          !(POOLED_GPU_MODES as readonly string[]).includes(modes)
        )
          throw new InvalidInputError(
            `--timeshare-gpu: must be ${POOLED_GPU_MODES.join(', ')} or both (with --suite), got '${modes}'`,
          );
        if (typeof modes !== 'string' && modes !== undefined && opts.suite === undefined)
          throw new InvalidInputError(
            '--timeshare-gpu both: only with --suite (give overlap or serial with --scenario)',
          );
        const timeshareGpu = typeof modes === 'string' ? (modes as PooledGpuMode) : undefined;
        const registry = benchRegistry(new PolicyRegistry());
        const list = (v: string | undefined) =>
          v
            ? v
                .split(',')
                .map((x) => x.trim())
                .filter(Boolean)
            : undefined;
        const transport = opts.transport !== undefined ? transportFile(opts.transport) : undefined;
        if (opts.suite !== undefined) {
          if (transport) throw new InvalidInputError('--transport: not with --suite (give it with --scenario)');
          if (opts.scenario !== undefined)
            throw new InvalidInputError('--suite and --scenario: give one (--suite takes a list of scenarios)');
          if (opts.policyFile !== undefined)
            throw new InvalidInputError(
              '--policy-file: not with --suite (each scenario uses the policy shipped for it)',
            );
          const suite = (mode: PooledGpuMode | undefined, out: string | undefined) =>
            runSuite(registry, {
              ...(typeof opts.suite === 'string' ? { scenarios: list(opts.suite)! } : {}),
              ...(opts.policies ? { policies: list(opts.policies)! } : {}),
              seeds: seeds ?? [1, 2, 3],
              ...(grid ? { grid } : {}),
              jobs: opts.jobs,
              ...(mode ? { timeshareGpu: mode } : {}),
              ...(out ? { out } : {}),
              ...(opts.json ? { json: true } : {}),
              ...(opts.skipUnsupported ? { skipUnsupported: true } : {}),
              progress: process.stderr,
            });
          if (typeof modes === 'string' || modes === undefined) {
            process.exitCode = await suite(timeshareGpu, opts.out);
            return;
          }
          // Both modes: the same suite under each, one after the other.
          for (const mode of modes) {
            if (!opts.json) console.log(`\n## Pooled GPUs ${mode}\n`);
            const code = await suite(mode, opts.out ? join(opts.out, mode) : undefined);
            if (code !== 0) {
              process.exitCode = code;
              return;
            }
          }
          process.exitCode = 0;
          return;
        }
        if (opts.scenario === undefined) throw new InvalidInputError('--scenario: required (or --suite)');
        process.exitCode = await runBench(registry, {
          scenario: opts.scenario,
          ...(opts.policies ? { policies: opts.policies } : {}),
          ...(opts.json ? { json: true } : {}),
          ...(opts.sweep ? { sweep: true } : {}),
          ...(grid ? { grid } : {}),
          ...(seeds ? { seeds } : {}),
          ...(timeshareGpu ? { timeshareGpu } : {}),
          ...(opts.out ? { out: opts.out } : {}),
          ...(opts.policyFile !== undefined ? { policyFile: opts.policyFile } : {}),
          jobs: opts.jobs,
          ...(opts.skipUnsupported ? { skipUnsupported: true } : {}),
          ...(transport ? { transport } : {}),
        });
      },
    );

  program
    .command('train')
    .description(
      'Train the InSS scheduler (SAC-Discrete) on a scenario; writes checkpoints, curves (CSV, SVG) and policy.json',
    )
    .requiredOption('--scenario <name|file>', 'built-in scenario or a scenario file')
    .option('--episodes <n>', 'episodes to train (the paper: 1500)', positiveInt, 150)
    .option(
      '--steps <n>',
      'decision epochs per episode (default: the scenario duration / epoch; the paper: 200)',
      positiveInt,
    )
    .option('--seed <n>', 'seed of the agent and the environment', nonNegativeInt, 1)
    .option('--out <dir>', 'output folder (checkpoint.json, curves.csv, *.svg, policy.json)', 'inss-train')
    .option('--resume', 'continue from <out>/checkpoint.json')
    .option('--settings <json|file>', 'SAC settings overriding the training recipe (docs/rl.md lists every field)')
    .option('--checkpoint-every <n>', 'episodes between checkpoints', positiveInt, 5)
    .option('--state-dir <dir>', 'where the SQLite store lives (default ~/.inss)')
    .option(
      '--backend <name>',
      'TensorFlow.js backend: tensorflow | wasm | cpu (default: native if installed, else wasm)',
    )
    .option('--no-interference', 'train the view of inss-ni (interference ignored)')
    .option('--quiet', 'no progress bar')
    .action(
      async (opts: {
        scenario: string;
        episodes: number;
        steps?: number;
        seed: number;
        out: string;
        resume?: boolean;
        settings?: string;
        checkpointEvery: number;
        stateDir?: string;
        backend?: string;
        interference: boolean;
        quiet?: boolean;
      }) => {
        if (opts.backend !== undefined && !['tensorflow', 'wasm', 'cpu'].includes(opts.backend))
          throw new InvalidInputError(`--backend: must be tensorflow, wasm or cpu, got '${opts.backend}'`);
        const { backend, ...rest } = opts;
        // Loaded here only: TensorFlow.js is ~20 MB of heap that every other command (the scheduler's
        // `inss up` included) would otherwise carry through each of its garbage collections.
        const { runTrain } = await import('./train.js');
        process.exitCode = await runTrain(
          {
            ...rest,
            ...(backend !== undefined ? { backend: backend as BackendName } : {}),
            noInterference: !opts.interference,
          },
          argv,
        );
      },
    );

  registerServe(program);
  registerLoadgen(program);

  return program;
}

/** Validates measurements, fits a profile with its provenance, writes it and prints the fit report. */
function fitAndWrite(
  raw: unknown,
  id: string,
  kind: 'measured' | 'fitted' | 'derived',
  source: string,
  out: string,
  command: string,
): void {
  const parsed = MeasurementsSchema.safeParse(raw);
  if (!parsed.success) throw new InvalidInputError(`measurements: ${formatIssues(parsed.error)}`);
  const { profile: p, report } = fitProfile(parsed.data, { id, provenance: { kind, source, command, notes: [] } });
  writeProfile(p, out);
  printReport(report);
  console.error(`wrote ${out}`);
}

/** Several measurement files of one GPU: the first gives gpu and models, all give points. */
function mergeMeasurements(files: { file: string; data: unknown }[]): unknown {
  if (files.length === 1) return files[0]!.data;
  const parts = files.map(({ file, data }) => {
    const r = MeasurementsSchema.safeParse(data);
    if (!r.success) throw new InvalidInputError(`${file}: ${formatIssues(r.error)}`);
    return r.data;
  });
  const first = parts[0]!;
  return {
    ...first,
    models: Object.assign({}, ...parts.map((p) => p.models)) as unknown,
    solo: parts.flatMap((p) => p.solo),
    colocated: parts.flatMap((p) => p.colocated),
  };
}

/** Runs the CLI; resolves to the exit code. Expected failures print one line, not a stack. */
export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram(argv);
  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (
      err instanceof InvalidInputError ||
      err instanceof RangeError ||
      err instanceof UnknownPolicyError ||
      err instanceof ScenarioError ||
      err instanceof InvalidSacSettingsError ||
      err instanceof InvalidSerializedAgentError
    ) {
      console.error(`inss: ${err.message}`);
      return 2;
    }
    throw err;
  }
}

// `inss profile`: list and show the built-in profiles, fit one from measurement files or iGniter's data,
// measure this machine's GPU (cli/profileMeasure.ts), derive one from another (cli/derive.ts).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { formatIssues, InvalidInputError, type Profile } from '../src/profile/schema.js';
import { fitProfile, type FitReport } from '../tools/fit/fit.js';
import { igniterToMeasurements } from '../tools/fit/igniter.js';
import { MeasurementsSchema } from '../tools/fit/measurements.js';
import { registerDerive } from './derive.js';
import { nonNegativeInt, positiveInt } from './flags.js';
import { measureModelIntoProfile } from './measure/run.js';
import { measureGpu } from './profileMeasure.js';
import { listProfileIds, loadProfile, readJsonFile } from './profiles.js';

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
      `co-located runs (${c.count} latencies): in-sample ${pct(c.inSampleMeanRelErr)}, leave-one-run-out ` +
        `${pct(c.leaveOneOutMeanRelErr)}, ignoring interference ${pct(c.ignoringInterferenceMeanRelErr)}; cache ` +
        `self weight ${report.cacheSelfWeight}`,
    );
  }
  for (const w of report.warnings) console.error(`warning: ${w}`);
}

/** Adds `profile` and its subcommands (list, show, fit, measure, derive) to the program. */
export function registerProfile(program: Command, argv: readonly string[]): void {
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
      "Measure this machine's NVIDIA GPU under MPS (models alone over batch sizes and shares, then co-located " +
        "pairs) and fit a profile from it; with --model, one model through inss's own workers, fitted into " +
        "the GPU's profile",
    )
    .option('--id <id>', "id of the profile to write (e.g. h200; with --model: the profile's own by default)")
    .option('--out <file>', 'where to write the profile (with --model: <id>-<model>.json by default)')
    .option('--model <name>', "measure this one model through its worker and add it to the GPU's profile")
    .option('--model-repository <dir>', 'with --model: the model repository it is in (else: a zoo model)')
    .option('--profile <id|file>', 'with --model: the profile to add it to (default: the built-in one of this GPU)')
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
    .option('--peers <list>', "with --model: the profile's models to pair it with (default: all; empty: none)")
    .option('--splits <list>', "share of a pair's first model (with --model: of the model measured)", '30,50,70')
    .option('--pair-batches <list>', 'batch sizes of the pairs', '4,16')
    .option('--warmup <n>', 'with --model: batches run before timing, per batch size', nonNegativeInt, 3)
    .option('--repeats <n>', 'with --model: batches timed per point (their median is kept)', positiveInt, 10)
    .option('--kernels <n>', 'with --model: kernels the model launches per batch, where known', positiveInt, 1)
    .option('--work-dir <dir>', 'where the measurement files and the MPS pipe and log go', 'inss-measure')
    .option('--no-mps', 'measure without starting an MPS control daemon (shares then have no effect)')
    .option('--quiet', 'no progress bar')
    .action(async (opts: MeasureFlags) => {
      const ints = (flag: string, v: string, min: number, max: number) =>
        list(v).map((x) => {
          const n = Number(x);
          if (!Number.isInteger(n) || n < min || n > max)
            throw new InvalidInputError(`--${flag}: '${x}' is not an integer in [${min}, ${max}]`);
          return n;
        });
      const grid = {
        gpu: opts.gpu,
        pcts: distinct('pcts', ints('pcts', opts.pcts, 1, 100)),
        batches: distinct('batches', ints('batches', opts.batches, 1, 256)),
        splits: ints('splits', opts.splits, 1, 99),
        pairBatches: ints('pair-batches', opts.pairBatches, 1, 256),
        workDir: opts.workDir,
        mps: opts.mps,
      };
      if (opts.model !== undefined) {
        if (grid.pcts.length < 2 || grid.batches.length < 2)
          throw new InvalidInputError('--pcts, --batches: a profile needs at least two of each');
        await measureModelIntoProfile(
          {
            ...grid,
            model: opts.model,
            ...(opts.modelRepository !== undefined ? { modelRepository: opts.modelRepository } : {}),
            ...(opts.profile !== undefined ? { profile: opts.profile } : {}),
            ...(opts.id !== undefined ? { id: opts.id } : {}),
            ...(opts.out !== undefined ? { out: opts.out } : {}),
            ...(opts.peers !== undefined ? { peers: list(opts.peers) } : {}),
            warmup: opts.warmup,
            repeats: opts.repeats,
            kernels: opts.kernels,
            quiet: opts.quiet === true,
          },
          commandLine(argv),
        );
        return;
      }
      for (const f of ['modelRepository', 'profile', 'peers'] as const)
        if (opts[f] !== undefined)
          throw new InvalidInputError(`--${f === 'modelRepository' ? 'model-repository' : f}: only with --model`);
      if (opts.id === undefined || opts.out === undefined)
        throw new InvalidInputError('--id and --out: required (unless --model)');
      const raw = await measureGpu({
        ...grid,
        models: list(opts.models),
        pairs: list(opts.pairs),
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
    });

  registerDerive(profile, argv);
}

interface MeasureFlags {
  id?: string;
  out?: string;
  model?: string;
  modelRepository?: string;
  profile?: string;
  gpu: number;
  models: string;
  pcts: string;
  batches: string;
  pairs: string;
  peers?: string;
  splits: string;
  pairBatches: string;
  warmup: number;
  repeats: number;
  kernels: number;
  workDir: string;
  mps: boolean;
  quiet?: boolean;
}

function list(v: string): string[] {
  return v
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
}

function distinct(flag: string, xs: number[]): number[] {
  const seen = new Set<number>();
  for (const x of xs) {
    if (seen.has(x)) throw new InvalidInputError(`--${flag}: ${x} is given twice`);
    seen.add(x);
  }
  return xs;
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

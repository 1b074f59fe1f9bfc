// `inss bench`: policies side by side on the simulator, on one scenario (cli/bench.ts runBench) or a suite
// of them (runSuite), with the flags' cross-checks.
import { join } from 'node:path';
import type { Command } from 'commander';
import { POOLED_GPU_MODES, type PooledGpuMode } from '../src/model/pooledGpu.js';
import { InvalidInputError } from '../src/profile/schema.js';
import { type TransportModel, TransportModelSchema, transportFields } from '../src/serving/transport.js';
import { parseGrid, parseSeeds } from '../tools/bench/capacity.js';
import { runBench } from './bench.js';
import { DEFAULT_SUITE_POLICIES, runSuite } from './benchSuite.js';
import { benchRegistry, HEADROOM_VARIANTS, labelForTarget } from './benchCell.js';
import { attainmentTarget, frontDoorCount, MONITOR_FLAG_HELP, monitorKind, positiveInt } from './flags.js';
import type { MonitorKind } from '../src/serving/monitor.js';
import { readJsonFile } from './profiles.js';
import { PolicyRegistry } from './registry.js';

/** --transport FILE: a transport model (extra keys, such as the scheduler's `batches`, are ignored). */
function transportFile(path: string): TransportModel {
  const parsed = TransportModelSchema.safeParse(transportFields(readJsonFile(path)));
  if (!parsed.success)
    throw new InvalidInputError(
      `--transport ${path}: ` +
        parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; '),
    );
  return parsed.data;
}

/** Adds `bench` (one scenario, or --suite) to the program. */
export function registerBench(program: Command): void {
  program
    .command('bench')
    .description('Run scheduling policies side by side on the simulator over the same seeded workload')
    .option('--scenario <name|file>', 'built-in scenario (see docs/scenarios.md) or a scenario file')
    .option(
      '--suite [list]',
      'run many scenarios (comma-separated names or files; default every built-in one) x --seeds x policies, ' +
        'one capacity table',
    )
    .option(
      '--policies <list>',
      'comma-separated policy names (default: all registered; with --suite, the suite set); <baseline>-h plans ' +
        'with inss headroom',
    )
    .option('--json', 'print one JSON object instead of the table')
    .option(
      '--ceiling-only',
      "with --suite: print each scenario's capacity ceiling (a fluid upper bound on any policy's capacity, " +
        'docs/ceiling.md) over --seeds and run no policy',
    )
    .option(
      '--sweep',
      "also measure each policy's capacity on the load grid: the highest load x at which it and every lower " +
        'one keep >= 99% (95%) within SLO',
    )
    .option('--grid <from:to:step>', 'load grid of --sweep and --suite (default 0.25:3:0.25)')
    .option(
      '--seeds <list>',
      'seeds of --sweep and --suite, e.g. 1,2,3: capacity as mean and range (default: the scenario seed; ' +
        '--suite: 1,2,3)',
    )
    .option(
      '--jobs <n>',
      "worker threads: the suite's cells, or the policies of one scenario side by side (each thread times its " +
        'own decisions; 1 for decision times on a quiet core)',
      positiveInt,
      2,
    )
    .option(
      '--timeshare-gpu <mode>',
      "what every pooled (time-shared) GPU does with different models' batches: overlap | serial; with --suite " +
        "also both (the suite under each, in <out>/overlap and <out>/serial) (default: each GPU's own in its " +
        'scenario, overlap)',
    )
    .option('--monitor <kind>', MONITOR_FLAG_HELP, monitorKind)
    .option(
      '--front-doors <n>',
      'front doors, each with its own queues over its share of the workers (docs/front-doors.md) (default: the ' +
        "scenario's frontDoors, else 1)",
      frontDoorCount,
    )
    .option(
      '--attainment-target <x>',
      "fraction of tasks inss plans to serve within SLO, in (0.5, 1), over the scenario's; inss runs labelled " +
        'inss@<pct> (e.g. inss@95)',
      attainmentTarget,
    )
    .option('--out <dir>', 'write results.json (suite.json) and SVG plots to this folder')
    .option(
      '--policy-file <file>',
      'trained policy for inss and inss-ni (default: the one shipped for the scenario, policies/<scenario ' +
        'name>.json, used only where its GPUs, models and SLOs match)',
    )
    .option(
      '--skip-unsupported',
      'skip (and report) a policy that cannot run on a scenario, e.g. inss-paper without a trained policy; ' +
        'without it that is an error (exit 2)',
    )
    .option(
      '--transport <file>',
      "a host's measured path (one agent's entry of `transport` at GET /v2/inss/cluster: fixedMs, perMbMs, and " +
        'optionally wayIn, wayOutMs, spread): every task pays it, as on that host (docs/serving.md)',
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
        monitor?: MonitorKind;
        frontDoors?: number;
        out?: string;
        policyFile?: string;
        skipUnsupported?: boolean;
        transport?: string;
        ceilingOnly?: boolean;
        attainmentTarget?: number;
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
        if (opts.ceilingOnly) {
          if (opts.suite === undefined) throw new InvalidInputError('--ceiling-only: only with --suite');
          const runs = ['--policies', '--grid', '--out', '--skip-unsupported', '--sweep'] as const;
          const given = [opts.policies, opts.grid, opts.out, opts.skipUnsupported, opts.sweep];
          runs.forEach((flag, i) => {
            if (given[i] !== undefined)
              throw new InvalidInputError(`${flag}: not with --ceiling-only (it runs no policy and writes nothing)`);
          });
        }
        // --attainment-target: the policies that read it run under their label (`inss@95`; cli/benchCell.ts).
        const policyNames = (suite: boolean): string[] | undefined => {
          const given = list(opts.policies);
          if (opts.attainmentTarget === undefined) return given;
          const known = registry.names();
          const all = suite
            ? DEFAULT_SUITE_POLICIES.filter((p) => known.includes(p))
            : known.filter((n) => !HEADROOM_VARIANTS.includes(n));
          return labelForTarget(given ?? all, opts.attainmentTarget);
        };
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
              ...(policyNames(true) ? { policies: policyNames(true)! } : {}),
              seeds: seeds ?? [1, 2, 3],
              ...(grid ? { grid } : {}),
              jobs: opts.jobs,
              ...(mode ? { timeshareGpu: mode } : {}),
              ...(opts.monitor ? { monitor: opts.monitor } : {}),
              ...(opts.frontDoors ? { frontDoors: opts.frontDoors } : {}),
              ...(out ? { out } : {}),
              ...(opts.json ? { json: true } : {}),
              ...(opts.skipUnsupported ? { skipUnsupported: true } : {}),
              ...(opts.ceilingOnly ? { ceilingOnly: true } : {}),
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
          ...(policyNames(false) ? { policies: policyNames(false)!.join(',') } : {}),
          ...(opts.json ? { json: true } : {}),
          ...(opts.sweep ? { sweep: true } : {}),
          ...(grid ? { grid } : {}),
          ...(seeds ? { seeds } : {}),
          ...(timeshareGpu ? { timeshareGpu } : {}),
          ...(opts.monitor ? { monitor: opts.monitor } : {}),
          ...(opts.frontDoors ? { frontDoors: opts.frontDoors } : {}),
          ...(opts.out ? { out: opts.out } : {}),
          ...(opts.policyFile !== undefined ? { policyFile: opts.policyFile } : {}),
          jobs: opts.jobs,
          ...(opts.skipUnsupported ? { skipUnsupported: true } : {}),
          ...(transport ? { transport } : {}),
        });
      },
    );
}

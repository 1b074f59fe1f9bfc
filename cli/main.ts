// The `inss` command: the composition root, the one module that may import every layer. The command
// groups register themselves: profile (cli/profileCommand.ts), bench (cli/benchCommand.ts), scheduler,
// agent and up (cli/serve.ts), loadgen (cli/loadgen.ts); predict and train are here.
import { Command, CommanderError } from 'commander';
import type { BackendName } from '../rl/backend.js';
import { InvalidSacSettingsError, InvalidSerializedAgentError } from '../rl/settings.js';
import { LatencyModel } from '../src/model/predictor.js';
import { InvalidInputError } from '../src/profile/schema.js';
import { ScenarioError } from '../src/scenario/build.js';
import { registerBench } from './benchCommand.js';
import { nonNegativeInt, positiveInt } from './flags.js';
import { registerLoadgen } from './loadgen.js';
import { runPredict } from './predict.js';
import { registerProfile } from './profileCommand.js';
import { loadProfile } from './profiles.js';
import { UnknownPolicyError } from './registry.js';
import { registerServe } from './serve.js';

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
      '\nInput line:  ' +
        '{"models":[{"model":"resnet50","batch":8,"pct":60},{"model":"vgg19","batch":8,"pct":40}]}\nOutput line: ' +
        '{"latencyMs":[...],"throughputPerS":[...]}  or  {"error":"..."}\nExit status is 1 if any line was ' +
        'answered with an error.',
    )
    .action(async (opts: { profile: string }) => {
      const model = LatencyModel.compile(loadProfile(opts.profile));
      process.exitCode = await runPredict(model, process.stdin, process.stdout);
    });
  registerProfile(program, argv);
  registerBench(program);

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

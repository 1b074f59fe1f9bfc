// `inss loadgen --url URL`: an open-loop load generator for a KServe v2 / Open Inference Protocol
// endpoint (the inss scheduler, or any server that speaks the protocol and its binary extension).
// This file is the shell: flags, the metadata requests, timers and sockets. What is sent, when, how an
// answer is judged and the report are pure (tools/loadgen/). docs/loadgen.md is the user's guide.
//
// Open loop: each request leaves at its scheduled time whether or not earlier ones have been answered.
// Requests go out on node:http with one keep-alive agent (--connections sockets; a request that finds
// every socket busy waits in the agent, and that wait counts in its latency), or with --protocol grpc
// as ModelInfer calls (cli/loadgenGrpc.ts) on --connections HTTP/2 channels, taken in turn. Every
// request is waited for, or timed out, before the report. The flags are in cli/loadgenFlags.ts, a run
// in cli/loadgenRun.ts.
import type { Writable } from 'node:stream';
import { type Command, CommanderError, Option } from 'commander';
import {
  baseUrl,
  modelRate,
  modelSlo,
  modelTrace,
  positiveInt,
  positiveNumber,
  type RawFlags,
  resolveFlags,
  seedNumber,
} from './loadgenFlags.js';
import { DEFAULT_CONNECTIONS, EXIT_BAD_FLAGS, type LoadgenOptions } from './loadgenPlan.js';
import { type LoadgenIo, runLoadgen } from './loadgenRun.js';

export {
  DEFAULT_CONNECTIONS,
  EXIT_BAD_FLAGS,
  EXIT_OK,
  EXIT_SETUP,
  type LoadgenOptions,
  type Protocol,
} from './loadgenPlan.js';
export { type LoadgenIo, runLoadgen } from './loadgenRun.js';
export interface LoadgenDeps {
  /** Where the report, progress and errors go (default: the process's stdout and stderr). */
  readonly stdout?: Writable;
  readonly stderr?: Writable;
  /** Receives the exit status of a run (default: sets process.exitCode, which `main` returns). */
  readonly setExitCode?: (code: number) => void;
  /** Runs the validated options (default: runLoadgen); a test may replace it to check the flags alone. */
  readonly run?: (opts: LoadgenOptions, io: LoadgenIo) => Promise<number>;
}

/**
 * Adds `loadgen` to the program (cli/main.ts). A bad flag prints commander's message naming the flag
 * and throws a CommanderError with exitCode 2 (EXIT_BAD_FLAGS), which `main` returns.
 */
export function registerLoadgen(program: Command, deps: LoadgenDeps = {}): Command {
  const io: LoadgenIo = { stdout: deps.stdout ?? process.stdout, stderr: deps.stderr ?? process.stderr };
  return program
    .command('loadgen')
    .description(
      'Open-loop load generator for the KServe v2 task endpoint: Poisson or Gamma arrivals per model, or ' +
        'replayed from a trace; reports throughput, goodput, SLO attainment and latency (docs/loadgen.md)',
    )
    .requiredOption(
      '--url <url>',
      'base URL of the server, e.g. http://127.0.0.1:8000 (with --protocol grpc its gRPC port, e.g. http://127.0.0.1:8001; https:// for TLS)',
      baseUrl,
    )
    .addOption(
      new Option(
        '--protocol <protocol>',
        "http (KServe v2 over HTTP/REST) or grpc (its gRPC service, Triton's inference.GRPCInferenceService)",
      )
        .choices(['http', 'grpc'])
        .default('http'),
    )
    .option('--model <name=ratePerS>', 'a model and its request rate per second; repeat for several models', modelRate)
    .option(
      '--trace <name=file>',
      'a model whose requests leave at the arrival times in FILE (seconds from the start, one per line, as a ' +
        'scenario trace); repeatable',
      modelTrace,
    )
    .option('--duration <s>', 'seconds of sending (the report waits for the last answers after)', positiveNumber, 10)
    .addOption(
      new Option('--arrival <process>', 'inter-arrival times: poisson, or gamma with --cv')
        .choices(['poisson', 'gamma'])
        .default('poisson'),
    )
    .option(
      '--cv <x>',
      'coefficient of variation of the Gamma inter-arrival times (> 1 burstier than Poisson, < 1 smoother)',
      positiveNumber,
    )
    .option('--seed <n>', 'seed of the send times and the input values', seedNumber, 1)
    .addOption(
      new Option('--encoding <kind>', "request body: binary (Triton's binary tensor extension) or json")
        .choices(['binary', 'json'])
        .default('binary'),
    )
    .addOption(
      new Option(
        '--input <form>',
        "each request's input: the model's own tensor (fp32), or a generated 224x224 picture as uint8 pixels, " +
          'a jpeg or a png (image models)',
      )
        .choices(['fp32', 'uint8', 'jpeg', 'png'])
        .default('fp32'),
    )
    .option(
      '--slo <name=ms>',
      "a model's latency SLO; repeatable (default: parameters.slo_ms of the model's metadata)",
      modelSlo,
    )
    .option(
      '--timeout <ms>',
      'per-request timeout: no whole answer within it counts as a timeout error',
      positiveInt,
      30_000,
    )
    .option('--json', 'print the JSON report instead of the table (and no progress)')
    .option('--out <file>', 'also write the JSON report to this file')
    .option(
      '--connections <n>',
      `keep-alive sockets to the server (default ${DEFAULT_CONNECTIONS.http}); with --protocol grpc, HTTP/2 ` +
        `channels (default ${DEFAULT_CONNECTIONS.grpc})`,
      positiveInt,
    )
    .option(
      '--token-file <file>',
      'a bearer token (one line) sent on every request, for a server with client tokens; or set INSS_CLIENT_TOKEN',
    )
    .addOption(
      new Option('--token <token>', 'the bearer token (environment only: keep it off the command line)')
        .env('INSS_CLIENT_TOKEN')
        .hideHelp(),
    )
    .option(
      '--ca <file>',
      'https://: PEM certificate(s) to trust for the server (its self-signed certificate, or a private CA)',
    )
    .configureOutput({ writeOut: (s) => void io.stdout.write(s), writeErr: (s) => void io.stderr.write(s) })
    .exitOverride((err) => {
      throw err.exitCode === 0 ? err : new CommanderError(EXIT_BAD_FLAGS, err.code, err.message);
    })
    .action(async (flags: RawFlags, command: Command) => {
      const opts = resolveFlags(flags, (message) =>
        command.error(`error: ${message}`, { exitCode: EXIT_BAD_FLAGS, code: 'inss.loadgen.invalidFlag' }),
      );
      const code = await (deps.run ?? runLoadgen)(opts, io);
      if (deps.setExitCode) deps.setExitCode(code);
      else process.exitCode = code;
    });
}

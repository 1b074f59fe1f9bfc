// `inss loadgen` run in the test's own process, as cli/main.ts registers it, with its output captured
// (the loadgen tests).
import { Writable } from 'node:stream';
import { Command, CommanderError } from 'commander';
import { registerLoadgen } from '../../cli/loadgen.js';

/** A stream that keeps what is written to it as text. */
export class TextSink extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

/** Runs `inss loadgen ARGS`; a bad flag gives its exit status (2) as commander reports it. */
export async function runLoadgen(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new TextSink();
  const stderr = new TextSink();
  let code = -1;
  const program = new Command('inss').exitOverride();
  registerLoadgen(program, { stdout, stderr, setExitCode: (c) => (code = c) });
  try {
    await program.parseAsync(['node', 'inss', 'loadgen', ...args]);
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    code = err.exitCode;
  }
  return { code, stdout: stdout.text, stderr: stderr.text };
}

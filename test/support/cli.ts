// Runs the real `inss` command as a user would (node bin/inss.js ...), with optional stdin.
import { spawn } from 'node:child_process';
import { INSS_BIN, REPO_ROOT } from './paths.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `env`: variables added to this process's environment (e.g. the nvidia-smi and MPS stand-ins). */
export function runCli(
  args: readonly string[],
  stdin = '',
  cwd = REPO_ROOT,
  env: Readonly<Record<string, string>> = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [INSS_BIN, ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

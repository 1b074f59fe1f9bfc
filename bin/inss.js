#!/usr/bin/env node
// The `inss` command: runs the compiled CLI (npm ci builds it through the `prepare` script).
import { main } from '../dist/cli/main.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exitCode = 1;
  },
);

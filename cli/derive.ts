// `inss profile derive`: the rtx2060s and rtx2060 profiles of the paper's cluster, derived from the
// measured V100 profile and the published points (tools/fit/paperCluster/,
// docs/profiles-paper-cluster.md). This file does the I/O; the derivation is pure.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { parsePaperTables } from '../tools/fit/paperCluster/anchors.js';
import { type DeriveReport, derivePaperCluster } from '../tools/fit/paperCluster/derive.js';
import { InvalidInputError, type Profile, parseProfile } from '../src/profile/schema.js';

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new InvalidInputError(`${path}: cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

function readProfile(path: string): Profile {
  let raw: unknown;
  try {
    raw = JSON.parse(readText(path)) as unknown;
  } catch (err) {
    if (err instanceof InvalidInputError) throw err;
    throw new InvalidInputError(`${path}: not valid JSON: ${(err as Error).message}`);
  }
  return parseProfile(raw, path);
}

function writeProfile(profile: Profile, path: string): void {
  try {
    writeFileSync(path, `${JSON.stringify(profile, null, 1)}\n`);
  } catch (err) {
    throw new InvalidInputError(`${path}: cannot write: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/** The anchor table with errors, the throughput comparison and the LWR fidelity, for stderr. */
export function formatDeriveReport(report: DeriveReport): string {
  const pct = (x: number): string => `${(x * 100).toFixed(2)}%`;
  const lines = ['published cells, rtx2060s (observed -> predicted ms, error):'];
  for (const c of report.cells) {
    lines.push(
      `  ${c.table} | ${c.row.padEnd(36)} | ${c.column.padStart(4)} | ${c.observedMs.toFixed(3).padStart(8)} ` +
        `-> ${c.predictedMs.toFixed(3).padStart(8)} | ${pct(c.relErr).padStart(7)}`,
    );
  }
  lines.push(`  largest error ${pct(report.maxCellRelErr)}`);
  lines.push('throughput at batch 1, 100% (req/s: published -> rtx2060s, error; rtx2060):');
  for (const t of report.throughputs) {
    lines.push(
      `  ${t.model.padEnd(13)} ${t.ratePerS.toFixed(1).padStart(7)} -> ` +
        `${t.predictedPerS.toFixed(1).padStart(7)} ${pct(t.relErr).padStart(7)}; ${t.rtx2060PerS.toFixed(1)}`,
    );
  }
  for (const f of report.freedCoefficients)
    lines.push(`coefficient ${f.model}.${f.field}: ${f.start.toPrecision(4)} -> ${f.fitted.toPrecision(4)} (anchors)`);
  for (const [gpu, l] of Object.entries(report.lwr)) {
    lines.push(
      `LWR ${gpu}: bandwidths ${l.settings.bandwidthLogBatch}/${l.settings.bandwidthLogPct}; compiled vs ` +
        `surface, every batch 1..32 and 1% share: mean ${pct(l.meanRelErr)}, max ${pct(l.maxRelErr)}`,
    );
  }
  return lines.join('\n');
}

/** Adds `derive` to the `profile` command. `argv` is the process's, recorded as the profiles' provenance command. */
export function registerDerive(profileCommand: Command, argv: readonly string[]): void {
  profileCommand
    .command('derive')
    .description(
      "Derive the paper cluster's rtx2060s and rtx2060 profiles from the V100 profile and the published points " +
        '(docs/profiles-paper-cluster.md)',
    )
    .requiredOption('--v100 <path>', 'the measured V100 profile (profiles/v100.json)')
    .requiredOption('--paper-data <dir>', 'directory holding the paper-cluster README.md (data/paper-cluster)')
    .requiredOption('--out-dir <dir>', 'where rtx2060s.json and rtx2060.json are written')
    .action((opts: { v100: string; paperData: string; outDir: string }) => {
      const v100 = readProfile(opts.v100);
      const anchors = parsePaperTables(readText(join(opts.paperData, 'README.md')));
      const command = ['inss', ...argv.slice(2)].join(' ');
      const { rtx2060s, rtx2060, report } = derivePaperCluster(v100, anchors, command);
      const superPath = join(opts.outDir, 'rtx2060s.json');
      const plainPath = join(opts.outDir, 'rtx2060.json');
      writeProfile(rtx2060s, superPath);
      writeProfile(rtx2060, plainPath);
      console.error(formatDeriveReport(report));
      console.error(`wrote ${superPath} and ${plainPath}`);
    });
}

#!/usr/bin/env node
// The house rules that no formatter or linter checks, run by `npm test` (`npm run lint:house`):
// - no code line wider than Prettier's 120 columns (Prettier does not break comments or strings);
// - no source file over 400 lines unless a comment in its first lines starts "Over 400 lines because";
// - the repository speaks of the product alone: no tracker numbers and no narration of rounds of work
//   in code, tests, docs, the README or the CHANGELOG.
// Usage: node scripts/check-house.js [PATH...]   (default: every tracked file)
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';

const MAX_COLUMNS = 120;
const MAX_LINES = 400;
const CODE = new Set(['.ts', '.js', '.cjs', '.mjs', '.py']);
const PROSE = ['.c', '.h', '.sh', '.json', '.md', '.proto', '.yaml', '.yml', '.css', '.html'];
const TEXT = new Set([...CODE, ...PROSE]);
const SKIP = /^(node_modules|dist|coverage)\/|package-lock\.json$|^(docs\/results|data)\/.*\.(csv|txt|svg|json)$/;
const SIZE_REASON = /^\s*(\/\/|#|\*|\/\*+)\s*Over 400 lines because\b/;
const HEAD_LINES = 20;

/** Patterns that tie text to the work's history instead of the product. */
const NARRATION = [
  { re: /\b(issue|ticket|tracker)s?[ -]?#?\d+/i, why: 'a tracker number' },
  { re: /\bthe issue's\b/i, why: 'a tracker item' },
  { re: /\bsessions?\b/i, why: 'a work session' },
  {
    re: /\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|previous|next) (session|round)\b/i,
    why: 'a round of work',
  },
  { re: /\b(kept for the record|earlier runs)\b/i, why: 'a record of earlier work' },
];

function trackedFiles() {
  try {
    return execFileSync('git', ['ls-files'], { encoding: 'utf8', maxBuffer: 64 << 20 })
      .split('\n')
      .filter(Boolean);
  } catch {
    const out = [];
    const walk = (dir) => {
      for (const name of readdirSync(dir)) {
        const path = dir === '.' ? name : join(dir, name);
        if (name.startsWith('.') && name !== '.ci') continue;
        if (statSync(path).isDirectory()) walk(path);
        else out.push(path);
      }
    };
    walk('.');
    return out;
  }
}

function expand(args) {
  if (args.length === 0) return trackedFiles();
  const files = trackedFiles();
  return files.filter((f) => args.some((a) => f === a || f.startsWith(a.endsWith('/') ? a : `${a}/`)));
}

const problems = [];
for (const file of expand(process.argv.slice(2))) {
  const ext = extname(file);
  if (!TEXT.has(ext) || SKIP.test(file) || !existsSync(file)) continue;
  const lines = readFileSync(file, 'utf8').split('\n');
  if (CODE.has(ext)) {
    lines.forEach((line, i) => {
      if (line.length > MAX_COLUMNS && !/https?:\/\//.test(line)) {
        problems.push(`${file}:${i + 1}: ${line.length} columns (at most ${MAX_COLUMNS})`);
      }
    });
    const count = lines.at(-1) === '' ? lines.length - 1 : lines.length;
    if (count > MAX_LINES && !lines.slice(0, HEAD_LINES).some((l) => SIZE_REASON.test(l))) {
      problems.push(`${file}: ${count} lines (at most ${MAX_LINES} unless its head says "Over 400 lines because ...")`);
    }
  }
  if (file === 'scripts/check-house.js') continue;
  lines.forEach((line, i) => {
    for (const { re, why } of NARRATION) {
      const m = re.exec(line);
      if (m) problems.push(`${file}:${i + 1}: ${why}: "${m[0]}"`);
    }
  });
}

if (problems.length > 0) {
  console.error(problems.join('\n'));
  console.error(`check-house: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log('check-house: ok');

// The paper cluster's published points (InSS section 6.2 Tables 2 and 3, batch-1 throughputs, GPU
// specifications), parsed out of data/paper-cluster/README.md so that no published number is copied
// into the code. Part of `inss profile derive` (derive.ts).
import { InvalidInputError } from '../../../src/profile/schema.js';
import { MODEL_FACTS } from '../catalog.js';

// ---------------------------------------------------------------------------------------------
// 1. The published points, parsed from the README text
// ---------------------------------------------------------------------------------------------

/** One model on the GPU in a published cell. */
export interface AnchorPlacement {
  readonly model: string;
  readonly batch: number;
  readonly pct: number;
}

/** One observed cell of Table 2 or 3: the GPU holds `placements`; `placements[0]` is the measured model. */
export interface AnchorCell {
  readonly table: 'Table 2' | 'Table 3';
  /** The row's case as published ("AlexNet with ResNet50*"). */
  readonly row: string;
  /** The column header as published ("b=4", "24%"). */
  readonly column: string;
  readonly placements: readonly AnchorPlacement[];
  readonly observedMs: number;
}

/** A published throughput of one model alone (req/s) at a batch and share. */
export interface ThroughputAnchor {
  readonly model: string;
  readonly batch: number;
  readonly pct: number;
  readonly ratePerS: number;
}

/** A GPU of the cluster as the README's hardware table and prose describe it. */
export interface GpuSpec {
  readonly name: string;
  readonly smCount: number;
  readonly memMb: number;
  readonly l2Mb: number;
  readonly memBandwidthGBs: number;
  readonly mpsUnitPct: number;
}

export interface PaperAnchors {
  readonly cells: readonly AnchorCell[];
  readonly throughputs: readonly ThroughputAnchor[];
  readonly gpus: { readonly rtx2060s: GpuSpec; readonly rtx2060: GpuSpec };
}

/** Model names as the paper writes them -> profile ids (MODEL_FACTS keys). */
function modelId(published: string, where: string): string {
  const id = published
    .replace(/\*/g, '')
    .replace(/\(.*?\)/g, '')
    .trim()
    .toLowerCase();
  if (!(id in MODEL_FACTS))
    throw new InvalidInputError(
      `${where}: unknown model '${published}' (known: ${Object.keys(MODEL_FACTS).join(', ')})`,
    );
  return id;
}

const NUMBER = String.raw`(\d+(?:\.\d+)?)`;

/** The markdown table (header + body rows, separator dropped) starting at the first `|` line at or after `from`. */
function tableAfter(lines: readonly string[], from: number, where: string): string[][] {
  let i = from;
  while (i < lines.length && !lines[i]!.trim().startsWith('|')) i++;
  const rows: string[][] = [];
  for (; i < lines.length && lines[i]!.trim().startsWith('|'); i++) {
    const cells = lines[i]!.trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((c) => c.trim());
    if (cells.every((c) => /^:?-+:?$/.test(c))) continue;
    rows.push(cells);
  }
  if (rows.length < 2) throw new InvalidInputError(`${where}: no table found`);
  return rows;
}

function lineIndex(lines: readonly string[], re: RegExp, what: string): { index: number; match: RegExpMatchArray } {
  for (let i = 0; i < lines.length; i++) {
    const match = lines[i]!.match(re);
    if (match) return { index: i, match };
  }
  throw new InvalidInputError(`paper-cluster README: ${what} not found`);
}

function parseNumber(text: string, where: string): number {
  const v = Number(text.replace(/[^\d.]/g, ''));
  if (!(text.trim().length > 0) || !Number.isFinite(v) || v <= 0)
    throw new InvalidInputError(`${where}: expected a positive number, got '${text}'`);
  return v;
}

/**
 * Parses one published table. Row semantics (the README's legend): the first model named is the
 * measured one; a starred model X* is a fixed neighbour (`starred`); every unstarred model takes
 * the column's value (`column(value)`): "A with B*" varies A, "E* beside M" varies M while E is measured.
 */
function parseCaseTable(
  lines: readonly string[],
  start: number,
  table: AnchorCell['table'],
  columnRe: RegExp,
  column: (value: number) => { batch?: number; pct?: number },
  base: { batch: number; pct: number },
  starred: { batch: number; pct: number },
): AnchorCell[] {
  const where = `paper-cluster README: ${table}`;
  const [header, ...body] = tableAfter(lines, start + 1, where);
  const columns = header!.slice(1).map((h) => {
    const m = h.match(columnRe);
    if (!m) throw new InvalidInputError(`${where}: column header '${h}' not understood`);
    return { label: h, value: Number(m[1]) };
  });
  const cells: AnchorCell[] = [];
  for (const row of body) {
    const label = row[0] ?? '';
    const names = label
      .split(/\s+/)
      .filter((w) => w.length > 0 && !['alone', 'with', 'and', 'beside'].includes(w.toLowerCase()));
    if (names.length === 0) throw new InvalidInputError(`${where}: row '${label}' names no model`);
    if (names.every((n) => n.endsWith('*')))
      throw new InvalidInputError(`${where}: row '${label}' has no model that takes the column's value`);
    if (row.length !== columns.length + 1)
      throw new InvalidInputError(
        `${where}: row '${label}' has ${row.length - 1} values for ${columns.length} columns`,
      );
    columns.forEach((col, c) => {
      const placements = names.map((n): AnchorPlacement => {
        const model = modelId(n, `${where}, row '${label}'`);
        if (n.endsWith('*')) return { model, ...starred };
        return { model, ...base, ...column(col.value) };
      });
      cells.push({
        table,
        row: label,
        column: col.label,
        placements,
        observedMs: parseNumber(row[c + 1]!, `${where}, row '${label}', column '${col.label}'`),
      });
    });
  }
  return cells;
}

/**
 * Reads the published points out of the text of data/paper-cluster/README.md: Tables 2
 * and 3 (with the shares and batches their captions state), the batch-1 throughputs, and the
 * hardware of the two GPUs. Throws InvalidInputError naming what is missing or malformed.
 */
export function parsePaperTables(markdown: string): PaperAnchors {
  const lines = markdown.split(/\r?\n/);

  // "Table 2, every model at 30% of the GPU; X* means X runs beside it with batch 4:"
  const t2 = lineIndex(
    lines,
    new RegExp(String.raw`^Table 2\b.*?at ${NUMBER}% of the GPU.*?with batch (\d+)`),
    'Table 2 (caption "Table 2, every model at P% of the GPU; ... with batch B")',
  );
  const t2Pct = Number(t2.match[1]);
  const t2StarBatch = Number(t2.match[2]);
  const table2 = parseCaseTable(
    lines,
    t2.index,
    'Table 2',
    /^b\s*=\s*(\d+)$/,
    (b) => ({ batch: b }),
    { batch: 1, pct: t2Pct },
    { batch: t2StarBatch, pct: t2Pct },
  );

  // "Table 3, batch 4 at 6/24/42/60% of the GPU; X* means X runs beside it at 18%:"
  const t3 = lineIndex(
    lines,
    new RegExp(String.raw`^Table 3\b.*?batch (\d+) at .*?beside it at ${NUMBER}%`),
    'Table 3 (caption "Table 3, batch B at ...; ... beside it at P%")',
  );
  const t3Batch = Number(t3.match[1]);
  const t3StarPct = Number(t3.match[2]);
  const table3 = parseCaseTable(
    lines,
    t3.index,
    'Table 3',
    new RegExp(String.raw`^${NUMBER}\s*%$`),
    (p) => ({ pct: p }),
    { batch: t3Batch, pct: 100 },
    { batch: t3Batch, pct: t3StarPct },
  );

  // "- Throughput at 100% of the GPU and batch 1, used by ... (req/s): AlexNet 788.6, ..., EfficientNet 217.3."
  const tm = markdown.match(
    new RegExp(String.raw`Throughput at ${NUMBER}% of the GPU and batch (\d+)[^:]*:([\s\S]*?)(?:\n\s*-\s|\n\s*\n|$)`),
  );
  if (!tm)
    throw new InvalidInputError(
      'paper-cluster README: the throughput list ("Throughput at P% of the GPU and batch B ...: Model rate, ' +
        '...") not found',
    );
  const throughputs = tm[3]!
    .replace(/\.\s*$/, '')
    .split(',')
    .map((item): ThroughputAnchor => {
      const m = item.trim().match(new RegExp(String.raw`^([A-Za-z][\w]*(?:\([^)]*\))?)\s+${NUMBER}$`));
      if (!m) throw new InvalidInputError(`paper-cluster README: throughput entry '${item.trim()}' not understood`);
      return {
        model: modelId(m[1]!, 'paper-cluster README: throughputs'),
        batch: Number(tm[2]),
        pct: Number(tm[1]),
        ratePerS: Number(m[2]),
      };
    });

  return { cells: [...table2, ...table3], throughputs, gpus: parseHardware(lines) };
}

/** The hardware table (GPU | SMs | memory | L2 | memory bandwidth) and the MPS units in the prose after it. */
function parseHardware(lines: readonly string[]): PaperAnchors['gpus'] {
  const h = lineIndex(lines, /^#+\s*Hardware/i, 'the Hardware section');
  const [header, ...rows] = tableAfter(lines, h.index + 1, 'paper-cluster README: hardware');
  const col = (re: RegExp): number => {
    const i = header!.findIndex((c) => re.test(c));
    if (i < 0)
      throw new InvalidInputError(`paper-cluster README: hardware table lacks a column matching ${String(re)}`);
    return i;
  };
  const [cSm, cMem, cL2, cBw] = [col(/^SMs?$/i), col(/^memory$/i), col(/^L2$/i), col(/bandwidth/i)];
  const units = lines.join(' ').match(new RegExp(String.raw`${NUMBER}% on the 2060 Super, ${NUMBER}% on the 2060\b`));
  if (!units)
    throw new InvalidInputError('paper-cluster README: MPS units ("N% on the 2060 Super, M% on the 2060") not found');
  const spec = (name: string, mpsUnitPct: number): GpuSpec => {
    const row = rows.find((r) => r[0]?.trim().toLowerCase() === name.toLowerCase());
    if (!row) throw new InvalidInputError(`paper-cluster README: hardware table has no row '${name}'`);
    const where = `paper-cluster README: hardware, ${name}`;
    return {
      name,
      smCount: parseNumber(row[cSm] ?? '', where),
      memMb: parseNumber(row[cMem] ?? '', where),
      l2Mb: parseNumber(row[cL2] ?? '', where),
      memBandwidthGBs: parseNumber(row[cBw] ?? '', where),
      mpsUnitPct,
    };
  };
  return { rtx2060s: spec('RTX 2060 Super', Number(units[1])), rtx2060: spec('RTX 2060', Number(units[2])) };
}

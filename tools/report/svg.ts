// Plain SVG charts for bench and training reports: a line chart of series over x, and a bar chart.
// Pure string building, no dependencies; the output opens in any browser.

export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

const COLORS = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
];
const W = 760;
const H = 420;
const M = { left: 70, right: 170, top: 40, bottom: 50 };

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** "Nice" tick values covering [lo, hi]. */
export function ticks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
  return out;
}

function fmt(v: number): string {
  return Math.abs(v) >= 1000 ? v.toFixed(0) : Number(v.toPrecision(4)).toString();
}

export function lineChart(title: string, xLabel: string, yLabel: string, series: readonly Series[]): string {
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1])).filter(Number.isFinite);
  const x0 = Math.min(...xs, 0);
  const x1 = Math.max(...xs, 1);
  const y0 = Math.min(0, ...ys);
  const y1 = Math.max(...ys, 1e-9) * 1.05;
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const sx = (x: number) => M.left + ((x - x0) / (x1 - x0 || 1)) * pw;
  const sy = (y: number) => M.top + ph - ((y - y0) / (y1 - y0 || 1)) * ph;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
  );
  parts.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  parts.push(`<text x="${W / 2 - M.right / 2}" y="22" text-anchor="middle" font-size="15">${esc(title)}</text>`);
  for (const t of ticks(y0, y1)) {
    parts.push(`<line x1="${M.left}" x2="${M.left + pw}" y1="${sy(t)}" y2="${sy(t)}" stroke="#eee"/>`);
    parts.push(`<text x="${M.left - 6}" y="${sy(t) + 4}" text-anchor="end">${fmt(t)}</text>`);
  }
  for (const t of ticks(x0, x1))
    parts.push(`<text x="${sx(t)}" y="${M.top + ph + 18}" text-anchor="middle">${fmt(t)}</text>`);
  parts.push(`<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`);
  parts.push(`<text x="${M.left + pw / 2}" y="${H - 10}" text-anchor="middle">${esc(xLabel)}</text>`);
  parts.push(
    `<text transform="translate(16 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`,
  );
  series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length]!;
    const d = s.points
      .filter((p) => Number.isFinite(p[1]))
      .map((p, k) => `${k === 0 ? 'M' : 'L'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`)
      .join(' ');
    parts.push(`<path d="${d}" fill="none" stroke="${c}" stroke-width="1.6"/>`);
    parts.push(`<rect x="${W - M.right + 12}" y="${M.top + i * 20}" width="14" height="4" fill="${c}"/>`);
    parts.push(`<text x="${W - M.right + 32}" y="${M.top + i * 20 + 6}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

export function barChart(title: string, yLabel: string, bars: readonly { name: string; value: number }[]): string {
  const y1 = Math.max(...bars.map((b) => b.value), 1e-9) * 1.1;
  const pw = W - M.left - 40;
  const ph = H - M.top - M.bottom;
  const bw = pw / Math.max(1, bars.length);
  const sy = (y: number) => M.top + ph - (y / y1) * ph;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
  );
  parts.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  parts.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${esc(title)}</text>`);
  for (const t of ticks(0, y1)) {
    parts.push(`<line x1="${M.left}" x2="${M.left + pw}" y1="${sy(t)}" y2="${sy(t)}" stroke="#eee"/>`);
    parts.push(`<text x="${M.left - 6}" y="${sy(t) + 4}" text-anchor="end">${fmt(t)}</text>`);
  }
  bars.forEach((b, i) => {
    const x = M.left + i * bw + bw * 0.15;
    parts.push(
      `<rect x="${x}" y="${sy(b.value)}" width="${bw * 0.7}" height="${M.top + ph - sy(b.value)}" ` +
        `fill="${COLORS[i % COLORS.length]}"/>`,
    );
    parts.push(`<text x="${x + bw * 0.35}" y="${sy(b.value) - 4}" text-anchor="middle">${fmt(b.value)}</text>`);
    parts.push(`<text x="${x + bw * 0.35}" y="${M.top + ph + 18}" text-anchor="middle">${esc(b.name)}</text>`);
  });
  parts.push(`<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`);
  parts.push(
    `<text transform="translate(16 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`,
  );
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

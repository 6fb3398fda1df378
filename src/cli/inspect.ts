// `skystack inspect <file> [--json]`: dimensions, BITPIX, header cards and per-plane robust
// statistics of a FITS image, in the spirit of fitsheader/imstat. Reads one plane at a time so
// large cubes need only one plane of memory. Integer images are read in double precision
// (BZERO/BSCALE applied there), so min/max/mean are exact where float32 would round
// (BITPIX 32 values above 2^24); float32 images stay float32.

import { planeStats, type PlaneStats } from '../algorithms/robust-stats.js';
import { formatCard, FitsReader, type CardValue, type FitsHeader, type ImageLayout } from '../fits/index.js';

export interface InspectReport {
  file: string;
  bitpix: number;
  naxis: number[];
  /** HDU holding the image (0 = primary) and its compression (null, 'gzip', a ZCMPTYPE, 'gzip+…'). */
  hdu: number;
  compression: string | null;
  header: { key: string; value: string | number | boolean | null; comment: string | null }[];
  planes: { min: number | null; max: number | null; mean: number | null; median: number | null; sigma: number | null }[];
}

function jsonValue(v: CardValue | undefined): string | number | boolean | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'bigint') return v.toString();
  return v;
}

const finiteOrNull = (v: number) => (Number.isFinite(v) ? v : null);

export function headerEntries(header: FitsHeader): InspectReport['header'] {
  return header.cards.map((c) => ({ key: c.hierarch ? `HIERARCH ${c.key}` : c.key, value: jsonValue(c.value), comment: c.comment ?? null }));
}

export interface InspectResult {
  report: InspectReport;
  stats: PlaneStats[];
  header: FitsHeader;
  layout: ImageLayout;
}

export async function inspectFile(file: string): Promise<InspectResult> {
  const reader = await FitsReader.open(file);
  try {
    const { layout } = reader;
    const stats: PlaneStats[] = [];
    const exact = layout.storage !== 'float32';
    for (let p = 0; p < layout.planes; p++) {
      const band = exact ? await reader.readRows(0, layout.height, { planes: [p], dtype: 'float64' }) : await reader.readRows(0, layout.height, { planes: [p] });
      stats.push(planeStats(band.data));
    }
    const report: InspectReport = {
      file,
      bitpix: layout.bitpix,
      naxis: layout.axes,
      hdu: layout.hdu,
      compression: layout.compression,
      header: headerEntries(reader.header),
      planes: stats.map((s) => ({ min: finiteOrNull(s.min), max: finiteOrNull(s.max), mean: finiteOrNull(s.mean), median: finiteOrNull(s.median), sigma: finiteOrNull(s.sigma) })),
    };
    return { report, stats, header: reader.header, layout };
  } finally {
    await reader.close();
  }
}

function fmt(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e7 || a < 1e-3)) return v.toExponential(5);
  return Number.isInteger(v) ? String(v) : v.toFixed(Math.max(0, 6 - Math.floor(Math.log10(Math.max(a, 1))) - 1));
}

export function renderInspectText(result: InspectResult): string {
  const { report, stats, header, layout: reader } = result;
  const file = report.file;
  const lines: string[] = [];
  lines.push(`File:    ${file}`);
  const scaling = reader.bzero !== 0 || reader.bscale !== 1 ? `, BZERO ${reader.bzero}, BSCALE ${reader.bscale}` : '';
  lines.push(`Image:   ${report.naxis.join(' x ')}  BITPIX ${report.bitpix} (${reader.storage}${scaling})`);
  const where = reader.hdu === 0 ? 'primary HDU' : `extension ${reader.hdu}`;
  if (reader.compression === null) lines.push(`Layout:  ${where}, data at byte ${reader.dataOffset}, ${reader.dataBytes} bytes`);
  else lines.push(`Layout:  ${where}, ${reader.compression} compressed, ${reader.dataBytes} bytes decompressed`);
  lines.push('');
  lines.push(`Header (${header.cards.length} cards):`);
  for (const card of header.cards) for (const image of formatCard(card)) lines.push(`  ${image.trimEnd()}`);
  lines.push('');
  const cols = ['plane', 'pixels', 'min', 'max', 'mean', 'median', 'sigma'];
  const rows = stats.map((s, i) => [String(i), String(s.count), fmt(s.min), fmt(s.max), fmt(s.mean), fmt(s.median), fmt(s.sigma)]);
  const widths = cols.map((c, j) => Math.max(c.length, ...rows.map((r) => r[j]!.length)));
  lines.push(cols.map((c, j) => c.padStart(widths[j]!)).join('  '));
  for (const r of rows) lines.push(r.map((c, j) => c.padStart(widths[j]!)).join('  '));
  lines.push('(sigma = 1.4826 x MAD; NaN and infinite samples are excluded from all statistics)');
  return lines.join('\n');
}

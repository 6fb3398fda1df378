// The frame table shown after a run (seed "Quality filter"): one row per frame of
// frame_quality.csv with its included/excluded state and reason. The checkbox is the decision for
// the NEXT run: changing it writes quality_filter.manual_overrides (keyed by file name, which
// survives a changed max_frames) through the page's callback, and the row shows "manual".

import { csvRecords } from './csv.js';
import { clear, h } from './dom.js';

export type Overrides = Record<string, boolean | { include: boolean; index?: number; filename?: string }>;

export interface FrameRow {
  index: number;
  file: string;
  status: string;
  reason: string;
  cells: Record<string, string>;
}

export function frameRows(csv: string): FrameRow[] {
  return csvRecords(csv).map((r) => ({ index: Number(r.index), file: r.file ?? '', status: r.status ?? '', reason: r.reason ?? '', cells: r }));
}

/** The override for a frame, by file name first, then by index (both keys are valid). */
export function overrideFor(overrides: Overrides, row: FrameRow): boolean | null {
  const v = overrides[row.file] ?? overrides[String(row.index)];
  if (v === undefined) return null;
  return typeof v === 'boolean' ? v : v.include;
}

const METRICS: [string, string][] = [
  ['star_count', 'Stars'],
  ['fwhm', 'FWHM'],
  ['eccentricity', 'Ecc.'],
  ['registration_cc', 'Corr.'],
  ['quality_score', 'Quality'],
  ['weight', 'Weight'],
];

/** Without `onChange` the table is read-only (the run monitor): no checkbox column. */
export function renderFrameTable(tbody: HTMLElement, rows: FrameRow[], overrides: Overrides, onChange?: (row: FrameRow, include: boolean) => void): void {
  clear(tbody);
  for (const row of rows) {
    const manual = overrideFor(overrides, row);
    const checked = manual ?? row.status === 'included';
    tbody.append(
      h(
        'tr',
        { 'data-file': row.file, 'data-status': row.status, class: row.status === 'excluded' ? 'row-excluded' : 'row-included' },
        onChange
          ? h(
              'td',
              {},
              h('input', {
                type: 'checkbox',
                checked,
                'aria-label': `Include ${row.file} in the next run`,
                class: 'frame-include',
                onchange: (ev: Event) => onChange(row, (ev.target as HTMLInputElement).checked),
              }),
            )
          : null,
        h('td', { class: 'num' }, row.index),
        h('td', {}, row.file),
        h('td', {}, h('span', { class: `badge badge-${row.status === 'excluded' ? 'error' : 'ok'}` }, row.status)),
        h('td', {}, row.reason),
        ...METRICS.map(([k]) => h('td', { class: 'num' }, row.cells[k] ?? '')),
        h('td', { class: 'manual' }, manual === null ? '' : manual ? 'manual include' : 'manual exclude'),
      ),
    );
  }
}

export const FRAME_METRIC_HEADERS = METRICS.map(([, label]) => label);

// The frame table shown after a run (seed "Quality filter"): one row per frame of
// frame_quality.csv with its included/excluded state and reason, sortable by any column (click
// a header; frame-sort.ts: numbers as numbers, missing values last, ties in frame index order;
// the sorted column carries aria-sort and the caption says it), and above it the frame plots
// (frame-plots-view.ts). The checkbox is the decision for the NEXT run: changing it writes
// quality_filter.manual_overrides (keyed by file name, which survives a changed max_frames)
// through the page's callback, and the row shows "manual". A frame's name and its plot points
// open the frame through `onOpenFrame` (the page decides what opening means).

import { openViewer } from './image-viewer.js';
import { csvRecords } from '../shared/csv.js';
import { FRAME_CHARTS } from '../shared/frame-plot.js';
import { clear, h } from './dom.js';
import { openFrameOf, plotFramesFromRows, type FrameContext, type OpenFrame } from './frame-data.js';
import { renderFramePlots } from './frame-plots-view.js';
import { nextSort, NUMERIC_COLUMNS, sortFrameRows, type SortState } from './frame-sort.js';

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

/** A measured column's header with its unit, the one the plot of that key shows (FRAME_CHARTS). */
const withUnit = (key: string, label: string): string => {
  const unit = FRAME_CHARTS.find((c) => c.id === key)?.unit;
  return unit ? `${label} (${unit})` : label;
};

/** Sortable columns: CSV key, header text, the name a screen reader and the caption use. */
const COLUMNS: [string, string, string][] = [
  ['index', '#', 'frame number'],
  ['file', 'File', 'file'],
  ['status', 'Status', 'status'],
  ['reason', 'Reason', 'reason'],
  ['star_count', 'Stars', 'stars'],
  ['fwhm', withUnit('fwhm', 'FWHM'), 'FWHM'],
  ['eccentricity', 'Ecc.', 'eccentricity'],
  ['background', withUnit('background', 'Bkg.'), 'background'],
  ['registration_cc', 'Corr.', 'registration correlation'],
  ['quality_score', 'Quality', 'quality score'],
  ['weight', 'Weight', 'weight'],
];
const METRICS = COLUMNS.slice(4).map(([k]) => k);

export interface FrameTableOptions {
  /** Checkbox column writing the next run's override; without it the table is read-only (run monitor). */
  onChange?: (row: FrameRow, include: boolean) => void;
  /** A click on a frame's name or on its point in a plot. */
  onOpenFrame: (frame: OpenFrame) => void;
}

const NO_CONTEXT: FrameContext = { referenceIndex: null, dateObs: new Map(), paths: new Map() };

export class FrameTable {
  private rows: FrameRow[] = [];
  private overrides: Overrides = {};
  private context: FrameContext = NO_CONTEXT;
  private sort: SortState | null = null;
  private readonly head: HTMLTableSectionElement;
  private readonly body: HTMLTableSectionElement;
  private readonly caption: HTMLTableCaptionElement;

  /** `plots`: the container of the frame plots (null: no plots). */
  constructor(
    table: HTMLTableElement,
    private readonly plots: HTMLElement | null,
    private readonly options: FrameTableOptions,
  ) {
    this.caption = table.caption ?? table.createCaption();
    this.caption.classList.add('sort-caption');
    this.head = table.tHead ?? table.createTHead();
    this.body = table.tBodies[0] ?? table.createTBody();
  }

  /** New rows (a run's frame_quality.csv) with what the events say about them. */
  show(rows: FrameRow[], context: FrameContext, overrides: Overrides = this.overrides): void {
    this.rows = rows;
    this.context = context;
    this.overrides = overrides;
    this.renderHead();
    this.renderBody();
    if (this.plots) renderFramePlots(this.plots, plotFramesFromRows(rows, context), context.referenceIndex, (index) => this.open(index));
  }

  setOverrides(overrides: Overrides): void {
    this.overrides = overrides;
    this.renderBody();
  }

  sortBy(key: string): void {
    this.sort = nextSort(this.sort, key);
    this.renderHead();
    this.renderBody();
  }

  private open(index: number): void {
    const row = this.rows.find((r) => r.index === index);
    if (row) this.options.onOpenFrame(openFrameOf(row, this.context));
  }

  private renderHead(): void {
    clear(this.head);
    const tr = h('tr', {});
    if (this.options.onChange) tr.append(h('th', { scope: 'col' }, 'Include'));
    for (const [key, label, name] of COLUMNS) {
      const sorted = this.sort?.key === key ? this.sort.dir : null;
      const button = h(
        'button',
        { type: 'button', class: 'sort', 'data-sort': key, title: `Sort by ${name}${sorted === 'asc' ? ', descending' : ''}` },
        label,
        h('span', { class: `sort-ind${sorted ? ' active' : ''}`, 'aria-hidden': 'true' }, sorted === 'asc' ? '▲' : sorted === 'desc' ? '▼' : '↕'),
      );
      button.addEventListener('click', () => this.sortBy(key));
      tr.append(h('th', { scope: 'col', class: NUMERIC_COLUMNS.has(key) ? 'num' : null, 'aria-sort': sorted === 'asc' ? 'ascending' : sorted === 'desc' ? 'descending' : null }, button));
    }
    tr.append(h('th', { scope: 'col' }, 'Override'));
    this.head.append(tr);
    const by = this.sort ? COLUMNS.find(([k]) => k === this.sort!.key) : undefined;
    this.caption.textContent = by ? `Sorted by ${by[2]}, ${this.sort!.dir === 'asc' ? 'ascending' : 'descending'}; missing values last. Click a column header to sort.` : 'In frame order. Click a column header to sort.';
  }

  private renderBody(): void {
    clear(this.body);
    const { onChange } = this.options;
    for (const row of sortFrameRows(this.rows, this.sort)) {
      const manual = overrideFor(this.overrides, row);
      const checked = manual ?? row.status === 'included';
      const isRef = row.index === this.context.referenceIndex;
      const open = h('button', { type: 'button', class: 'linklike frame-open', title: 'Open this frame', 'aria-label': `Open ${row.file}` }, row.file);
      open.addEventListener('click', () => this.open(row.index));
      this.body.append(
        h(
          'tr',
          { 'data-file': row.file, 'data-index': row.index, 'data-status': row.status, class: `${row.status === 'excluded' ? 'row-excluded' : 'row-included'}${isRef ? ' row-reference' : ''}` },
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
          h('td', {}, open),
          h('td', {}, h('span', { class: `badge badge-${row.status === 'excluded' ? 'error' : 'ok'}` }, row.status), isRef ? h('span', { class: 'badge badge-ref', title: 'the frame every other frame is registered to' }, 'reference') : null),
          h('td', {}, row.reason),
          ...METRICS.map((k) => h('td', { class: 'num' }, row.cells[k] ?? '')),
          h('td', { class: 'manual' }, manual === null ? '' : manual ? 'manual include' : 'manual exclude'),
        ),
      );
    }
  }
}

/**
 * The pages' open-frame hook: the frame's FITS under the run folder (its calibrated copy) in the
 * image viewer, in a new tab. Returns why nothing opened, or null.
 */
export function openFrameInViewer(runId: string, frame: OpenFrame): string | null {
  if (!frame.path) return `Frame ${frame.index} (${frame.file}) has no FITS under the run folder to open (calibration off, or output.keep_calibrated_frames false).`;
  openViewer(runId, frame.path);
  return null;
}

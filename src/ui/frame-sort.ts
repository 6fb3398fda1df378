// Sorting of the frame table (DOM-free). The columns of frame_quality.csv the table shows, each
// numeric or text. Rules: numbers compare as numbers (so 10 after 9), text by locale with
// numeric parts as numbers (light_2 before light_10); a missing value (empty cell, not a
// number) sorts last in both directions; ties keep frame index order in both directions (the
// sort is stable over rows in index order), so a descending sort is not simply the reverse.

export type SortDir = 'asc' | 'desc';

export interface SortState {
  key: string;
  dir: SortDir;
}

export interface SortableRow {
  index: number;
  cells: Record<string, string>;
}

/** Columns that sort as numbers; every other key sorts as text. */
export const NUMERIC_COLUMNS: ReadonlySet<string> = new Set(['index', 'star_count', 'fwhm', 'fwhm_x', 'fwhm_y', 'eccentricity', 'background', 'noise', 'snr', 'saturation', 'registration_cc', 'quality_score', 'weight']);

function numberOf(cell: string | undefined): number | null {
  if (cell === undefined || cell.trim() === '') return null;
  const v = Number(cell);
  return Number.isFinite(v) ? v : null;
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

/** A sorted copy; `state` null gives frame index order. */
export function sortFrameRows<T extends SortableRow>(rows: readonly T[], state: SortState | null): T[] {
  const base = [...rows].sort((a, b) => a.index - b.index);
  if (!state) return base;
  const sign = state.dir === 'asc' ? 1 : -1;
  const numeric = NUMERIC_COLUMNS.has(state.key);
  const keyed = base.map((row) => {
    const cell = state.key === 'index' ? String(row.index) : row.cells[state.key];
    return { row, num: numeric ? numberOf(cell) : null, text: numeric ? null : cell && cell.trim() !== '' ? cell : null };
  });
  keyed.sort((a, b) => {
    const av = numeric ? a.num : a.text;
    const bv = numeric ? b.num : b.text;
    if (av === null || bv === null) return av === bv ? 0 : av === null ? 1 : -1;
    const c = numeric ? (av as number) - (bv as number) : collator.compare(av as string, bv as string);
    return c * sign;
  });
  return keyed.map((k) => k.row);
}

/** The next state after a click on a column header: ascending first, then toggled. */
export function nextSort(current: SortState | null, key: string): SortState {
  return current?.key === key ? { key, dir: current.dir === 'asc' ? 'desc' : 'asc' } : { key, dir: 'asc' };
}

// RFC 4180 CSV parsing for the artifact viewer and the frame table (frame_quality.csv quotes
// file names that hold commas or quotes). Returns rows of cells; a trailing newline adds no row.

export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          cell += '"';
          i++;
        } else quoted = false;
      } else cell += c;
    } else if (c === '"' && cell === '') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += c;
  }
  if (cell !== '' || row.length > 0) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/**
 * Rows keyed by the header row with values typed: an empty cell is null, a decimal number a
 * number, anything else the text (frame_quality.csv for the API's report and suggestions).
 */
export function csvNumericRecords(text: string): Record<string, string | number | null>[] {
  return csvRecords(text.trim()).map((r) => {
    const row: Record<string, string | number | null> = {};
    for (const [h, v] of Object.entries(r)) row[h] = v === '' ? null : /^-?\d+(\.\d+)?(e-?\d+)?$/i.test(v) ? Number(v) : v;
    return row;
  });
}

/** Rows as objects keyed by the header row. */
export function csvRecords(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  if (!header) return [];
  return rows.map((r) => Object.fromEntries(header.map((k, i) => [k, r[i] ?? ''])));
}

// FITS file names as cameras and capture programs write them (.fits, .fit, .fts in any letter
// case; gzip-compressed .fits.gz / .fit.gz; fpack's .fz, .fits.fz), and the hint INPUT_SCAN and
// the scan API give when the file pattern matches nothing in a folder that does hold FITS
// files: what was found (count per extension, a few names) and a pattern that takes them.
// The pattern is matched with scan.ts's globMatcher (case-insensitive, ";"-separated
// alternatives), so the suggestion is checked with the same matcher the scan will use.

import { readdir } from 'node:fs/promises';
import { globMatcher } from './scan.js';

/** The FITS extension of a file name, lower-cased ('.fit', '.fits.gz', '.fz', ...), or null. */
export function fitsExtension(name: string): string | null {
  const m = /(\.(?:fits?|fts))?(\.(?:gz|fz))?$/i.exec(name);
  if (!m || m[0] === '') return null;
  // .gz alone is any gzip file; only .fz stands on its own.
  if (m[1] === undefined && m[2]!.toLowerCase() !== '.fz') return null;
  return m[0].toLowerCase();
}

export interface PatternHint {
  /** The pattern that matched no file. */
  pattern: string;
  /** A pattern that takes every FITS file found (";"-joined when there are several extensions). */
  suggested_pattern: string;
  /** FITS files found per extension, most first. */
  found: { extension: string; count: number }[];
  /** A few of the files (name order). */
  examples: string[];
  message: string;
}

const EXAMPLES = 3;

/**
 * The hint for a folder whose files are `names`: null when `pattern` matches one of them (hidden
 * files aside, as the scan ignores them) or when none is a FITS file.
 */
export function patternHint(names: readonly string[], pattern: string): PatternHint | null {
  const visible = names.filter((n) => !n.startsWith('.'));
  const match = globMatcher(pattern);
  if (visible.some(match)) return null;
  const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
  const fits = visible.map((name) => ({ name, extension: fitsExtension(name) })).filter((f): f is { name: string; extension: string } => f.extension !== null);
  if (fits.length === 0) return null;
  const counts = new Map<string, number>();
  for (const f of fits) counts.set(f.extension, (counts.get(f.extension) ?? 0) + 1);
  const found = [...counts.entries()].map(([extension, count]) => ({ extension, count })).sort((a, b) => b.count - a.count || a.extension.localeCompare(b.extension));
  const suggested = found.map((f) => `*${f.extension}`).join(';');
  const examples = fits
    .map((f) => f.name)
    .sort(collator.compare)
    .slice(0, EXAMPLES);
  const list = found.map((f) => `${f.count} × ${f.extension}`).join(', ');
  const more = fits.length > EXAMPLES ? ', …' : '';
  return {
    pattern,
    suggested_pattern: suggested,
    found,
    examples,
    message: `no file matches "${pattern}", but the folder holds ${fits.length} FITS file${fits.length === 1 ? '' : 's'} (${list}: ${examples.join(', ')}${more}); the pattern "${suggested}" takes ${fits.length === 1 ? 'it' : 'them'}`,
  };
}

/** patternHint for the files of `dir` (sub-folders left out); null when the folder cannot be listed. */
export async function folderPatternHint(dir: string, pattern: string): Promise<PatternHint | null> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return null;
  }
  return patternHint(
    entries.filter((e) => !e.isDirectory()).map((e) => e.name),
    pattern,
  );
}

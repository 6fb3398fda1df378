// The file-pattern hint under the Input fields: when the pattern matches nothing in the input
// folder but FITS files of another extension are there (a folder of .fit files and the default
// `*.fits`), the scan API (POST /api/files/scan, pattern_hint) or a run's INPUT_SCAN
// (pattern_mismatch) names what was found, and one button puts the pattern that takes those
// files into the pattern field. Scans are only asked for when the folder or the pattern changes;
// an answer overtaken by a newer change is dropped.

import { api, type PatternHintView } from './api.js';
import { byId, clear, h } from './dom.js';

let asked = 0;

/** Shows `hint` (or nothing) in #pattern-hint; the button sets #pattern and rescans. */
export function showPatternHint(hint: PatternHintView | null): void {
  const box = byId('pattern-hint');
  clear(box);
  box.hidden = hint === null;
  if (!hint) return;
  const use = h('button', { type: 'button', id: 'pattern-hint-use' }, `Use pattern ${hint.suggested_pattern}`);
  use.addEventListener('click', () => {
    const field = byId<HTMLInputElement>('pattern');
    field.value = hint.suggested_pattern;
    field.dispatchEvent(new Event('change', { bubbles: true }));
    field.focus();
  });
  box.append(h('span', {}, `${hint.message.charAt(0).toUpperCase()}${hint.message.slice(1)}. `), use);
}

/** Scans the input folder with the current pattern and shows the hint the server gives, if any. */
export async function checkPattern(): Promise<void> {
  const dir = byId<HTMLInputElement>('lights_dir').value.trim();
  const pattern = byId<HTMLInputElement>('pattern').value.trim();
  const mine = ++asked;
  if (dir === '' || pattern === '') {
    showPatternHint(null);
    return;
  }
  try {
    const scan = await api.scan(dir, pattern);
    if (mine === asked) showPatternHint(scan.frames === 0 ? scan.hint : null);
  } catch {
    // A folder the server may not read (or not yet granted): no hint; the run reports the rest.
    if (mine === asked) showPatternHint(null);
  }
}

/** Wires the folder and pattern fields to checkPattern. */
export function wirePatternHint(): void {
  for (const id of ['lights_dir', 'pattern']) byId(id).addEventListener('change', () => void checkPattern());
}

// The run queue of the Raw Stack page (seed "Run queue entry"): entries are added from the
// current input folder field (filter `OSC` for colour data, else the folder's FILTER header or
// the next of L, R, G, B, Ha not yet used), edited in place (filter, pattern, label, active) and removed. An empty queue means a
// single-folder run with the input folder.

import { clear, h } from './dom.js';

export interface QueueEntry {
  filter: string;
  input_dir: string;
  pattern?: string;
  label?: string;
  active: boolean;
}

const MONO_FILTERS = ['L', 'R', 'G', 'B', 'Ha', 'OIII', 'SII'];

export class RunQueue {
  private entries: QueueEntry[] = [];

  constructor(
    private readonly tbody: HTMLElement,
    private readonly emptyNote: HTMLElement,
  ) {
    this.render();
  }

  get items(): QueueEntry[] {
    // Empty optional fields are left out, so the server's defaults (the run pattern) apply.
    return this.entries.map((e) => ({ filter: e.filter, input_dir: e.input_dir, ...(e.pattern ? { pattern: e.pattern } : {}), ...(e.label ? { label: e.label } : {}), active: e.active }));
  }

  set(entries: unknown): void {
    this.entries = Array.isArray(entries)
      ? entries
          .filter((e): e is Record<string, unknown> => typeof e === 'object' && e !== null)
          .map((e) => ({ filter: String(e.filter ?? ''), input_dir: String(e.input_dir ?? ''), pattern: typeof e.pattern === 'string' ? e.pattern : '', label: typeof e.label === 'string' ? e.label : '', active: e.active !== false }))
      : [];
    this.render();
  }

  /** Why the input folder cannot become an entry, or null when it can. */
  refuse(inputDir: string): string | null {
    const dir = inputDir.trim();
    if (!dir) return 'Choose an input folder first: a queue entry is taken from it.';
    if (this.entries.some((e) => e.input_dir === dir)) return `${dir} is already in the queue.`;
    return null;
  }

  /**
   * Adds an entry from the input folder. `colourMode` is the form's choice or, under `auto`, what
   * the folder's headers say; `headerFilter` the FILTER card when the frames carry one.
   */
  addFrom(inputDir: string, colourMode: string, pattern: string, headerFilter: string | null = null): string | null {
    const refused = this.refuse(inputDir);
    if (refused) return refused;
    const dir = inputDir.trim();
    const used = new Set(this.entries.map((e) => e.filter));
    const filter = colourMode.toUpperCase() === 'OSC' ? 'OSC' : headerFilter && !used.has(headerFilter) ? headerFilter : (MONO_FILTERS.find((x) => !used.has(x)) ?? 'L');
    this.entries.push({ filter, input_dir: dir, pattern: pattern.trim() === '*.fits' ? '' : pattern.trim(), label: '', active: true });
    this.render();
    return null;
  }

  private render(): void {
    clear(this.tbody);
    this.entries.forEach((e, i) => {
      const n = i + 1;
      const text = (key: 'filter' | 'pattern' | 'label', label: string) =>
        h('input', {
          type: 'text',
          value: e[key] ?? '',
          'aria-label': `${label} of queue entry ${n}`,
          class: `q-${key}`,
          oninput: (ev: Event) => {
            e[key] = (ev.target as HTMLInputElement).value;
          },
        });
      this.tbody.append(
        h(
          'tr',
          { 'data-index': i },
          h('td', {}, text('filter', 'Filter')),
          h('td', { class: 'path-cell', title: e.input_dir }, e.input_dir),
          h('td', {}, text('pattern', 'Pattern')),
          h('td', {}, text('label', 'Run label')),
          h(
            'td',
            {},
            h('input', {
              type: 'checkbox',
              checked: e.active,
              'aria-label': `Active: queue entry ${n}`,
              class: 'q-active',
              onchange: (ev: Event) => {
                e.active = (ev.target as HTMLInputElement).checked;
              },
            }),
          ),
          h(
            'td',
            {},
            h(
              'button',
              {
                type: 'button',
                class: 'small',
                'aria-label': `Remove queue entry ${n} (${e.input_dir})`,
                onclick: () => {
                  this.entries.splice(i, 1);
                  this.render();
                },
              },
              'Remove',
            ),
          ),
        ),
      );
    });
    this.emptyNote.hidden = this.entries.length > 0;
  }
}

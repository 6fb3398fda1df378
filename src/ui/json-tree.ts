// Collapsible JSON tree for the artifact viewer: objects and arrays are <details> elements
// (keyboard-operable, open to depth 2), leaves show typed values. Large arrays are cut at
// 500 items with a note, so a big diagnostics file cannot freeze the page.

import { h } from './dom.js';

const MAX_ITEMS = 500;

function leaf(value: unknown): HTMLElement {
  if (value === null) return h('span', { class: 'j-null' }, 'null');
  switch (typeof value) {
    case 'string':
      return h('span', { class: 'j-str' }, JSON.stringify(value));
    case 'number':
      return h('span', { class: 'j-num' }, String(value));
    case 'boolean':
      return h('span', { class: 'j-bool' }, String(value));
    default:
      return h('span', {}, String(value));
  }
}

export function jsonTree(value: unknown, key: string | null = null, depth = 0): HTMLElement {
  const label = key === null ? null : h('span', { class: 'j-key' }, `${key}: `);
  if (value === null || typeof value !== 'object') return h('div', { class: 'j-leaf' }, label, leaf(value));
  const entries: [string, unknown][] = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value as Record<string, unknown>);
  const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
  const details = h('details', { class: 'j-node', open: depth < 2 }, h('summary', {}, label, h('span', { class: 'j-count' }, summary)));
  for (const [k, v] of entries.slice(0, MAX_ITEMS)) details.append(jsonTree(v, k, depth + 1));
  if (entries.length > MAX_ITEMS) details.append(h('div', { class: 'j-more' }, `… ${entries.length - MAX_ITEMS} more`));
  return details;
}

// Artifact viewer of the full run monitor: fetches one artifact through
// /api/runs/:id/artifacts/view and renders it by kind — JSON as a tree, CSV as a table, JSONL as
// one expandable line per event, Markdown rendered, HTML in a sandboxed frame served raw by
// /artifacts/raw/ (the report as the browser shows it), images inline, other text as text.
// FITS images get a download link and a link into the image viewer (viewer.html).

import { api, ApiError, type ArtifactEntry } from './api.js';
import { parseCsv } from '../shared/csv.js';
import { clear, h } from './dom.js';
import { viewerUrl } from './image-viewer.js';
import { jsonTree } from './json-tree.js';
import { renderMarkdown } from './markdown.js';

export type ArtifactKind = 'json' | 'jsonl' | 'csv' | 'markdown' | 'html' | 'image' | 'fits' | 'text';

export function artifactKind(path: string): ArtifactKind {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase() ?? '';
  if (ext === 'json') return 'json';
  if (ext === 'jsonl') return 'jsonl';
  if (ext === 'csv') return 'csv';
  if (ext === 'md') return 'markdown';
  if (ext === 'html' || ext === 'htm') return 'html';
  if (['png', 'jpg', 'jpeg', 'gif', 'svg', 'webp'].includes(ext)) return 'image';
  if (['fits', 'fit', 'fts'].includes(ext)) return 'fits';
  return 'text';
}

const MAX_ROWS = 2000;

function csvTable(text: string): HTMLElement {
  const [head, ...rows] = parseCsv(text);
  if (!head) return h('p', {}, '(empty file)');
  const table = h('table', { class: 'data' }, h('thead', {}, h('tr', {}, ...head.map((c) => h('th', { scope: 'col' }, c)))));
  const body = h('tbody');
  for (const r of rows.slice(0, MAX_ROWS)) body.append(h('tr', {}, ...head.map((_, i) => h('td', {}, r[i] ?? ''))));
  table.append(body);
  return h('div', { class: 'table-wrap' }, table, rows.length > MAX_ROWS ? h('p', {}, `… ${rows.length - MAX_ROWS} more rows`) : null);
}

function jsonlLines(text: string): HTMLElement {
  const list = h('ol', { class: 'jsonl' });
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  for (const raw of lines.slice(0, MAX_ROWS)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      list.append(h('li', { class: 'jsonl-bad' }, h('code', {}, raw)));
      continue;
    }
    const type = (parsed as { type?: unknown })?.type;
    list.append(h('li', { 'data-type': typeof type === 'string' ? type : null }, h('details', {}, h('summary', {}, h('code', {}, raw.length > 240 ? `${raw.slice(0, 240)}…` : raw)), jsonTree(parsed))));
  }
  return h('div', {}, h('p', { class: 'muted' }, `${lines.length} lines`), list, lines.length > MAX_ROWS ? h('p', {}, `… ${lines.length - MAX_ROWS} more lines`) : null);
}

/** Renders `entry` of run `runId` into `target` (which is cleared first). */
export async function showArtifact(target: HTMLElement, runId: string, entry: ArtifactEntry): Promise<void> {
  clear(target);
  const kind = artifactKind(entry.path);
  const raw = api.rawUrl(runId, entry.path);
  const header = h('div', { class: 'viewer-head' }, h('h3', { id: 'viewer-title' }, entry.path), h('a', { href: raw, target: '_blank', rel: 'noopener' }, kind === 'fits' ? 'Download' : 'Open raw'));
  target.append(header);
  target.dataset.path = entry.path;
  target.dataset.kind = kind;
  if (kind === 'image') {
    target.append(h('img', { src: raw, alt: `preview ${entry.path}`, class: 'artifact-image' }));
    return;
  }
  if (kind === 'fits') {
    target.append(h('p', {}, h('a', { href: viewerUrl(runId, entry.path), target: '_blank', rel: 'noopener', class: 'open-viewer', 'data-path': entry.path }, 'Open in the image viewer'), ' — zoom, pan, pixel values, stretch, compare, export.'));
    return;
  }
  if (kind === 'html') {
    // Raw HTML serving: the report as the server sends it, without scripts or access to this page.
    target.append(h('iframe', { src: raw, title: entry.path, sandbox: '', class: 'artifact-frame' }));
    return;
  }
  const body = h('div', { class: 'viewer-body', 'aria-busy': 'true' }, 'Loading…');
  target.append(body);
  try {
    const v = await api.view(runId, entry.path);
    const text = typeof v.text === 'string' ? v.text : v.json !== undefined ? JSON.stringify(v.json, null, 2) : '';
    clear(body);
    body.removeAttribute('aria-busy');
    switch (kind) {
      case 'json': {
        let value: unknown = v.json;
        if (value === undefined) {
          try {
            value = JSON.parse(text);
          } catch (e) {
            body.append(h('p', { class: 'error' }, `not valid JSON: ${(e as Error).message}`), h('pre', {}, text));
            return;
          }
        }
        body.append(jsonTree(value));
        return;
      }
      case 'jsonl':
        body.append(jsonlLines(Array.isArray(v.json) ? (v.json as unknown[]).map((x) => JSON.stringify(x)).join('\n') : text));
        return;
      case 'csv':
        body.append(csvTable(text));
        return;
      case 'markdown':
        body.append(renderMarkdown(text));
        return;
      default:
        body.append(h('pre', { class: 'text' }, text));
    }
  } catch (e) {
    clear(body);
    body.removeAttribute('aria-busy');
    body.append(h('p', { class: 'error', role: 'alert' }, e instanceof ApiError ? `${e.code}: ${e.message}` : String(e)));
  }
}

// Renderings of a RunState shared by the inline and the full monitor: phase chips, the phase
// table with progress, the event log, artifact links and output previews. Each function redraws
// its container from the state (runs have ~13 phases and the log shows a bounded tail, so a
// full redraw per event is cheap and keeps the views free of incremental bookkeeping).

import { api, type ArtifactEntry } from './api.js';
import { clear, formatBytes, formatTime, h } from './dom.js';
import { viewerUrl } from './image-viewer.js';
import { outputImageName, RUN_LAYOUTS, type RunLayout } from '../shared/run-layout.js';
import { describeEvent, runNotes, type PhaseView, type RunState } from './run-state.js';

/** A phase still pending when its run has ended never ran (e.g. a run cancelled early). */
function statusText(p: PhaseView, finished = false): string {
  if (finished && p.status === 'pending') return 'not run';
  if (p.status === 'running') return p.total ? `running ${p.current ?? 0}/${p.total}` : `running ${Math.round(p.progress * 100)}%`;
  return p.status;
}

export function renderChips(list: HTMLElement, state: RunState): void {
  clear(list);
  for (const p of state.phases.values()) {
    const title = [p.name, p.status, p.reason, p.message].filter(Boolean).join(' — ');
    list.append(h('li', { class: `chip chip-${p.status}`, 'data-phase': p.name, 'data-status': p.status, title }, h('span', { class: 'chip-name' }, p.name), h('span', { class: 'chip-status' }, statusText(p, state.finished))));
  }
}

export function renderPhaseTable(tbody: HTMLElement, state: RunState): void {
  clear(tbody);
  for (const p of state.phases.values()) {
    const pct = Math.round(p.progress * 100);
    tbody.append(
      h(
        'tr',
        { 'data-phase': p.name, 'data-status': p.status, class: `row-${p.status}` },
        h('th', { scope: 'row' }, p.name),
        h('td', {}, h('span', { class: `badge badge-${p.status}` }, statusText(p, state.finished).replace(/^running.*/, 'running'))),
        h('td', {}, h('progress', { max: 100, value: pct, 'aria-label': `${p.name} progress` }), ` ${p.status === 'running' && p.total ? `${p.current ?? 0}/${p.total}` : `${pct}%`}${p.substep ? ` ${p.substep}` : ''}`),
        h('td', {}, [p.reason, p.message].filter(Boolean).join(': ')),
        h('td', { class: 'num' }, p.duration_ms !== undefined ? `${(p.duration_ms / 1000).toFixed(2)} s` : ''),
      ),
    );
  }
}

/** Notes on optional phases that did not deliver (runNotes), e.g. why HMS was skipped and which switch changes it. */
export function renderNotes(list: HTMLElement, state: RunState): void {
  clear(list);
  for (const n of runNotes(state)) list.append(h('li', { class: `note note-${n.status}`, 'data-phase': n.phase }, n.text));
  list.hidden = !list.firstChild;
}

/** The latest `max` events, newest last (the log reads top to bottom like a terminal). */
export function renderLog(list: HTMLElement, state: RunState, max = 200): void {
  clear(list);
  const shown = state.events.filter((e) => e.type !== 'phase_progress' || e === state.events[state.events.length - 1]).slice(-max);
  for (const e of shown) {
    const level = e.type === 'warning' || (e.type === 'phase_end' && e.reason === 'cancelled') ? 'warn' : e.type === 'phase_end' && e.status === 'error' ? 'error' : 'info';
    list.append(h('li', { class: `log-${level}`, 'data-type': e.type }, h('time', {}, formatTime(e.ts)), ' ', describeEvent(e)));
  }
  if (shown.length === 0) list.append(h('li', { class: 'muted' }, state.finished ? 'no events' : 'no events yet'));
  list.scrollTop = list.scrollHeight;
}

const LINK_KINDS = /\.(csv|json|jsonl|html|md|txt)$/i;

/** Links to the run's text artifacts (CSV, JSON, HTML report...) opening the raw file, and its output images opening the image viewer. */
export function renderArtifactLinks(list: HTMLElement, runId: string, entries: ArtifactEntry[], layout: RunLayout = RUN_LAYOUTS.rawstack): void {
  clear(list);
  for (const e of entries.filter((x) => LINK_KINDS.test(x.path))) {
    const name = e.path.split('/').pop() ?? e.path;
    list.append(h('li', {}, h('a', { href: api.rawUrl(runId, e.path), target: '_blank', rel: 'noopener', 'data-path': e.path }, name), e.size !== undefined ? h('span', { class: 'muted' }, ` ${formatBytes(e.size)}`) : null));
  }
  for (const e of entries.filter((x) => outputImageName(layout, x.path) !== null)) {
    const name = e.path.split('/').pop() ?? e.path;
    list.append(h('li', {}, h('a', { href: viewerUrl(runId, e.path), target: '_blank', rel: 'noopener', 'data-viewer': e.path, title: 'open in the image viewer' }, name), h('span', { class: 'muted' }, ' image viewer')));
  }
  if (!list.firstChild) list.append(h('li', { class: 'muted' }, 'no artifacts yet'));
}

/** Output previews the REPORT phase wrote (preview_<output>.png); each opens its FITS in the image viewer. */
export function renderPreviews(box: HTMLElement, runId: string, entries: ArtifactEntry[], layout: RunLayout = RUN_LAYOUTS.rawstack): void {
  clear(box);
  for (const e of entries.filter((x) => /(^|\/)preview_[^/]+\.png$/i.test(x.path))) {
    const name = (e.path.split('/').pop() ?? e.path).replace(/^preview_/, '').replace(/\.png$/i, '');
    const fits = entries.find((x) => outputImageName(layout, x.path) === name);
    const img = h('img', { src: api.rawUrl(runId, e.path), alt: `preview of ${name}`, loading: 'lazy' });
    const shown = fits ? h('a', { href: viewerUrl(runId, fits.path), target: '_blank', rel: 'noopener', title: `open ${fits.path} in the image viewer`, 'data-viewer': fits.path }, img) : img;
    box.append(h('figure', { class: 'preview' }, shown, h('figcaption', {}, name)));
  }
}

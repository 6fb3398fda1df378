// The image viewer page (/ui/viewer.html?run=<id>&path=<rel>[&compare=<rel>]): any FITS image of
// a run folder, drawn from the server's tile pyramid with a screen stretch computed in the
// browser (stretch-math.ts), zoom from fit to 1:1 and 4:1, pan, a pixel readout with the FITS
// value per plane and RA/Dec, a blink or split comparison with another image of the same size,
// and a download of what is shown (PNG/TIFF 16-bit, PNG 8-bit, JPEG).
// The readout shows FITS pixel coordinates, 1-based as FITS and WCS count them (x = column,
// y = row in the file's order); the picture is drawn top-down, FITS rows bottom-up unless
// ROWORDER = 'TOP-DOWN' (pyramid-math.ts displayFlipped), so y grows upwards on screen then.

import { errText, request } from './api.js';
import { byId, clear, h, say } from './dom.js';
import { viewerUrl } from './image-viewer.js';
import { fitsRow } from '../shared/pyramid-math.js';
import { RUN_LAYOUTS } from '../shared/run-layout.js';
import { STRETCH_MODES, type StretchMode } from '../shared/stretch-math.js';
import { ViewerCanvas, type CompareMode } from './viewer-canvas.js';
import { LevelsPanel } from './viewer-levels.js';
import { ImageSource, type PixelReading } from './viewer-source.js';

interface ImageEntry {
  path: string;
  width: number | null;
  height: number | null;
  planes: number | null;
  stretched: boolean;
  frame: boolean;
}

const params = new URLSearchParams(location.search);
const runId = params.get('run') ?? '';
const status = byId('viewer-status');
const view = new ViewerCanvas(byId<HTMLCanvasElement>('view'));
const levels = new LevelsPanel({ canvas: byId<HTMLCanvasElement>('histogram'), channel: byId<HTMLSelectElement>('lv-channel'), black: byId<HTMLInputElement>('lv-black'), mid: byId<HTMLInputElement>('lv-mid'), white: byId<HTMLInputElement>('lv-white') });
const modeSelect = byId<HTMLSelectElement>('stretch-mode');
const linkedBox = byId<HTMLInputElement>('stretch-linked');
const compareSelect = byId<HTMLSelectElement>('compare-path');
const compareMode = byId<HTMLSelectElement>('compare-mode');
const blinkButton = byId<HTMLButtonElement>('blink-swap');
const blinkPlay = byId<HTMLButtonElement>('blink-play');
let images: ImageEntry[] = [];
let a: ImageSource | null = null;
let b: ImageSource | null = null;
let blinkTimer = 0;


function mode(): StretchMode {
  return (STRETCH_MODES as readonly string[]).includes(modeSelect.value) ? (modeSelect.value as StretchMode) : 'auto';
}

/** A compared image follows the chosen mode, except that an HMS output is shown as it is. */
function modeOf(s: ImageSource, chosen: StretchMode): StretchMode {
  if (s !== a && s.info.stretched) return 'hms';
  return chosen === 'hms' && !s.hmsAvailable ? 'auto' : chosen;
}

function applyMode(): void {
  for (const s of [a, b]) s?.setMode(modeOf(s, mode()), linkedBox.checked);
  if (a) levels.show(a);
  if (a?.look === 'hms' && !a.lookHistogram) void a.loadLookHistogram().then(() => levels.draw(), () => undefined);
  view.request();
}

function showInfo(): void {
  if (!a) return;
  const i = a.info;
  const order = i.row_order ? `ROWORDER ${i.row_order}` : 'no ROWORDER (FITS convention: bottom-up)';
  byId('img-info').textContent = `${i.width}×${i.height}, ${i.planes} plane${i.planes === 1 ? '' : 's'}, BITPIX ${i.bitpix}; ${order}, ${i.flipped ? 'first FITS row shown at the bottom' : 'first FITS row shown at the top'}${i.stretched ? '; HMS output (already stretched)' : ''}${i.wcs ? '; WCS' : ''}. Tiles ${i.cache === 'hit' ? 'from the cache' : `built in ${i.build_ms < 1000 ? `${i.build_ms} ms` : `${(i.build_ms / 1000).toFixed(1)} s`}`}.`;
  const hmsOption = modeSelect.querySelector<HTMLOptionElement>('option[value=hms]')!;
  hmsOption.disabled = !a.hmsAvailable;
  hmsOption.title = a.hmsAvailable ? '' : 'the HMS look needs an RGB image';
}

function updateZoomLabel(): void {
  const z = view.zoom;
  byId('zoom-label').textContent = z >= 1 ? `${Number(z.toFixed(2))}:1` : `1:${Number((1 / z).toFixed(2))}`;
  byId('zoom-label').dataset.zoom = String(z);
}

function fmtValue(v: number | null): string {
  if (v === null) return 'NaN';
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e6) ? v.toExponential(5) : v.toPrecision(7).replace(/\.?0+$/, '');
}

function sexagesimal(deg: number, hours: boolean): string {
  const sign = deg < 0 ? '−' : hours ? '' : '+';
  let v = Math.abs(hours ? deg / 15 : deg);
  const d = Math.floor(v);
  v = (v - d) * 60;
  const m = Math.floor(v);
  const s = (v - m) * 60;
  return hours ? `${d}h${String(m).padStart(2, '0')}m${s.toFixed(2).padStart(5, '0')}s` : `${sign}${d}°${String(m).padStart(2, '0')}′${s.toFixed(1).padStart(4, '0')}″`;
}

let readSeq = 0;
let readTimer = 0;
function readout(ix: number, iy: number, inside: boolean): void {
  const box = byId('readout');
  if (!a || !inside) return;
  const x = Math.floor(ix);
  const dy = Math.floor(iy);
  const y = fitsRow(dy, a.info.height, a.info.flipped);
  clearTimeout(readTimer);
  const seq = ++readSeq;
  const source = view.mode === 'blink' && b && view.showing === 'b' ? b : view.mode === 'split' && b && ix > view.toImage(view.split * view.width, 0)[0] ? b : a;
  readTimer = window.setTimeout(() => {
    source.pixel(x, y).then(
      (r) => {
        if (seq === readSeq) renderReadout(box, r, source);
      },
      (e) => {
        if (seq === readSeq) say(status, `Pixel: ${errText(e)}`, 'error');
      },
    );
  }, 60);
}

function renderReadout(box: HTMLElement, r: PixelReading, source: ImageSource): void {
  clear(box);
  box.dataset.x = String(r.x);
  box.dataset.y = String(r.y);
  box.dataset.values = JSON.stringify(r.values);
  box.dataset.path = source.path;
  const names = r.values.length === 3 ? ['R', 'G', 'B'] : r.values.length === 1 ? ['value'] : r.values.map((_, i) => `plane ${i + 1}`);
  const dl = h('dl', { class: 'readout-list' }, h('dt', {}, 'x, y'), h('dd', { class: 'num' }, `${r.x + 1}, ${r.y + 1}`));
  r.values.forEach((v, i) => dl.append(h('dt', {}, names[i]!), h('dd', { class: 'num', 'data-plane': i }, fmtValue(v))));
  if (r.ra !== null && r.dec !== null) {
    dl.append(h('dt', {}, 'RA'), h('dd', { class: 'num', 'data-ra': r.ra }, `${sexagesimal(r.ra, true)} (${r.ra.toFixed(5)}°)`));
    dl.append(h('dt', {}, 'Dec'), h('dd', { class: 'num', 'data-dec': r.dec }, `${sexagesimal(r.dec, false)} (${r.dec.toFixed(5)}°)`));
  }
  box.append(h('p', { class: 'muted small' }, source === a ? 'A' : 'B', ': ', source.path), dl);
}

function compareNote(): void {
  const note = byId('compare-note');
  if (!a || !b || compareMode.value === 'off') {
    note.textContent = '';
    return;
  }
  const frames = [a, b].filter((s) => s.path.startsWith(`${RUN_LAYOUTS.rawstack.calibrated}/`)).length;
  note.textContent =
    frames === 1
      ? 'Calibrated frames are not registered to the stack: the same pixel shows a different part of the sky, so stars do not line up.'
      : frames === 2
        ? 'Calibrated frames are each in their own geometry (not registered to each other).'
        : 'Both images share the stack geometry: pixels line up.';
}

function setBlinking(on: boolean): void {
  clearInterval(blinkTimer);
  blinkTimer = 0;
  blinkPlay.setAttribute('aria-pressed', String(on));
  blinkPlay.textContent = on ? 'Pause blink' : 'Play blink';
  if (on) blinkTimer = window.setInterval(() => swap(), 700);
}

function swap(): void {
  view.showing = view.showing === 'a' ? 'b' : 'a';
  const label = byId('blink-label');
  label.textContent = view.showing === 'a' ? `A: ${a?.path ?? ''}` : `B: ${b?.path ?? ''}`;
  label.dataset.showing = view.showing;
  view.request();
}

function applyCompare(): void {
  const m = compareMode.value as CompareMode;
  view.mode = b ? m : 'off';
  view.showing = 'a';
  const blinking = view.mode === 'blink';
  blinkButton.disabled = !blinking;
  blinkPlay.disabled = !blinking;
  if (!blinking) setBlinking(false);
  const label = byId('blink-label');
  label.hidden = view.mode === 'off';
  label.textContent = view.mode === 'split' ? `A: ${a?.path ?? ''} | B: ${b?.path ?? ''}` : `A: ${a?.path ?? ''}`;
  label.dataset.showing = 'a';
  compareNote();
  view.request();
}

async function loadCompare(path: string): Promise<void> {
  if (!path) {
    b = null;
    applyCompare();
    return;
  }
  say(status, `Opening ${path}…`);
  try {
    b = await ImageSource.open(runId, path);
    b.setMode(modeOf(b, mode()), linkedBox.checked);
    view.setImages(a!, b);
    if (compareMode.value === 'off') compareMode.value = 'blink';
    applyCompare();
    say(status, `Comparing with ${path}`, 'ok');
  } catch (e) {
    say(status, `Compare: ${errText(e)}`, 'error');
  }
}

function fillCompareList(): void {
  clear(compareSelect);
  compareSelect.append(new Option('(none)', ''));
  if (!a) return;
  for (const im of images) {
    if (im.path === a.path || im.width !== a.info.width || im.height !== a.info.height) continue;
    compareSelect.append(new Option(im.path, im.path));
  }
}

function fillImageList(current: string): void {
  const sel = byId<HTMLSelectElement>('img-path');
  clear(sel);
  for (const im of images) sel.append(new Option(`${im.path}${im.width ? ` (${im.width}×${im.height}${im.planes && im.planes > 1 ? `×${im.planes}` : ''})` : ''}`, im.path));
  if (!images.some((im) => im.path === current)) sel.append(new Option(current, current));
  sel.value = current;
}

function download(): void {
  if (!a) return;
  const [format, bits] = byId<HTMLSelectElement>('dl-format').value.split('-') as ['png' | 'tiff' | 'jpeg', string];
  const link = byId<HTMLAnchorElement>('dl-link');
  link.href = a.exportUrl(format, Number(bits) as 8 | 16);
  link.click();
}

async function main(): Promise<void> {
  const path = params.get('path') ?? '';
  byId('run-link').setAttribute('href', `run-monitor.html`);
  if (!runId || !path) {
    say(status, 'Open an image from the run monitor (run and path are missing).', 'error');
    return;
  }
  byId('img-title').textContent = path;
  document.title = `skystack · ${path}`;
  say(status, `Opening ${path} (the first view of an image builds its tiles)…`);
  const t0 = performance.now();
  try {
    a = await ImageSource.open(runId, path);
  } catch (e) {
    say(status, errText(e), 'error');
    return;
  }
  modeSelect.value = a.params.mode;
  linkedBox.checked = true;
  showInfo();
  view.setImages(a, null);
  levels.show(a);
  view.draw();
  byId('canvas-box').dataset.ready = 'true';
  say(status, `${path}: ${a.info.width}×${a.info.height} opened in ${((performance.now() - t0) / 1000).toFixed(2)} s`, 'ok');
  try {
    images = (await request<{ items: ImageEntry[] }>('GET', `/api/runs/${encodeURIComponent(runId)}/images`)).items;
  } catch (e) {
    say(status, `Image list: ${errText(e)}`, 'error');
  }
  fillImageList(path);
  fillCompareList();
  const compare = params.get('compare');
  if (compare) {
    compareSelect.value = compare;
    await loadCompare(compare);
  }
}

view.onView = updateZoomLabel;
// The first complete view (every tile of the fitted level drawn) is marked for tests and the
// bench: data-first-view-ms is the time from navigation start.
view.onDrawn = (complete) => {
  const box = byId('canvas-box');
  box.dataset.complete = String(complete);
  if (complete && box.dataset.ready === 'true' && !box.dataset.firstViewMs) box.dataset.firstViewMs = String(Math.round(performance.now()));
};
view.onPointer = readout;
view.onTileError = (s, e) => say(status, `Tiles of ${s.path}: ${errText(e)}`, 'error');
levels.onChange = (p) => {
  a?.setParams(p);
  levels.fill();
  view.request();
};
modeSelect.addEventListener('change', applyMode);
linkedBox.addEventListener('change', applyMode);
byId('btn-auto').addEventListener('click', applyMode);
byId('zoom-fit').addEventListener('click', () => view.fit());
byId('zoom-1').addEventListener('click', () => view.setZoom(1));
byId('zoom-4').addEventListener('click', () => view.setZoom(4));
byId('zoom-in').addEventListener('click', () => view.setZoom(view.zoom * 1.25));
byId('zoom-out').addEventListener('click', () => view.setZoom(view.zoom * 0.8));
byId<HTMLSelectElement>('img-path').addEventListener('change', (e) => {
  location.href = viewerUrl(runId, (e.target as HTMLSelectElement).value);
});
compareSelect.addEventListener('change', () => void loadCompare(compareSelect.value));
compareMode.addEventListener('change', applyCompare);
blinkButton.addEventListener('click', swap);
blinkPlay.addEventListener('click', () => setBlinking(blinkTimer === 0));
byId('btn-download').addEventListener('click', download);
window.addEventListener('keydown', (e) => {
  if ((e.key === 'b' || e.key === 'B') && view.mode === 'blink' && !(e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement)) swap();
});
void main();

// The frame plots' data model and SVG (src/shared/frame-plot.ts, frame-plot-svg.ts, shared by the web UI and the HTML
// report) and the frame table's sort (src/ui/frame-sort.ts): acquisition order from DATE-OBS,
// excluded frames marked with a shape per reason, the reference highlighted, excluded frames
// without a value in the "no value" lane; numeric sort with missing values last and ties in frame
// index order. Both modules are DOM-free, so they are imported from the Node build directly.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FRAME_CHARTS, REGISTRATION_CHARTS, acquisitionOrder, framePlots, parseObsTime, reasonMarkers, type PlotFrame } from '../../src/shared/frame-plot.js';
import { chartSvg, svgMarkup, type SvgNode } from '../../src/shared/frame-plot-svg.js';
import { nextSort, sortFrameRows } from '../../src/ui/frame-sort.js';

const t0 = Date.UTC(2026, 2, 14, 21, 0, 0);
const iso = (minutes: number) => new Date(t0 + minutes * 60_000).toISOString();

/** Six frames taken out of file order (index 4 first, index 1 last), two excluded for different reasons. */
function frames(): PlotFrame[] {
  const minutes = [10, 50, 20, 30, 0, 40];
  return minutes.map((m, i) => ({
    index: i,
    file: i === 5 ? 'light_<5>.fits' : `light_${i}.fits`,
    excluded: i === 2 || i === 5,
    reason: i === 2 ? 'fwhm_outlier' : i === 5 ? 'low_stars' : null,
    date_obs: iso(m),
    values: { fwhm: i === 2 ? 5.5 : 2 + i * 0.1, star_count: i === 5 ? null : 100 + i, dx_px: i * 1.5 - 3, dy_px: -i, rotation_deg: (i - 2) * 0.01 },
  }));
}

test('acquisition order: DATE-OBS order (ties by index), frames without it last, file order without any', () => {
  const f = frames();
  assert.equal(acquisitionOrder(f).frames.map((x) => x.index), [4, 0, 2, 3, 5, 1]);
  assert.is(acquisitionOrder(f).order, 'date_obs');
  // A tie in time keeps index order; a frame without DATE-OBS goes after the timed ones.
  const mixed = f.map((x) => (x.index === 3 ? { ...x, date_obs: iso(20) } : x.index === 0 ? { ...x, date_obs: null } : x));
  const m = acquisitionOrder(mixed.reverse());
  assert.equal(m.frames.map((x) => x.index), [4, 2, 3, 5, 1, 0]);
  assert.is(m.order, 'mixed');
  const none = acquisitionOrder(f.map((x) => ({ ...x, date_obs: null })).reverse());
  assert.equal(none.frames.map((x) => x.index), [0, 1, 2, 3, 4, 5]);
  assert.is(none.order, 'index');
  // FITS DATE-OBS without a zone is UTC, whatever the local zone of the browser.
  assert.is(parseObsTime('2026-03-14T21:00:00'), t0);
  assert.is(parseObsTime('2026-03-14T21:00:00.000Z'), t0);
  assert.ok(Number.isNaN(parseObsTime('not a date')));
});

test('chart model: x slots in acquisition order, excluded frames with their reason and its own marker, the reference highlighted', () => {
  const plots = framePlots(frames(), 3, FRAME_CHARTS);
  const fwhm = plots.charts.find((c) => c.spec.id === 'fwhm')!;
  assert.is(fwhm.n, 6);
  assert.equal(fwhm.points.map((p) => [p.pos, p.index]), [[0, 4], [1, 0], [2, 2], [3, 3], [4, 5], [5, 1]]);
  assert.equal(fwhm.xTicks.map((t) => t.label), ['4', '0', '2', '3', '5', '1'], 'tick labels are frame numbers');
  assert.match(fwhm.xLabel, /acquisition order \(DATE-OBS\)/);
  // Excluded: red, a reason each, distinct shapes by reason name (fwhm_outlier < low_stars).
  const excluded = fwhm.points.filter((p) => p.excluded);
  assert.equal(excluded.map((p) => [p.index, p.reason, p.marker]), [[2, 'fwhm_outlier', 'cross'], [5, 'low_stars', 'triangle']]);
  assert.ok(excluded.every((p) => p.color === '#d03b3b'));
  assert.ok(fwhm.points.filter((p) => !p.excluded).every((p) => p.marker === 'dot'));
  assert.equal(fwhm.legend.map((l) => l.label), ['included', 'reference (frame 3)', 'excluded: fwhm_outlier', 'excluded: low_stars']);
  // The reference: its slot, and only its point flagged.
  assert.is(fwhm.referencePos, 3);
  assert.equal(fwhm.points.filter((p) => p.reference).map((p) => p.index), [3]);
  // The line joins the included frames only, in x order.
  assert.equal(fwhm.lines[0]!.pos, [0, 1, 3, 5]);
  assert.equal(fwhm.lines[0]!.values, [2.4, 2, 2.3, 2.1]);
  // y axis: ends on ticks around every value.
  assert.ok(fwhm.yMin <= 2 && fwhm.yMax >= 5.5 && fwhm.yTicks[0] === fwhm.yMin && fwhm.yTicks[fwhm.yTicks.length - 1] === fwhm.yMax);
  // Stars: frame 5 (excluded) has no value: kept in the lane with its reason; the same shape as in the FWHM chart.
  const stars = plots.charts.find((c) => c.spec.id === 'star_count')!;
  const lane = stars.points.filter((p) => p.value === null);
  assert.equal(lane.map((p) => [p.index, p.reason, p.marker]), [[5, 'low_stars', 'triangle']]);
  assert.ok(stars.yMin >= 0, 'counts do not get a negative axis');
  // An included frame without a value has no point; without a reference there is no ring.
  const f = frames();
  f[0]!.values.fwhm = null;
  const noRef = framePlots(f, null, FRAME_CHARTS).charts[0]!;
  assert.not.ok(noRef.points.some((p) => p.index === 0));
  assert.is(noRef.referencePos, null);
  assert.not.ok(noRef.legend.some((l) => l.marker === 'ring'));
});

test('reason markers: one shape per reason over all frames, sorted by name', () => {
  const f = frames().map((x, i) => ({ ...x, excluded: i > 0, reason: ['', 'b', 'a', 'c', 'a', 'd'][i]! || null }));
  assert.equal([...reasonMarkers(f)], [['a', 'cross'], ['b', 'triangle'], ['c', 'square'], ['d', 'diamond']]);
});

const walk = (n: SvgNode | string, out: SvgNode[] = []): SvgNode[] => {
  if (typeof n === 'string') return out;
  out.push(n);
  for (const c of n.children) walk(c, out);
  return out;
};
const textOf = (n: SvgNode): string => n.children.map((c) => (typeof c === 'string' ? c : textOf(c))).join('');

test('chart SVG: title, labelled axes, legend, a clickable point per frame with a tooltip, reference ring and line, escaped', () => {
  const plots = framePlots(frames(), 3, FRAME_CHARTS);
  const svg = chartSvg(plots.charts[0]!);
  const nodes = walk(svg);
  const texts = nodes.filter((n) => n.tag === 'text').map(textOf);
  assert.ok(texts.includes('FWHM per frame'));
  assert.ok(texts.includes('FWHM (px)'));
  assert.ok(texts.includes('frame number, in acquisition order (DATE-OBS)'));
  for (const l of ['included', 'reference (frame 3)', 'excluded: fwhm_outlier', 'excluded: low_stars']) assert.ok(texts.includes(l), l);
  const pts = nodes.filter((n) => String(n.attrs.class ?? '').startsWith('pt'));
  assert.equal(pts.map((p) => p.attrs['data-frame']), [4, 0, 2, 3, 5, 1]);
  const tip = (i: number) => textOf(pts.find((p) => p.attrs['data-frame'] === i)!.children[0] as SvgNode);
  assert.match(tip(2), /^frame 2: light_2\.fits\nDATE-OBS 2026-03-14T21:20:00\.000Z\nFWHM: 5\.5 px\nexcluded: fwhm_outlier$/);
  assert.match(tip(3), /reference frame/);
  assert.is(pts.find((p) => p.attrs['data-frame'] === 2)!.attrs['data-reason'], 'fwhm_outlier');
  // One ring on the reference point (plus the legend's), one dashed reference line at its slot.
  const rings = nodes.filter((n) => n.tag === 'circle' && n.attrs.r === 7.5);
  assert.is(rings.length, 2);
  const refLine = nodes.filter((n) => n.attrs.class === 'reference-line');
  assert.is(refLine.length, 1);
  const refPoint = pts.find((p) => p.attrs['data-frame'] === 3)!;
  assert.is(refLine[0]!.attrs.x1, (refPoint.children[1] as SvgNode).attrs.cx);
  // Markup: the file name with markup characters is escaped; the root carries its namespace.
  const markup = svgMarkup(chartSvg(framePlots(frames(), 3, FRAME_CHARTS).charts[0]!));
  assert.match(markup, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert.match(markup, /light_&lt;5&gt;\.fits/);
  assert.not.match(markup, /<5>/);
  assert.not.match(markup, /NaN|undefined/);
});

test('registration charts: dx and dy as two series with a legend, rotation in degrees', () => {
  const [shift, rot] = framePlots(frames(), 3, REGISTRATION_CHARTS).charts;
  assert.equal(shift!.legend.slice(0, 2).map((l) => l.label), ['dx (columns)', 'dy (rows)']);
  const dx = shift!.points.filter((p) => p.series === 0 && !p.excluded).map((p) => [p.index, p.value]);
  assert.equal(dx, [[4, 3], [0, -3], [3, 1.5], [1, -1.5]]);
  const dy = shift!.points.filter((p) => p.series === 1).map((p) => p.value);
  assert.equal(dy, [-4, -0, -2, -3, -5, -1]);
  assert.is(rot!.spec.yLabel, 'rotation (degrees)');
  assert.ok(rot!.yMin < 0, 'signed values keep a signed axis');
});

test('a chart without values says so and still marks excluded frames', () => {
  const f = frames().map((x) => ({ ...x, values: {} }));
  const c = framePlots(f, 3, FRAME_CHARTS).charts.find((x) => x.spec.id === 'weight')!;
  assert.equal(c.points.map((p) => p.index), [2, 5]);
  const texts = walk(chartSvg(c)).filter((n) => n.tag === 'text').map(textOf);
  assert.ok(texts.includes('no values'));
  assert.ok(texts.includes('no value'), 'the lane is labelled');
});

// ---- sorting -------------------------------------------------------------------------------------

const row = (index: number, cells: Record<string, string>) => ({ index, cells: { index: String(index), ...cells } });

test('sort: numbers as numbers, missing values last in both directions, ties in frame index order', () => {
  const rows = [row(0, { fwhm: '2.5' }), row(1, { fwhm: '' }), row(2, { fwhm: '10' }), row(3, { fwhm: '2.5' }), row(4, { fwhm: '9' }), row(5, { fwhm: 'n/a' }), row(6, { fwhm: '2.5' })];
  const idx = (r: { index: number }[]) => r.map((x) => x.index);
  assert.equal(idx(sortFrameRows(rows, { key: 'fwhm', dir: 'asc' })), [0, 3, 6, 4, 2, 1, 5]);
  assert.equal(idx(sortFrameRows(rows, { key: 'fwhm', dir: 'desc' })), [2, 4, 0, 3, 6, 1, 5]);
  // Without a sort, frame order; the input is not changed.
  const shuffled = [rows[4]!, rows[0]!, rows[6]!];
  assert.equal(idx(sortFrameRows(shuffled, null)), [0, 4, 6]);
  assert.equal(idx(shuffled), [4, 0, 6]);
  assert.equal(idx(sortFrameRows(rows, { key: 'index', dir: 'desc' })), [6, 5, 4, 3, 2, 1, 0]);
});

test('sort: text with numbers in it in natural order, empty text last; header clicks toggle', () => {
  const rows = [row(0, { file: 'light_10.fits', reason: '' }), row(1, { file: 'light_9.fits', reason: 'low_stars' }), row(2, { file: 'Light_2.fits', reason: 'fwhm_outlier' }), row(3, { file: 'light_1.fits', reason: '' })];
  const idx = (r: { index: number }[]) => r.map((x) => x.index);
  assert.equal(idx(sortFrameRows(rows, { key: 'file', dir: 'asc' })), [3, 2, 1, 0]);
  assert.equal(idx(sortFrameRows(rows, { key: 'reason', dir: 'asc' })), [2, 1, 0, 3]);
  assert.equal(idx(sortFrameRows(rows, { key: 'reason', dir: 'desc' })), [1, 2, 0, 3]);
  assert.equal(nextSort(null, 'fwhm'), { key: 'fwhm', dir: 'asc' });
  assert.equal(nextSort({ key: 'fwhm', dir: 'asc' }, 'fwhm'), { key: 'fwhm', dir: 'desc' });
  assert.equal(nextSort({ key: 'fwhm', dir: 'desc' }, 'fwhm'), { key: 'fwhm', dir: 'asc' });
  assert.equal(nextSort({ key: 'fwhm', dir: 'desc' }, 'weight'), { key: 'weight', dir: 'asc' });
});

test.run();

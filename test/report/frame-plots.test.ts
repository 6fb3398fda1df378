// The report's frame plots: registrationShift from a registration matrix (centre shift and
// rotation), and the HTML's "Frame plots" and "Registration" sections: every chart with its
// title, axis labels and legend, points in acquisition order carrying the model's values, and
// the Markdown's link to them.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Affine } from '../../src/algorithms/affine.js';
import type { ReportFrame, ReportModel } from '../../src/report/model.js';
import { registrationShift } from '../../src/report/registration-shift.js';
import { renderHtml, renderMarkdown } from '../../src/report/render.js';

/** The matrix of a rotation by `deg` about (cx, cy) followed by a shift (tx, ty). */
function rotationAbout(deg: number, cx: number, cy: number, tx = 0, ty = 0): Affine {
  const r = (deg * Math.PI) / 180;
  const c = Math.cos(r);
  const s = Math.sin(r);
  return [
    [c, -s, cx - c * cx + s * cy + tx],
    [s, c, cy - s * cx - c * cy + ty],
  ];
}

test('registrationShift: a pure shift is the shift, a rotation about the centre shifts nothing', () => {
  assert.equal(registrationShift([[1, 0, 3.25], [0, 1, -7.5]], 1024, 768), { dx_px: 3.25, dy_px: -7.5, rotation_deg: 0 });
  // 0.8° about the centre of a 1024×768 frame: the corner moves ~7 px, the centre not at all.
  const rot = registrationShift(rotationAbout(0.8, 511.5, 383.5), 1024, 768);
  assert.equal(rot, { dx_px: 0, dy_px: 0, rotation_deg: 0.8 });
  const both = registrationShift(rotationAbout(-1.5, 511.5, 383.5, 12, -4), 1024, 768);
  assert.equal(both, { dx_px: 12, dy_px: -4, rotation_deg: -1.5 });
  // A meridian flip (180°) is reported as 180, not −180.
  assert.is(registrationShift(rotationAbout(180, 511.5, 383.5), 1024, 768).rotation_deg, 180);
});

function frame(i: number, over: Partial<ReportFrame> = {}): ReportFrame {
  return {
    index: i,
    file: `light_${i}.fits`,
    status: 'included',
    reason: null,
    detail: null,
    star_count: 100 + i,
    fwhm: 2.5 + i * 0.1,
    eccentricity: 0.2,
    background: 1000 + i,
    noise: 12,
    registration_cc: 0.98,
    quality_score: 0.9,
    weight: 1,
    date_obs: new Date(Date.UTC(2026, 2, 14, 21, 0, 0) + [3, 0, 1, 2][i]! * 300_000).toISOString(),
    dx_px: i === 1 ? 0 : i * 2.5,
    dy_px: i === 1 ? 0 : -i,
    rotation_deg: i === 1 ? 0 : i * 0.05,
    ...over,
  };
}

function model(): ReportModel {
  const frames = [frame(0), frame(1), frame(2, { status: 'excluded', reason: 'fwhm_outlier', detail: 'fwhm 4.8 > 3.9', fwhm: 4.8, weight: null }), frame(3, { status: 'excluded', reason: 'registration_failed', dx_px: null, dy_px: null, rotation_deg: null, weight: null })];
  return {
    run_id: 'run_1',
    status: 'ok',
    kind: 'rawstack',
    generated_at: '2026-03-14T22:00:00.000Z',
    generator: { name: 'skystack', version: '0.1.0' },
    device: { kind: 'software', adapter: null },
    phases: [{ phase: 'INPUT_SCAN', status: 'ok', duration_ms: 5 }],
    input: { lights_dir: '/data', pattern: '*.fits', frames_total: 4, color_mode: 'OSC', bayer_pattern: 'RGGB', width: 640, height: 480 },
    reference: { strategy: 'best_quality', index: 1, file: 'light_1.fits' },
    quality: { mode: 'auto', frames_total: 4, included: 2, excluded: 2, manual_overrides: 0, reasons: { fwhm_outlier: 1, registration_failed: 1 } },
    stacking: null,
    postprocess: {},
    postprocess_results: [],
    previews: [],
    detailed: true,
    frames,
    warnings: [],
    artifacts: [{ type: 'report_html', phase: 'REPORT', path: 'artifacts/preprocess/preprocessing_report.html' }],
    effective_config: {},
  };
}

const svgOf = (html: string, id: string) => new RegExp(`<svg [^>]*data-chart="${id}"[^]*?</svg>`).exec(html)?.[0] ?? '';
const texts = (svg: string) => [...svg.matchAll(/<text [^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
const points = (svg: string) => [...svg.matchAll(/<g class="pt[^"]*" data-frame="(\d+)" data-series="([a-z_]+)"[^>]*><title>([^<]*)<\/title>/g)].map((m) => ({ frame: Number(m[1]), series: m[2], tip: m[3]! }));

test('html: frame plots and registration plots, each with a title, labelled axes and a legend', () => {
  const html = renderHtml(model());
  assert.match(html, /<h2 id="frame-plots">Frame plots<\/h2>/);
  assert.match(html, /<h2 id="registration-plots">Registration<\/h2>/);
  const expected: [string, string, string][] = [
    ['fwhm', 'FWHM per frame', 'FWHM (px)'],
    ['star_count', 'Stars detected per frame', 'stars'],
    ['background', 'Background per frame', 'background (ADU)'],
    ['eccentricity', 'Eccentricity per frame', 'eccentricity'],
    ['weight', 'Stacking weight per frame', 'weight (mean 1)'],
    ['shift', 'Registration shift of the frame centre', 'shift (px)'],
    ['rotation', 'Registration rotation', 'rotation (degrees)'],
  ];
  for (const [id, title, yLabel] of expected) {
    const svg = svgOf(html, id);
    assert.ok(svg, id);
    const t = texts(svg);
    assert.ok(t.includes(title), `${id}: title`);
    assert.ok(t.includes(yLabel), `${id}: y label`);
    assert.ok(t.includes('frame number, in acquisition order (DATE-OBS)'), `${id}: x label`);
    assert.ok(t.includes('reference (frame 1)') && t.includes('excluded: fwhm_outlier') && t.includes('excluded: registration_failed'), `${id}: legend`);
    // Large enough to read: at least 520 px wide, tick and label text at least 12 px.
    assert.ok(Number(/width="(\d+)"/.exec(svg)![1]) >= 520, `${id}: width`);
    assert.not.match(svg, /font-size="([0-9]|1[01])(\.\d+)?"[^>]*>[^<]*(frame number|\(px\))/, `${id}: label size`);
  }
  assert.ok(texts(svgOf(html, 'shift')).includes('dx (columns)') && texts(svgOf(html, 'shift')).includes('dy (rows)'));
});

test('html: a chart no frame has a value for is left out (a tiled run has no per-frame stacking weight)', () => {
  const m = model();
  m.frames = m.frames.map((f) => ({ ...f, weight: null }));
  const html = renderHtml(m);
  assert.is(svgOf(html, 'weight'), '');
  for (const id of ['fwhm', 'star_count', 'background', 'eccentricity', 'shift']) assert.ok(svgOf(html, id), id);
});

test('html: points in acquisition order carry the model values, registration shift and rotation included', () => {
  const html = renderHtml(model());
  // DATE-OBS order: frame 1 (21:00), 2 (21:05), 3 (21:10), 0 (21:15).
  assert.equal(points(svgOf(html, 'fwhm')).map((p) => p.frame), [1, 2, 3, 0]);
  const shift = points(svgOf(html, 'shift'));
  const dx = shift.filter((p) => p.series === 'dx_px');
  assert.equal(dx.map((p) => p.frame), [1, 2, 3, 0]);
  assert.match(dx.find((p) => p.frame === 2)!.tip, /dx \(columns\): 5 px/);
  assert.match(dx.find((p) => p.frame === 2)!.tip, /excluded: fwhm_outlier/);
  assert.match(dx.find((p) => p.frame === 3)!.tip, /no value\nexcluded: registration_failed/);
  assert.match(shift.filter((p) => p.series === 'dy_px').find((p) => p.frame === 0)!.tip, /dy \(rows\): 0 px/);
  const rot = points(svgOf(html, 'rotation'));
  assert.match(rot.find((p) => p.frame === 2)!.tip, /rotation: 0\.1 °/);
  assert.match(rot.find((p) => p.frame === 1)!.tip, /reference frame/);
  // Still no scripts in the report.
  assert.not.match(html, /<script/i);
  const md = renderMarkdown(model());
  assert.match(md, /\[preprocessing_report\.html\]\(preprocessing_report\.html#frame-plots\)/);
});

test('html: frames without DATE-OBS are plotted in file order and the axis says so', () => {
  const m = model();
  m.frames = m.frames.map((f) => ({ ...f, date_obs: null }));
  const svg = svgOf(renderHtml(m), 'fwhm');
  assert.equal(points(svg).map((p) => p.frame), [0, 1, 2, 3]);
  assert.ok(texts(svg).includes('frame number (file order; no DATE-OBS)'));
});

test.run();

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ReportModel } from '../../src/report/model.js';
import { renderHtml, renderMarkdown } from '../../src/report/render.js';

function model(): ReportModel {
  const frames = [0, 1, 2, 3].map((i) => ({
    index: i,
    file: i === 2 ? 'light_<script>.fits' : `light_${i}.fits`,
    status: (i === 2 ? 'excluded' : 'included') as 'included' | 'excluded',
    reason: i === 2 ? 'fwhm_outlier' : null,
    detail: i === 2 ? 'fwhm 4.81 > limit 3.90' : null,
    star_count: 100 + i,
    fwhm: i === 2 ? 4.81 : 2.5 + i * 0.1,
    eccentricity: 0.2,
    background: 1000 + i,
    noise: 12.5,
    registration_cc: 0.98,
    quality_score: i === 2 ? 0.3 : 0.9,
    weight: i === 2 ? null : 1,
  }));
  return {
    run_id: 'run_20260314_210509',
    status: 'ok',
    kind: 'rawstack',
    generated_at: '2026-03-14T21:10:00.000Z',
    generator: { name: 'skystack', version: '0.1.0' },
    device: { kind: 'software', adapter: 'llvmpipe' },
    phases: [
      { phase: 'INPUT_SCAN', status: 'ok', duration_ms: 120 },
      { phase: 'CALIBRATION', status: 'skipped', reason: 'not_configured', message: 'no calibration folder', duration_ms: 1 },
      { phase: 'PCC', status: 'error', reason: 'solver_failed', message: 'no stars', duration_ms: 2500 },
    ],
    input: { lights_dir: '/data/lights', pattern: '*.fits', frames_total: 4, color_mode: 'OSC', bayer_pattern: 'RGGB', width: 1024, height: 768 },
    reference: { strategy: 'best_quality', index: 1, file: 'light_1.fits' },
    quality: { mode: 'auto', frames_total: 4, included: 3, excluded: 1, manual_overrides: 0, reasons: { fwhm_outlier: 1 } },
    stacking: { method: 'sigma', frames_used: 3, rejected_fraction: 0.0018799726321378858, output_linear: null, band_plan: { bands: 2 } },
    postprocess: {},
    postprocess_results: [],
    previews: [],
    detailed: true,
    frames,
    warnings: [{ code: 'frames_min', message: 'only 4 frames (< 5)' }],
    artifacts: [
      { type: 'frame_quality', phase: 'FRAME_FILTERING', path: 'artifacts/preprocess/frame_quality.csv' },
      { type: 'stacked_rgb', phase: 'STACKING', path: 'outputs/stacked_rgb.fits' },
    ],
    effective_config: {},
  };
}

test('markdown: phase table, exclusions with detail, stacking scalars, warnings, artifacts', () => {
  const md = renderMarkdown(model());
  assert.match(md, /\| CALIBRATION \| skipped \| not_configured: no calibration folder \| 1 ms \|/);
  assert.match(md, /\| PCC \| error \| solver_failed: no stars \| 2\.5 s \|/);
  assert.match(md, /3 of 4 frames included, 1 excluded/);
  assert.match(md, /\| 2 \| light_<script>\.fits \| fwhm_outlier \| fwhm 4\.81 > limit 3\.90 \|/);
  assert.match(md, /- frames_used: 3/);
  assert.match(md, /- rejected_fraction: 0\.00188\n/, 'fractions to 4 significant digits');
  assert.match(md, /- output_linear: –/);
  assert.not.match(md, /band_plan/, 'nested objects stay in the JSON report');
  assert.match(md, /`frames_min`: only 4 frames/);
});

test('html: self-contained, escaped, frame and registration plots, one table row per frame, relative artifact links', () => {
  const html = renderHtml(model());
  assert.not.match(html, /<script/i, 'no scripts, and user text is escaped');
  assert.match(html, /light_&lt;script&gt;\.fits/);
  assert.is((html.match(/<svg /g) ?? []).length, 8, 'five frame plots, two registration plots and the phase duration bars');
  assert.is((html.match(/<tr class="(included|excluded)">/g) ?? []).length, 4);
  assert.match(html, /<tr class="excluded">/);
  assert.match(html, /<th>rejected_fraction<\/th><td>0\.00188<\/td>/);
  assert.match(html, /href="frame_quality\.csv"/);
  assert.match(html, /href="\.\.\/\.\.\/outputs\/stacked_rgb\.fits"/);
  assert.not.match(html, /(src|href)="https?:/, 'no external assets');
});

test('local normalization: a per-frame table with one surface thumbnail per frame (one colour scale), a line in markdown', () => {
  const m = model();
  const b = (tilt: number) => Array.from({ length: 12 }, (_, k) => tilt * ((k % 4) - 1.5));
  m.local_normalization = {
    nx: 4,
    ny: 3,
    frames: [
      { index: 0, file: 'light_1.fits', channels: [{ name: 'L', ok: true, offset_range: 0, cells_measured: 12, cells: 12, masked_fraction: 0.2, b: b(0) }] },
      { index: 1, file: 'light_<2>.fits', channels: [{ name: 'L', ok: true, offset_range: 45, cells_measured: 10, cells: 12, masked_fraction: 0.25, b: b(10) }] },
      { index: 3, file: 'light_4.fits', channels: [{ name: 'L', ok: false, offset_range: 0, cells_measured: 0, cells: 12, masked_fraction: 1, b: b(0) }] },
    ],
  };
  const html = renderHtml(m);
  assert.match(html, /<h3 id="local-normalization">Local normalization<\/h3>/);
  assert.is((html.match(/<svg class="ln-thumb"/g) ?? []).length, 3);
  assert.is((html.match(/<rect /g) ?? []).length - (renderHtml(model()).match(/<rect /g) ?? []).length, 36, 'one rect per node and frame');
  assert.match(html, /light_&lt;2&gt;\.fits/);
  assert.match(html, /not fitted/);
  // One scale for every frame (±15 here): frame 1's extreme nodes reach full colour.
  assert.match(html, /±15/);
  assert.match(html, /fill="rgb\(255,0,0\)"/);
  const md = renderMarkdown(m);
  assert.match(md, /local normalization: 3 frames on a 4×3 grid, background shape differences \(offset range\) median 0, max 45, 1 frames not fitted/);
  assert.not.match(renderHtml(model()), /ln-thumb/);
});

test('html: phase duration bars, one per timed phase, longest bar the widest', () => {
  const html = renderHtml(model());
  const svg = /<svg [^>]*class="bars"[^]*?<\/svg>/.exec(html)![0];
  const bars = [...svg.matchAll(/<rect [^>]*width="([\d.]+)"[^>]*class="bar ([a-z_]+)"/g)];
  assert.is(bars.length, 3);
  assert.equal(bars.map((b) => b[2]), ['ok', 'skipped', 'error']);
  const w = bars.map((b) => Number(b[1]));
  assert.is(Math.max(...w), w[2]!, 'PCC (2.5 s) is the widest');
  assert.ok(Math.abs(w[0]! / w[2]! - 120 / 2500) < 0.01);
  assert.match(svg, />2\.5 s</);
  const none = renderHtml({ ...model(), phases: [{ phase: 'INPUT_SCAN', status: 'not_started' }] });
  assert.not.match(none, /class="bars"/);
});

test('report.detailed false: no frame table or frame charts, exclusion list kept', () => {
  const m = model();
  const html = renderHtml({ ...m, detailed: false, frames: m.frames.filter((f) => f.status === 'excluded') });
  assert.not.match(html, /<tr class="(included|excluded)">/);
  assert.not.match(html, /data-chart="fwhm"/);
  assert.not.match(html, /id="frame-plots"/);
  assert.match(html, /<ul class="exclusions"><li>#2 light_&lt;script&gt;\.fits: <code>fwhm_outlier<\/code> fwhm 4\.81 &gt; limit 3\.90<\/li><\/ul>/);
  assert.match(html, /<b>3<\/b> of 4 frames included/);
});

test('postprocess sections: present by data, status/reason shown, values escaped, star plot only with data', () => {
  const m = model();
  const plain = renderHtml(m);
  assert.not.match(plain, /class="pp"/, 'no sections without postprocess data');
  const sections: ReportModel['postprocess_results'] = [
    { phase: 'ASTROMETRY', status: 'skipped', reason: 'disabled', message: 'postprocess.astrometry is false', values: {} },
    { phase: 'BGE', status: 'ok', values: { success: true, samples_valid: 212, residual_rms: 0.123456, gradient_amplitude: [10.5, 11.25, 9], method: 'classic<b>' } },
    { phase: 'PCC', status: 'skipped', reason: 'no_wcs', values: {} },
    { phase: 'HYPERMETRIC_STRETCH', status: 'ok', values: { anchor: 0.0123, log_d: 2.5, profile: 'rec709', profile_source: 'fallback_profile', color_strategy: 'rgb', target_bg: 0.2 } },
  ];
  const html = renderHtml({ ...m, postprocess_results: sections });
  assert.is((html.match(/<section class="pp"/g) ?? []).length, 4);
  assert.match(html, /Astrometry \(plate solve\) <span class="chip skipped">skipped<\/span><\/h2><p>disabled: postprocess\.astrometry is false<\/p>/);
  assert.match(html, /<th>samples_valid<\/th><td>212<\/td>/);
  assert.match(html, /<th>residual_rms<\/th><td>0\.1235<\/td>/);
  assert.match(html, /<th>gradient_amplitude<\/th><td>10\.5, 11\.25, 9<\/td>/);
  assert.match(html, /classic&lt;b&gt;/);
  assert.match(html, /<th>profile_source<\/th><td>fallback_profile<\/td>/);
  assert.not.match(html, /image vs catalogue colour/, 'no colour plot without data');
  const rel = (slope: number) => ({ points: [{ x: 0.5, y: 0.42, used: true }, { x: -0.3, y: -0.26, used: true }, { x: 1.2, y: 0.4, used: false }], slope, scatter: 0.021, slope_fixed: false });
  const withStars = renderHtml({ ...m, postprocess_results: [{ phase: 'PCC', status: 'ok', values: { r_factor: 1.1 }, colour_relations: { rg: rel(0.85), bg: rel(0.6) } }] });
  // Two titled plots with labelled axes, the fitted line and y = x; the left-out star as a ring.
  assert.match(withStars, /class="chart-title">PCC R\/G: image vs catalogue colour<\/text><text [^>]*>fit slope 0\.85 \(solid\), y = x dashed, scatter 0\.021 mag; 2 of 3 stars used, rings left out</);
  assert.match(withStars, /class="chart-title">PCC B\/G: image vs catalogue colour<\/text><text [^>]*>fit slope 0\.60 \(solid\)/);
  assert.match(withStars, /class="axis-label"[^>]*>catalogue −2\.5·log10\(R\/G\) \[mag\], white reference = 0</);
  assert.match(withStars, /class="axis-label"[^>]*>image −2\.5·log10\(B\/G\) after PCC \[mag\]</);
  assert.is((withStars.match(/class="line-fit"/g) ?? []).length, 2);
  assert.is((withStars.match(/class="line-reference"/g) ?? []).length, 2);
  const pccHtml = withStars.slice(withStars.indexOf('id="pp-PCC"'));
  assert.is((pccHtml.match(/class="dot excluded"/g) ?? []).length, 2);
  const mdStars = renderMarkdown({ ...m, postprocess_results: [{ phase: 'PCC', status: 'ok', values: {}, colour_relations: { rg: rel(0.85), bg: rel(0.6) } }] });
  assert.match(mdStars, /- R\/G image vs catalogue colour: slope 0\.850, scatter 0\.021 mag, 2 of 3 stars used/);
  const md = renderMarkdown({ ...m, postprocess_results: sections });
  assert.match(md, /## HyperMetric Stretch\n\nStatus: ok\n- anchor: 0\.0123\n- log_d: 2\.5/);
  assert.match(md, /Status: skipped · no_wcs/);
});

test('previews: embedded as data: URIs only when the PNG bytes are given, linked to the file', () => {
  const m = { ...model(), previews: [{ output: 'stacked_rgb', path: 'artifacts/preprocess/preview_stacked_rgb.png', width: 512, height: 384, source_width: 1024, source_height: 768, factor: 2, stretch: 'auto' as const }] };
  assert.not.match(renderHtml(m), /<img /);
  const html = renderHtml(m, { previewData: { 'artifacts/preprocess/preview_stacked_rgb.png': 'iVBORw0KGgo=' } });
  assert.match(html, /<a href="preview_stacked_rgb\.png"><img alt="stacked_rgb" width="512" height="384" src="data:image\/png;base64,iVBORw0KGgo="><\/a>/);
  assert.match(html, /1024×768 px, shown 1\/2/);
  assert.match(renderMarkdown(m), /!\[stacked_rgb\]\(preview_stacked_rgb\.png\)/);
});


test('phase timings (duration, share of the run, peak RSS, total) and the run queue table', () => {
  const m = model();
  m.phases[0]!.peak_rss_mib = 96.4;
  m.phases[2]!.peak_rss_mib = 512.2;
  m.queue = [
    { index: 0, filter: 'L', label: 'night <1>', input_dir: '/data/L', pattern: '*.fits', active: true, status: 'scanned', message: null, frames_found: 30, frames_usable: 29, frames_used: 27, output: 'outputs/stacked_L.fits', stack_ms: 8400 },
    { index: 1, filter: 'Ha', label: null, input_dir: '/data/Ha', pattern: '*.fit', active: false, status: 'inactive', message: 'skipped (kept in the queue)', frames_found: 0, frames_usable: 0, frames_used: 0, output: null, stack_ms: null },
  ];
  const html = renderHtml(m);
  // 120 + 1 + 2500 ms in all: shares 4.6 %, 0.0 %, 95.4 %.
  assert.match(html, /<tr><td>INPUT_SCAN<\/td>.*?<td class="n">120 ms<\/td><td class="n">4\.6 %<\/td><td class="n">96 MiB<\/td><\/tr>/);
  assert.match(html, /<tr><td>CALIBRATION<\/td>.*?<td class="n">0\.0 %<\/td><td class="n">–<\/td><\/tr>/);
  assert.match(html, /<tr><td>PCC<\/td>.*?<td class="n">2\.5 s<\/td><td class="n">95\.4 %<\/td><td class="n">512 MiB<\/td><\/tr>/);
  assert.match(html, /<tr><th>total<\/th><th><\/th><th><\/th><th class="n">2\.6 s<\/th><th><\/th><th class="n">512 MiB<\/th><\/tr>/);
  assert.ok(html.includes('<h2>Run queue</h2>'));
  assert.match(html, /<td><b>L<\/b><\/td><td>night &lt;1&gt;<\/td><td><code>\/data\/L<\/code><\/td><td><code>\*\.fits<\/code><\/td><td>yes<\/td><td>scanned<\/td><td class="n">30<\/td><td class="n">29<\/td><td class="n">27<\/td><td class="n">8\.4 s<\/td><td><a href="\.\.\/\.\.\/outputs\/stacked_L\.fits">/);
  assert.match(html, /<tr class="inactive"><td class="n">1<\/td><td><b>Ha<\/b><\/td>.*?<td>no<\/td><td>inactive<br><small>skipped \(kept in the queue\)<\/small><\/td>.*?<td>–<\/td><\/tr>/);
  assert.match(html, /frames from the run queue \(1 active of 2 entries\)/);
  const md = renderMarkdown(m);
  assert.match(md, /\| INPUT_SCAN \| ok \|  \| 120 ms \| 4\.6 % \| 96 MiB \|/);
  assert.match(md, /\| 0 \| L \| night <1> \| `\/data\/L` \| `\*\.fits` \| yes \| scanned \| 30 \| 29 \| 27 \| 8\.4 s \| `outputs\/stacked_L\.fits` \|/);
  assert.match(md, /\| 1 \| Ha \|  \| `\/data\/Ha` \| `\*\.fit` \| no \| inactive: skipped \(kept in the queue\) \| 0 \| 0 \| 0 \| – \| – \|/);
  // Single-folder runs: no queue section.
  assert.not.ok(renderHtml(model()).includes('Run queue'));
});

test.run();

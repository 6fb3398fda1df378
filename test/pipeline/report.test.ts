// REPORT on a real run (OSC, BGE and HMS on, ASTROMETRY/PCC placeholders): postprocess sections
// from the phases' summaries and diagnostics, PNG previews of each image output written,
// registered and embedded, every file under outputs/ and artifacts/preprocess/ in the manifest,
// the frame plots' registration values equal to registration.json's matrices, and
// report.detailed false dropping the per-frame detail.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateDataset } from '../../fixtures/generator/index.js';
import { parseRawStackConfig } from '../../src/config/rawstack.js';
import type { ReportModel } from '../../src/report/model.js';
import { runRawStack } from '../../src/pipeline/rawstack/run.js';
import { withTempDir } from '../helpers/tmp.js';

async function walk(dir: string, rel: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...(await walk(join(dir, e.name), `${rel}/${e.name}`)));
    else out.push(`${rel}/${e.name}`);
  }
  return out;
}

test('report of an OSC run with BGE and HMS: sections, previews, complete manifest; detailed false', async () => {
  await withTempDir('report', async (dir) => {
    const data = join(dir, 'data');
    await generateDataset({ out: data, kind: 'osc', pattern: 'RGGB', frames: 8, width: 320, height: 240, seed: 31, calibration: false });
    const parsed = parseRawStackConfig({ lights_dir: join(data, 'lights'), hypermetric_stretch: { require_successful_pcc: false }, runtime_limits: { parallel_workers: 2, memory_budget: 256 } });
    assert.ok(parsed.ok);
    if (!parsed.ok) return;
    const result = await runRawStack(parsed.config, { runsDir: join(dir, 'runs') });
    assert.is(result.status, 'ok', JSON.stringify(result.phases));
    const art = join(result.runDir, 'artifacts', 'preprocess');
    const model = JSON.parse(await readFile(join(art, 'preprocessing_report.json'), 'utf8')) as ReportModel;

    // Sections: one per postprocess phase, with the phases' own values.
    const sec = Object.fromEntries(model.postprocess_results.map((s) => [s.phase, s]));
    assert.equal(Object.keys(sec).sort(), ['ASTROMETRY', 'BGE', 'HYPERMETRIC_STRETCH', 'PCC']);
    assert.is(sec.BGE!.status, 'ok');
    assert.is(sec.BGE!.values.success, true);
    assert.ok((sec.BGE!.values.samples_valid as number) > 0);
    assert.is((sec.BGE!.values.gradient_amplitude as number[]).length, 3);
    assert.is(sec.HYPERMETRIC_STRETCH!.status, 'ok');
    for (const k of ['anchor', 'log_d', 'profile', 'profile_source', 'color_strategy', 'target_bg']) assert.ok(k in sec.HYPERMETRIC_STRETCH!.values, k);
    assert.is.not(sec.PCC!.status, 'ok');
    assert.ok(sec.PCC!.reason, 'PCC placeholder: its reason is shown');
    assert.is(sec.PCC!.colour_relations, undefined);

    // Previews: one per image output, ≤ 800 px wide, written, registered, embedded.
    assert.equal(model.previews.map((p) => p.output), ['stacked_rgb', 'stacked_rgb_bge', 'stacked_rgb_hms']);
    const html = await readFile(join(art, 'preprocessing_report.html'), 'utf8');
    for (const p of model.previews) {
      assert.ok(p.width <= 800 && p.width > 0);
      const png = await readFile(join(result.runDir, p.path));
      assert.is(png.readUInt32BE(16), p.width);
      assert.ok(model.artifacts.some((a) => a.path === p.path && a.type === 'preview'));
      assert.ok(html.includes(`src="data:image/png;base64,${png.toString('base64')}"`), `${p.output} embedded`);
    }
    assert.is(model.previews.find((p) => p.output === 'stacked_rgb_hms')!.stretch, 'none');
    assert.match(html, /class="bars"/);
    assert.not.match(html, /<script/i);

    // Frame plots: each frame's registration in the model is its registration.json matrix's
    // centre shift and rotation; DATE-OBS is carried for the acquisition order.
    const reg = JSON.parse(await readFile(join(art, 'registration.json'), 'utf8')) as { frames: { index: number; matrix: [[number, number, number], [number, number, number]] | null }[] };
    const [w, hgt] = [model.input.width!, model.input.height!];
    let registered = 0;
    for (const f of model.frames) {
      const m = reg.frames.find((r) => r.index === f.index)!.matrix;
      assert.ok(f.date_obs && Number.isFinite(Date.parse(f.date_obs)), `frame ${f.index} DATE-OBS`);
      if (!m) {
        assert.equal([f.dx_px, f.dy_px, f.rotation_deg], [null, null, null], `frame ${f.index} has no transform`);
        continue;
      }
      registered++;
      const [cx, cy] = [(w - 1) / 2, (hgt - 1) / 2];
      assert.ok(Math.abs(f.dx_px! - (m[0][0] * cx + m[0][1] * cy + m[0][2] - cx)) < 6e-4, `frame ${f.index} dx`);
      assert.ok(Math.abs(f.dy_px! - (m[1][0] * cx + m[1][1] * cy + m[1][2] - cy)) < 6e-4, `frame ${f.index} dy`);
      assert.ok(Math.abs(f.rotation_deg! - (Math.atan2(m[1][0], m[0][0]) * 180) / Math.PI) < 6e-5, `frame ${f.index} rotation`);
      if (f.index === model.reference!.index) assert.equal([f.dx_px, f.dy_px, f.rotation_deg], [0, 0, 0]);
    }
    assert.ok(registered >= 6, `${registered} frames registered`);
    assert.ok(model.frames.some((f) => Math.abs(f.dx_px ?? 0) > 0.5), 'the generator dithers: some frame moved');
    const shiftSvg = /<svg [^>]*data-chart="shift"[^]*?<\/svg>/.exec(html)![0];
    assert.is((shiftSvg.match(/data-series="dx_px"/g) ?? []).length, registered + model.frames.filter((f) => f.status === 'excluded' && f.dx_px === null).length);

    // Manifest: every file under outputs/ and artifacts/preprocess/ is listed.
    const manifest = JSON.parse(await readFile(join(art, 'artifacts_manifest.json'), 'utf8')) as { artifacts: { type: string; phase: string; path: string }[] };
    const listed = new Set(manifest.artifacts.map((a) => a.path));
    const files = [...(await walk(join(result.runDir, 'outputs'), 'outputs')), ...(await walk(art, 'artifacts/preprocess'))];
    for (const f of files) assert.ok(listed.has(f), `${f} listed`);
    assert.ok(listed.has('artifacts/preprocess/events.jsonl'));

    // report.detailed false: frame table and charts gone, summary and exclusions kept.
    const brief = parseRawStackConfig({ lights_dir: join(data, 'lights'), postprocess: { bge: false, hypermetric_stretch: false }, report: { detailed: false }, runtime_limits: { parallel_workers: 2, memory_budget: 256 } });
    assert.ok(brief.ok);
    if (!brief.ok) return;
    const r2 = await runRawStack(brief.config, { runsDir: join(dir, 'runs2') });
    const art2 = join(r2.runDir, 'artifacts', 'preprocess');
    const m2 = JSON.parse(await readFile(join(art2, 'preprocessing_report.json'), 'utf8')) as ReportModel;
    assert.is(m2.detailed, false);
    assert.ok(m2.frames.every((f) => f.status === 'excluded'));
    assert.is(m2.quality.frames_total, 8);
    const html2 = await readFile(join(art2, 'preprocessing_report.html'), 'utf8');
    assert.not.match(html2, /<tr class="included">/);
    assert.is(sec.BGE!.phase, 'BGE');
    assert.equal(m2.postprocess_results.find((s) => s.phase === 'BGE')?.status, 'skipped');
  });
});

test.run();

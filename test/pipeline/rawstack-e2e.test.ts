// Raw Stack end to end on generated sessions (issue 5 bars): mono with full calibration, OSC
// RGGB and OSC GBRG. Every applicable artifact of the seed's table exists and parses, each
// phase has exactly one start and one end, the labelled bad frames leave with the right
// reasons, and the manifest lists only files that exist.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { parseRawStackConfig } from '../../src/config/rawstack.js';
import { FitsReader } from '../../src/fits/index.js';
import type { EventLine } from '../../src/pipeline/events.js';
import { RAWSTACK } from '../../src/pipeline/rawstack/definition.js';
import { runRawStack } from '../../src/pipeline/rawstack/run.js';
import { withTempDir } from '../helpers/tmp.js';

const CSV_HEADER = 'index,file,status,reason,star_count,fwhm,fwhm_x,fwhm_y,eccentricity,background,noise,snr,saturation,registration_cc,quality_score,weight';

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

interface Case {
  name: string;
  kind: 'mono' | 'osc';
  pattern?: 'RGGB' | 'GBRG';
  calibration: boolean;
  seed: number;
}

const CASES: Case[] = [
  { name: 'mono with bias, darks and flats', kind: 'mono', calibration: true, seed: 21 },
  { name: 'OSC RGGB', kind: 'osc', pattern: 'RGGB', calibration: false, seed: 22 },
  { name: 'OSC GBRG with calibration', kind: 'osc', pattern: 'GBRG', calibration: true, seed: 23 },
];

for (const c of CASES) {
  test(`end to end: ${c.name}`, async () => {
    await withTempDir('e2e', async (dir) => {
      const data = join(dir, 'data');
      const truth: Truth = await generateDataset({ out: data, kind: c.kind, ...(c.pattern ? { pattern: c.pattern } : {}), frames: 10, width: 640, height: 480, seed: c.seed, calibration: c.calibration });
      const parsed = parseRawStackConfig({
        lights_dir: join(data, 'lights'),
        ...(c.calibration ? { bias_dir: join(data, 'bias'), darks_dir: join(data, 'darks'), flats_dir: join(data, 'flats') } : {}),
        runtime_limits: { parallel_workers: 2, memory_budget: 256 },
      });
      assert.ok(parsed.ok);
      if (!parsed.ok) return;
      const result = await runRawStack(parsed.config, { runsDir: join(dir, 'runs') });
      assert.is(result.status, 'ok', JSON.stringify(result.phases));
      const art = join(result.runDir, 'artifacts', 'preprocess');

      // One start and one end per phase, in pipeline order, and nothing else in between.
      const lines = (await readFile(join(art, 'events.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as EventLine);
      const starts = lines.filter((l) => l.type === 'phase_start').map((l) => (l as { phase: string }).phase);
      const ends = lines.filter((l) => l.type === 'phase_end') as Extract<EventLine, { type: 'phase_end' }>[];
      const names = RAWSTACK.phases.map((p) => p.name);
      assert.equal(starts, names);
      assert.equal(ends.map((e) => e.phase), names);
      assert.is(lines[0]!.type, 'run_start');
      // run_start carries the plan: every phase in order, the postprocess phases optional.
      assert.equal((lines[0] as { phases?: unknown }).phases, RAWSTACK.phases.map((p) => ({ name: p.name, optional: ['ASTROMETRY', 'BGE', 'PCC', 'HYPERMETRIC_STRETCH'].includes(p.name) })));
      assert.is(lines[lines.length - 1]!.type, 'run_end');
      const status = Object.fromEntries(ends.map((e) => [e.phase, e.status]));
      assert.is(status.CALIBRATION, c.calibration ? 'ok' : 'skipped');
      for (const p of ['INPUT_SCAN', 'CFA_CHANNEL_PREP', 'REFERENCE_SELECTION', 'REGISTRATION', 'QUALITY_ANALYSIS', 'FRAME_FILTERING', 'STACKING', 'REPORT']) assert.is(status[p], 'ok', p);

      // Artifacts of the seed's table that apply, each parsing.
      for (const f of ['effective_config.json', 'stacking_diagnostics.json', 'artifacts_manifest.json', 'preprocessing_report.json', 'registration.json']) {
        JSON.parse(await readFile(join(art, f), 'utf8'));
      }
      // Local normalization's binned planes of every stacked frame came from QUALITY_ANALYSIS's
      // read (same binning and CFA sites): STACKING's setup read none of them again, and their
      // fits ran on the fit worker beside the band loop.
      const diag = JSON.parse(await readFile(join(art, 'stacking_diagnostics.json'), 'utf8')) as { frames_used: number; local_normalization: { premeasured_frames: number; fits_on_worker: number } };
      assert.is(diag.local_normalization.premeasured_frames, diag.frames_used);
      assert.is(diag.local_normalization.fits_on_worker, diag.frames_used);
      const csv = (await readFile(join(art, 'frame_quality.csv'), 'utf8')).trim().split('\n');
      assert.is(csv[0], CSV_HEADER);
      assert.is(csv.length, 11);
      assert.match(await readFile(join(art, 'preprocessing_report.html'), 'utf8'), /<svg /);
      assert.match(await readFile(join(art, 'preprocessing_report.md'), 'utf8'), /# Raw Stack report/);

      // The labelled bad frames leave with the right reasons; the satellite frame stays (rejection removes the trail).
      const rows = new Map(csv.slice(1).map((l) => [l.split(',')[1]!, l.split(',')]));
      for (const f of truth.frames) {
        const row = rows.get(f.file.replace('lights/', ''))!;
        const [stat, reason] = [row[2], row[3]];
        if (f.bad === 'clouds') assert.equal([stat, reason], ['excluded', 'low_transparency'], f.file);
        else if (f.bad === 'bad_seeing') assert.equal([stat, reason], ['excluded', 'fwhm_outlier'], f.file);
        else if (f.bad === 'trailed') assert.ok(stat === 'excluded' && ['eccentricity', 'low_correlation', 'registration_failed'].includes(reason!), `${f.file}: ${reason}`);
        else if (f.bad === 'satellite') assert.is(stat, 'included', f.file);
      }

      // Outputs: mono → stacked_linear.fits, OSC → stacked_rgb.fits with three planes.
      const out = c.kind === 'mono' ? result.outputs.stacked_linear : result.outputs.stacked_rgb;
      assert.ok(out, 'stacked output written');
      const reader = await FitsReader.open(out!);
      await reader.close();
      assert.equal(reader.layout.axes, c.kind === 'mono' ? [640, 480] : [640, 480, 3]);
      assert.is(reader.layout.bitpix, -32);
      assert.ok(Number(reader.header.get('NCOMBINE')) >= 6);
      if (c.calibration) assert.ok(await exists(join(result.runDir, 'outputs', 'calibrated', 'cal_00001.fit')));

      // The manifest lists only files that exist, with paths relative to the run folder.
      const manifest = JSON.parse(await readFile(join(art, 'artifacts_manifest.json'), 'utf8')) as { artifacts: { type: string; phase: string; path: string }[] };
      for (const a of manifest.artifacts) assert.ok(await exists(join(result.runDir, a.path)), a.path);
      for (const t of ['config', 'events', 'frame_quality', 'rejected_frames', 'registration', 'stacking_diagnostics', 'report_html']) {
        assert.ok(manifest.artifacts.some((a) => a.type === t), `manifest has ${t}`);
      }
    });
  });
}

test.run();

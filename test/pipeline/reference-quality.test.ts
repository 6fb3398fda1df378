// REFERENCE_SELECTION never picks a frame the quality filter's pre-registration rules reject.
// Fixture: real Tycho-2 stars of the Orion field (many bright, saturating stars) with the
// generator's bad frames and full calibration (the `npm run demo` session). There the badly
// focused frame has the highest quality_score (its bright stars saturate less, so their fluxes
// come out higher), which made it the reference before the rule existed; it is an FWHM outlier
// and must not be chosen.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { generateDataset } from '../../fixtures/generator/index.js';
import { TYCHO2_FIELDS, tycho2Field } from '../../fixtures/astrometry/tycho2.js';
import { withTempDir } from '../helpers/tmp.js';
import { standardPhases } from '../../src/pipeline/rawstack/run.js';
import { csvRecords, runPhasesOn } from './registration-phases-helpers.js';

const THROUGH_FILTERING = ['INPUT_SCAN', 'CALIBRATION', 'CFA_CHANNEL_PREP', 'REFERENCE_SELECTION', 'REGISTRATION', 'QUALITY_ANALYSIS', 'FRAME_FILTERING', 'REPORT'];

test('a bright-star field: the top-scored bad-seeing frame is not the reference', async () => {
  await withTempDir('refquality', async (dir) => {
    const truth = await generateDataset({
      out: join(dir, 'data'), kind: 'osc', pattern: 'RGGB', frames: 16, width: 1024, height: 768, seed: 1,
      skyStars: tycho2Field('orion'), ...TYCHO2_FIELDS.orion, focalLengthMm: 63,
    });
    const badSeeing = truth.frames.findIndex((f) => f.bad === 'bad_seeing');
    assert.ok(badSeeing >= 0, 'the fixture has a bad-seeing frame');
    const d = join(dir, 'data');
    const run = await runPhasesOn(join(d, 'lights'), join(dir, 'runs'), { bias_dir: join(d, 'bias'), darks_dir: join(d, 'darks'), flats_dir: join(d, 'flats') }, {
      phases: standardPhases().filter((p) => THROUGH_FILTERING.includes(p.name)),
    });
    assert.is(run.result.status, 'ok');
    const rs = run.end('REFERENCE_SELECTION') as unknown as { reference_index: number; not_candidates: { quality_rejected: number[] } };
    const rows = csvRecords(run);
    const scores = rows.map((r) => Number(r.quality_score));
    // Every star of this field saturates; the bad-seeing frame's stars must still be measured
    // (a rough scale taken from a wing candidate's flood into a saturated disc once sized every
    // window at 41 px and left the frame with no star).
    const fwhms = rows.filter((r) => r.fwhm !== '').map((r) => Number(r.fwhm)).sort((a, b) => a - b);
    assert.ok(Number(rows[badSeeing]!.star_count) >= 50, `bad-seeing frame measured ${rows[badSeeing]!.star_count} stars`);
    assert.ok(Number(rows[badSeeing]!.fwhm) > 1.4 * fwhms[fwhms.length >> 1]!, `bad-seeing FWHM ${rows[badSeeing]!.fwhm} vs median ${fwhms[fwhms.length >> 1]}`);
    assert.is(Math.max(...scores), scores[badSeeing], 'the fixture reproduces the case: the bad-seeing frame scores highest');
    console.log(`  scores ${scores.map((s) => s.toFixed(3)).join(' ')}; bad seeing #${badSeeing}; reference #${rs.reference_index}; not candidates ${rs.not_candidates.quality_rejected.join(',')}`);
    assert.ok(rs.not_candidates.quality_rejected.includes(badSeeing), 'the bad-seeing frame is rejected as a candidate');
    assert.is.not(rs.reference_index, badSeeing);
    const ref = rows.find((r) => Number(r.index) === rs.reference_index)!;
    assert.is(ref.status, 'included', 'the reference is a frame FRAME_FILTERING keeps');
    // The reference is the best-scored frame among those the filter keeps.
    const kept = rows.filter((r) => r.status === 'included').map((r) => Number(r.quality_score));
    assert.ok(Number(ref.quality_score) >= Math.max(...kept) - 0.05, `reference score ${ref.quality_score} vs kept max ${Math.max(...kept)}`);
  });
});

test.run();

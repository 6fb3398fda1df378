// Reference selection: best_quality (highest score among frames with enough stars, ties to the
// first, fallbacks) and temporal_midpoint (DATE-OBS midpoint, uneven spacing, unsorted input,
// file order without dates), unusable frames, typed failures, DATE-OBS parsing, and the midpoint
// of a generated sequence's own headers.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFitsHeader, keys } from '../../src/fits/index.js';
import { generateDataset } from '../../fixtures/generator/index.js';
import { parseDateObs, REFERENCE_MODES, selectReference, type ReferenceCandidate } from '../../src/algorithms/reference.js';
import { withTempDir } from '../helpers/tmp.js';

const t = (minutes: number) => `2026-03-14T21:${String(minutes).padStart(2, '0')}:00.000`;

test('best_quality: highest score among frames with ≥ min_stars; ties go to the first', () => {
  const frames: ReferenceCandidate[] = [
    { index: 0, quality_score: 0.5, star_count: 300 },
    { index: 1, quality_score: 0.9, star_count: 12 }, // too few stars to be a reference
    { index: 2, quality_score: 0.7, star_count: 250 },
    { index: 3, quality_score: 0.7, star_count: 400 },
    { index: 4, quality_score: 0.95, star_count: 500, usable: false },
  ];
  const r = selectReference(frames, 'best_quality');
  assert.ok(r.ok);
  if (!r.ok) return;
  assert.is(r.index, 2);
  assert.is(r.strategy, 'best_quality');
  assert.is(r.fallback, false);
  assert.is(r.quality_score, 0.7);
  assert.is(selectReference(frames, 'best_quality', { minStars: 10 }).ok && (selectReference(frames, 'best_quality', { minStars: 10 }) as { index: number }).index, 1);
  // Default mode is best_quality (the predecessor's only value).
  assert.is((selectReference(frames) as { index: number }).index, 2);
});

test('best_quality falls back: to frames with any stars, then to the temporal midpoint', () => {
  const few: ReferenceCandidate[] = [
    { index: 0, quality_score: 0.2, star_count: 5 },
    { index: 1, quality_score: 0.6, star_count: 8 },
    { index: 2, quality_score: 0.9, star_count: 0 },
  ];
  assert.is((selectReference(few) as { index: number }).index, 1, 'nobody has 30 stars: best with any');
  const unscored: ReferenceCandidate[] = [0, 1, 2, 3, 4].map((i) => ({ index: i, quality_score: NaN, date_obs: t(i * 2) }));
  const r = selectReference(unscored, 'best_quality');
  assert.ok(r.ok && r.index === 2 && r.strategy === 'temporal_midpoint' && r.fallback, `fallback ${JSON.stringify(r)}`);
});

test('temporal_midpoint: nearest the middle of first and last DATE-OBS, unsorted and uneven', () => {
  // Times 0, 2, 4, 30, 32 min: midpoint 16 → frame at 4 (12 away) beats 30 (14 away).
  const frames: ReferenceCandidate[] = [
    { index: 0, date_obs: t(32) },
    { index: 1, date_obs: t(0) },
    { index: 2, date_obs: t(30) },
    { index: 3, date_obs: t(4) },
    { index: 4, date_obs: t(2) },
  ];
  const r = selectReference(frames, 'temporal_midpoint');
  assert.ok(r.ok && r.index === 3 && r.strategy === 'temporal_midpoint' && !r.fallback);
  // A tie goes to the earlier frame: 0, 10, 20 → midpoint 10 exactly → frame at 10; 0, 10, 20, 30 → 15: 10 and 20 tie → 10.
  const tie: ReferenceCandidate[] = [0, 10, 20, 30].map((m, i) => ({ index: i, date_obs: new Date(Date.UTC(2026, 2, 14, 21, m)) }));
  assert.is((selectReference(tie, 'temporal_midpoint') as { index: number }).index, 1);
  // Unusable frames do not count (neither for the span nor as candidates).
  const withBad = [...tie, { index: 9, date_obs: t(59), usable: false }];
  assert.is((selectReference(withBad, 'temporal_midpoint') as { index: number }).index, 1);
});

test('temporal_midpoint without dates: the middle frame in file order', () => {
  const frames: ReferenceCandidate[] = [0, 1, 2, 3, 4, 5].map((i) => ({ index: i, date_obs: i === 3 ? null : t(i) }));
  const r = selectReference(frames, 'temporal_midpoint');
  assert.ok(r.ok && r.index === 2, `file-order middle of 6 is the 3rd: ${JSON.stringify(r)}`);
  assert.match((r as { detail: string }).detail, /file order/);
});

test('typed failures and DATE-OBS parsing', () => {
  assert.equal(selectReference([]), { ok: false, code: 'no_frames', detail: 'no frames to choose a reference from' });
  const r = selectReference([{ index: 0, usable: false }]);
  assert.is(r.ok, false);
  assert.is((r as { code: string }).code, 'no_usable_frame');
  assert.is(parseDateObs('2026-03-14T21:00:00.000'), Date.UTC(2026, 2, 14, 21));
  assert.is(parseDateObs('2026-03-14T21:00:00Z'), Date.UTC(2026, 2, 14, 21));
  assert.is(parseDateObs('2026-03-14'), Date.UTC(2026, 2, 14));
  assert.is(parseDateObs('2026-03-14T23:00:00+02:00'), Date.UTC(2026, 2, 14, 21));
  assert.ok(Number.isNaN(parseDateObs('not a date')));
  assert.ok(Number.isNaN(parseDateObs(null)));
  assert.equal([...REFERENCE_MODES], ['best_quality', 'temporal_midpoint']);
});

test('generated sequence: DATE-OBS from the headers gives the middle frame', async () => {
  await withTempDir('reference', async (out) => {
    const truth = await generateDataset({ out, kind: 'mono', frames: 7, width: 64, height: 48, seed: 2, calibration: false, badFrames: 'none' });
    const frames: ReferenceCandidate[] = [];
    for (const f of truth.frames) {
      const { header } = await readFitsHeader(`${out}/${f.file}`);
      frames.push({ index: f.index, file: f.file, date_obs: keys.dateObs(header) ?? null });
    }
    const r = selectReference(frames, 'temporal_midpoint');
    assert.ok(r.ok && r.index === 3, `middle of 7 evenly spaced frames: ${JSON.stringify(r)}`);
  });
});

test.run();

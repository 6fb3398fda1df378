// STACKING and DEBAYER.
// STACKING: Raw Stack's stacking phase (setup, band plan under runtime_limits.memory_budget,
//   band loop of the shared engine, output with provenance) with two changes (its
//   StackingVariant): the mono output is outputs/stacked.fits, and the engine weights every frame
//   per pixel from TILE_RECONSTRUCTION's table turned into a smooth field
//   (stages/stacking/weightfield.ts), so the tiles' G·L weights reach the output in one pass with
//   per-pixel sigma/winsor rejection over all frames. OSC frames are debayered (bilinear) in the
//   band chain: outputs/stacked_rgb.fits. Then validation.json (../validation.ts); a failed check
//   is a warning (`validation_failed`), the run goes on.
// DEBAYER: not needed: STACKING already debayered (OSC), or there is nothing to debayer (mono).

import { keys, readFitsHeader, readFitsImage } from '../../../fits/index.js';
import { debayerBilinear } from '../../../cpu/debayer.js';
import { frameCfaPhase } from '../../stages/cfa-phase.js';
import { gpuFor } from '../../device-policy.js';
import { ok, skipped, type PhaseContext } from '../../phase.js';
import { stackingPhaseWith } from '../../rawstack/phases/stacking.js';
import type { RawStackState } from '../../rawstack/state.js';
import { weightField } from '../../stages/stacking/weightfield.js';
import type { StackSetup } from '../../rawstack/stacking-setup.js';
import { fromRawStack, writeArtifact, tiledPhase, round5 } from '../records.js';
import type { TiledPhase } from '../reasons.js';
import type { TiledState } from '../state.js';
import { tileCount } from '../tile-grid.js';
import { imageFwhm, luminance, seamScore, STACK_SATURATION_MARGIN } from '../validation.js';

/** The field for the engine's slots (setup order) from the tile table, or null (per-frame weights). */
function fieldFor(ctx: PhaseContext<RawStackState>, setup: StackSetup) {
  const s = ctx.state as TiledState;
  const g = s.tiled.grid;
  const t = s.tiled.table;
  if (!g || !t) return null;
  if (setup.binning !== 1 || setup.width !== g.imageWidth || setup.height !== g.imageHeight) {
    ctx.warn('weight_field_off', 'the stack is not on the tile grid (superpixel binning): per-frame weights');
    return null;
  }
  const n = tileCount(g);
  const row = new Map(t.frames.map((idx, k) => [idx, k]));
  const table = new Float32Array(setup.frames.length * n);
  setup.frames.forEach((f, slot) => {
    const k = row.get(f.record.index);
    // A frame the tables do not know (not measured) gets the smallest weight of each tile.
    for (let tile = 0; tile < n; tile++) {
      let v = Infinity;
      if (k !== undefined) v = t.table[k * n + tile]!;
      else for (let j = 0; j < t.frames.length; j++) v = Math.min(v, t.table[j * n + tile]!);
      table[slot * n + tile] = v;
    }
  });
  // Re-normalised over the stacked frames (columns sum to 1).
  for (let tile = 0; tile < n; tile++) {
    let sum = 0;
    for (let slot = 0; slot < setup.frames.length; slot++) sum += table[slot * n + tile]!;
    for (let slot = 0; slot < setup.frames.length; slot++) table[slot * n + tile] = table[slot * n + tile]! / sum;
  }
  return weightField(table, g.originsX, g.originsY, g.sizeX, g.sizeY, setup.width, setup.height);
}

const referenceOf = (s: TiledState) => (s.referenceIndex === null ? undefined : s.frames.find((f) => f.index === s.referenceIndex));

/** The stack's saturation level for star measurement: the reference frame's (calibrated) level with the margin, or undefined when its header has none. */
async function stackSaturationLevel(ref: TiledState['frames'][number] | undefined): Promise<number | undefined> {
  const file = ref?.calibratedFile ?? ref?.file;
  if (!file) return undefined;
  try {
    const level = keys.saturationLevel((await readFitsHeader(file)).header);
    return level !== undefined && level > 0 ? level * STACK_SATURATION_MARGIN : undefined;
  } catch {
    return undefined;
  }
}

/**
 * OSC: the frames' FWHM (the seeing) is measured on the raw mosaic, the stack's on its debayered
 * luminance, which the bilinear interpolation widens (~1.3× on the demo's 2.5 px stars). The
 * factor between the two domains, measured on the reference frame itself (its calibrated mosaic
 * debayered as STACKING debayers, against its own metric FWHM), puts the seeing into the stack's
 * domain. Null when it cannot be measured (no reference, another size, no stars).
 */
async function mosaicToStackFwhm(s: TiledState, ref: TiledState['frames'][number] | undefined, width: number, height: number, level: number | undefined): Promise<{ factor: number; mosaic: number; debayered: number } | null> {
  const mosaic = ref?.metrics?.fwhm;
  if (!ref || !s.bayer || !(mosaic !== undefined && mosaic > 0)) return null;
  try {
    const img = await readFitsImage(ref.calibratedFile ?? ref.file);
    if (img.width !== width || img.height !== height || img.planes !== 1) return null;
    const h = (await readFitsHeader(ref.file)).header;
    const rgb = debayerBilinear(img.data, { width, height, pattern: frameCfaPhase(s.bayer, h, height) });
    const lum = new Float32Array(width * height);
    for (let i = 0; i < lum.length; i++) lum[i] = (rgb.r[i]! + rgb.g[i]! + rgb.b[i]!) / 3;
    const debayered = imageFwhm(lum, width, height, level).fwhm;
    return Number.isFinite(debayered) && debayered > 0 ? { factor: debayered / mosaic, mosaic, debayered } : null;
  } catch {
    return null;
  }
}

const inner = fromRawStack(stackingPhaseWith({ monoName: 'stacked.fits', weightField: fieldFor, weightFieldGpu: (state) => gpuFor(state.gpu, 'stack_weightfield') }));

export const tiledStackingPhase: TiledPhase = tiledPhase('STACKING', ['stacking', 'normalization', 'validation'], {
  ...inner,
  name: 'STACKING',
  async run(ctx) {
    const outcome = await inner.run(ctx);
    if (outcome.status !== 'ok') return outcome;
    const s = ctx.state;
    const file = s.outputs.stacked_rgb ?? s.outputs.stacked_linear;
    const g = s.tiled.grid;
    if (!file || !g) return outcome;
    const img = await readFitsImage(file);
    const lum = luminance(img.data, img.width, img.height, img.planes);
    const ref = referenceOf(s);
    const level = await stackSaturationLevel(ref);
    const out = imageFwhm(lum, img.width, img.height, level);
    const seam = seamScore(lum, img.width, img.height, g);
    const v = s.config.tiled.validation;
    const domain = img.planes === 3 ? await mosaicToStackFwhm(s, ref, img.width, img.height, level) : null;
    const seeing = g.seeingFwhm * (domain?.factor ?? 1);
    const improvement = ((seeing - out.fwhm) / seeing) * 100;
    const checks = {
      fwhm: {
        seeing_fwhm: round5(g.seeingFwhm),
        ...(domain ? { seeing_fwhm_debayered: round5(seeing), debayer_factor: round5(domain.factor), reference_fwhm_mosaic: round5(domain.mosaic), reference_fwhm_debayered: round5(domain.debayered) } : {}),
        output_fwhm: round5(out.fwhm),
        output_stars: out.stars,
        fwhm_improvement_percent: round5(improvement),
        min_fwhm_improvement_percent: v.min_fwhm_improvement_percent,
        pass: Number.isFinite(improvement) && improvement >= v.min_fwhm_improvement_percent,
      },
      seams: { lines: seam.lines, pooled: round5(seam.pooled), max: round5(seam.max), p95: round5(seam.p95), max_seam_score: v.max_seam_score, required: v.require_no_tile_pattern, pass: !v.require_no_tile_pattern || !(seam.pooled > v.max_seam_score) },
    };
    let nan = 0;
    for (const x of lum) if (!Number.isFinite(x)) nan++;
    const pass = checks.fwhm.pass && checks.seams.pass;
    // The report's stacking table says which weighting ran and why, and what clustering did.
    const clustering = ctx.outcomes.get('STATE_CLUSTERING');
    s.summaries.STACKING = {
      ...(s.summaries.STACKING ?? {}),
      weighting: s.tiled.table ? `${s.tiled.table.mode}: ${s.tiled.table.reason}` : 'per frame',
      state_clustering: clustering?.status === 'skipped' ? `off (${clustering.reason}${clustering.message ? `: ${clustering.message}` : ''})` : clustering?.status === 'ok' ? 'per-cluster weight tables' : 'not run',
      validation: pass ? 'pass' : 'fail',
      fwhm_improvement_percent: checks.fwhm.fwhm_improvement_percent,
      seam_score: checks.seams.pooled,
    };
    const rel = await writeArtifact(s, 'STACKING', 'validation.json', { pass, weight_mode: s.tiled.table?.mode ?? null, weight_reason: s.tiled.table?.reason ?? null, no_data_pixels: nan, ...checks });
    if (!pass) ctx.warn('validation_failed', `validation: ${[!checks.fwhm.pass ? `FWHM improvement ${round5(improvement)} % below ${v.min_fwhm_improvement_percent} %` : '', !checks.seams.pass ? `seam score ${round5(seam.pooled)} above ${v.max_seam_score}` : ''].filter(Boolean).join('; ')}`);
    return ok({ ...(outcome.details ?? {}), weight_mode: s.tiled.table?.mode ?? null, validation: rel, validation_pass: pass });
  },
});

export const debayerPhase: TiledPhase = tiledPhase('DEBAYER', [], {
  name: 'DEBAYER',
  optional: false,
  async run(ctx) {
    return skipped('not_needed', ctx.state.colorMode === 'OSC' ? 'STACKING debayered the frames (bilinear) in its band chain: outputs/stacked_rgb.fits' : 'mono data: nothing to debayer');
  },
});

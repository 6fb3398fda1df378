// The visible Raw Stack fields (seed "Input fields of a Raw Stack run", "Calibration", "Quality
// filter", "Stack fields", "Postprocess switches", plus PCC's catalogue file, without which a
// user could not point PCC at their own catalogue) and the parameter each one stands for
// (docs/ARCHITECTURE.md "Configuration" key layout). The page reads and writes the form only through this table, so the
// precedence rule "visible fields override the editor" is one merge of `readForm()` over the
// editor's JSON.

import { byId } from './dom.js';
import { getPath, setPath, type Json } from './config-paths.js';

export type FieldKind = 'text' | 'number' | 'select' | 'checkbox';

export interface FormField {
  /** Element id in index.html. */
  id: string;
  /** Dotted parameter path. */
  path: string;
  kind: FieldKind;
}

const f = (id: string, path: string, kind: FieldKind): FormField => ({ id, path, kind });

export const FORM_FIELDS: readonly FormField[] = [
  // input
  f('lights_dir', 'lights_dir', 'text'),
  f('pattern', 'pattern', 'text'),
  f('runs_dir', 'runs_dir', 'text'),
  f('run_name', 'run_name', 'text'),
  f('frames_min', 'frames_min', 'number'),
  f('max_frames', 'max_frames', 'number'),
  f('input_mode', 'input_mode', 'select'),
  f('bayer_pattern', 'bayer_pattern', 'select'),
  f('checksums', 'checksums', 'checkbox'),
  f('keep_calibrated_frames', 'output.keep_calibrated_frames', 'checkbox'),
  // calibration
  f('use_bias', 'calibration.use_bias', 'checkbox'),
  f('bias_use_master', 'calibration.bias_use_master', 'checkbox'),
  f('bias_dir', 'bias_dir', 'text'),
  f('bias_master', 'calibration.bias_master', 'text'),
  f('use_dark', 'calibration.use_dark', 'checkbox'),
  f('dark_use_master', 'calibration.dark_use_master', 'checkbox'),
  f('darks_dir', 'darks_dir', 'text'),
  f('dark_master', 'calibration.dark_master', 'text'),
  f('use_flat', 'calibration.use_flat', 'checkbox'),
  f('flat_use_master', 'calibration.flat_use_master', 'checkbox'),
  f('flats_dir', 'flats_dir', 'text'),
  f('flat_master', 'calibration.flat_master', 'text'),
  f('dark_auto_select', 'calibration.dark_auto_select', 'checkbox'),
  f('dark_match_use_temp', 'calibration.dark_match_use_temp', 'checkbox'),
  // quality filter
  f('qf_mode', 'quality_filter.mode', 'select'),
  f('qf_min_stars', 'quality_filter.min_stars', 'number'),
  f('qf_min_correlation', 'quality_filter.min_correlation', 'number'),
  f('qf_max_fwhm_sigma', 'quality_filter.max_fwhm_sigma', 'number'),
  f('qf_max_eccentricity', 'quality_filter.max_eccentricity', 'number'),
  // stack
  f('rej_method', 'rejection.method', 'select'),
  f('rej_low', 'rejection.low', 'number'),
  f('rej_high', 'rejection.high', 'number'),
  f('stack_normalization', 'stacking.normalization', 'select'),
  f('stack_weighting', 'stacking.weighting', 'select'),
  // postprocess switches
  f('pp_astrometry', 'postprocess.astrometry', 'checkbox'),
  f('pp_bge', 'postprocess.bge', 'checkbox'),
  f('pp_pcc', 'postprocess.pcc', 'checkbox'),
  f('pcc_catalog_file', 'pcc.catalog_file', 'text'),
  f('pp_hms', 'postprocess.hypermetric_stretch', 'checkbox'),
];

export function fieldByPath(path: string): FormField | undefined {
  return FORM_FIELDS.find((x) => x.path === path);
}

type Input = HTMLInputElement | HTMLSelectElement;

/** Shows the values of `config` in the form (missing keys leave a field as it is). */
export function fillForm(config: Json): void {
  for (const field of FORM_FIELDS) {
    const v = getPath(config, field.path);
    if (v === undefined) continue;
    const el = byId<Input>(field.id);
    if (field.kind === 'checkbox') (el as HTMLInputElement).checked = v === true;
    else if (field.kind === 'select') {
      // Case-insensitive match (the schema accepts `osc`, `rggb`...).
      const opt = Array.from((el as HTMLSelectElement).options).find((o) => o.value.toLowerCase() === String(v).toLowerCase());
      el.value = opt ? opt.value : String(v);
    } else el.value = v === null ? '' : String(v);
  }
}

/** The form as a parameter layer. An empty number field is left out (the editor's value stands). */
export function readForm(): Json {
  const out: Json = {};
  for (const field of FORM_FIELDS) {
    const el = byId<Input>(field.id);
    if (field.kind === 'checkbox') setPath(out, field.path, (el as HTMLInputElement).checked);
    else if (field.kind === 'number') {
      const text = el.value.trim();
      if (text === '') continue;
      const n = Number(text);
      // A non-number stays text so validation names the key instead of the form hiding it.
      setPath(out, field.path, Number.isFinite(n) ? n : text);
    } else setPath(out, field.path, el.value);
  }
  return out;
}

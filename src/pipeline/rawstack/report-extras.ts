// Helpers of the REPORT phase (phases/report.ts): postprocess sections from summaries and
// diagnostics files, PNG previews of the image outputs, and the manifest completion scan.
// All of them are best-effort: REPORT must not fail because an earlier phase left state or
// files half-written, so every read is guarded and a failure becomes a warning or a gap.

import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { artifactPath } from '../../shared/run-layout.js';
import { writeFileAtomic } from '../atomic.js';
import { inRunFolder } from '../run-folder.js';
import type { ReportColourRelation, ReportPhase, ReportPostprocessSection, ReportPreview } from '../../report/model.js';
import { renderPreview } from '../../report/preview.js';
import type { RawStackState } from './state.js';

type Value = ReportPostprocessSection['values'][string];

/**
 * Scalars and short numeric arrays of an object (nested objects stay in the JSON files). Nulls,
 * empty arrays and duration_ms (the phase table has it) are left out to keep sections short.
 */
function scalars(obj: Record<string, unknown> | undefined, into: Record<string, Value>): void {
  if (!obj) return;
  for (const [k, v] of Object.entries(obj)) {
    if (k in into || k === 'duration_ms' || v === null || (Array.isArray(v) && v.length === 0)) continue;
    if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') into[k] = v;
    else if (Array.isArray(v) && v.length <= 8 && v.every((x) => typeof x === 'number')) into[k] = v as number[];
  }
}

async function readJson(file: string): Promise<Record<string, unknown> | undefined> {
  try {
    const v: unknown = JSON.parse(await readFile(file, 'utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const POSTPROCESS = [
  { phase: 'ASTROMETRY', diag: null },
  { phase: 'BGE', diag: 'bge_diagnostics.json' },
  { phase: 'PCC', diag: 'pcc_diagnostics.json' },
  { phase: 'HYPERMETRIC_STRETCH', diag: 'hms_diagnostics.json' },
] as const;

/**
 * One section per postprocess phase that started or left data. Values: the phase's summary
 * first (state.summaries), then the scalars of its diagnostics file; BGE adds the per-channel
 * gradient amplitudes (the removed gradient) from bge_diagnostics.json's channels. PCC's colour
 * relations (summaries.PCC.colour_relations, phases/pcc.ts) become the section's plots.
 */
export async function postprocessSections(state: RawStackState, phases: readonly ReportPhase[]): Promise<ReportPostprocessSection[]> {
  const out: ReportPostprocessSection[] = [];
  for (const { phase, diag } of POSTPROCESS) {
    const row = phases.find((p) => p.phase === phase);
    const summary = state.summaries[phase];
    const file = diag ? await readJson(join(state.folder.artifactsDir, diag)) : undefined;
    if ((!row || row.status === 'not_started') && !summary && !file) continue;
    const values: Record<string, Value> = {};
    scalars(summary, values);
    scalars(file, values);
    if (phase === 'BGE' && file && Array.isArray(file.channels)) {
      const ch = file.channels as Record<string, unknown>[];
      const amp = ch.map((c) => c.gradient_amplitude);
      if (amp.every((a) => typeof a === 'number')) values.gradient_amplitude ??= amp as number[];
      const sky = ch.map((c) => c.sky_level);
      if (sky.every((a) => typeof a === 'number')) values.sky_level ??= sky as number[];
    }
    if (phase === 'BGE' && file?.fit && typeof file.fit === 'object') scalars(file.fit as Record<string, unknown>, values);
    const section: ReportPostprocessSection = { phase, status: row?.status ?? 'not_started', values };
    if (row?.reason) section.reason = row.reason;
    if (row?.message) section.message = row.message;
    const rel = summary?.colour_relations as Record<string, unknown> | undefined;
    if (phase === 'PCC' && rel && typeof rel === 'object') {
      const one = (v: unknown): ReportColourRelation | null => {
        const r = v as Partial<ReportColourRelation> | undefined;
        if (!r || typeof r.slope !== 'number' || typeof r.scatter !== 'number' || !Array.isArray(r.points)) return null;
        const points = r.points.filter((p) => !!p && typeof p.x === 'number' && typeof p.y === 'number').map((p) => ({ x: p.x, y: p.y, used: p.used !== false }));
        return points.length ? { points, slope: r.slope, scatter: r.scatter, slope_fixed: r.slope_fixed === true } : null;
      };
      const rg = one(rel.rg);
      const bg = one(rel.bg);
      if (rg && bg) section.colour_relations = { rg, bg };
    }
    out.push(section);
  }
  return out;
}

const PREVIEW_OUTPUTS = ['stacked_linear', 'stacked_rgb', 'stacked_rgb_bge', 'stacked_rgb_pcc', 'stacked_rgb_starwhite', 'stacked_rgb_hms'] as const;

/**
 * Writes preview_<output>.png into the artifacts folder for each image output present and returns
 * the previews with their PNG bytes as base64 (for the HTML's data: URIs). The HMS output is
 * already stretched and is shown as is; the others get the auto STF.
 */
export async function writePreviews(state: RawStackState, warn: (msg: string) => void): Promise<{ previews: ReportPreview[]; data: Record<string, string> }> {
  const previews: ReportPreview[] = [];
  const data: Record<string, string> = {};
  for (const output of PREVIEW_OUTPUTS) {
    const file = state.outputs[output];
    if (!file) continue;
    try {
      const p = await renderPreview(file, { maxWidth: 800, stretch: output === 'stacked_rgb_hms' ? 'none' : 'auto' });
      const name = `preview_${output}.png`;
      const path = artifactPath(state.folder.layout, name);
      await writeFileAtomic(inRunFolder(state.folder, path), p.png);
      previews.push({ output, path, width: p.width, height: p.height, source_width: p.source_width, source_height: p.source_height, factor: p.factor, stretch: p.stretch });
      data[path] = p.png.toString('base64');
    } catch (e) {
      warn(`preview of ${output} not written: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return { previews, data };
}

/** Type and phase of a file found by the manifest scan, from its name. */
export function classifyArtifact(name: string): { type: string; phase: string } {
  const base = name.replace(/\.[^.]*$/, '');
  const rules: [RegExp, string][] = [
    [/^master_/, 'CALIBRATION'],
    [/bge/, 'BGE'],
    [/pcc/, 'PCC'],
    [/hms/, 'HYPERMETRIC_STRETCH'],
    [/^(stacked_|stacking_)/, 'STACKING'],
    [/^frame_quality|quality/, 'FRAME_FILTERING'],
    [/registration/, 'REGISTRATION'],
    [/reference/, 'REFERENCE_SELECTION'],
    [/^preview_|report|manifest/, 'REPORT'],
    [/^events$/, 'RUN'],
  ];
  return { type: base, phase: rules.find(([re]) => re.test(base))?.[1] ?? 'unknown' };
}

/**
 * Completes state.artifacts with every file under outputs/ and the artifacts folder that no
 * phase registered. Calibrated frames (outputs/calibrated/) are one `calibrated_frames` entry
 * for the folder (path ends in '/'): a run can write thousands, and they are one product.
 * Hidden files (the atomic writer's in-flight temporaries) are not artifacts.
 */
export async function scanArtifacts(state: RawStackState, add: (type: string, phase: string, path: string) => void): Promise<void> {
  const walk = async (abs: string, rel: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(abs, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.name.startsWith('.')) continue;
      const r = `${rel}/${e.name}`;
      if (e.isDirectory()) {
        if (r === state.folder.layout.calibrated) {
          const files = await readdir(join(abs, e.name)).catch(() => [] as string[]);
          if (files.some((f) => !f.startsWith('.'))) add('calibrated_frames', 'CALIBRATION', `${r}/`);
        } else await walk(join(abs, e.name), r);
      } else if (e.isFile()) {
        const c = classifyArtifact(e.name);
        add(c.type, c.phase, r);
      }
    }
  };
  await walk(state.folder.outputsDir, state.folder.layout.outputs);
  await walk(state.folder.artifactsDir, state.folder.layout.artifacts);
}

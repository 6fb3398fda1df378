// Shared by the REFERENCE_SELECTION … FRAME_FILTERING tests: runs INPUT_SCAN, the four phases and
// REPORT on a generated fixture set (TypeScript device, so no GPU is needed) and reads back the
// events and artifacts.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseRawStackConfig, type RawStackConfigInput } from '../../src/config/rawstack.js';
import type { EventLine } from '../../src/pipeline/events.js';
import { inputScanPhase } from '../../src/pipeline/rawstack/phases/input-scan.js';
import { referenceSelectionPhase } from '../../src/pipeline/rawstack/phases/reference-selection.js';
import { registrationPhase } from '../../src/pipeline/rawstack/phases/registration.js';
import { qualityAnalysisPhase } from '../../src/pipeline/rawstack/phases/quality-analysis.js';
import { frameFilteringPhase } from '../../src/pipeline/rawstack/phases/frame-filtering.js';
import { reportPhase } from '../../src/pipeline/rawstack/phases/report.js';
import { runRawStack, type RawStackRunResult } from '../../src/pipeline/rawstack/run.js';
import type { RegistrationJson } from '../../src/pipeline/rawstack/registration-artifact.js';
import type { Phase } from '../../src/pipeline/phase.js';
import type { RawStackState } from '../../src/pipeline/rawstack/state.js';

export const MY_PHASES = [inputScanPhase, referenceSelectionPhase, registrationPhase, qualityAnalysisPhase, frameFilteringPhase, reportPhase];

export interface PhaseRun {
  result: RawStackRunResult;
  lines: EventLine[];
  csv: string[][];
  csvHeader: string;
  rejected: string[];
  registration: RegistrationJson | null;
  manifest: { run_id: string; artifacts: { type: string; phase: string; path: string }[] };
  end(phase: string): Extract<EventLine, { type: 'phase_end' }>;
}

async function readOr(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

/** Splits one CSV line (RFC 4180 quoting). */
export function splitCsv(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cur += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

export async function runPhasesOn(lightsDir: string, runsDir: string, config: RawStackConfigInput = {}, options: { signal?: AbortSignal; onEvent?: (l: EventLine) => void; phases?: Phase<RawStackState>[] } = {}): Promise<PhaseRun> {
  const parsed = parseRawStackConfig({ lights_dir: lightsDir, ...config });
  if (!parsed.ok) throw new Error(`config: ${JSON.stringify(parsed.issues)}`);
  const result = await runRawStack(parsed.config, { runsDir, device: 'cpu', phases: options.phases ?? MY_PHASES, ...(options.signal ? { signal: options.signal } : {}), ...(options.onEvent ? { onEvent: options.onEvent } : {}) });
  const art = (name: string) => join(result.runDir, 'artifacts', 'preprocess', name);
  const lines = (await readFile(art('events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as EventLine);
  const csvText = (await readOr(art('frame_quality.csv'))) ?? '';
  const csvLines = csvText.split('\n').filter((l) => l !== '');
  const rejectedText = (await readOr(art('rejected_frames.txt'))) ?? '';
  const regText = await readOr(art('registration.json'));
  const manifest = JSON.parse((await readOr(art('artifacts_manifest.json'))) ?? '{"artifacts":[]}');
  return {
    result,
    lines,
    csvHeader: csvLines[0] ?? '',
    csv: csvLines.slice(1).map(splitCsv),
    rejected: rejectedText.split('\n').filter((l) => l !== ''),
    registration: regText ? (JSON.parse(regText) as RegistrationJson) : null,
    manifest,
    end(phase) {
      const e = lines.find((l): l is Extract<EventLine, { type: 'phase_end' }> => l.type === 'phase_end' && l.phase === phase);
      if (!e) throw new Error(`no phase_end for ${phase}`);
      return e;
    },
  };
}

export const CSV_COLUMNS = 'index,file,status,reason,star_count,fwhm,fwhm_x,fwhm_y,eccentricity,background,noise,snr,saturation,registration_cc,quality_score,weight'.split(',');

/** The CSV rows as objects keyed by column name. */
export function csvRecords(run: PhaseRun): Record<string, string>[] {
  return run.csv.map((cells) => Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, cells[i] ?? ''])));
}

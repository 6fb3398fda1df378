// Frame scanning: which files in a folder are lights (simple glob), what their headers say
// (size, exposure, temperature, filter, Bayer pattern), whether they are readable at all, and a
// summary with the groups users trip over (mixed sizes, exposures, filters). Reads headers
// only, never pixel data; optional SHA-256 streams the file. Used by INPUT_SCAN and the scan API.
// Under a read confinement (confine.ts) entries that resolve outside the roots are left out.

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { isFitsError, keys, readFitsHeader, type FitsErrorCode, type FitsHeader } from '../../../fits/index.js';
import type { BayerPattern } from '../../../fits/keys.js';
import { forEachLimit } from '../../concurrency.js';
import { confinedNames, readConfinement, type ReadConfinement } from './confine.js';

export interface FrameInfo {
  index: number;
  file: string;
  name: string;
  ok: true;
  width: number;
  height: number;
  planes: number;
  bitpix: number;
  bytes: number;
  exptime: number | null;
  temperature: number | null;
  gain: number | null;
  filter: string | null;
  imageType: string | null;
  dateObs: string | null;
  bayer: BayerPattern | null;
  colorType: string | null;
  hasBayerOffsets: boolean;
  sha256?: string;
}

export interface UnreadableFrame {
  index: number;
  file: string;
  name: string;
  ok: false;
  code: FitsErrorCode | 'READ_FAILED';
  message: string;
}

export type ScannedFrame = FrameInfo | UnreadableFrame;

/**
 * Compiles `*.fits`, `light_*.fit;*.fits` (";"-separated alternatives) into a case-insensitive
 * matcher: `*` matches any run of characters, `?` one character (a frame name is one path
 * segment: a name holding `/` never matches). No RegExp: a backtracking engine takes
 * exponential time on patterns such as `*a*a*a*a*b`, and patterns come from requests.
 */
export function globMatcher(pattern: string): (name: string) => boolean {
  const alternatives = pattern
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p.length > 0)
    .map((p) => Array.from(p.toLowerCase()));
  return (name) => {
    if (name.includes('/')) return false;
    const chars = Array.from(name.toLowerCase());
    return alternatives.some((p) => wildcardMatch(p, chars));
  };
}

/**
 * The two-pointer wildcard walk. When a literal fails, only the most recent `*` takes one more
 * character and the rest is retried after it: moving an earlier `*` can never help, because
 * the text between two stars is matched at its leftmost place. So each name character is
 * revisited at most once per pattern position: O(name × pattern) steps in the worst case.
 */
function wildcardMatch(p: string[], n: string[]): boolean {
  let i = 0;
  let j = 0;
  let star = -1;
  let resume = 0;
  while (i < n.length) {
    if (j < p.length && p[j] === '*') {
      star = j++;
      resume = i;
    } else if (j < p.length && (p[j] === '?' || p[j] === n[i])) {
      i++;
      j++;
    } else if (star >= 0) {
      j = star + 1;
      i = ++resume;
    } else {
      return false;
    }
  }
  while (j < p.length && p[j] === '*') j++;
  return j === p.length;
}

export function frameInfoFromHeader(index: number, file: string, header: FitsHeader, layout: { width: number; height: number; planes: number; bitpix: number; dataBytes: number }): FrameInfo {
  return {
    index,
    file,
    name: basename(file),
    ok: true,
    width: layout.width,
    height: layout.height,
    planes: layout.planes,
    bitpix: layout.bitpix,
    bytes: layout.dataBytes,
    exptime: keys.exposureSeconds(header) ?? null,
    temperature: keys.sensorTemperature(header) ?? null,
    gain: keys.gain(header) ?? null,
    filter: keys.filterName(header) ?? null,
    imageType: keys.imageType(header) ?? null,
    dateObs: keys.dateObs(header)?.toISOString() ?? null,
    bayer: keys.bayerPattern(header) ?? null,
    colorType: keys.colorType(header) ?? null,
    hasBayerOffsets: header.has('XBAYROFF') || header.has('YBAYROFF'),
  };
}

/** SHA-256 of a file's bytes (input.checksums; resume checks a light against it). */
export async function sha256(file: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash('sha256');
  const stream = createReadStream(file, signal ? { signal } : {});
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export interface ScanOptions {
  pattern: string;
  /** 0 = all. Frames are taken in name order. */
  maxFrames?: number;
  checksums?: boolean;
  concurrency?: number;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number, frame: ScannedFrame) => void;
  /** Keep only entries inside these roots (default: the process's, see confine.ts). */
  confine?: ReadConfinement | null;
}

export class ScanError extends Error {
  constructor(
    readonly code: 'PATH_NOT_FOUND' | 'NOT_A_DIRECTORY' | 'UNREADABLE_INPUT',
    message: string,
  ) {
    super(message);
  }
}

/** Lists matching files (sorted by name, natural order) and reads each header. */
export async function scanFolder(dir: string, options: ScanOptions): Promise<ScannedFrame[]> {
  let info;
  try {
    info = await stat(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new ScanError(code === 'ENOENT' ? 'PATH_NOT_FOUND' : 'UNREADABLE_INPUT', `${dir}: ${code === 'ENOENT' ? 'folder does not exist' : (e as Error).message}`);
  }
  if (!info.isDirectory()) throw new ScanError('NOT_A_DIRECTORY', `${dir}: not a folder`);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (e) {
    throw new ScanError('UNREADABLE_INPUT', `${dir}: ${(e as Error).message}`);
  }
  const match = globMatcher(options.pattern);
  const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
  let files = names.filter((n) => match(n) && !n.startsWith('.')).sort(collator.compare);
  const confine = options.confine === undefined ? readConfinement() : options.confine;
  if (confine) files = await confinedNames(dir, files, confine);
  if (options.maxFrames && options.maxFrames > 0) files = files.slice(0, options.maxFrames);

  const out: ScannedFrame[] = new Array(files.length);
  let done = 0;
  await forEachLimit(files, options.concurrency ?? 4, async (name, i) => {
    if (options.signal?.aborted) return;
    const file = join(dir, name);
    let frame: ScannedFrame;
    try {
      const { header, layout } = await readFitsHeader(file);
      frame = frameInfoFromHeader(i, file, header, layout);
      if (options.checksums) frame.sha256 = await sha256(file, options.signal);
    } catch (e) {
      frame = isFitsError(e)
        ? { index: i, file, name, ok: false, code: e.code, message: e.message }
        : { index: i, file, name, ok: false, code: 'READ_FAILED', message: `${file}: ${(e as Error).message}` };
    }
    out[i] = frame;
    options.onProgress?.(++done, files.length, frame);
  });
  return out.filter((f) => f !== undefined);
}

export type ColorMode = 'OSC' | 'MONO' | 'RGB';

export interface ColorDecision {
  mode: ColorMode;
  bayer: BayerPattern | null;
  /** Where the decision came from, for the report. */
  source: string;
}

/**
 * Colour mode per the seed: `input_mode` if set, else from COLORTYP, BAYERPAT and NAXIS;
 * the Bayer pattern from `bayer_pattern` if set, else BAYERPAT/COLORTYP, else RGGB (with a note).
 */
export function decideColorMode(frame: FrameInfo, inputMode: 'auto' | 'OSC' | 'MONO', bayerSetting: 'auto' | BayerPattern): ColorDecision {
  const bayerFromHeader = frame.bayer;
  const bayer = bayerSetting !== 'auto' ? bayerSetting : bayerFromHeader;
  if (inputMode === 'OSC') return { mode: 'OSC', bayer: bayer ?? 'RGGB', source: bayer ? 'input_mode=OSC' : 'input_mode=OSC, no BAYERPAT: RGGB assumed' };
  if (inputMode === 'MONO') return { mode: 'MONO', bayer: null, source: 'input_mode=MONO' };
  if (frame.planes === 3) return { mode: 'RGB', bayer: null, source: 'NAXIS3 = 3 (already debayered)' };
  const colortyp = frame.colorType?.toLowerCase() ?? '';
  if (bayerFromHeader) return { mode: 'OSC', bayer, source: 'BAYERPAT/COLORTYP header' };
  if (/mono|grey|gray/.test(colortyp)) return { mode: 'MONO', bayer: null, source: 'COLORTYP header' };
  if (/osc|colou?r|cfa|bayer/.test(colortyp)) return { mode: 'OSC', bayer: bayer ?? 'RGGB', source: 'COLORTYP header, no pattern: RGGB assumed' };
  if (frame.hasBayerOffsets) return { mode: 'OSC', bayer: bayer ?? 'RGGB', source: 'XBAYROFF/YBAYROFF present, no pattern: RGGB assumed' };
  return { mode: 'MONO', bayer: null, source: 'no colour keywords: mono' };
}

export interface ScanSummary {
  total: number;
  readable: number;
  unreadable: { file: string; code: string; message: string }[];
  sizes: { width: number; height: number; planes: number; count: number }[];
  exposures: { exptime: number | null; count: number }[];
  filters: { filter: string | null; count: number }[];
  temperatures: { min: number | null; max: number | null };
  warnings: { code: string; message: string }[];
}

function groupCount<T>(items: T[], key: (t: T) => string): [string, T[]][] {
  const m = new Map<string, T[]>();
  for (const it of items) {
    const k = key(it);
    const list = m.get(k);
    if (list) list.push(it);
    else m.set(k, [it]);
  }
  return [...m.entries()].sort((a, b) => b[1].length - a[1].length);
}

export function summarizeScan(frames: ScannedFrame[]): ScanSummary {
  const good = frames.filter((f): f is FrameInfo => f.ok);
  const bad = frames.filter((f): f is UnreadableFrame => !f.ok);
  const sizes = groupCount(good, (f) => `${f.width}x${f.height}x${f.planes}`).map(([, g]) => ({ width: g[0]!.width, height: g[0]!.height, planes: g[0]!.planes, count: g.length }));
  const exposures = groupCount(good, (f) => String(f.exptime)).map(([, g]) => ({ exptime: g[0]!.exptime, count: g.length }));
  const filters = groupCount(good, (f) => String(f.filter)).map(([, g]) => ({ filter: g[0]!.filter, count: g.length }));
  const temps = good.map((f) => f.temperature).filter((t): t is number => t !== null);
  const warnings: ScanSummary['warnings'] = [];
  if (sizes.length > 1) warnings.push({ code: 'mixed_sizes', message: `frames have ${sizes.length} different sizes: ${sizes.map((s) => `${s.width}x${s.height} (${s.count})`).join(', ')}` });
  if (exposures.length > 1) warnings.push({ code: 'mixed_exposures', message: `frames have ${exposures.length} exposure times: ${exposures.map((e) => `${e.exptime ?? '?'} s (${e.count})`).join(', ')}` });
  if (filters.length > 1) warnings.push({ code: 'mixed_filters', message: `frames have ${filters.length} filters: ${filters.map((f) => `${f.filter ?? 'none'} (${f.count})`).join(', ')}` });
  if (bad.length > 0) warnings.push({ code: 'unreadable_frames', message: `${bad.length} file(s) could not be read` });
  return {
    total: frames.length,
    readable: good.length,
    unreadable: bad.map((b) => ({ file: b.file, code: b.code, message: b.message })),
    sizes,
    exposures,
    filters,
    temperatures: { min: temps.length ? Math.min(...temps) : null, max: temps.length ? Math.max(...temps) : null },
    warnings,
  };
}

// The tiled-workflow configuration YAML (docs/ARCHITECTURE.md "Configuration"): until the tiled workflow exists, its
// schema holds the blocks the Raw Stack import reads plus the basics. Known blocks are
// validated strictly (types, ranges, enums); unknown blocks and unknown keys inside known
// blocks are warnings, so YAML files from the predecessor validate and import. Every finding
// carries the YAML line and column of the offending node. Parsed without custom tags.

import { isMap, isPair, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import { z } from 'zod';
import { RawStackConfigSchema } from './rawstack.js';

const shape = RawStackConfigSchema.shape;
const sub = <K extends 'astrometry' | 'bge' | 'tile' | 'pcc' | 'hypermetric_stretch'>(k: K) => shape[k].unwrap().partial();

export const TiledConfigSchema = z.strictObject({
  input: z.strictObject({ input_dir: z.string().max(4096), pattern: z.string().max(256), max_frames: z.number().int().min(0) }).partial().describe('lights of the run'),
  output: z.strictObject({ runs_dir: z.string().max(4096), run_name: z.string().max(128) }).partial(),
  runtime_limits: z
    .strictObject({
      parallel_workers: z.number().int().min(1).max(256),
      memory_budget: z.number().int().min(64).max(1024 * 1024).describe('MiB'),
      acceleration_backend: z.enum(['auto', 'cpu', 'gpu', 'software']),
    })
    .partial(),
  normalization: z.strictObject({ mode: z.enum(['background', 'median', 'addscale', 'none']) }).partial(),
  stacking: z
    .strictObject({
      method: z.enum(['sigma', 'winsor', 'median', 'mean']),
      weighting: z.enum(['quality', 'uniform']),
      cosmetic_correction: z.boolean(),
      cosmetic_correction_sigma: z.number().positive(),
      per_frame_cosmetic_correction: z.boolean(),
      per_frame_cosmetic_correction_sigma: z.number().positive(),
      sigma_clip: z.strictObject({ sigma_low: z.number().positive(), sigma_high: z.number().positive(), max_iters: z.number().int().min(1).max(100), min_fraction: z.number().min(0).max(1) }).partial(),
      rejection_bounds: z.enum(['noise_model', 'sample']),
      seeing_tolerance: z.number().min(0).max(4),
      local_normalization: z.boolean(),
      local_normalization_cells: z.number().int().min(2).max(64),
      local_normalization_scale: z.enum(['none', 'plane']),
    })
    .partial(),
  astrometry: sub('astrometry'),
  bge: sub('bge'),
  tile: sub('tile'),
  pcc: sub('pcc'),
  hypermetric_stretch: sub('hypermetric_stretch'),
}).partial();

export type TiledConfig = z.output<typeof TiledConfigSchema>;

export interface Finding {
  path: string;
  message: string;
  line: number | null;
  column: number | null;
  code?: string;
}

export interface TiledValidation {
  ok: boolean;
  errors: Finding[];
  warnings: Finding[];
  /** The parsed document with unknown keys removed (for import), when there were no errors. */
  config: Record<string, unknown> | null;
  /** The parsed document as written. */
  document: unknown;
}

function position(doc: Document, counter: LineCounter, path: (string | number)[], key: boolean): { line: number | null; column: number | null } {
  // The node at `path` (or, for unknown keys, the key node itself); else its nearest ancestor.
  for (let n = path.length; n >= 0; n--) {
    const p = path.slice(0, n);
    let node: unknown;
    if (key && n === path.length && n > 0) {
      const parent = p.length > 1 ? doc.getIn(p.slice(0, -1), true) : doc.contents;
      if (isMap(parent)) node = parent.items.find((it) => isPair(it) && isScalar(it.key) && String(it.key.value) === String(p[p.length - 1]))?.key;
    } else {
      node = p.length === 0 ? doc.contents : doc.getIn(p, true);
    }
    const range = (node as { range?: [number, number, number] } | undefined)?.range;
    if (range) {
      const pos = counter.linePos(range[0]);
      return { line: pos.line, column: pos.col };
    }
  }
  return { line: null, column: null };
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Known keys of a zod object schema (through optional/partial wrappers). */
function objectShape(s: z.ZodType): Record<string, z.ZodType> | null {
  let cur: z.ZodType = s;
  for (let i = 0; i < 5; i++) {
    if (cur instanceof z.ZodObject) return cur.shape as Record<string, z.ZodType>;
    if (cur instanceof z.ZodOptional || cur instanceof z.ZodDefault || cur instanceof z.ZodPrefault || cur instanceof z.ZodNullable) cur = cur.unwrap() as z.ZodType;
    else return null;
  }
  return null;
}

/** Removes unknown keys (recording them) so the strict schema only judges known ones. */
function prune(value: Record<string, unknown>, schema: z.ZodType, path: string[], unknown: string[][]): Record<string, unknown> {
  const known = objectShape(schema);
  if (!known) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const child = known[k];
    if (!child) {
      unknown.push([...path, k]);
      continue;
    }
    out[k] = isObj(v) && objectShape(child) ? prune(v, child, [...path, k], unknown) : v;
  }
  return out;
}

export const YAML_LIMIT = 1024 * 1024;

export function validateTiledYaml(text: string): TiledValidation {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, customTags: [], uniqueKeys: true, prettyErrors: false });
  const errors: Finding[] = [];
  const warnings: Finding[] = [];
  for (const e of doc.errors) {
    const pos = e.linePos?.[0] ?? counter.linePos(e.pos[0]);
    errors.push({ path: '', code: 'yaml_syntax', message: e.message.split('\n')[0]!, line: pos?.line ?? null, column: pos?.col ?? null });
  }
  for (const w of doc.warnings) {
    const pos = w.linePos?.[0] ?? counter.linePos(w.pos[0]);
    warnings.push({ path: '', code: 'yaml_warning', message: w.message.split('\n')[0]!, line: pos?.line ?? null, column: pos?.col ?? null });
  }
  if (errors.length > 0) return { ok: false, errors, warnings, config: null, document: null };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    return { ok: false, errors: [{ path: '', code: 'yaml_syntax', message: (e as Error).message.split('\n')[0]!, line: null, column: null }], warnings, config: null, document: null };
  }
  if (value === null || value === undefined) value = {};
  if (!isObj(value)) {
    const pos = position(doc, counter, [], false);
    return { ok: false, errors: [{ path: '', code: 'invalid_type', message: 'the configuration must be a mapping of blocks', ...pos }], warnings, config: null, document: value };
  }
  const unknown: string[][] = [];
  const pruned = prune(value, TiledConfigSchema, [], unknown);
  for (const p of unknown) {
    warnings.push({ path: p.join('.'), code: p.length === 1 ? 'unknown_block' : 'unknown_key', message: p.length === 1 ? `unknown block "${p[0]}" (ignored)` : `unknown key "${p.join('.')}" (ignored)`, ...position(doc, counter, p, true) });
  }
  const r = TiledConfigSchema.safeParse(pruned);
  if (!r.success) {
    for (const issue of r.error.issues) {
      const path = issue.path.map((x) => (typeof x === 'symbol' ? String(x) : x));
      errors.push({ path: path.join('.'), code: issue.code, message: issue.message, ...position(doc, counter, path, false) });
    }
  }
  return { ok: errors.length === 0, errors, warnings, config: errors.length === 0 ? pruned : null, document: value };
}

export function tiledJsonSchema(): unknown {
  return z.toJSONSchema(TiledConfigSchema, { io: 'input', unrepresentable: 'any' });
}

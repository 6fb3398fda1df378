// Configuration endpoints: validate a tiled-workflow YAML (errors with line/column, unknown
// blocks and keys as warnings), serve the JSON Schemas generated from the zod schemas, and
// suggest parameter values from the machine and the data (each with its reason): this route
// gathers the facts (a scan, a run's frame table, a FWHM measured in a child process) and the
// rules in src/config/suggest.ts decide.

import { availableParallelism, freemem, totalmem } from 'node:os';
import { z } from 'zod';
import { ANY_FITS_PATTERN, defaultRawStackConfig, rawStackJsonSchema } from '../../config/rawstack.js';
import { tiledJsonSchema, validateTiledYaml, YAML_LIMIT } from '../../config/tiled.js';
import { decideColorMode, scanFolder, type FrameInfo } from '../../pipeline/stages/scan/scan.js';
import { checkYamlNesting, queryOf, readBody, jsonBody } from '../body.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { PATH_FIELD_MAX } from '../paths.js';
import type { ApiRegistry } from '../registry.js';
import { readRunText } from '../run-files.js';
import { runLayout } from '../run-index.js';
import { findRun } from '../run-lookup.js';
import { csvNumericRecords } from '../../shared/csv.js';
import { suggestParameters, suggestTiledParameters } from '../../config/suggest.js';
import { resolveTiledConfig } from '../../config/tiled-run.js';
import { tileGrid } from '../../pipeline/tiled/tile-grid.js';

const SchemaQuery = z.strictObject({ kind: z.enum(['tiled', 'rawstack']).default('tiled') });
const ValidateJson = z.strictObject({ yaml: z.string() });
const SuggestBody = z.strictObject({
  kind: z.enum(['rawstack', 'tiled']).default('rawstack').describe('which pipeline the suggestions are for (key paths of its configuration)'),
  input_dir: z.string().max(PATH_FIELD_MAX).optional().describe('folder with lights to measure'),
  pattern: z.string().min(1).max(256).default(ANY_FITS_PATTERN),
  run_id: z.string().max(200).optional().describe('use the frame table of this run instead of measuring'),
  scan: z
    .strictObject({ frames: z.number().int().min(0), width: z.number().int().min(1).optional(), height: z.number().int().min(1).optional(), fwhm: z.number().positive().optional() })
    .optional()
    .describe('figures of a scan the client already has (POST /api/files/scan summary; fwhm in px when known)'),
});

/** Largest frame (pixels) measured for a FWHM suggestion (in a child process, see measure.ts). */
const MEASURE_LIMIT_PIXELS = 12_000_000;

/** Median of the finite values (the lower middle for an even count), null for none. */
function median(v: number[]): number | null {
  const s = v.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)]! : null;
}

export function configRoutes(api: ApiRegistry, app: AppContext): void {
  api.add(
    {
      method: 'post',
      path: '/api/config/validate',
      tag: 'config',
      summary: 'validate a tiled-workflow YAML (text/yaml body, or JSON {yaml})',
      body: ValidateJson,
      bodyType: 'application/yaml',
      responses: { 200: '{ok, errors:[{path, message, line, column}], warnings}', 413: 'larger than 1 MiB', 415: 'unsupported body type' },
    },
    async (ctx) => {
      const type = (ctx.get('content-type') || 'text/yaml').split(';')[0]!.trim().toLowerCase();
      let text: string;
      if (type === 'application/json') text = (await jsonBody(ctx, ValidateJson)).yaml;
      else if (['text/yaml', 'application/yaml', 'application/x-yaml', 'text/x-yaml', 'text/plain'].includes(type)) text = (await readBody(ctx, YAML_LIMIT)).toString('utf8');
      else throw new ApiError('UNSUPPORTED_MEDIA_TYPE', `send the YAML as text/yaml or as JSON {yaml}, not ${type}`);
      if (Buffer.byteLength(text) > YAML_LIMIT) throw new ApiError('PAYLOAD_TOO_LARGE', `YAML larger than ${YAML_LIMIT} bytes`);
      checkYamlNesting(text);
      const r = validateTiledYaml(text);
      ctx.body = { ok: r.ok, errors: r.errors, warnings: r.warnings };
    },
  );

  api.add({ method: 'get', path: '/api/config/schema', tag: 'config', summary: 'JSON Schema of the tiled-workflow YAML (?kind=tiled) or of the Raw Stack parameters (?kind=rawstack)', query: SchemaQuery, responses: { 200: 'JSON Schema' } }, async (ctx) => {
    const q = queryOf(ctx, SchemaQuery);
    ctx.body = q.kind === 'rawstack' ? rawStackJsonSchema() : tiledJsonSchema();
  });

  api.add(
    {
      method: 'post',
      path: '/api/config/suggest',
      tag: 'config',
      summary: 'suggested Raw Stack values (kind rawstack) or tiled YAML values (kind tiled) with a reason each (memory from free RAM, workers from cores, tile size from FWHM, rejection from frame count; tiled: tile grid from FWHM and frame size, weighting and clustering from frame count)',
      body: SuggestBody,
      responses: { 200: '{suggestions:[{path, value, current, reason}], measured}', 403: 'outside the allowed roots', 404: 'no such run' },
    },
    async (ctx) => {
      const body = await jsonBody(ctx, SuggestBody);
      const current = app.params.get()?.config ?? defaultRawStackConfig();
      const measured: Record<string, unknown> = {};

      let frames: number | null = null;
      let fwhm: number | null = null;
      let shortSide: number | null = null;
      let size: { width: number; height: number } | null = null;
      if (body.scan) {
        frames = body.scan.frames;
        fwhm = body.scan.fwhm ?? null;
        shortSide = body.scan.width && body.scan.height ? Math.min(body.scan.width, body.scan.height) : null;
        if (body.scan.width && body.scan.height) size = { width: body.scan.width, height: body.scan.height };
        measured.source = 'scan figures from the request';
      } else if (body.run_id) {
        const dir = await findRun(app, body.run_id);
        const table = (await runLayout(dir)).frameTable;
        const csv = table === null ? null : await readRunText(dir, table);
        const rows = csv === null ? null : csvNumericRecords(csv);
        if (!rows) throw new ApiError('NOT_FOUND', `run ${body.run_id} has no frame_quality.csv`);
        const used = rows.filter((r) => r.status !== 'excluded');
        frames = used.length;
        fwhm = median(used.map((r) => Number(r.fwhm)));
        measured.source = `run ${body.run_id} frame_quality.csv`;
      } else if (body.input_dir) {
        const dir = await app.guard.resolve(body.input_dir, { field: 'input_dir', kind: 'dir' });
        const scanned = await scanFolder(dir, { pattern: body.pattern, concurrency: 4, confine: app.guard.confinement() });
        const good = scanned.filter((f): f is FrameInfo => f.ok);
        frames = good.length;
        measured.source = `scan of ${dir}`;
        const mid = good[Math.floor(good.length / 2)];
        if (mid) {
          shortSide = Math.min(mid.width, mid.height);
          size = { width: mid.width, height: mid.height };
          if (mid.width * mid.height <= MEASURE_LIMIT_PIXELS && mid.planes === 1) {
            // In a child process: star detection is whole-frame work (measure.ts).
            const color = decideColorMode(mid, 'auto', 'auto');
            const r = await app.fwhm.measure(mid.file, color.mode === 'OSC');
            if (r.ok) {
              fwhm = r.fwhm;
              measured.fwhm_frame = mid.name;
            } else {
              measured.fwhm_skipped = r.reason;
            }
          } else {
            measured.fwhm_skipped = 'frame too large to measure for a suggestion; pass run_id of a finished run';
          }
        }
      }
      if (frames !== null) measured.frames = frames;
      if (fwhm !== null && Number.isFinite(fwhm)) measured.fwhm = Math.round(fwhm * 100) / 100;
      const facts = { freeMiB: Math.floor(freemem() / 1048576), totalMiB: Math.round(totalmem() / 1048576), cores: availableParallelism(), frames, fwhm, shortSide };
      let result: { suggestions: unknown[]; tileSize: number | null };
      if (body.kind === 'tiled') {
        // The tiled defaults are the current values (the stored parameters are Raw Stack's).
        const tiled = resolveTiledConfig({});
        if (!tiled.ok) throw new Error('the tiled defaults do not resolve');
        const t = tiled.config.tiled;
        result = suggestTiledParameters(t, { ...facts, width: size?.width ?? null, height: size?.height ?? null }, (w, h, f) => {
          const g = tileGrid(w, h, f, t.tile);
          return { tileSize: g.tileSize, tilesX: g.originsX.length, tilesY: g.originsY.length, overlapPx: g.overlapPx };
        });
      } else result = suggestParameters(current, facts);
      const { suggestions, tileSize } = result;
      if (tileSize !== null) measured.tile_size = tileSize;
      ctx.body = { suggestions, measured };
    },
  );
}

// PCC endpoints: POST /api/pcc/run (job `pcc_run` on an RGB FITS with WCS) and POST
// /api/pcc/apply (job `pcc_apply`: a 3×3 or diagonal matrix applied into a new file). Both
// answer 202 with the job id; the work runs in a child process like every pixel job.

import { mkdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import { RawStackConfigSchema } from '../../config/rawstack.js';
import { jsonBody } from '../body.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { PATH_FIELD_MAX } from '../paths.js';
import type { ApiRegistry } from '../registry.js';
import { accepted } from './jobs.js';

const p = z.string().max(PATH_FIELD_MAX);
const PccRunBody = z.strictObject({
  input: p.describe('RGB FITS with a WCS (absolute path inside the allowed roots)'),
  catalog_file: p.optional().describe('star catalogue: CSV (ra, dec, mag, bv or teff) or a KStars star file; absent: the installed catalogue package (GET /api/system/info capabilities.pcc.catalogs)'),
  output: p.optional().describe('output FITS (default: <input>_pcc.fits beside the input)'),
  diagnostics_file: p.optional().describe('diagnostics JSON (default: <output>.json)'),
  config: RawStackConfigSchema.shape.pcc.unwrap().omit({ enabled: true, catalog_file: true }).partial().optional().describe('pcc.* parameters (catalog_file is the field above)'),
});
const Matrix = z.union([z.array(z.array(z.number()).length(3)).length(3), z.array(z.number()).length(3)]);
const PccApplyBody = z.strictObject({
  input: p,
  matrix: Matrix.describe('3×3 matrix (rows map input RGB to output RGB) or the diagonal [r, g, b]'),
  output: p.optional().describe('output FITS (default: <input>_cc.fits); never the input itself'),
});

function sibling(file: string, suffix: string): string {
  const name = basename(file).replace(/\.(fits?|fts)$/i, '');
  return join(dirname(file), `${name}${suffix}.fits`);
}

async function outputPath(app: AppContext, input: string, given: string | undefined, suffix: string, field: string): Promise<string> {
  const out = await app.guard.resolve(given ?? sibling(input, suffix), { field, mustExist: false });
  if (out === input) throw new ApiError('VALIDATION_ERROR', `${field} must differ from the input`, { issues: [{ path: field, code: 'custom', message: 'same as input' }] });
  await mkdir(dirname(out), { recursive: true });
  return out;
}

export function pccRoutes(api: ApiRegistry, app: AppContext): void {
  api.add(
    { method: 'post', path: '/api/pcc/run', tag: 'pcc', summary: 'photometric colour calibration of an RGB FITS with WCS (job pcc_run)', body: PccRunBody, responses: { 202: '{job_id}', 400: 'bad body', 403: 'outside the allowed roots', 422: 'missing input' } },
    async (ctx) => {
      const body = await jsonBody(ctx, PccRunBody);
      const input = await app.guard.resolve(body.input, { field: 'input', kind: 'file' });
      const catalog = body.catalog_file ? await app.guard.resolve(body.catalog_file, { field: 'catalog_file', kind: 'file' }) : '';
      const output = await outputPath(app, input, body.output, '_pcc', 'output');
      const diagnostics = await outputPath(app, input, body.diagnostics_file ?? `${output.replace(/\.(fits?|fts)$/i, '')}_diagnostics.json`, '', 'diagnostics_file');
      const job = await app.jobs.submit(
        'pcc_run',
        { input, catalog_file: catalog, output, diagnostics_file: diagnostics },
        { kind: 'pcc_run', input, output, catalog_file: catalog, diagnostics_file: diagnostics, ...(body.config ? { config: body.config } : {}) },
      );
      ctx.status = 202;
      ctx.body = { ...accepted(job), output, diagnostics_file: diagnostics };
    },
  );

  api.add(
    { method: 'post', path: '/api/pcc/apply', tag: 'pcc', summary: 'apply a 3×3 or diagonal colour matrix to an RGB FITS into a new file (job pcc_apply)', body: PccApplyBody, responses: { 202: '{job_id}', 400: 'bad body', 403: 'outside the allowed roots', 422: 'missing input' } },
    async (ctx) => {
      const body = await jsonBody(ctx, PccApplyBody);
      const input = await app.guard.resolve(body.input, { field: 'input', kind: 'file' });
      const output = await outputPath(app, input, body.output, '_cc', 'output');
      const matrix = body.matrix.length === 3 && typeof body.matrix[0] === 'number' ? (body.matrix as number[]).map((v, i) => [0, 1, 2].map((j) => (i === j ? v : 0))) : (body.matrix as number[][]);
      if (matrix.flat().some((v) => !Number.isFinite(v))) throw new ApiError('VALIDATION_ERROR', 'matrix entries must be finite numbers', { issues: [{ path: 'matrix', code: 'custom', message: 'not finite' }] });
      const job = await app.jobs.submit('pcc_apply', { input, output, matrix }, { kind: 'pcc_apply', input, output, matrix });
      ctx.status = 202;
      ctx.body = { ...accepted(job), output };
    },
  );
}

// Import from a tiled-workflow YAML that lies on the server (the UI's "server path" choice next
// to pasted text and a file read in the browser): POST /api/tools/preprocessing/import-file
// {path} → {config, mapped, ignored, path}, the same answer as /import {yaml}. The path goes
// through the path guard (allowed roots, realpath, a regular file) and is read only up to the
// YAML size limit (1 MiB), so the route reveals nothing outside the roots.

import { open } from 'node:fs/promises';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { defaultRawStackConfig } from '../../config/rawstack.js';
import { importFromTiled } from '../../config/tiled-import.js';
import { BODY_LIMIT, checkYamlNesting, jsonBody } from '../body.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { MAX_PATH } from '../paths.js';
import type { ApiRegistry } from '../registry.js';

const ImportFileBody = z.strictObject({ path: z.string().min(1).max(MAX_PATH + 1).describe('absolute path of a YAML file inside the allowed roots') });

/** The file's text, refused above `limit` bytes (read through one handle: no size/read race). */
async function readLimited(file: string, limit: number): Promise<string> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(limit + 1);
    let size = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, size, buf.length - size, size);
      if (bytesRead === 0) break;
      size += bytesRead;
      if (size > limit) throw new ApiError('PAYLOAD_TOO_LARGE', `the YAML file is larger than ${limit} bytes`, { limit });
    }
    return buf.subarray(0, size).toString('utf8');
  } finally {
    await fh.close();
  }
}

export function preprocessingImportFileRoutes(api: ApiRegistry, app: AppContext): void {
  api.add(
    {
      method: 'post',
      path: '/api/tools/preprocessing/import-file',
      tag: 'preprocessing',
      summary: 'Raw Stack parameters imported from a tiled-workflow YAML file on the server (not stored; PATCH parameters stores)',
      body: ImportFileBody,
      responses: { 200: '{config, mapped, ignored, path}', 400: 'YAML syntax error (line/column) or bad body', 403: 'outside the allowed roots', 413: 'file larger than 1 MiB', 422: 'missing or not a file' },
    },
    async (ctx) => {
      const body = await jsonBody(ctx, ImportFileBody);
      const file = await app.guard.resolve(body.path, { field: 'path', kind: 'file' });
      const text = await readLimited(file, BODY_LIMIT);
      checkYamlNesting(text, `the YAML file`);
      let doc: unknown;
      try {
        doc = parseYaml(text, { customTags: [], maxAliasCount: 100, uniqueKeys: true });
      } catch (e) {
        const first = (e as Error).message.split('\n')[0];
        const pos = e instanceof YAMLParseError ? e.linePos?.[0] : undefined;
        throw new ApiError('VALIDATION_ERROR', `YAML syntax error in ${body.path}: ${first}`, { issues: [{ path: '', code: 'yaml_syntax', message: first, line: pos?.line ?? null, column: pos?.col ?? null }] });
      }
      const base = app.params.get()?.config ?? defaultRawStackConfig();
      ctx.body = { ...importFromTiled(doc ?? {}, base), path: file };
    },
  );
}

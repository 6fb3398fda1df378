// Configuration templates of the run studio (named tiled-workflow YAML configurations):
// GET /api/config/templates (list), GET|PUT|DELETE /api/config/templates/:name. A template is
// validated as a tiled YAML before it is stored (400 VALIDATION_ERROR with line and column per
// issue), names outside the template alphabet are 400, unknown names 404. Stored by
// src/server/templates.ts under the server's state dir.

import { join } from 'node:path';
import { z } from 'zod';
import { validateTiledYaml, YAML_LIMIT } from '../../config/tiled.js';
import { checkYamlNesting, jsonBody } from '../body.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import type { ApiRegistry } from '../registry.js';
import { TEMPLATE_LIMIT, TEMPLATE_NAME_RE, TemplateStore } from '../templates.js';

const TemplateBody = z.strictObject({ yaml: z.string().max(YAML_LIMIT).describe('the configuration as tiled-workflow YAML (may be empty: the defaults)') });

function nameOf(raw: string): string {
  if (!TEMPLATE_NAME_RE.test(raw)) {
    throw new ApiError('VALIDATION_ERROR', 'a template name is 1–64 letters, digits, ".", "_" or "-", not starting with "."', { issues: [{ path: 'name', code: 'invalid_name', message: 'use letters, digits, ".", "_" or "-" (at most 64, not starting with ".")' }] });
  }
  return raw;
}

export function templateRoutes(api: ApiRegistry, app: AppContext): void {
  const store = new TemplateStore(join(app.stateDir, 'templates'));

  api.add({ method: 'get', path: '/api/config/templates', tag: 'config', summary: 'saved configuration templates (tiled-workflow YAML), by name', responses: { 200: '{items:[{name, updated_at, bytes}], total}' } }, async (ctx) => {
    const items = await store.list();
    ctx.body = { items, total: items.length };
  });

  api.add({ method: 'get', path: '/api/config/templates/:name', tag: 'config', summary: 'one template: {name, yaml, updated_at}', responses: { 200: 'template', 400: 'not a template name', 404: 'no such template' } }, async (ctx) => {
    const name = nameOf(ctx.params.name!);
    const t = await store.get(name);
    if (!t) throw new ApiError('NOT_FOUND', `no template ${name}`);
    ctx.body = t;
  });

  api.add(
    { method: 'put', path: '/api/config/templates/:name', tag: 'config', summary: 'save a template (create or replace), validated as a tiled-workflow YAML first', body: TemplateBody, responses: { 200: 'template replaced', 201: 'template created', 400: 'bad name, or VALIDATION_ERROR with line and column per issue', 409: 'CONFLICT: too many templates' } },
    async (ctx) => {
      const name = nameOf(ctx.params.name!);
      const body = await jsonBody(ctx, TemplateBody);
      if (body.yaml.trim() !== '') {
        checkYamlNesting(body.yaml);
        const check = validateTiledYaml(body.yaml);
        if (!check.ok) throw new ApiError('VALIDATION_ERROR', `the configuration has ${check.errors.length} error${check.errors.length === 1 ? '' : 's'}`, { issues: check.errors });
      }
      const existed = (await store.get(name)) !== null;
      const t = await store.put(name, body.yaml);
      if (!t) throw new ApiError('CONFLICT', `the server keeps at most ${TEMPLATE_LIMIT} templates; delete one first`, { limit: TEMPLATE_LIMIT });
      ctx.status = existed ? 200 : 201;
      ctx.body = t;
    },
  );

  api.add({ method: 'delete', path: '/api/config/templates/:name', tag: 'config', summary: 'delete a template', responses: { 204: 'deleted', 400: 'not a template name', 404: 'no such template' } }, async (ctx) => {
    const name = nameOf(ctx.params.name!);
    if (!(await store.delete(name))) throw new ApiError('NOT_FOUND', `no template ${name}`);
    ctx.status = 204;
  });
}

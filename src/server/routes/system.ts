// System endpoints: /api/system/info (version, capabilities, the device jobs get,
// available pipelines), /api/system/health (process up, runs dir writable, device status),
// and /api/openapi.json generated from the route declarations.

import { access, constants } from 'node:fs/promises';
import { z } from 'zod';
import { catalogCapabilities } from '../../astro/catalog/find.js';
import { lookupSolvers, type SolverConfig } from '../../astro/solve.js';
import { defaultRawStackConfig } from '../../config/rawstack.js';
import { SKYSTACK_NAME, SKYSTACK_VERSION } from '../../version.js';
import type { AppContext } from '../context.js';
import type { ApiRegistry } from '../registry.js';
import { PIPELINES } from './pipelines.js';

/** Installed plate solvers under the stored (or default) `astrometry.*` settings: binary and data. */
async function solverCapabilities(cfg: SolverConfig): Promise<{ solvers: string[]; missing: { solver: string; reason: string }[] }> {
  const lookups = await lookupSolvers({ ...cfg, solver: 'auto' });
  return {
    solvers: lookups.flatMap((l) => (l.ok ? [l.install.solver] : [])),
    missing: lookups.flatMap((l) => (l.ok ? [] : [{ solver: l.solver, reason: l.reason }])),
  };
}

export function systemRoutes(api: ApiRegistry, app: AppContext): void {
  api.add(
    { method: 'get', path: '/api/system/info', tag: 'system', summary: 'backend version and capabilities', responses: { 200: 'version, capabilities, pipelines' } },
    async (ctx) => {
      const d = app.device();
      const device =
        d.state === 'ready'
          ? { state: 'ready', kind: d.info.kind, adapter: d.info.adapter, backend: d.info.backend, feature_level: d.info.featureLevel, ...(d.info.fallbackReason ? { fallback_reason: d.info.fallbackReason } : {}) }
          : d.state === 'failed'
            ? { state: 'failed', kind: null, adapter: null, backend: null, feature_level: null, fallback_reason: d.message }
            : { state: 'probing', kind: null, adapter: null, backend: null, feature_level: null };
      const stored = app.params.get()?.config;
      // Catalogues PCC can use: the stored pcc.catalog_file (when set) and the installed packages;
      // `used_by_default` marks the one a run with the stored parameters takes.
      const pcc = await catalogCapabilities(stored?.pcc.catalog_file ?? '');
      ctx.body = {
        name: SKYSTACK_NAME,
        version: SKYSTACK_VERSION,
        api_version: 1,
        capabilities: {
          device,
          astrometry: await solverCapabilities((stored ?? defaultRawStackConfig()).astrometry),
          pcc,
          resume: PIPELINES.some((p) => p.resumable),
          sse: true,
          pipelines: PIPELINES,
        },
        limits: { max_concurrent_jobs: app.jobs.maxConcurrent, body_bytes: 1024 * 1024 },
        auth: { token_required: app.token !== null },
      };
    },
  );

  api.add(
    { method: 'get', path: '/api/system/health', tag: 'system', summary: 'health check', public: true, responses: { 200: 'healthy', 503: 'runs dir not writable' } },
    async (ctx) => {
      const writable = await access(app.runsDir, constants.W_OK).then(() => true, () => false);
      const d = app.device();
      ctx.status = writable ? 200 : 503;
      ctx.body = {
        status: writable ? 'ok' : 'degraded',
        uptime_s: Math.round((Date.now() - app.startedAt.getTime()) / 1000),
        runs_dir_writable: writable,
        device: d.state === 'ready' ? { state: 'ready', kind: d.info.kind } : d.state === 'failed' ? { state: 'failed', message: d.message } : { state: 'probing' },
        jobs: { running: app.jobs.running(), queued: app.jobs.queued() },
      };
    },
  );

  api.add({ method: 'get', path: '/api/openapi.json', tag: 'system', summary: 'this API as OpenAPI 3.1', responses: { 200: 'OpenAPI document' }, response: z.object({}).loose() }, async (ctx) => {
    ctx.body = api.openapi();
  });
}

// `skystack serve`: builds the Koa app from small middleware factories (error envelope,
// hardening headers, Host check, static UI, routes with their own token and cross-site guards,
// 405 fallback) and the state it needs (path guard with the allowed roots, stores, job manager,
// device probe), then listens. Binding anywhere but loopback requires a token (docs/threat-model.md): one
// is generated when absent. Routing is strict and case-sensitive: `/api/x/` and `/API/x` are
// not `/api/x` (404), so a path has one spelling.

import { randomBytes } from 'node:crypto';
import { mkdir, realpath } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Router from '@koa/router';
import Koa from 'koa';
import { dropUnconfinedPaths } from './config-paths.js';
import { bodyDeadline, REQUEST_TIMEOUT_MS } from './body.js';
import type { AppContext, ServerOptions } from './context.js';
import { probeDevice } from './device-probe.js';
import { errorMiddleware } from './errors.js';
import { JobManager } from './jobs/manager.js';
import { FwhmMeasurer } from './jobs/measure.js';
import { JobStore } from './jobs/store.js';
import { PathGuard } from './paths.js';
import { ApiRegistry, methodNotAllowed } from './registry.js';
import { RunList } from './run-list.js';
import { authRoutes } from './routes/auth.js';
import { configRoutes } from './routes/config.js';
import { templateRoutes } from './routes/templates.js';
import { fileRoutes, grantRefusal } from './routes/files.js';
import { imageRoutes } from './routes/images.js';
import { jobRoutes } from './routes/jobs.js';
import { pccRoutes } from './routes/pcc.js';
import { preprocessingRoutes } from './routes/preprocessing.js';
import { preprocessingImportFileRoutes } from './routes/preprocessing-import-file.js';
import { runRoutes } from './routes/runs.js';
import { runConfigRoutes } from './routes/run-config.js';
import { systemRoutes } from './routes/system.js';
import { allowedHostnames, crossSiteGuard, hardeningHeaders, hostCheck, isLoopback, tokenGuard, type Endpoint } from './security.js';
import { ensureStateDir, GrantStore, ParameterStore } from './state.js';
import { staticUi } from './static-ui.js';
import { ViewerService } from '../viewer/service.js';

const here = dirname(fileURLToPath(import.meta.url));
/** dist/src/server → dist/src/cli.js and dist/ui. */
export const CLI_PATH = join(here, '..', 'cli.js');
export const DEFAULT_UI_DIR = join(here, '..', '..', 'ui');

export interface RunningServer {
  url: string;
  port: number;
  token: string | null;
  context: AppContext;
  server: Server;
  /** Stops listening and ends running job children (they close their runs as cancelled). */
  close(): Promise<void>;
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const log = options.log ?? ((m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`));
  const runsDirRaw = resolve(options.runsDir);
  await mkdir(runsDirRaw, { recursive: true });
  const stateDir = resolve(options.stateDir ?? join(runsDirRaw, '.skystack'));
  const files = await ensureStateDir(stateDir);

  const loopback = isLoopback(options.host);
  const token = options.token ?? (loopback ? null : randomBytes(24).toString('base64url'));
  const guard = new PathGuard();
  await guard.deny(stateDir);
  const runsDir = await guard.addRoot(runsDirRaw);
  for (const r of options.roots) {
    try {
      await guard.addRoot(r);
    } catch (e) {
      log(`data root ${r} ignored: ${(e as Error).message}`);
    }
  }
  const params = new ParameterStore(files.parameters);
  for (const w of await params.load()) log(w);
  const grants = new GrantStore(files.grants);
  for (const g of await grants.load()) {
    const real = await realpath(g.path).catch(() => null);
    if (real === null) {
      log(`grant ${g.path} no longer exists`);
      continue;
    }
    // Grants stored under an older, weaker rule are checked again.
    const refusal = await grantRefusal(real, { guard, stateDir });
    if (refusal) log(`grant ${g.path} ignored: it ${refusal}`);
    else await guard.addRoot(real);
  }
  // Parameters stored under an older rule may name paths outside the roots: reset those.
  for (const w of await params.sanitize((cfg) => dropUnconfinedPaths(guard, cfg))) log(w);

  const jobStore = new JobStore(files.jobs);
  const jobs = new JobManager({ store: jobStore, cliPath: CLI_PATH, maxConcurrent: options.maxConcurrentJobs, log, ...(options.childEnv ? { env: options.childEnv } : {}), ...(options.killGraceMs !== undefined ? { killGraceMs: options.killGraceMs } : {}) });
  const restored = await jobs.init();
  if (restored.interrupted.length) log(`${restored.interrupted.length} job(s) were running when the server stopped: marked INTERRUPTED`);
  const device = probeDevice(CLI_PATH, options.childEnv ?? process.env);

  const endpoint: Endpoint = { host: options.host, port: options.port };
  // The run list is built in the background from the start, so the first listing is quick.
  const runList = new RunList(runsDir);
  void runList.list().catch((e: Error) => log(`run list: ${e.message}`));
  const fwhm = new FwhmMeasurer({ cliPath: CLI_PATH, ...(options.childEnv ? { env: options.childEnv } : {}) });
  const viewer = new ViewerService();
  const context: AppContext = { options, endpoint, runsDir, stateDir, guard, params, grants, jobs, jobStore, device: device.status, fwhm, viewer, runList, token, startedAt: new Date(), uiDir: options.uiDir ?? DEFAULT_UI_DIR, log };

  const koa = new Koa({ proxy: false });
  const router = new Router({ strict: true, sensitive: true });
  const names = allowedHostnames(options.host, options.allowedHosts ?? []);
  const requireToken = tokenGuard(token, endpoint);
  const api = new ApiRegistry(router, { crossSite: crossSiteGuard(endpoint, names), token: requireToken });
  systemRoutes(api, context);
  authRoutes(api, context);
  fileRoutes(api, context);
  jobRoutes(api, context);
  runRoutes(api, context);
  runConfigRoutes(api, context);
  imageRoutes(api, context);
  preprocessingRoutes(api, context);
  preprocessingImportFileRoutes(api, context);
  configRoutes(api, context);
  templateRoutes(api, context);
  pccRoutes(api, context);

  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  koa.use(errorMiddleware(log));
  koa.use(bodyDeadline(requestTimeout));
  koa.use(hardeningHeaders());
  koa.use(hostCheck(endpoint, names));
  koa.use(staticUi(context.uiDir)); // public: the UI asks for the token itself
  koa.use(methodNotAllowed(router, requireToken));
  koa.use(router.routes());
  koa.on('error', (e: Error) => {
    if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET' && (e as NodeJS.ErrnoException).code !== 'EPIPE') log(`koa: ${e.message}`);
  });

  // Node enforces the request timeout too, for requests whose body no handler reads (it checks
  // every connectionsCheckingInterval). It covers receiving the request only: an SSE response
  // streams after its request is complete, so it stays open as long as its run.
  const server = createServer({ requestTimeout: requestTimeout + 2000, headersTimeout: requestTimeout, connectionsCheckingInterval: Math.min(1000, requestTimeout) }, koa.callback());
  server.listen(options.port, options.host);
  await new Promise<void>((res, rej) => {
    server.once('listening', res);
    server.once('error', rej);
  });
  const addr = server.address();
  endpoint.port = typeof addr === 'object' && addr ? addr.port : options.port;
  const hostForUrl = options.host.includes(':') ? `[${options.host}]` : options.host === '0.0.0.0' ? '127.0.0.1' : options.host;
  return {
    url: `http://${hostForUrl}:${endpoint.port}`,
    port: endpoint.port,
    token,
    context,
    server,
    async close() {
      await jobs.shutdown();
      await viewer.close();
      await new Promise<void>((res) => {
        server.close(() => res());
        server.closeAllConnections();
      });
    },
  };
}

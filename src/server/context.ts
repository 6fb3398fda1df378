// Everything a route needs, built once by createServer: options, the path guard, stores, the
// job manager and the device probe. Routes receive this object; they hold no globals.

import type { DeviceStatus } from './device-probe.js';
import type { JobManager } from './jobs/manager.js';
import type { FwhmMeasurer } from './jobs/measure.js';
import type { JobStore } from './jobs/store.js';
import type { PathGuard } from './paths.js';
import type { RunList } from './run-list.js';
import type { Endpoint } from './security.js';
import type { ViewerService } from '../viewer/service.js';
import type { GrantStore, ParameterStore } from './state.js';

export interface ServerOptions {
  host: string;
  port: number;
  runsDir: string;
  stateDir?: string;
  /** Extra allowed data roots (besides runs dir and grants). */
  roots: string[];
  /** Bearer token; required (generated when absent) unless bound to loopback. */
  token?: string | null;
  maxConcurrentJobs: number;
  /** Folder with the built static UI (default dist/ui next to the server code). */
  uiDir?: string;
  /** Extra host names the Host check accepts. */
  allowedHosts?: string[];
  /** Environment for job children (tests force SKYSTACK_DEVICE). */
  childEnv?: NodeJS.ProcessEnv;
  /** Grace between SIGTERM and SIGKILL on cancel. */
  killGraceMs?: number;
  /** Time a client has to send a request's headers and body (default 30 s; SSE responses are not limited). */
  requestTimeoutMs?: number;
  log?: (message: string) => void;
}

export interface AppContext {
  options: ServerOptions;
  endpoint: Endpoint;
  runsDir: string;
  stateDir: string;
  guard: PathGuard;
  params: ParameterStore;
  grants: GrantStore;
  jobs: JobManager;
  jobStore: JobStore;
  device: () => DeviceStatus;
  /** The run list of GET /api/runs, kept in memory. */
  runList: RunList;
  /** FWHM of one frame, measured in a child process (config suggest). */
  fwhm: FwhmMeasurer;
  /** Image viewer: tile pyramids, pixel reads and exports on worker threads. */
  viewer: ViewerService;
  token: string | null;
  startedAt: Date;
  uiDir: string;
  log: (message: string) => void;
}

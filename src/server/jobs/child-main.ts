// The job child process (`skystack job <spec-file>`): runs one job and reports progress and
// the result to the server over IPC. It owns the GPU device for the job (docs/ARCHITECTURE.md "Processes"), so a
// native crash ends this process, never the server. SIGTERM cancels cleanly (the run closes
// its events with `cancelled`); losing the server (IPC disconnect) ends the process at once,
// so an orphan never keeps writing into a run the restarted server has closed.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseRawStackConfig, type RawStackConfig } from '../../config/rawstack.js';
import { parseEventLines } from '../../shared/events.js';
import type { TiledSettings } from '../../config/tiled-run.js';
import type { EventLine } from '../../pipeline/events.js';
import { setReadConfinement } from '../../pipeline/stages/scan/confine.js';
import { RunProgress } from '../../shared/run-progress.js';
import type { ChildMessage, JobSpec } from './types.js';

function send(m: ChildMessage): Promise<void> {
  return new Promise((resolve) => {
    if (process.connected && process.send) process.send(m, undefined, {}, () => resolve());
    else resolve();
  });
}

/** Ends the IPC channel on purpose (the 'disconnect' exit is for a lost server only). */
function onServerLost(): void {
  process.exit(3);
}

export async function runJobChild(argv: string[]): Promise<number> {
  const specFile = argv[0];
  if (!specFile) {
    process.stderr.write('usage: skystack job <spec-file> (started by the server)\n');
    return 2;
  }
  if (specFile === '--probe-device') return probe();
  if (specFile === '--measure-fwhm') return measureFwhm(argv.slice(1));
  const spec = JSON.parse(await readFile(specFile, 'utf8')) as JobSpec;
  const controller = new AbortController();
  process.on('SIGTERM', () => controller.abort());
  process.on('SIGINT', () => controller.abort());
  process.on('disconnect', onServerLost);
  void send({ type: 'started', pid: process.pid });
  try {
    return await dispatch(spec, controller.signal);
  } finally {
    process.off('disconnect', onServerLost);
    if (process.connected) process.disconnect();
  }
}

async function dispatch(spec: JobSpec, signal: AbortSignal): Promise<number> {
  try {
    switch (spec.kind) {
      case 'rawstack':
        return await rawstack(spec, signal);
      case 'tiled':
        return await tiled(spec, signal);
      case 'resume':
        return await resume(spec, signal);
      case 'pcc_run':
      case 'pcc_apply': {
        const { runPccJob } = await import('./pcc-job.js');
        const r = await runPccJob(spec, signal);
        await send({ type: 'result', ...r });
        return r.status === 'ok' ? 0 : 1;
      }
    }
  } catch (e) {
    const message = (e as Error)?.message ?? String(e);
    process.stderr.write(`job failed: ${message}\n`);
    await send({ type: 'result', status: signal.aborted ? 'cancelled' : 'error', message });
    return 1;
  }
}

async function rawstack(spec: Extract<JobSpec, { kind: 'rawstack' }>, signal: AbortSignal): Promise<number> {
  const parsed = parseRawStackConfig(spec.config);
  if (!parsed.ok) throw new Error(`invalid configuration: ${parsed.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
  // The server's roots at submit: every frame scan of the run stays inside them (confine.ts).
  if (spec.confine) setReadConfinement(spec.confine);
  const { runRawStack } = await import('../../pipeline/rawstack/run.js');
  const { runFolderAt } = await import('../../pipeline/run-folder.js');
  const folder = runFolderAt(spec.run_dir, spec.run_id);
  return report(await runRawStack(parsed.config, { folder, jobId: spec.job_id, signal, onEvent: progressSender() }));
}

/** The run's progress from its own events (the plan arrives with run_start), sent to the server; `prior`: the log a resume continues. */
function progressSender(prior: readonly EventLine[] = []): (line: EventLine) => void {
  const run = new RunProgress();
  for (const l of prior) run.apply(l);
  return (line) => {
    run.apply(line);
    if (line.type === 'phase_start' || line.type === 'phase_end') void send({ type: 'progress', phase: line.phase, fraction: run.fraction, persist: true });
    else if (line.type === 'phase_progress') void send({ type: 'progress', phase: line.phase, fraction: run.fraction, persist: false });
  };
}

/** Sends a pipeline run's result to the server; the exit code follows its status. */
async function report(result: { status: 'ok' | 'error' | 'cancelled'; phases: { phase: string; status: string; reason?: string }[]; outputs: unknown; device: { kind: string } }): Promise<number> {
  const failed = result.phases.filter((p) => p.status === 'error').map((p) => `${p.phase}${p.reason ? ` (${p.reason})` : ''}`);
  await send({
    type: 'result',
    status: result.status,
    ...(result.status === 'error' ? { message: `run failed: ${failed.join(', ') || 'REPORT'}` } : {}),
    details: { outputs: result.outputs, device: result.device.kind, phases: result.phases },
  });
  return result.status === 'ok' ? 0 : 1;
}

async function tiled(spec: Extract<JobSpec, { kind: 'tiled' }>, signal: AbortSignal): Promise<number> {
  const parsed = parseRawStackConfig(spec.raw);
  if (!parsed.ok) throw new Error(`invalid configuration: ${parsed.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
  if (spec.confine) setReadConfinement(spec.confine);
  const { runTiled } = await import('../../pipeline/tiled/run.js');
  const { runFolderAt } = await import('../../pipeline/run-folder.js');
  const config = { tiled: spec.tiled as unknown as TiledSettings, raw: parsed.config };
  return report(await runTiled(config, { folder: runFolderAt(spec.run_dir, spec.run_id, 'tiled'), jobId: spec.job_id, signal, onEvent: progressSender() }));
}

/** A resume of a tiled run (tiled-resume.ts): feasibility is checked again before the folder is touched. */
async function resume(spec: Extract<JobSpec, { kind: 'resume' }>, signal: AbortSignal): Promise<number> {
  if (spec.confine) setReadConfinement(spec.confine);
  let config: { tiled: TiledSettings; raw: RawStackConfig } | null = null;
  if (spec.tiled && spec.raw) {
    const parsed = parseRawStackConfig(spec.raw);
    if (!parsed.ok) throw new Error(`invalid configuration: ${parsed.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
    config = { tiled: spec.tiled as unknown as TiledSettings, raw: parsed.config };
  }
  const { resumeTiled } = await import('../../pipeline/tiled/resume.js');
  const { RUN_LAYOUTS } = await import('../../shared/run-layout.js');
  const prior = parseEventLines(await readFile(join(spec.run_dir, ...RUN_LAYOUTS.tiled.events.split('/')), 'utf8').catch(() => ''));
  const r = await resumeTiled(spec.run_dir, spec.from_phase, { config, jobId: spec.job_id, signal, onEvent: progressSender(prior) });
  return report(r);
}

/**
 * `skystack job --measure-fwhm FILE [--cfa]` (measure.ts): the frame's median FWHM from its star
 * detection, printed as one JSON line `{fwhm}` or `{error}`.
 */
async function measureFwhm(args: string[]): Promise<number> {
  const file = args[0];
  if (!file) {
    process.stdout.write(`${JSON.stringify({ error: 'no file given' })}\n`);
    return 2;
  }
  const { readFitsImage } = await import('../../fits/index.js');
  const { detectStars } = await import('../../algorithms/stars.js');
  const { frameMetrics } = await import('../../algorithms/frame-metrics.js');
  try {
    const img = await readFitsImage(file);
    const det = detectStars(img.data, img.width, img.height, { cfa: args.includes('--cfa') });
    process.stdout.write(`${JSON.stringify(det.ok ? { fwhm: frameMetrics(det).fwhm } : { error: `no stars measured (${det.code})` })}\n`);
    return 0;
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ error: `the frame could not be read: ${(e as { code?: string }).code ?? 'error'}` })}\n`);
    return 1;
  }
}

/** `skystack job --probe-device`: acquires the device once, prints its info as JSON, releases it. */
async function probe(): Promise<number> {
  const { acquireDevice, devicePreferenceFromEnv } = await import('../../gpu/device.js');
  const { acquired, info } = await acquireDevice(devicePreferenceFromEnv());
  acquired?.device.destroy();
  process.stdout.write(`${JSON.stringify(info)}\n`);
  return 0;
}

// Device acquisition: which of the three paths runs the pixel kernels, and why the others
// did not. Order for `auto`: a hardware adapter through Dawn's default backend (feature level
// core); else a software adapter on the CPU (Mesa llvmpipe through GL ES, feature level
// compatibility; or lavapipe through Vulkan); else the TypeScript kernels.
// Invariant: every attempt is recorded in DeviceInfo.attempts with its outcome, so reports and
// /api/system/info can say exactly what ran and why.

import { GpuError } from './errors.js';

export type DevicePath = 'gpu' | 'software' | 'cpu';
export type DevicePreference = 'auto' | DevicePath;
export const DEVICE_PREFERENCES: readonly DevicePreference[] = ['auto', 'gpu', 'software', 'cpu'];

export interface DeviceAttempt {
  backend: 'default' | 'opengles' | 'vulkan';
  featureLevel: 'core' | 'compatibility';
  outcome: 'hardware' | 'software' | 'none' | 'error' | 'skipped';
  adapter?: string;
  reason?: string;
}

export interface DeviceInfo {
  preference: DevicePreference;
  kind: DevicePath;
  /** Adapter name as the driver reports it, e.g. "llvmpipe-llvm-15-0-6-256-bits-" or "NVIDIA H100". */
  adapter: string | null;
  backend: string | null;
  featureLevel: 'core' | 'compatibility' | null;
  /** Why a better path was not taken (absent when the preferred path ran). */
  fallbackReason?: string;
  attempts: DeviceAttempt[];
}

export interface AcquiredDevice {
  /** The Dawn instance; it must stay referenced while the device lives, or Dawn stops processing events. */
  instance: GPU;
  device: GPUDevice;
  adapter: GPUAdapter;
  info: DeviceInfo;
}

/** Reads SKYSTACK_DEVICE; unknown values are refused rather than silently treated as auto. */
export function devicePreferenceFromEnv(env: NodeJS.ProcessEnv = process.env): DevicePreference {
  const raw = (env.SKYSTACK_DEVICE ?? 'auto').trim().toLowerCase();
  if ((DEVICE_PREFERENCES as readonly string[]).includes(raw)) return raw as DevicePreference;
  throw new GpuError('BAD_ARGUMENT', `SKYSTACK_DEVICE="${env.SKYSTACK_DEVICE}" is not one of ${DEVICE_PREFERENCES.join(', ')}`);
}

/** Software rasterisers report themselves through the adapter name or the fallback flag. */
export function isSoftwareAdapter(info: GPUAdapterInfo): boolean {
  const text = `${info.vendor} ${info.architecture} ${info.device} ${info.description}`.toLowerCase();
  return Boolean((info as { isFallbackAdapter?: boolean }).isFallbackAdapter) || /llvmpipe|lavapipe|swiftshader|softpipe|software/.test(text);
}

function adapterName(info: GPUAdapterInfo): string {
  return [info.device, info.description].filter((s) => s && s.length > 0).join(' / ') || info.vendor || 'unknown adapter';
}

type DawnModule = { create: (flags: string[]) => GPU; globals: object };

let dawn: DawnModule | null | undefined;
let dawnError = '';

async function loadDawn(): Promise<DawnModule | null> {
  if (dawn !== undefined) return dawn;
  // Mesa's GL stack needs a display-less EGL platform; set it before Dawn creates any instance.
  process.env.EGL_PLATFORM ??= 'surfaceless';
  try {
    const mod = (await import('webgpu')) as unknown as DawnModule;
    // Dawn's classes (GPUBufferUsage, GPUMapMode, ...) must be global for the constants we use.
    Object.assign(globalThis, mod.globals);
    dawn = mod;
  } catch (e) {
    dawnError = (e as Error).message.split('\n')[0] ?? String(e);
    dawn = null;
  }
  return dawn;
}

/** Requests a device with every limit the adapter offers (defaults are far below them on llvmpipe). */
async function openDevice(adapter: GPUAdapter): Promise<GPUDevice> {
  const requiredLimits: Record<string, number> = {};
  const limits = adapter.limits as unknown as Record<string, unknown>;
  for (const key in limits) {
    const v = limits[key];
    if (typeof v === 'number') requiredLimits[key] = v;
  }
  const requiredFeatures: GPUFeatureName[] = [];
  if (adapter.features.has('timestamp-query')) requiredFeatures.push('timestamp-query');
  return adapter.requestDevice({ requiredLimits, requiredFeatures, label: 'skystack' });
}

interface Candidate {
  backend: DeviceAttempt['backend'];
  featureLevel: DeviceAttempt['featureLevel'];
  flags: string[];
  /** Which kind of adapter this attempt may yield for the caller. */
  accept: 'hardware' | 'software';
}

function candidatesFor(preference: DevicePreference): Candidate[] {
  const hardware: Candidate = { backend: 'default', featureLevel: 'core', flags: [], accept: 'hardware' };
  const gles: Candidate = { backend: 'opengles', featureLevel: 'compatibility', flags: ['backend=opengles'], accept: 'software' };
  const lavapipe: Candidate = { backend: 'vulkan', featureLevel: 'core', flags: ['backend=vulkan'], accept: 'software' };
  switch (preference) {
    case 'gpu':
      return [hardware];
    case 'software':
      return [gles, lavapipe];
    case 'auto':
      return [hardware, gles, lavapipe];
    case 'cpu':
      return [];
  }
}

export interface AcquireOptions {
  /**
   * Extra dawn.node instance flags for every attempt, e.g. the benchmarks'
   * 'disable-dawn-features=timestamp_quantization' (exact pass timings). Runs pass none.
   */
  dawnFlags?: readonly string[];
}

/**
 * Acquires a device for `preference`. For `auto` it never throws: without any adapter it
 * returns `null` with an explanation in `info`. For an explicit `gpu` or `software` it throws
 * NO_ADAPTER when that path is unavailable, so a benchmark or test never runs silently on the
 * wrong path.
 */
export async function acquireDevice(preference: DevicePreference = devicePreferenceFromEnv(), options: AcquireOptions = {}): Promise<{ acquired: AcquiredDevice | null; info: DeviceInfo }> {
  const attempts: DeviceAttempt[] = [];
  const info = (kind: DevicePath, extra: Partial<DeviceInfo> = {}): DeviceInfo => ({
    preference,
    kind,
    adapter: null,
    backend: null,
    featureLevel: null,
    attempts,
    ...extra,
  });
  if (preference === 'cpu') {
    return { acquired: null, info: info('cpu', { fallbackReason: 'SKYSTACK_DEVICE=cpu selects the TypeScript kernels' }) };
  }
  const mod = await loadDawn();
  if (!mod) {
    const reason = `WebGPU binding (dawn.node) could not be loaded: ${dawnError}`;
    if (preference !== 'auto') throw new GpuError('DAWN_UNAVAILABLE', reason);
    return { acquired: null, info: info('cpu', { fallbackReason: reason }) };
  }
  for (const c of candidatesFor(preference)) {
    const attempt: DeviceAttempt = { backend: c.backend, featureLevel: c.featureLevel, outcome: 'none' };
    attempts.push(attempt);
    try {
      const gpu = mod.create([...c.flags, ...(options.dawnFlags ?? [])]);
      const adapter = await gpu.requestAdapter({ featureLevel: c.featureLevel, powerPreference: 'high-performance' } as GPURequestAdapterOptions);
      if (!adapter) {
        attempt.reason = `no ${c.featureLevel} adapter from the ${c.backend} backend`;
        continue;
      }
      const software = isSoftwareAdapter(adapter.info);
      attempt.adapter = adapterName(adapter.info);
      attempt.outcome = software ? 'software' : 'hardware';
      if ((c.accept === 'hardware') === software) {
        attempt.reason = software ? 'adapter is a software rasteriser, not a GPU' : 'adapter is a hardware GPU where a software one was asked for';
        continue;
      }
      const device = await openDevice(adapter);
      const kind: DevicePath = software ? 'software' : 'gpu';
      const firstFailure = attempts.find((a) => a !== attempt && a.reason)?.reason;
      const result: DeviceInfo = info(kind, { adapter: attempt.adapter, backend: c.backend === 'default' ? 'default (vulkan)' : c.backend, featureLevel: c.featureLevel });
      if (preference === 'auto' && kind === 'software') result.fallbackReason = `no hardware GPU: ${firstFailure ?? 'none found'}`;
      return { acquired: { instance: gpu, device, adapter, info: result }, info: result };
    } catch (e) {
      attempt.outcome = 'error';
      attempt.reason = (e as Error).message.split('\n')[0];
    }
  }
  const reasons = attempts.map((a) => `${a.backend}/${a.featureLevel}: ${a.reason ?? a.outcome}`).join('; ');
  if (preference !== 'auto') throw new GpuError('NO_ADAPTER', `SKYSTACK_DEVICE=${preference} but no such adapter (${reasons})`);
  return { acquired: null, info: info('cpu', { fallbackReason: `no WebGPU adapter (${reasons}); using the TypeScript kernels` }) };
}

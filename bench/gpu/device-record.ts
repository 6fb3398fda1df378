// What the GPU bench records about a device: the adapter's own description (vendor,
// architecture, device, description — on Vulkan the description carries the driver version),
// how skystack acquired it, its features and limits; and the process's CPU use while the
// device sits idle (a Dawn issue had one core spinning on NVIDIA until the device was destroyed).

import type { GpuContext } from '../../src/gpu/context.js';
import type { DeviceInfo } from '../../src/gpu/device.js';
import type { IdleSample } from './model.js';

export interface DeviceRecord {
  adapter: { vendor: string; architecture: string; device: string; description: string; isFallbackAdapter: boolean | null; subgroupMinSize: number | null; subgroupMaxSize: number | null };
  /** The driver as the adapter describes it (Vulkan: "NVIDIA: 580.x…"; GL ES: "OpenGL ES 3.2 Mesa …"). */
  driver: string | null;
  acquisition: DeviceInfo;
  features: string[];
  limits: Record<string, number>;
}

export function recordDevice(ctx: GpuContext, adapterInfo: GPUAdapterInfo | null): DeviceRecord {
  const info = (adapterInfo ?? {}) as Partial<GPUAdapterInfo> & { isFallbackAdapter?: boolean; subgroupMinSize?: number; subgroupMaxSize?: number };
  const limits: Record<string, number> = {};
  const raw = ctx.device.limits as unknown as Record<string, unknown>;
  for (const key in raw) {
    const v = raw[key];
    if (typeof v === 'number') limits[key] = v;
  }
  return {
    adapter: {
      vendor: info.vendor ?? '',
      architecture: info.architecture ?? '',
      device: info.device ?? '',
      description: info.description ?? '',
      isFallbackAdapter: typeof info.isFallbackAdapter === 'boolean' ? info.isFallbackAdapter : null,
      subgroupMinSize: typeof info.subgroupMinSize === 'number' ? info.subgroupMinSize : null,
      subgroupMaxSize: typeof info.subgroupMaxSize === 'number' ? info.subgroupMaxSize : null,
    },
    driver: info.description ? info.description : null,
    acquisition: ctx.info,
    features: [...ctx.device.features].map(String).sort(),
    limits,
  };
}

/** Process CPU time over `ms` of waiting with nothing to do (all threads: Dawn's included). */
export async function idleSample(ms: number): Promise<IdleSample> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const c = process.cpuUsage(c0);
  return { wallMs: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 };
}

// Typed GPU-layer failures with a closed code union, so callers can fall back (no adapter)
// or report (budget too small, device lost) without parsing messages.

export type GpuErrorCode =
  | 'NO_ADAPTER' // the requested device path has no adapter on this machine
  | 'DAWN_UNAVAILABLE' // the dawn.node binding could not be loaded
  | 'DEVICE_LOST' // the device was lost mid-run (driver reset, destroy, out of memory)
  | 'SHADER_INVALID' // a WGSL module or pipeline failed validation
  | 'BUDGET_TOO_SMALL' // the memory budget cannot hold even the smallest band
  | 'BINDING_TOO_LARGE' // one binding would exceed the adapter's storage-binding limit
  | 'POOL_EXHAUSTED' // the buffer pool would exceed its byte limit
  | 'BAD_ARGUMENT'; // a kernel was called with inconsistent sizes

export class GpuError extends Error {
  override readonly name = 'GpuError';
  constructor(
    readonly code: GpuErrorCode,
    message: string,
  ) {
    super(`${code}: ${message}`);
  }
}

// The one kernel registry: every WGSL entry point skystack dispatches, with its shader file
// (under shaders/) and its bind-group layout in binding order. Wrappers in src/gpu/kernels/
// look kernels up here by id; nothing else names a shader file.
// Convention: binding 0 is the uniform parameter block when a kernel has one.

export type BindingKind = 'uniform' | 'storage' | 'read-only-storage';

export interface KernelSpec {
  /** Path under shaders/. Each file has exactly one entry point, named `main`. */
  shader: string;
  bindings: readonly BindingKind[];
}

export const KERNELS = {
  // decode: raw FITS samples (big-endian words as uploaded) -> f32 physical values
  decode_int16: { shader: 'decode/int16.wgsl', bindings: ['uniform', 'read-only-storage', 'storage'] },
  decode_int32: { shader: 'decode/int32.wgsl', bindings: ['uniform', 'read-only-storage', 'storage'] },
  decode_float32: { shader: 'decode/float32.wgsl', bindings: ['uniform', 'read-only-storage', 'storage'] },
  // calibrate: (light - bias - dark) / normalised flat
  calibrate: { shader: 'calibrate/calibrate.wgsl', bindings: ['uniform', 'read-only-storage', 'read-only-storage', 'read-only-storage', 'read-only-storage', 'storage'] },
  // stats: NaN-aware reductions
  stats_minmax: { shader: 'stats/minmax.wgsl', bindings: ['uniform', 'read-only-storage', 'storage'] },
  stats_histogram: { shader: 'stats/histogram.wgsl', bindings: ['uniform', 'read-only-storage', 'storage'] },
  stats_tiles: { shader: 'stats/tiles.wgsl', bindings: ['uniform', 'read-only-storage', 'storage'] },
  // tiled workflow: per-rectangle structure sums (count, mean, gradient energy)
  tile_metrics: { shader: 'stats/tile_metrics.wgsl', bindings: ['uniform', 'read-only-storage', 'read-only-storage', 'storage'] },
  // debayer: CFA mosaic -> three planes
  debayer_bilinear: { shader: 'debayer/bilinear.wgsl', bindings: ['uniform', 'read-only-storage', 'storage', 'storage', 'storage'] },
  debayer_bilinear_vec4: { shader: 'debayer/bilinear_vec4.wgsl', bindings: ['uniform', 'read-only-storage', 'storage', 'storage', 'storage'] },
  debayer_mhc: { shader: 'debayer/mhc.wgsl', bindings: ['uniform', 'read-only-storage', 'storage', 'storage', 'storage'] },
  // warp: affine resampling
  warp_bilinear: { shader: 'warp/bilinear.wgsl', bindings: ['uniform', 'read-only-storage', 'storage'] },
  warp_lanczos3: { shader: 'warp/lanczos3.wgsl', bindings: ['uniform', 'read-only-storage', 'storage', 'read-only-storage'] },
  // separable Lanczos-3 for near-identity transforms: row pass into an intermediate, column pass out
  warp_lanczos3_rows: { shader: 'warp/lanczos3_rows.wgsl', bindings: ['uniform', 'read-only-storage', 'storage', 'storage'] },
  warp_lanczos3_cols: { shader: 'warp/lanczos3_cols.wgsl', bindings: ['uniform', 'read-only-storage', 'read-only-storage', 'storage', 'read-only-storage'] },
  // stack: per-pixel normalisation, rejection and weighted mean over N frames
  stack: { shader: 'stack/stack.wgsl', bindings: ['uniform', 'read-only-storage', 'storage', 'storage', 'storage'] },
  // tiled workflow: the same stack with per-pixel weights from a smooth tile weight field
  stack_weightfield: { shader: 'stack/stack_weightfield.wgsl', bindings: ['uniform', 'read-only-storage', 'read-only-storage', 'storage', 'storage', 'storage'] },
  // stack: local normalization of a band in place (per-frame node grids, before rejection)
  ln_apply: { shader: 'stack/ln_apply.wgsl', bindings: ['uniform', 'storage', 'read-only-storage'] },
  // stack: rejection with noise-model + seeing bounds, weighted mean of the survivors
  reject_noise: {
    shader: 'stack/reject_noise.wgsl',
    bindings: ['uniform', 'read-only-storage', 'read-only-storage', 'read-only-storage', 'read-only-storage', 'storage', 'storage', 'storage'],
  },
  // stretch: per-pixel tone curves
  stretch_mtf: { shader: 'stretch/mtf.wgsl', bindings: ['uniform', 'read-only-storage', 'storage'] },
  stretch_asinh: { shader: 'stretch/asinh.wgsl', bindings: ['uniform', 'read-only-storage', 'read-only-storage', 'read-only-storage', 'storage', 'storage', 'storage'] },
  // stacking pre-mask: per-pixel outlier flags against the band median, then their application
  premask_flag: { shader: 'premask/premask_flag.wgsl', bindings: ['uniform', 'read-only-storage', 'read-only-storage', 'read-only-storage', 'storage', 'read-only-storage'] },
  premask_apply: { shader: 'premask/premask_apply.wgsl', bindings: ['uniform', 'read-only-storage', 'read-only-storage', 'storage', 'storage'] },
  // stacking: NaN at listed sample indices (the host pre-mask's result applied to device slots)
  scatter_nan: { shader: 'premask/scatter_nan.wgsl', bindings: ['uniform', 'read-only-storage', 'storage'] },
  // stacking: a column window of every frame's slot rows packed (the host pre-mask's readback)
  gather_window: { shader: 'stack/gather_window.wgsl', bindings: ['uniform', 'read-only-storage', 'storage'] },
  gather_window_vec4: { shader: 'stack/gather_window_vec4.wgsl', bindings: ['uniform', 'read-only-storage', 'storage'] },
  // device: every storage binding point rebound to a small buffer (frees destroyed buffers a GL driver still holds bound)
  release_bindings: { shader: 'device/release_bindings.wgsl', bindings: ['uniform', 'storage'] },
} as const satisfies Record<string, KernelSpec>;

export type KernelId = keyof typeof KERNELS;

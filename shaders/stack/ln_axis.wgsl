// stack/ln_axis: local normalization's node index and weight along one axis of its grid (the
// rule of src/cpu/ln-apply.ts), spliced with `//!include` (src/gpu/shaders.ts) into every kernel
// that interpolates the node grid (ln_apply.wgsl, the Lanczos warps' fused store), so all of them
// pick the same nodes. (i, w): nodes i and i + 1 mixed by w; positions beyond the outer nodes
// clamp to half a step past them (extrapolated), a one-node axis gives (0, 0).
// No entry point, no bindings.

fn ln_axis(p: f32, origin: f32, step: f32, n: u32) -> vec2<f32> {
  if (n == 1u) {
    return vec2<f32>(0.0, 0.0);
  }
  let f = clamp((p - origin) / step, -0.5, f32(n) - 0.5);
  let i = clamp(floor(f), 0.0, f32(n - 2u));
  return vec2<f32>(i, f - i);
}

// calibrate/calibrate: per-pixel calibration of a light frame or band,
//   out = ((light − bias) − dark_scale·dark) / flat + pedestal,
// with each master optional (flags): no bias → 0, no dark → 0, no flat → 1. Same contract as
// src/cpu/calibrate.ts; the flat is already normalised by its median (done by the caller).
// Bindings: 0 uniform Params; 1 light, 2 bias, 3 dark, 4 flat: read-only array<vec4f>;
//           5 read_write array<vec4f> out. An absent master is bound to a small dummy buffer
//           and never read (the flags are uniform, so the branches do not diverge). Every
//           buffer holds at least count4 vec4s; lanes past `count` in the last vec4 compute on
//           padding and land in the output's padding.
// Workgroup: WG x 1 x 1, 4 pixels (one vec4f) per invocation (fastest shape on llvmpipe for
//            streaming kernels); 2-D grid (x = grid_x invocations per row) to stay under 65535.
// Precision: f32, in the order written (a compiler may fuse dark_scale·dark into an fma; WGSL
//            division is within 2.5 ulp). The reference computes in f64 and rounds once; tests
//            state the tolerance.
// No-data: NaN in light, bias or dark propagates; a flat ≤ flat_floor (dead pixel) or NaN gives
//          NaN.

struct Params {
  count4: u32,     // vec4s to process: ceil(count / 4)
  grid_x: u32,     // invocations per grid row (workgroups in x * WG)
  flags: u32,      // bit 0 bias, bit 1 dark, bit 2 flat present
  dark_scale: f32,
  flat_floor: f32,
  pedestal: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> light: array<vec4f>;
@group(0) @binding(2) var<storage, read> bias: array<vec4f>;
@group(0) @binding(3) var<storage, read> dark: array<vec4f>;
@group(0) @binding(4) var<storage, read> flat_n: array<vec4f>;
@group(0) @binding(5) var<storage, read_write> out: array<vec4f>;

override WG: u32 = 64;

const HAS_BIAS: u32 = 1u;
const HAS_DARK: u32 = 2u;
const HAS_FLAT: u32 = 4u;

// Quiet-NaN bits; a private variable because WGSL rejects NaN in constant expressions.
var<private> NAN_BITS: u32 = 0x7fc00000u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.y * params.grid_x + gid.x;
  if (i >= params.count4) {
    return;
  }
  var v = light[i];
  if ((params.flags & HAS_BIAS) != 0u) {
    v = v - bias[i];
  }
  if ((params.flags & HAS_DARK) != 0u) {
    v = v - params.dark_scale * dark[i];
  }
  if ((params.flags & HAS_FLAT) != 0u) {
    let f = flat_n[i];
    // f > floor is false for NaN, so a NaN flat is dead too.
    v = select(vec4f(bitcast<f32>(NAN_BITS)), v / f, f > vec4f(params.flat_floor));
  }
  out[i] = v + params.pedestal;
}

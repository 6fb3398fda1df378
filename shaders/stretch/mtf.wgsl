// stretch/mtf: PixInsight/Siril midtones transfer function with shadows and highlights
// clipping, on one plane (the wrapper dispatches once per channel with that channel's
// parameters):
//   t   = clamp((x - c0) / (c1 - c0), 0, 1)                  (c0 < c1)
//   out = MTF(m, t) = (m - 1) t / ((2m - 1) t - m)           (0 < m < 1; m = 0.5 is identity)
//   with MTF(m, 0) = 0 and MTF(m, 1) = 1 written exactly.
// Bindings: 0 uniform Params; 1 read-only array<vec4f> input (ceil(count / 4) vec4; lanes
//           past count ignored); 2 read_write array<f32> output (count values).
// Workgroup: WG x 1 x 1 invocations, 4 samples (one vec4 load) per invocation; 2-D grid
//            (x = grid_x invocations per row) to stay under 65535 workgroups per dimension.
// Precision: f32. scale = 1 / (c1 - c0), m - 1 and 2m - 1 come from the host in f64 rounded
//            to f32; error <= (4 + 2 m / (1 - m)) * 2^-24 against the f64 formula (with the
//            same f32 parameters): the MTF's log-slope m / (m - (2m - 1) t) is at most
//            max(1, m / (1 - m)), amplifying the ~1.5 ulp error of t.
// No-data: non-finite input (NaN, +-Inf; tested on the bits) gives NaN.

struct Params {
  count: u32,
  grid_x: u32,
  c0: f32,
  scale: f32,      // 1 / (c1 - c0)
  m: f32,
  m_minus_1: f32,  // m - 1
  two_m_minus_1: f32,  // 2m - 1
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> input: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> output: array<f32>;

override WG: u32 = 64;

var<private> NAN_BITS: u32 = 0x7fc00000u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let j = gid.y * params.grid_x + gid.x;
  let first = j * 4u;
  if (first >= params.count) {
    return;
  }
  let x = input[j];
  let finite = (bitcast<vec4u>(x) & vec4u(0x7f800000u)) != vec4u(0x7f800000u);
  let t = clamp((x - vec4f(params.c0)) * params.scale, vec4f(0.0), vec4f(1.0));
  var y = (params.m_minus_1 * t) / (params.two_m_minus_1 * t - vec4f(params.m));
  y = select(y, vec4f(0.0), t <= vec4f(0.0));
  y = select(y, vec4f(1.0), t >= vec4f(1.0));
  y = select(vec4f(bitcast<f32>(NAN_BITS)), y, finite);
  output[first] = y.x;
  if (first + 1u < params.count) { output[first + 1u] = y.y; }
  if (first + 2u < params.count) { output[first + 2u] = y.z; }
  if (first + 3u < params.count) { output[first + 3u] = y.w; }
}

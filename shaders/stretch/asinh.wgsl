// stretch/asinh: the per-pixel colour stretch of HyperMetric Stretch (a port of VeraLux HMS),
// on three planes R, G, B. Exactly, per pixel, in this order:
//   a_c  = max(x_c - anchor, 0)                               anchored channels (c = R, G, B)
//   L    = wR a_R + wG a_G + wB a_B                            luminance (sensor profile weights)
//   f(v) = (asinh(D v + b) - asinh(b)) / (asinh(D vw + b) - asinh(b))
//                                                              D = 10^log_d, b = protect_b >= 0,
//                                                              vw = white - anchor (f(vw) = 1)
//   Ls   = clamp(f(L), 0, 1)
//   k    = Ls^p                                                p = convergence_power (k = 0 at Ls = 0)
//   cp_c = Ls (r_c (1 - k) + k),  r_c = a_c / L (0 if L = 0)   colour-preserving; converges to
//                                                              neutral as Ls -> 1 (star cores)
//   w    = grip Ls^shadow                                      grip = color_grip in [0, 1];
//                                                              shadow = shadow_convergence >= 0
//                                                              (Ls^0 = 1)
//   v_c  = w cp_c + (1 - w) clamp(f(a_c), 0, 1)                blend with the per-channel stretch
//   out_c = pedestal + (1 - pedestal) clamp(v_c, 0, 1)         outputs in [pedestal, 1]
// f is evaluated without cancellation for small v: with u = D v + b and S(z) = sqrt(z^2 + 1),
//   asinh(u) - asinh(b) = log1p(D v (1 + (u + b) / (S(u) + S(b))) / (b + S(b))),
// log1p(t) = 2 atanh(t / (2 + t)) by its series for t < 1/4, else log(1 + t).
// Host-precomputed (f64 -> f32): D, b, S(b), b + S(b), norm = 1 / (asinh(D vw + b) - asinh(b)).
// Bindings: 0 uniform Params; 1..3 read-only array<vec4f> R, G, B inputs (ceil(count / 4) vec4;
//           lanes past count ignored); 4..6 read_write array<f32> R, G, B outputs.
// Workgroup: WG x 1 x 1, 4 pixels (one vec4 per plane) per invocation; 2-D grid (grid_x
//            invocations per row).
// Precision: f32; log/sqrt/exp2 at WGSL accuracy. Error vs the f64 formula is about
//            norm * 2^-21 absolute (log near 1) plus a few ulp; see test/gpu/stretch.test.ts.
// No-data: a non-finite value (NaN, +-Inf; tested on the bits) in any channel makes all three
//          outputs of that pixel NaN.

struct Params {
  count: u32,
  grid_x: u32,
  per_channel: u32,  // 1 when w can be < 1 (grip < 1 or shadow > 0): f(a_c) is needed
  _pad: u32,
  weights: vec4f,    // wR, wG, wB, 0
  anchor: f32,
  d: f32,
  b: f32,
  sb: f32,           // sqrt(b^2 + 1)
  bsb: f32,          // b + sqrt(b^2 + 1)
  norm: f32,
  power: f32,
  grip: f32,
  shadow: f32,
  pedestal: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in_r: array<vec4f>;
@group(0) @binding(2) var<storage, read> in_g: array<vec4f>;
@group(0) @binding(3) var<storage, read> in_b: array<vec4f>;
@group(0) @binding(4) var<storage, read_write> out_r: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_g: array<f32>;
@group(0) @binding(6) var<storage, read_write> out_b: array<f32>;

override WG: u32 = 64;

var<private> NAN_BITS: u32 = 0x7fc00000u;

fn log1p4(t: vec4f) -> vec4f {
  let z = t / (2.0 + t);
  let z2 = z * z;
  let series = 2.0 * z * (1.0 + z2 * (1.0 / 3.0 + z2 * (1.0 / 5.0 + z2 * (1.0 / 7.0 + z2 * (1.0 / 9.0 + z2 * (1.0 / 11.0))))));
  return select(log(1.0 + t), series, t < vec4f(0.25));
}

// f(v) for v >= 0 (unclamped).
fn curve(v: vec4f) -> vec4f {
  let dv = params.d * v;
  let u = dv + params.b;
  let su = sqrt(u * u + 1.0);
  let t = dv * (1.0 + (u + params.b) / (su + params.sb)) / params.bsb;
  return log1p4(t) * params.norm;
}

// x^e for x in [0, 1], e >= 0; 0^e = 0 for e > 0, x^0 = 1.
fn pow01(x: vec4f, e: f32) -> vec4f {
  if (e == 0.0) {
    return vec4f(1.0);
  }
  return select(exp2(e * log2(x)), vec4f(0.0), x <= vec4f(0.0));
}

fn finite(v: vec4f) -> vec4<bool> {
  return (bitcast<vec4u>(v) & vec4u(0x7f800000u)) != vec4u(0x7f800000u);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let j = gid.y * params.grid_x + gid.x;
  let first = j * 4u;
  if (first >= params.count) {
    return;
  }
  let xr = in_r[j];
  let xg = in_g[j];
  let xb = in_b[j];
  let ok = finite(xr) & finite(xg) & finite(xb);
  let ar = max(xr - params.anchor, vec4f(0.0));
  let ag = max(xg - params.anchor, vec4f(0.0));
  let ab = max(xb - params.anchor, vec4f(0.0));
  let lum = params.weights.x * ar + params.weights.y * ag + params.weights.z * ab;
  let ls = clamp(curve(lum), vec4f(0.0), vec4f(1.0));
  let k = pow01(ls, params.power);
  // Ls / L is finite where L > 0; where L = 0, Ls = 0 and every output is 0.
  let q = select(ls / lum, vec4f(0.0), lum <= vec4f(0.0));
  let lk = ls * k;
  var vr = q * ar * (1.0 - k) + lk;
  var vg = q * ag * (1.0 - k) + lk;
  var vb = q * ab * (1.0 - k) + lk;
  if (params.per_channel == 1u) {
    let w = params.grip * pow01(ls, params.shadow);
    vr = w * vr + (1.0 - w) * clamp(curve(ar), vec4f(0.0), vec4f(1.0));
    vg = w * vg + (1.0 - w) * clamp(curve(ag), vec4f(0.0), vec4f(1.0));
    vb = w * vb + (1.0 - w) * clamp(curve(ab), vec4f(0.0), vec4f(1.0));
  }
  let keep = 1.0 - params.pedestal;
  let nan = vec4f(bitcast<f32>(NAN_BITS));
  let yr = select(nan, params.pedestal + keep * clamp(vr, vec4f(0.0), vec4f(1.0)), ok);
  let yg = select(nan, params.pedestal + keep * clamp(vg, vec4f(0.0), vec4f(1.0)), ok);
  let yb = select(nan, params.pedestal + keep * clamp(vb, vec4f(0.0), vec4f(1.0)), ok);
  let n = min(4u, params.count - first);
  for (var i = 0u; i < n; i++) {
    out_r[first + i] = yr[i];
    out_g[first + i] = yg[i];
    out_b[first + i] = yb[i];
  }
}

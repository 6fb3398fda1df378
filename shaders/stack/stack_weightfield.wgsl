// stack/stack_weightfield: the stack of stack.wgsl (per-frame normalisation, rejection, weighted
// mean of the survivors) with each frame's weight read per pixel from a smooth weight field
// instead of one weight per frame. TypeScript reference with the same contract:
// src/cpu/stack-weightfield.ts (the field, the window and why the result equals the overlap-add
// of per-tile weighted means). Methods: none, sigma, winsor (median ignores weights: stack.wgsl),
// and the noise-model rejection (rejection.bounds noise_model) with sigma or winsor: the
// contract of src/cpu/reject-noise.ts's rejectNoiseModel with a field (the reference for
// methods 3 and 4; shaders/stack/reject_noise.wgsl is its per-frame-weight twin): bounds
// c ± κ·τ_f, τ_f² = σ_f² + K_f·S + α_f²·S², S = max(c − B, 0), from the per-pixel start centre.
//
// Bindings: 0 uniform Params;
//           1 read-only src, f32 frame-major: frame f, band row r, column x at (f * rows + r) * width + x;
//           2 read-only aux, f32: scale[N], offset[N], then the table [N][tiles_y][tiles_x]
//             (each tile's column over frames sums to 1), then the column windows
//             [width][4] (tile index as f32, −1 unused; weight) and the row windows of the
//             band's rows [rows][4], each entry two f32; noise model (methods 3, 4) only:
//             then per frame σ² [N] (< 0: never reject the frame), K [N], α² [N], then the
//             band's start centre [rows·width] (NaN: the weighted mean) and sky B
//             [rows·width] (NaN: S = 0);
//           3 read_write mean, f32 per pixel (NaN where no survivor carries weight);
//           4 read_write count, u32 survivors per pixel;
//           5 read_write array<atomic<u32>> rejected: [0, N) low, [N, 2N) high per frame (ADDED to).
// Workgroup: WG x 1 x 1, one invocation per pixel of the band: pixel = gid.y · grid_x · WG + gid.x
//            (grid x = min(ceil(width·rows / WG), 65535), grid y as needed).
// Precision: f32 throughout; the frames' samples and weights are re-read (weights recomputed
//            from the field) in every pass, so no private array bounds the frame count.
// No-data: NaN samples (bit test) are ignored by every sum, count, bound and tally.
// Algorithms exactly as src/cpu/stack.ts: validStats about the first valid sample; sigma with
// cumulative bounds, min_keep = max(1, ceil(f32(min_fraction) * valid)), stop at a fixed point;
// winsor: max_iters winsorization steps (winsor_k, winsor_c) then one rejection.

struct Params {
  width: u32,
  rows: u32,
  frames: u32,
  method: u32, // 0 none, 1 sigma, 2 winsor, 3 noise-model sigma, 4 noise-model winsor
  k_low: f32,
  k_high: f32,
  max_iters: u32,
  min_fraction: f32,
  winsor_k: f32,
  winsor_c: f32,
  tiles_x: u32,
  tiles_y: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> aux: array<f32>;
@group(0) @binding(3) var<storage, read_write> mean_out: array<f32>;
@group(0) @binding(4) var<storage, read_write> count_out: array<u32>;
@group(0) @binding(5) var<storage, read_write> rejected: array<atomic<u32>>;

override WG: u32 = 64;

// WGSL rejects NaN in constant expressions: its bits live in a private variable.
var<private> NAN_BITS: u32 = 0x7fc00000u;

fn is_nan(v: f32) -> bool {
  let b = bitcast<u32>(v);
  return (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0u;
}

// Offsets into aux.
fn table_at() -> u32 { return 2u * params.frames; }
fn cols_at() -> u32 { return table_at() + params.frames * params.tiles_x * params.tiles_y; }
fn rows_at() -> u32 { return cols_at() + params.width * 8u; }
fn noise_at() -> u32 { return rows_at() + params.rows * 8u; }
fn centre_at() -> u32 { return noise_at() + 3u * params.frames; }
fn sky_at() -> u32 { return centre_at() + params.width * params.rows; }

// Noise model: expected spread τ_f at signal s (negative: frame f is never rejected).
fn tau(f: u32, s: f32) -> f32 {
  let s2 = aux[noise_at() + f];
  if (s2 < 0.0) { return -1.0; }
  return sqrt(s2 + aux[noise_at() + params.frames + f] * s + aux[noise_at() + 2u * params.frames + f] * s * s);
}

// Signal above the sky at centre c (sky NaN: none).
fn signal(c: f32, b: f32) -> f32 {
  if (is_nan(b)) { return 0.0; }
  return max(c - b, 0.0);
}

// Whether valid sample v lies within frame f's noise-model bounds at centre c, signal s.
fn within(f: u32, v: f32, c: f32, s: f32) -> bool {
  let t = tau(f, s);
  return t < 0.0 || (v >= c - params.k_low * t && v <= c + params.k_high * t);
}

// Survivors of the noise-model bounds at centre c: count, Σw, Σw·v.
struct Kept {
  n: u32,
  sw: f32,
  swv: f32,
}

fn kept(p: u32, x: u32, r: u32, c: f32, s: f32) -> Kept {
  var k = Kept(0u, 0.0, 0.0);
  for (var f = 0u; f < params.frames; f++) {
    let v = sample(f, p);
    if (is_nan(v) || !within(f, v, c, s)) { continue; }
    let w = weight(f, x, r);
    k.n += 1u;
    k.sw += w;
    k.swv += w * v;
  }
  return k;
}

// Frame f's weight at (x, r): Σ_j rowW_j Σ_i colW_i · table[f][rowT_j][colT_i].
fn weight(f: u32, x: u32, r: u32) -> f32 {
  var w = 0.0;
  let tb = table_at() + f * params.tiles_x * params.tiles_y;
  for (var j = 0u; j < 4u; j++) {
    let ry = rows_at() + (r * 4u + j) * 2u;
    let ty = aux[ry];
    if (ty < 0.0) { continue; }
    var row = 0.0;
    for (var i = 0u; i < 4u; i++) {
      let cx = cols_at() + (x * 4u + i) * 2u;
      let tx = aux[cx];
      if (tx < 0.0) { continue; }
      row += aux[cx + 1u] * aux[tb + u32(ty) * params.tiles_x + u32(tx)];
    }
    w += aux[ry + 1u] * row;
  }
  return w;
}

fn sample(f: u32, p: u32) -> f32 {
  return src[f * params.width * params.rows + p] * aux[f] + aux[params.frames + f];
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let p = gid.y * nw.x * WG + gid.x;
  if (p >= params.width * params.rows) { return; }
  let x = p % params.width;
  let r = p / params.width;
  let n = params.frames;
  // Valid-sample statistics about the first valid sample.
  var pivot = 0.0;
  var have = false;
  for (var f = 0u; f < n && !have; f++) {
    let v = sample(f, p);
    if (!is_nan(v)) { pivot = v; have = true; }
  }
  var nv = 0u;
  var sw = 0.0;
  var sd = 0.0;
  var sd2 = 0.0;
  for (var f = 0u; f < n; f++) {
    let v = sample(f, p);
    if (is_nan(v)) { continue; }
    let w = weight(f, x, r);
    let d = v - pivot;
    nv += 1u;
    sw += w;
    sd += w * d;
    sd2 += w * d * d;
  }
  let valid = nv > 0u && sw > 0.0;
  let mu0 = sd / sw;
  var m = pivot + mu0;
  var s = sqrt(max(sd2 / sw - mu0 * mu0, 0.0));
  let keep = max(1u, u32(ceil(f32(nv) * params.min_fraction)));
  var lo = -3.0e38;
  var hi = 3.0e38;
  var cn = nv;
  var result = select(bitcast<f32>(NAN_BITS), m, valid);
  // Noise model: centre of the bounds the output's survivors passed (for the tallies).
  var c_acc = 0.0;
  if (params.method >= 3u && valid) {
    let b = aux[sky_at() + p];
    let c0 = aux[centre_at() + p];
    var c = select(c0, m, is_nan(c0));
    if (params.method == 3u) {
      var prev_n = 0xffffffffu;
      var prev_s = 0.0;
      for (var it = 0u; it < params.max_iters; it++) {
        let k = kept(p, x, r, c, signal(c, b));
        if (!(k.n >= keep && k.sw > 0.0)) { break; } // refused: the previous survivors stand
        result = k.swv / k.sw;
        cn = k.n;
        c_acc = c;
        let fixed = k.n == prev_n && k.swv == prev_s;
        prev_n = k.n;
        prev_s = k.swv;
        if (fixed) { break; }
        c = result;
      }
    } else {
      for (var it = 0u; it < params.max_iters; it++) {
        let s = signal(c, b);
        var acc = 0.0;
        for (var f = 0u; f < n; f++) {
          let v = sample(f, p);
          if (is_nan(v)) { continue; }
          let t = tau(f, s);
          var d = v - c;
          if (t >= 0.0) { d = clamp(d, -params.winsor_k * t, params.winsor_k * t); }
          acc += weight(f, x, r) * d;
        }
        c += acc / sw;
      }
      let k = kept(p, x, r, c, signal(c, b));
      if (k.n >= keep && k.sw > 0.0) {
        result = k.swv / k.sw;
        cn = k.n;
        c_acc = c;
      }
    }
  } else if (params.method == 1u && valid) {
    for (var it = 0u; it < params.max_iters; it++) {
      let lc = max(m - params.k_low * s, lo);
      let hc = min(m + params.k_high * s, hi);
      var c = 0u;
      var cw = 0.0;
      var d1 = 0.0;
      var d2 = 0.0;
      for (var f = 0u; f < n; f++) {
        let v = sample(f, p);
        if (is_nan(v) || v < lc || v > hc) { continue; }
        let w = weight(f, x, r);
        let d = v - m;
        c += 1u;
        cw += w;
        d1 += w * d;
        d2 += w * d * d;
      }
      if (!(c >= keep && cw > 0.0)) { break; }
      let changed = c != cn;
      let mu = d1 / cw;
      lo = lc;
      hi = hc;
      cn = c;
      m += mu;
      s = sqrt(max(d2 / cw - mu * mu, 0.0));
      if (!changed) { break; }
    }
    result = m;
  } else if (params.method == 2u && valid) {
    let m0 = m;
    for (var it = 0u; it < params.max_iters; it++) {
      let wl = m - params.winsor_k * s;
      let wh = m + params.winsor_k * s;
      var d1 = 0.0;
      var d2 = 0.0;
      for (var f = 0u; f < n; f++) {
        let v = sample(f, p);
        if (is_nan(v)) { continue; }
        let w = weight(f, x, r);
        let d = clamp(v, wl, wh) - m;
        d1 += w * d;
        d2 += w * d * d;
      }
      let mu = d1 / sw;
      s = params.winsor_c * sqrt(max(d2 / sw - mu * mu, 0.0));
      m += mu;
    }
    let lc = m - params.k_low * s;
    let hc = m + params.k_high * s;
    var c = 0u;
    var cw = 0.0;
    var cwv = 0.0;
    for (var f = 0u; f < n; f++) {
      let v = sample(f, p);
      if (is_nan(v) || v < lc || v > hc) { continue; }
      let w = weight(f, x, r);
      c += 1u;
      cw += w;
      cwv += w * v;
    }
    if (c >= keep && cw > 0.0) {
      result = cwv / cw;
      cn = c;
      lo = lc;
      hi = hc;
    } else {
      result = m0;
      cn = nv;
    }
  }
  mean_out[p] = result;
  count_out[p] = cn;
  if (cn < nv && params.method >= 3u) {
    // Only a bounded result keeps fewer than the valid samples, so c_acc is set.
    let s = signal(c_acc, aux[sky_at() + p]);
    for (var f = 0u; f < n; f++) {
      let v = sample(f, p);
      let t = tau(f, s);
      if (is_nan(v) || t < 0.0) { continue; }
      if (v < c_acc - params.k_low * t) { atomicAdd(&rejected[f], 1u); }
      else if (v > c_acc + params.k_high * t) { atomicAdd(&rejected[n + f], 1u); }
    }
  } else if (cn < nv) {
    for (var f = 0u; f < n; f++) {
      let v = sample(f, p);
      if (is_nan(v)) { continue; }
      if (v < lo) { atomicAdd(&rejected[f], 1u); }
      else if (v > hi) { atomicAdd(&rejected[n + f], 1u); }
    }
  }
}
